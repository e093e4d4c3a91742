//===- CudnnAttentionTestUtil.h - cuDNN attention on random data -*- C++ -*-===//
//
// Shared by the runtime's cuDNN attention tests (test/gpu) and the
// comparison with the generated kernels (test/gpu/codegen): a device
// session on the primary context, random bf16/f16 inputs in any [b, h, s, d]
// strided layout, cuDNN's forward and backward run on them, and a float64
// reference for chosen (batch, head) pairs. Header-only: the two test
// binaries link different libraries.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_GPU_CUDNNATTENTIONTESTUTIL_H
#define LLMC_TEST_GPU_CUDNNATTENTIONTESTUTIL_H

#include "compiler/common/FloatFormats.h"
#include "runtime/CudaApi.h"
#include "runtime/CudnnAttention.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace llmc::test {

/// Skips with "no CUDA GPU: ..." or "no cuDNN: ..." (a visible message).
#define LLMC_REQUIRE_GPU_AND_CUDNN()                                           \
  do {                                                                         \
    std::string llmcWhy_;                                                      \
    if (!::llmc::gpuAvailable(llmcWhy_))                                       \
      GTEST_SKIP() << "no CUDA GPU: " << llmcWhy_;                             \
    const ::llmc::cuda::CudnnApi *llmcCudnn_ = nullptr;                        \
    ::llmc::Status llmcLoaded_ = ::llmc::cuda::loadCudnn(llmcCudnn_);          \
    if (!llmcLoaded_)                                                          \
      GTEST_SKIP() << "no cuDNN: " << llmcLoaded_.message();                   \
    std::printf("[ cudnn ] cuDNN version %zu\n", llmcCudnn_->cudnnGetVersion()); \
  } while (0)

/// The device's primary context, a stream and the buffers a test allocates.
class DeviceSession {
public:
  Status open() {
    LLMC_RETURN_IF_ERROR(cuda::loadDriver(cu_));
    LLMC_CU(cu_->cuInit(0), "test");
    LLMC_CU(cu_->cuDeviceGet(&device_, 0), "test");
    LLMC_CU(cu_->cuDevicePrimaryCtxRetain(&context_, device_), "test");
    LLMC_CU(cu_->cuCtxSetCurrent(context_), "test");
    LLMC_CU(cu_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "test");
    return Status::ok();
  }
  ~DeviceSession() {
    if (!cu_ || !context_)
      return;
    cu_->cuCtxSetCurrent(context_);
    cu_->cuCtxSynchronize();
    for (CUdeviceptr p : buffers_)
      cu_->cuMemFree(p);
    if (stream_)
      cu_->cuStreamDestroy(stream_);
    cu_->cuDevicePrimaryCtxRelease(device_);
  }
  const cuda::DriverApi &cu() const { return *cu_; }
  CUstream stream() const { return stream_; }

  Status alloc(size_t bytes, CUdeviceptr &out) {
    LLMC_CU(cu_->cuMemAlloc(&out, bytes ? bytes : 1), "test");
    buffers_.push_back(out);
    LLMC_CU(cu_->cuMemsetD8Async(out, 0, bytes ? bytes : 1, stream_), "test");
    return Status::ok();
  }
  Status upload(CUdeviceptr p, const std::vector<uint16_t> &bits) {
    LLMC_CU(cu_->cuStreamSynchronize(stream_), "test");
    LLMC_CU(cu_->cuMemcpyHtoD(p, bits.data(), bits.size() * 2), "test");
    return Status::ok();
  }
  template <typename T>
  Status download(CUdeviceptr p, size_t count, std::vector<T> &out) {
    out.resize(count);
    LLMC_CU(cu_->cuStreamSynchronize(stream_), "test");
    LLMC_CU(cu_->cuMemcpyDtoH(out.data(), p, count * sizeof(T)), "test");
    return Status::ok();
  }
  Status sync() {
    LLMC_CU(cu_->cuStreamSynchronize(stream_), "test");
    return Status::ok();
  }

private:
  const cuda::DriverApi *cu_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::vector<CUdeviceptr> buffers_;
};

