//===- PublishedScalar.cpp - A graph's scalar, read without a driver call -===//
#include "runtime/PublishedScalar.h"

#include <cstring>

namespace llmc {

namespace {

// One thread: gather the slot's bytes (any alignment), bump the module's
// launch counter, write the value, fence at system scope so that the host
// sees the value no later than the number, write the number. PTX 7.0 for
// sm_70 so that the driver compiles it for any GPU llmc runs on
// (PublishedScalarTest assembles it for sm_80, sm_90 and sm_100 with ptxas
// where the toolkit has it).
const char kPtx[] = R"(.version 7.0
.target sm_70
.address_size 64

.global .align 8 .u64 llmc_published;

.visible .entry llmc_publish(.param .u64 src, .param .u32 bytes,
                             .param .u64 host)
{
  .reg .pred %p<3>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [src];
  ld.param.u32 %r1, [bytes];
  ld.param.u64 %rd2, [host];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  min.u32 %r1, %r1, 8;
  mov.u64 %rd3, 0;
  mov.u32 %r2, 0;
LOOP:
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  ld.global.u8 %rd4, [%rd1];
  shl.b32 %r0, %r2, 3;
  shl.b64 %rd4, %rd4, %r0;
  or.b64 %rd3, %rd3, %rd4;
  add.u64 %rd1, %rd1, 1;
  add.u32 %r2, %r2, 1;
  bra LOOP;
DONE:
  ld.global.u64 %rd5, [llmc_published];
  add.u64 %rd5, %rd5, 1;
  st.global.u64 [llmc_published], %rd5;
  st.volatile.global.u64 [%rd2], %rd3;
  membar.sys;
  st.volatile.global.u64 [%rd2+8], %rd5;
  ret;
}
)";

inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

} // namespace

const char *PublishedScalar::ptx() { return kPtx; }

PublishedScalar::~PublishedScalar() {
  if (!cu_)
    return;
  if (module_)
    cu_->cuModuleUnload(module_);
  if (host_)
    cu_->cuMemFreeHost(const_cast<uint64_t *>(host_));
}

Status PublishedScalar::init(const cuda::DriverApi &cu) {
  cu_ = &cu;
  const char *what = "loading the loss-publishing kernel";
  LLMC_CU(cu.cuModuleLoadData(&module_, kPtx), what);
  LLMC_CU(cu.cuModuleGetFunction(&function_, module_, "llmc_publish"), what);
  void *host = nullptr;
  LLMC_CU(cu.cuMemHostAlloc(&host, 64, CU_MEMHOSTALLOC_DEVICEMAP), what);
  std::memset(host, 0, 64);
  host_ = static_cast<volatile uint64_t *>(host);
  LLMC_CU(cu.cuMemHostGetDevicePointer(&hostOnDevice_, host, 0), what);
  return Status::ok();
}

Status PublishedScalar::enqueue(CUstream stream, CUdeviceptr source,
                                unsigned bytes) {
  if (!function_)
    return Status::error("PublishedScalar::enqueue before init");
  void *args[] = {&source, &bytes, &hostOnDevice_};
  LLMC_CU(cu_->cuLaunchKernel(function_, 1, 1, 1, 1, 1, 1, 0, stream, args,
                              nullptr),
          "queueing the loss-publishing kernel");
  return Status::ok();
}

Status PublishedScalar::read(CUevent done, unsigned char out[8]) {
  if (!host_)
    return Status::error("PublishedScalar::read before init");
  auto published = [&] {
    return __atomic_load_n(const_cast<const uint64_t *>(host_ + 1),
                           __ATOMIC_ACQUIRE) >= expected_;
  };
  if (!published()) {
    auto start = std::chrono::steady_clock::now();
    for (unsigned n = 1; !published(); ++n) {
      pause();
      // The clock costs ~20 ns; look at it every 64 polls.
      if (n % 64 == 0 && std::chrono::steady_clock::now() - start > spinLimit)
        break;
    }
    if (!published()) {
      ++eventWaits_;
      LLMC_CU(cu_->cuEventSynchronize(done), "waiting for the step");
      if (!published())
        return Status::error(
            "the step finished, but its loss was not published (expected "
            "launch " + std::to_string(expected_) + ", host memory says " +
            std::to_string(host_[1]) + ")");
    }
  }
  uint64_t value = host_[0];
  std::memcpy(out, &value, 8);
  return Status::ok();
}

} // namespace llmc
