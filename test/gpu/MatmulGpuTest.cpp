//===- MatmulGpuTest.cpp - cuBLASLt matmul steps vs a CPU reference -------===//
//
// Row-major semantics of MatmulStep (Plan.h) against a float64 reference, for
// every transpose combination, batches with and without broadcast, C with
// beta, the bias epilogue and bf16 inputs. f32 runs with CUBLAS_COMPUTE_32F
// (no TF32), so the relative error stays below 1e-5.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/PlanBuilder.h"

#include <chrono>
#include <cmath>
#include <cstdio>

using namespace llmc;
using namespace llmc::test;

namespace {

struct Case {
  int64_t m, n, k, batch;
  bool transA, transB;
  bool broadcastB; // strideB = 0: one B for every batch (a shared weight)
  float alpha, beta;
  bool withC, withBias;
  DType inType;
};

std::string describe(const Case &c) {
  char text[200];
  std::snprintf(text, sizeof(text),
                "m=%ld n=%ld k=%ld batch=%ld transA=%d transB=%d bcastB=%d "
                "alpha=%g beta=%g C=%d bias=%d %s",
                long(c.m), long(c.n), long(c.k), long(c.batch), c.transA,
                c.transB, c.broadcastB, c.alpha, c.beta, c.withC, c.withBias,
                dtypeName(c.inType));
  return text;
}

/// Deterministic values in [-1, 1); for bf16, exactly representable in bf16.
std::vector<float> values(size_t count, uint32_t seed, DType type) {
  std::vector<float> v(count);
  uint32_t state = seed * 2654435761u + 1;
  for (float &x : v) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(state >> 8) / float(1 << 23) - 1.0f;
    if (type == DType::BF16) {
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      bits &= 0xffff0000u;
      std::memcpy(&x, &bits, 4);
    }
  }
  return v;
}

std::vector<uint8_t> encode(const std::vector<float> &v, DType type) {
  std::vector<uint8_t> bytes;
  if (type == DType::F32) {
    bytes.resize(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return bytes;
  }
  bytes.resize(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    uint16_t high = static_cast<uint16_t>(bits >> 16);
    std::memcpy(bytes.data() + 2 * i, &high, 2);
  }
  return bytes;
}

/// Runs `c` (replay first, then the plain path) and compares with float64.
void runCase(const Case &c) {
  SCOPED_TRACE(describe(c));
  int64_t strideB = c.broadcastB ? 0 : c.k * c.n;
  size_t sizeA = c.batch * c.m * c.k;
  size_t sizeB = c.broadcastB ? c.k * c.n : c.batch * c.k * c.n;
  size_t sizeD = c.batch * c.m * c.n;
  std::vector<float> a = values(sizeA, 1, c.inType);
  std::vector<float> b = values(sizeB, 2, c.inType);
  std::vector<float> cIn = values(sizeD, 3, DType::F32);
  std::vector<float> bias = values(c.n, 4, DType::F32);

  PlanBuilder builder("matmul");
  builder
      .rawBuffer("A", BufferRole::Input, {int64_t(sizeA)}, c.inType,
                 encode(a, c.inType))
      .rawBuffer("B", BufferRole::Param, {int64_t(sizeB)}, c.inType,
                 encode(b, c.inType))
      .buffer("D", BufferRole::Output, {int64_t(sizeD)});
  if (c.withC)
    builder.buffer("C", BufferRole::Input, {int64_t(sizeD)}, DType::F32, cIn);
  if (c.withBias)
    builder.buffer("bias", BufferRole::Param, {c.n}, DType::F32, bias);
  MatmulStep mm;
  mm.m = c.m;
  mm.n = c.n;
  mm.k = c.k;
  mm.batch = c.batch;
  mm.transA = c.transA;
  mm.transB = c.transB;
  mm.typeA = mm.typeB = c.inType;
  mm.alpha = c.alpha;
  mm.beta = c.beta;
  mm.a = "A";
  mm.b = "B";
  mm.c = c.withC ? "C" : "";
  mm.d = "D";
  mm.bias = c.withBias ? "bias" : "";
  mm.strideB = strideB;
  builder.matmul(mm);

  std::unique_ptr<Executor> executor;
  Status status = Executor::create(builder.build(), {}, executor);
  ASSERT_TRUE(status.isOk()) << status.message();
  status = executor->replay(); // capture first: nothing ran before
  ASSERT_TRUE(status.isOk()) << status.message();
  std::vector<uint8_t> graphBytes, plainBytes;
  ASSERT_TRUE(executor->readBuffer("D", graphBytes).isOk());
  ASSERT_TRUE(executor->runPlain().isOk());
  ASSERT_TRUE(executor->readBuffer("D", plainBytes).isOk());
  EXPECT_EQ(graphBytes, plainBytes) << "graph and plain path differ";
  std::vector<float> d = toFloats(graphBytes);

  double maxErr = 0, maxRef = 0;
  for (int64_t bt = 0; bt < c.batch; ++bt)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          double av = c.transA ? a[bt * c.m * c.k + p * c.m + i]
                               : a[bt * c.m * c.k + i * c.k + p];
          double bv = c.transB ? b[bt * strideB + j * c.k + p]
                               : b[bt * strideB + p * c.n + j];
          sum += av * bv;
        }
        size_t at = bt * c.m * c.n + i * c.n + j;
        double ref = c.alpha * sum;
        if (c.withC)
          ref += c.beta * double(cIn[at]);
        if (c.withBias)
          ref += bias[j];
        maxErr = std::max(maxErr, std::fabs(ref - d[at]));
        maxRef = std::max(maxRef, std::fabs(ref));
      }
  ASSERT_GT(maxRef, 0.0);
  EXPECT_LT(maxErr / maxRef, 1e-5)
      << "max error " << maxErr << " of " << maxRef;
}