/// Elements a [b, h, s, d] view with `strides` spans.
inline size_t spanOf(const Strides4 &dims, const Strides4 &strides) {
  size_t last = 0;
  for (int i = 0; i < 4; ++i)
    last += static_cast<size_t>((dims[i] - 1) * strides[i]);
  return last + 1;
}

inline Strides4 contiguous(const Strides4 &dims) {
  return {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
}

/// One attention problem: host copies (bits of the 16-bit type) of every
/// input, device buffers for inputs and outputs, the descriptors of both
/// directions. q, k and v may share one buffer (`packed`: [B, T, Hq + 2 Hkv,
/// D], the fused qkv projection's output).
struct AttentionCase {
  CudnnAttentionDesc fwd, bwd;
  bool packed = false;
  std::vector<uint16_t> qkvBits, qBits, kBits, vBits, dOBits;
  CUdeviceptr qkv = 0;
  CudnnAttentionArgs args;
  size_t qSpan = 0, kSpan = 0, vSpan = 0, oSpan = 0;

  FloatFormat format() const {
    return fwd.bf16 ? FloatFormat::BF16 : FloatFormat::F16;
  }
  Strides4 qDims() const { return {fwd.b, fwd.hq, fwd.sq, fwd.d}; }
  Strides4 kvDims() const { return {fwd.b, fwd.hkv, fwd.skv, fwd.d}; }
};

inline std::vector<uint16_t> randomBits(size_t n, FloatFormat f,
                                        std::mt19937_64 &rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<uint16_t> v(n);
  for (uint16_t &x : v)
    x = static_cast<uint16_t>(floatToBits(normal(rng), f));
  return v;
}

/// Builds the case: sizes, layout, random inputs uploaded, outputs
/// allocated (o, stats, dq, dk, dv contiguous [b, h, s, d] unless packed,
/// then [B, T, H, D]).
inline Status makeCase(DeviceSession &dev, int64_t b, int64_t hq, int64_t hkv,
                       int64_t t, int64_t d, bool causal, bool bf16,
                       bool packed, uint64_t seed, AttentionCase &c) {
  CudnnAttentionDesc &f = c.fwd;
  f = CudnnAttentionDesc();
  f.bf16 = bf16;
  f.causal = causal;
  f.scale = 1.0 / std::sqrt(static_cast<double>(d));
  f.b = b, f.hq = hq, f.hkv = hkv, f.sq = t, f.skv = t, f.d = d;
  c.packed = packed;
  std::mt19937_64 rng(seed);
  FloatFormat fmt = c.format();
  Strides4 qDims = c.qDims(), kvDims = c.kvDims();
  if (packed) {
    int64_t row = (hq + 2 * hkv) * d;
    f.q = {t * row, d, row, 1};
    f.k = f.q, f.v = f.q;
    f.o = {t * hq * d, d, hq * d, 1};
    f.dK = {t * hkv * d, d, hkv * d, 1};
  } else {
    f.q = contiguous(qDims);
    f.k = contiguous(kvDims), f.v = f.k;
    f.o = f.q;
    f.dK = f.k;
  }
  f.dO = f.o, f.dQ = f.o, f.dV = f.dK;
  c.bwd = f;
  c.bwd.backward = true;
  c.oSpan = spanOf(qDims, f.o);
  size_t kvOut = spanOf(kvDims, f.dK);
  size_t elem = 2;
  if (packed) {
    size_t n = static_cast<size_t>(b * t * (hq + 2 * hkv) * d);
    c.qkvBits = randomBits(n, fmt, rng);
    LLMC_RETURN_IF_ERROR(dev.alloc(n * elem, c.qkv));
    LLMC_RETURN_IF_ERROR(dev.upload(c.qkv, c.qkvBits));
    c.args.q = c.qkv;
    c.args.k = c.qkv + static_cast<CUdeviceptr>(hq * d * elem);
    c.args.v = c.qkv + static_cast<CUdeviceptr>((hq + hkv) * d * elem);
    c.qBits = c.kBits = c.vBits = c.qkvBits;
  } else {
    c.qSpan = spanOf(qDims, f.q), c.kSpan = spanOf(kvDims, f.k);
    c.vSpan = c.kSpan;
    c.qBits = randomBits(c.qSpan, fmt, rng);
    c.kBits = randomBits(c.kSpan, fmt, rng);
    c.vBits = randomBits(c.vSpan, fmt, rng);
    LLMC_RETURN_IF_ERROR(dev.alloc(c.qSpan * elem, c.args.q));
    LLMC_RETURN_IF_ERROR(dev.alloc(c.kSpan * elem, c.args.k));
    LLMC_RETURN_IF_ERROR(dev.alloc(c.vSpan * elem, c.args.v));
    LLMC_RETURN_IF_ERROR(dev.upload(c.args.q, c.qBits));
    LLMC_RETURN_IF_ERROR(dev.upload(c.args.k, c.kBits));
    LLMC_RETURN_IF_ERROR(dev.upload(c.args.v, c.vBits));
  }
  c.dOBits = randomBits(c.oSpan, fmt, rng);
  LLMC_RETURN_IF_ERROR(dev.alloc(c.oSpan * elem, c.args.o));
  LLMC_RETURN_IF_ERROR(dev.alloc(c.oSpan * elem, c.args.dO));
  LLMC_RETURN_IF_ERROR(dev.upload(c.args.dO, c.dOBits));
  LLMC_RETURN_IF_ERROR(dev.alloc(c.oSpan * elem, c.args.dQ));
  LLMC_RETURN_IF_ERROR(dev.alloc(kvOut * elem, c.args.dK));
  LLMC_RETURN_IF_ERROR(dev.alloc(kvOut * elem, c.args.dV));
  LLMC_RETURN_IF_ERROR(
      dev.alloc(static_cast<size_t>(b * hq * t) * 4, c.args.stats));
  return Status::ok();
}

/// Value of element (b, h, s, x) of a strided view over `bits`.
inline double at(const std::vector<uint16_t> &bits, size_t base,
                 const Strides4 &st, int64_t b, int64_t h, int64_t s,
                 int64_t x, FloatFormat f) {
  size_t i = base + static_cast<size_t>(b * st[0] + h * st[1] + s * st[2] + x);
  return bitsToFloat(bits[i], f);
}

/// float64 attention for one (batch, query head): O, lse and, given dO,
/// dQ for this head and this head's share of dK and dV (rows [skv][d]).
struct HeadReference {
  std::vector<double> o, lse, dq, dk, dv;
};

inline HeadReference referenceHead(const AttentionCase &c, int64_t b,
                                   int64_t h) {
  const CudnnAttentionDesc &f = c.fwd;
  FloatFormat fmt = c.format();
  int64_t kh = h / (f.hq / f.hkv), T = f.sq, S = f.skv, D = f.d;
  size_t kBase = c.packed ? static_cast<size_t>(f.hq * D) : 0;
  size_t vBase = c.packed ? static_cast<size_t>((f.hq + f.hkv) * D) : 0;
  auto q = [&](int64_t i, int64_t x) {
    return at(c.qBits, 0, f.q, b, h, i, x, fmt);
  };
  auto k = [&](int64_t j, int64_t x) {
    return at(c.kBits, kBase, f.k, b, kh, j, x, fmt);
  };
  auto v = [&](int64_t j, int64_t x) {
    return at(c.vBits, vBase, f.v, b, kh, j, x, fmt);
  };
  auto dO = [&](int64_t i, int64_t x) {
    return at(c.dOBits, 0, f.dO, b, h, i, x, fmt);
  };
  HeadReference r;
  r.o.assign(T * D, 0), r.lse.assign(T, 0), r.dq.assign(T * D, 0);
  r.dk.assign(S * D, 0), r.dv.assign(S * D, 0);
  std::vector<double> p(S), dp(S);
  for (int64_t i = 0; i < T; ++i) {
    int64_t seen = f.causal ? i + 1 : S;
    double m = -INFINITY;
    for (int64_t j = 0; j < seen; ++j) {
      double s = 0;
      for (int64_t x = 0; x < D; ++x)
        s += q(i, x) * k(j, x);
      p[j] = s * f.scale;
      m = std::max(m, p[j]);
    }
    double l = 0;
    for (int64_t j = 0; j < seen; ++j)
      l += std::exp(p[j] - m);
    r.lse[i] = m + std::log(l);
    for (int64_t j = 0; j < seen; ++j)
      p[j] = std::exp(p[j] - r.lse[i]);
    double rowDot = 0;
    for (int64_t x = 0; x < D; ++x) {
      double o = 0;
      for (int64_t j = 0; j < seen; ++j)
        o += p[j] * v(j, x);
      r.o[i * D + x] = o;
      rowDot += o * dO(i, x);
    }
    for (int64_t j = 0; j < seen; ++j) {
      double s = 0;
      for (int64_t x = 0; x < D; ++x)
        s += dO(i, x) * v(j, x);
      double ds = p[j] * (s - rowDot) * f.scale;
      for (int64_t x = 0; x < D; ++x) {
        r.dq[i * D + x] += ds * k(j, x);
        r.dk[j * D + x] += ds * q(i, x);
        r.dv[j * D + x] += p[j] * dO(i, x);
      }
    }
  }
  return r;
}

/// Relative L2 error of `got` against `want`; NaN when `got` has a
/// non-finite value (so that a NaN never passes a `<` check).
inline double relativeError(const std::vector<double> &got,
                            const std::vector<double> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i]))
      return NAN;
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

