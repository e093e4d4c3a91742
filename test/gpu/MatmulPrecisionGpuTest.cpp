//===- MatmulPrecisionGpuTest.cpp - TF32 and f16 GEMMs vs the models ------===//
//
// `--precision tf32` and `fp16` (docs/precision.md) against float64:
// - TF32 (CUBLAS_COMPUTE_32F_FAST_TF32): cuBLAS documents no rounding mode
//   for the f32 -> TF32 conversion; the evaluator models round to nearest,
//   ties to even (roundToTf32), as measured on an H100. Ties and near-ties times 1 show the
//   mode directly (the message names the one observed), and a random GEMM
//   is much closer to the model than to exact f32 products.
// - f16 A, B and D with f32 accumulation: within f16's rounding of the
//   exact result; inf where the exact result exceeds 65504; NaN never
//   passes.
//
//===----------------------------------------------------------------------===//
#include "compiler/common/FloatFormats.h"
#include "test/gpu/PlanBuilder.h"

#include <cmath>
#include <cstdio>
#include <cstring>

using namespace llmc;
using namespace llmc::test;

namespace {

std::vector<uint8_t> f32Bytes(const std::vector<float> &v) {
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> f16Bytes(const std::vector<double> &v) {
  std::vector<uint8_t> bytes(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = static_cast<uint16_t>(floatToBits(v[i], FloatFormat::F16));
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

std::vector<double> fromF16(const std::vector<uint8_t> &bytes) {
  std::vector<double> v(bytes.size() / 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    v[i] = bitsToFloat(h, FloatFormat::F16);
  }
  return v;
}

/// Uniform in [-1, 1), deterministic.
std::vector<float> randoms(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 7;
  for (float &x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / float(1 << 23) - 1.0f;
  }
  return v;
}

/// D[m, n] = A[m, k] B[k, n] (row-major), TF32 or not, on the GPU.
std::vector<float> gemmF32(const std::vector<float> &a,
                           const std::vector<float> &b, int64_t m, int64_t n,
                           int64_t k, bool tf32) {
  PlanBuilder builder("tf32");
  builder.rawBuffer("A", BufferRole::Input, {m * k}, DType::F32, f32Bytes(a))
      .rawBuffer("B", BufferRole::Param, {k * n}, DType::F32, f32Bytes(b))
      .buffer("D", BufferRole::Output, {m * n});
  MatmulStep mm;
  mm.m = m;
  mm.n = n;
  mm.k = k;
  mm.tf32 = tf32;
  mm.a = "A";
  mm.b = "B";
  mm.d = "D";
  builder.matmul(mm);
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(builder.build(), {}, executor);
  EXPECT_TRUE(status.isOk()) << status.message();
  if (!status.isOk())
    return {};
  EXPECT_TRUE(executor->replay().isOk());
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(executor->readBuffer("D", bytes).isOk());
  return toFloats(bytes);
}

class MatmulPrecision : public GpuTest {};

TEST_F(MatmulPrecision, Tf32RoundsToNearestEven) {
  // Column 0 of A holds the probes, B's row 0 is ones: D[i][j] = probe_i
  // read as TF32 (every other product is an exact 0). 64^3 so that cuBLASLt
  // picks a tensor-core kernel.
  const int64_t s = 64;
  const double ulp = std::ldexp(1.0, -10); // TF32's ulp in [1, 2)
  const std::vector<double> probes = {
      1024.5,  -1024.5,            // ties: away -> 1025, even/truncate -> 1024
      1025.5,                      // tie: away and even -> 1026, truncate 1025
      1024.25, 1024.75,            // not ties: nearest 1024, 1025
      1 + ulp / 2, 1 + 3 * ulp / 2, // ties at 1
      1 + ulp / 2 + std::ldexp(1.0, -20)};
  std::vector<float> a(s * s, 0.0f), b(s * s, 0.0f);
  for (size_t i = 0; i < probes.size(); ++i)
    a[i * s] = static_cast<float>(probes[i]);
  for (int64_t j = 0; j < s; ++j)
    b[j] = 1.0f;
  std::vector<float> d = gemmF32(a, b, s, s, s, /*tf32=*/true);
  ASSERT_EQ(d.size(), size_t(s * s));
  for (size_t i = 0; i < probes.size(); ++i) {
    double x = probes[i], got = d[i * s];
    float f = static_cast<float>(x);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint32_t truncBits = bits & ~0x1FFFu;
    float trunc;
    std::memcpy(&trunc, &truncBits, 4);
    // The model first: at a tie with an even lower neighbour, ties-to-even
    // and truncation agree.
    const char *mode = got == x                ? "exact (no TF32 rounding)"
                       : got == roundToTf32(x) ? "ties to even"
                       : got == trunc          ? "truncation"
                                               : "another rounding";
    std::printf("[ tf32 ] %.10g x 1 -> %.10g (%s)\n", x, got, mode);
    EXPECT_EQ(got, roundToTf32(x))
        << x << " x 1 gave " << got << ": the GPU rounds by " << mode
        << "; the evaluator's model (roundToTf32) is ties to even";
  }
}

TEST_F(MatmulPrecision, Tf32GemmFollowsTheModel) {
  const int64_t m = 96, n = 80, k = 512;
  std::vector<float> a = randoms(m * k, 11), b = randoms(k * n, 12);
  std::vector<float> d = gemmF32(a, b, m, n, k, /*tf32=*/true);
  std::vector<float> exact = gemmF32(a, b, m, n, k, /*tf32=*/false);
  ASSERT_EQ(d.size(), size_t(m * n));
  double errModel = 0, errExact = 0, errF32 = 0, mag = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double model = 0, ref = 0, sumAbs = 0;
      for (int64_t p = 0; p < k; ++p) {
        model += roundToTf32(a[i * k + p]) * roundToTf32(b[p * n + j]);
        ref += double(a[i * k + p]) * b[p * n + j];
        sumAbs += std::fabs(double(a[i * k + p]) * b[p * n + j]);
      }
      double got = d[i * n + j];
      ASSERT_FALSE(std::isnan(got)) << "D[" << i << "," << j << "]";
      errModel = std::max(errModel, std::fabs(got - model) / sumAbs);
      errExact = std::max(errExact, std::fabs(got - ref) / sumAbs);
      errF32 = std::max(errF32, std::fabs(exact[i * n + j] - ref) / sumAbs);
      mag = std::max(mag, sumAbs);
    }
  std::printf("[ tf32 ] %ldx%ldx%ld: error vs the TF32 model %.3g, vs exact "
              "%.3g (fp32 GEMM vs exact %.3g), relative to sum |a b|\n",
              long(m), long(n), long(k), errModel, errExact, errF32);
  // f32 accumulation of k products: a few 2^-24 per term at most.
  EXPECT_LT(errModel, 1e-5);
  // TF32 operands are off by up to 2^-11 each: far from exact, and the
  // model explains the difference.
  EXPECT_GT(errExact, 1e-5) << "the GEMM did not run in TF32";
  EXPECT_LT(errModel * 10, errExact);
  EXPECT_LT(errF32, 1e-5) << "the fp32 GEMM (tf32 off) must stay exact";
}

TEST_F(MatmulPrecision, F16GemmWithinHalfRounding) {
  const int64_t m = 64, n = 72, k = 256;
  std::vector<float> ra = randoms(m * k, 21), rb = randoms(k * n, 22);
  std::vector<double> a(ra.size()), b(rb.size());
  // Exactly representable in f16; row 0 of A scaled so that its results
  // exceed 65504 (inf in f16).
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = roundToFormat(ra[i] * (i < size_t(k) ? 4000.0 : 1.0),
                         FloatFormat::F16);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = roundToFormat(rb[i] + (rb[i] >= 0 ? 0.5 : -0.5), FloatFormat::F16);
  PlanBuilder builder("f16");
  builder.rawBuffer("A", BufferRole::Input, {m * k}, DType::F16, f16Bytes(a))
      .rawBuffer("B", BufferRole::Param, {k * n}, DType::F16, f16Bytes(b))
      .rawBuffer("D", BufferRole::Output, {m * n}, DType::F16,
                 std::vector<uint8_t>(m * n * 2, 0));
  MatmulStep mm;
  mm.m = m;
  mm.n = n;
  mm.k = k;
  mm.typeA = mm.typeB = mm.typeC = mm.typeD = DType::F16;
  mm.a = "A";
  mm.b = "B";
  mm.d = "D";
  builder.matmul(mm);
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(builder.build(), {}, executor);
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_TRUE(executor->replay().isOk());
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(executor->readBuffer("D", bytes).isOk());
  std::vector<double> d = fromF16(bytes);
  double worst = 0;
  int64_t infs = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0, sumAbs = 0;
      for (int64_t p = 0; p < k; ++p) {
        ref += a[i * k + p] * b[p * n + j];
        sumAbs += std::fabs(a[i * k + p] * b[p * n + j]);
      }
      double got = d[i * n + j];
      ASSERT_FALSE(std::isnan(got)) << "D[" << i << "," << j << "] is NaN";
      double rounded = roundToFormat(ref, FloatFormat::F16);
      if (std::isinf(rounded)) {
        EXPECT_EQ(got, rounded) << "D[" << i << "," << j << "] = " << ref
                                << " overflows f16";
        ++infs;
        continue;
      }
      // One f16 rounding of the result (2^-11 relative) plus f32
      // accumulation, relative to sum |a b|.
      double err = std::fabs(got - ref) / std::max(sumAbs, 1e-30);
      worst = std::max(worst, err);
      EXPECT_LE(std::fabs(got - ref),
                std::ldexp(std::fabs(ref), -11) + 1e-5 * sumAbs)
          << "D[" << i << "," << j << "]";
    }
  std::printf("[ f16 ] %ldx%ldx%ld: worst error %.3g of sum |a b|, %ld "
              "results overflow to inf as the model says\n",
              long(m), long(n), long(k), worst, long(infs));
  EXPECT_GT(infs, 0) << "row 0 was meant to overflow";
}

} // namespace
