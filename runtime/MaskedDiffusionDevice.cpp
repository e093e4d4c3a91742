//===- MaskedDiffusionDevice.cpp - Masked diffusion's draws on the GPU ----===//
#include "runtime/MaskedDiffusionDevice.h"

#include "runtime/CudaApi.h"
#include "runtime/KernelCache.h"
#include "runtime/Nvrtc.h"

#include <cstdio>

namespace llmc {

// One thread per token; every thread of a row draws the row's t itself
// (one more hash, no synchronization). The double operations are spelled
// as round-to-nearest intrinsics so that NVRTC's default --fmad=true cannot
// fuse them into an fma, which would round differently from the host.
const char *maskedDiffusionKernelSource() {
  return R"(
typedef unsigned long long u64;

__device__ u64 split_mix64(u64 x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ double uniform(u64 seed, u64 draw, u64 index) {
  u64 h = split_mix64(split_mix64(split_mix64(seed) ^ draw) ^ index);
  return __dmul_rn((double)(h >> 11), 0x1.0p-53);
}

extern "C" __global__ void masked_diffusion_draw(
    u64 seed, u64 draw, double eps, long long batch, long long seq,
    void *mask, int wide_mask, float *p_mask) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= batch * seq) return;
  long long b = i / seq;
  double one_minus = __dadd_rn(1.0, -eps);
  double t = __dadd_rn(eps, __dmul_rn(one_minus, uniform(seed, draw, (u64)b)));
  float p = (float)__dadd_rn(__dmul_rn(one_minus, t), eps);
  int m = uniform(seed, draw, (u64)batch + (u64)i) < (double)p ? 1 : 0;
  p_mask[i] = p;
  if (wide_mask) ((long long *)mask)[i] = m;
  else ((int *)mask)[i] = m;
}
)";
}

Status DeviceMaskDrawer::create(Executor &exec, const std::string &mask,
                                const std::string &pMask,
                                std::unique_ptr<DeviceMaskDrawer> &out) {
  out.reset();
  const Plan &plan = exec.plan();
  const BufferInfo *m = plan.findBuffer(mask), *p = plan.findBuffer(pMask);
  if (!m || !p || m->shape.size() != 2 || m->shape != p->shape ||
      (m->dtype != DType::I32 && m->dtype != DType::I64) ||
      p->dtype != DType::F32)
    return Status::error("the masked-diffusion draw needs an i32 or i64 [B, T] "
                         "buffer '" + mask + "' and an f32 one '" + pMask +
                         "' of the same shape in '" + plan.name + "'");
  std::unique_ptr<DeviceMaskDrawer> d(new DeviceMaskDrawer(exec));
  d->batch_ = m->shape[0];
  d->seq_ = m->shape[1];
  d->wideMask_ = m->dtype == DType::I64;
  d->mask_ = exec.arenaBase() + m->offset;
  d->pMask_ = exec.arenaBase() + p->offset;

  CompileRequest request;
  request.name = "masked_diffusion_draw";
  request.source = maskedDiffusionKernelSource();
  request.options.arch = exec.arch();
  std::string dir = KernelCache::defaultDir();
  KernelCache cache(dir);
  std::vector<uint8_t> cubin;
  std::string warning;
  LLMC_RETURN_IF_ERROR(compileToCubin(request, cubin,
                                      dir.empty() ? nullptr : &cache,
                                      nullptr, &warning));
  if (!warning.empty())
    std::fprintf(stderr, "llmc: warning: %s\n", warning.c_str());
  const cuda::DriverApi &cu = exec.driver();
  LLMC_CU(cu.cuCtxSetCurrent(exec.cudaContext()), "the masked-diffusion draw");
  LLMC_CU(cu.cuModuleLoadData(&d->module_, cubin.data()),
          "the masked-diffusion draw");
  LLMC_CU(cu.cuModuleGetFunction(&d->function_, d->module_,
                                 "masked_diffusion_draw"),
          "the masked-diffusion draw");
  out = std::move(d);
  return Status::ok();
}

DeviceMaskDrawer::~DeviceMaskDrawer() {
  if (module_)
    exec_.driver().cuModuleUnload(module_);
}

Status DeviceMaskDrawer::draw(uint64_t seed, uint64_t draw, double eps) {
  unsigned long long s = seed, n = draw;
  long long batch = batch_, seq = seq_;
  int wide = wideMask_ ? 1 : 0;
  CUdeviceptr mask = mask_, pMask = pMask_;
  void *args[] = {&s, &n, &eps, &batch, &seq, &mask, &wide, &pMask};
  const unsigned block = 256;
  auto grid = static_cast<unsigned>((batch_ * seq_ + block - 1) / block);
  LLMC_CU(exec_.driver().cuLaunchKernel(function_, grid, 1, 1, block, 1, 1, 0,
                                        exec_.workStream(), args, nullptr),
          "the masked-diffusion draw");
  return Status::ok();
}

} // namespace llmc