/// Reads the (b, h) rows of a [b, h, s, d]-strided 16-bit device tensor.
inline Status readHead(DeviceSession &dev, CUdeviceptr p, const Strides4 &dims,
                       const Strides4 &st, int64_t b, int64_t h, FloatFormat f,
                       std::vector<double> &out) {
  std::vector<uint16_t> all;
  LLMC_RETURN_IF_ERROR(dev.download(p, spanOf(dims, st), all));
  out.assign(static_cast<size_t>(dims[2] * dims[3]), 0);
  for (int64_t s = 0; s < dims[2]; ++s)
    for (int64_t x = 0; x < dims[3]; ++x)
      out[s * dims[3] + x] = at(all, 0, st, b, h, s, x, f);
  return Status::ok();
}

/// Runs cuDNN's forward then backward on the case (plans created here, the
/// workspace allocated once for both).
struct CudnnRun {
  std::unique_ptr<CudnnAttention> fwd, bwd;
  CUdeviceptr workspace = 0;
};

inline Status prepareCudnn(DeviceSession &dev, AttentionCase &c,
                           CudnnRun &run,
                           const CudnnPlanCacheOptions &cache = {}) {
  LLMC_RETURN_IF_ERROR(CudnnAttention::create(c.fwd, run.fwd, cache));
  LLMC_RETURN_IF_ERROR(CudnnAttention::create(c.bwd, run.bwd, cache));
  uint64_t ws = std::max(run.fwd->workspaceBytes(), run.bwd->workspaceBytes());
  std::printf("[ cudnn ] %s: %s, workspace %llu B; %s: %s, workspace %llu B\n",
              describe(c.fwd).c_str(), run.fwd->engineName().c_str(),
              static_cast<unsigned long long>(run.fwd->workspaceBytes()),
              describe(c.bwd).c_str(), run.bwd->engineName().c_str(),
              static_cast<unsigned long long>(run.bwd->workspaceBytes()));
  LLMC_RETURN_IF_ERROR(dev.alloc(ws, run.workspace));
  c.args.workspace = run.workspace;
  return Status::ok();
}