class Matmul : public GpuTest {};

TEST_F(Matmul, F32EveryTransposeCombination) {
  for (bool transA : {false, true})
    for (bool transB : {false, true})
      runCase({37, 29, 45, 1, transA, transB, false, 1.0f, 0.0f, false, false,
               DType::F32});
}

TEST_F(Matmul, F32BatchedWithTransposes) {
  runCase({24, 40, 56, 3, false, true, false, 1.0f, 0.0f, false, false,
           DType::F32});
  runCase({24, 40, 56, 4, true, false, false, 0.5f, 0.0f, false, false,
           DType::F32});
  // One weight for every batch, as a linear layer over [batch, seq, d].
  runCase(
      {16, 48, 32, 5, false, true, true, 1.0f, 0.0f, false, false, DType::F32});
}

TEST_F(Matmul, F32AlphaBetaWithC) {
  runCase({33, 17, 65, 2, false, false, false, 0.75f, -1.5f, true, false,
           DType::F32});
}

TEST_F(Matmul, F32BiasEpilogue) {
  runCase(
      {32, 64, 96, 1, false, true, false, 1.0f, 0.0f, false, true, DType::F32});
}

TEST_F(Matmul, Bf16InputsF32Output) {
  runCase({64, 128, 256, 2, false, true, false, 1.0f, 0.0f, false, false,
           DType::BF16});
}

TEST_F(Matmul, LargeGemmTiming) {
  // Reports throughput; checks a sample of entries against float64.
  for (DType type : {DType::F32, DType::BF16}) {
    const int64_t s = 4096;
    std::vector<float> a = values(s * s, 5, type), b = values(s * s, 6, type);
    PlanBuilder builder("big");
    builder.rawBuffer("A", BufferRole::Input, {s, s}, type, encode(a, type))
        .rawBuffer("B", BufferRole::Param, {s, s}, type, encode(b, type))
        .buffer("D", BufferRole::Output, {s, s});
    MatmulStep mm;
    mm.m = mm.n = mm.k = s;
    mm.typeA = mm.typeB = type;
    mm.a = "A";
    mm.b = "B";
    mm.d = "D";
    mm.transB = true;
    builder.matmul(mm);
    std::unique_ptr<Executor> executor;
    Status status = Executor::create(builder.build(), {}, executor);
    ASSERT_TRUE(status.isOk()) << status.message();
    ASSERT_TRUE(executor->replay().isOk());
    float best = 1e9f;
    for (int r = 0; r < 10; ++r) {
      ASSERT_TRUE(executor->replay().isOk());
      float ms = 0;
      ASSERT_TRUE(executor->lastRunMs(ms).isOk());
      best = std::min(best, ms);
    }
    std::printf("[timing] %ld^3 %s GEMM (f32 accumulate, no TF32): %.3f ms, "
                "%.1f TFLOP/s\n",
                long(s), dtypeName(type), best, 2.0 * s * s * s / best / 1e9);
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(executor->readBuffer("D", bytes).isOk());
    std::vector<float> d = toFloats(bytes);
    for (int64_t i = 0; i < s; i += 511) {
      int64_t j = (i * 7) % s;
      double ref = 0, mag = 0;
      for (int64_t p = 0; p < s; ++p) {
        ref += double(a[i * s + p]) * b[j * s + p];
        mag += std::fabs(double(a[i * s + p]) * b[j * s + p]);
      }
      EXPECT_LT(std::fabs(ref - d[i * s + j]), 1e-5 * mag)
          << dtypeName(type) << " D[" << i << "," << j << "]";
    }
  }
}

} // namespace