inline Status runCudnn(DeviceSession &dev, AttentionCase &c, CudnnRun &run) {
  LLMC_RETURN_IF_ERROR(run.fwd->run(dev.stream(), c.args));
  LLMC_RETURN_IF_ERROR(run.bwd->run(dev.stream(), c.args));
  return dev.sync();
}

/// A random case on a fresh session (packed q/k/v, same lengths), its plans
/// made and run once: the start of every bitwise test.
inline Status openAndRun(DeviceSession &dev, AttentionCase &c, CudnnRun &run,
                         int64_t b, int64_t h, int64_t t, uint64_t seed,
                         const CudnnPlanCacheOptions &cache = {}) {
  LLMC_RETURN_IF_ERROR(dev.open());
  LLMC_RETURN_IF_ERROR(makeCase(dev, b, h, h, t, 64, /*causal=*/true,
                                /*bf16=*/true, /*packed=*/true, seed, c));
  LLMC_RETURN_IF_ERROR(prepareCudnn(dev, c, run, cache));
  return runCudnn(dev, c, run);
}

/// The bits of every output of the pair: O, the stats, dQ, dK, dV.
struct OutputBits {
  std::vector<uint16_t> o, dq, dk, dv;
  std::vector<uint32_t> stats;
};

inline Status readOutputs(DeviceSession &dev, const AttentionCase &c,
                          OutputBits &out) {
  size_t kn = spanOf(c.kvDims(), c.fwd.dK);
  LLMC_RETURN_IF_ERROR(dev.download(c.args.o, c.oSpan, out.o));
  LLMC_RETURN_IF_ERROR(dev.download(
      c.args.stats, static_cast<size_t>(c.fwd.b * c.fwd.hq * c.fwd.sq),
      out.stats));
  LLMC_RETURN_IF_ERROR(
      dev.download(c.args.dQ, spanOf(c.qDims(), c.fwd.dQ), out.dq));
  LLMC_RETURN_IF_ERROR(dev.download(c.args.dK, kn, out.dk));
  return dev.download(c.args.dV, kn, out.dv);
}

/// Every output bitwise equal; a failure names the tensor and `when`.
inline void expectSameBits(const OutputBits &want, const OutputBits &got,
                           const std::string &when) {
  EXPECT_TRUE(want.o == got.o) << "O differs " << when;
  EXPECT_TRUE(want.stats == got.stats) << "the stats differ " << when;
  EXPECT_TRUE(want.dq == got.dq) << "dQ differs " << when;
  EXPECT_TRUE(want.dk == got.dk) << "dK differs " << when;
  EXPECT_TRUE(want.dv == got.dv) << "dV differs " << when;
}

/// Zeroes the outputs (O, stats, dQ, dK, dV), so that a run must write them.
inline Status clearOutputs(DeviceSession &dev, const AttentionCase &c) {
  const cuda::DriverApi &cu = dev.cu();
  size_t kn = spanOf(c.kvDims(), c.fwd.dK);
  size_t rows = static_cast<size_t>(c.fwd.b * c.fwd.hq * c.fwd.sq);
  std::pair<CUdeviceptr, size_t> all[] = {{c.args.o, c.oSpan * 2},
                                          {c.args.stats, rows * 4},
                                          {c.args.dQ, c.oSpan * 2},
                                          {c.args.dK, kn * 2},
                                          {c.args.dV, kn * 2}};
  for (auto [p, bytes] : all)
    LLMC_CU(cu.cuMemsetD8Async(p, 0, bytes, dev.stream()), "test");
  return dev.sync();
}

/// The bitwise tests' start: one random case (packed q/k/v, causal, bf16),
/// its plans made and run once, the outputs' bits in `first_`.
class CudnnCaseTest : public ::testing::Test {
protected:
  /// Fails the test on an error: call through ASSERT_NO_FATAL_FAILURE.
  void start(int64_t b, int64_t h, int64_t t, uint64_t seed,
             const CudnnPlanCacheOptions &cache = {}) {
    Status st = openAndRun(dev_, c_, run_, b, h, t, seed, cache);
    ASSERT_TRUE(st) << st.message();
    ASSERT_TRUE(st = readOutputs(dev_, c_, first_)) << st.message();
  }

  DeviceSession dev_;
  AttentionCase c_;
  CudnnRun run_;
  OutputBits first_;
};

} // namespace llmc::test

#endif // LLMC_TEST_GPU_CUDNNATTENTIONTESTUTIL_H
