//===- EvalAttentionTest.cpp - Evaluator: attention, rotary, loss ---------===//
#include "EvalTestUtils.h"

#include "dialects/llmc/LlmcOps.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <cmath>
#include <functional>

using namespace llmc;
using namespace llmc::test;

namespace {

using Attention = EvalTest;

std::vector<double> wave(int n, double f, double phase) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = std::sin(f * i + phase);
  return v;
}

/// Attention written as the definition reads, one (b, h, t) at a time.
/// `bias(b, h, t, s)` is added to the score (-inf masks). A row with every
/// score -inf is zero.
std::vector<double>
naiveAttention(const std::vector<double> &q, const std::vector<double> &k,
               const std::vector<double> &v, int B, int Hq, int Hkv, int T,
               int S, int D, int Dv, double scale,
               const std::function<double(int, int, int, int)> &bias) {
  std::vector<double> out(B * Hq * T * Dv, 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hq; ++h) {
      int g = h / (Hq / Hkv);
      for (int t = 0; t < T; ++t) {
        std::vector<double> p(S);
        double max = -INFINITY;
        for (int s = 0; s < S; ++s) {
          double dot = 0;
          for (int d = 0; d < D; ++d)
            dot += q[((b * Hq + h) * T + t) * D + d] *
                   k[((b * Hkv + g) * S + s) * D + d];
          p[s] = scale * dot + bias(b, h, t, s);
          max = std::max(max, p[s]);
        }
        if (max == -INFINITY)
          continue;
        double sum = 0;
        for (int s = 0; s < S; ++s)
          sum += p[s] = std::exp(p[s] - max);
        for (int s = 0; s < S; ++s)
          for (int d = 0; d < Dv; ++d)
            out[((b * Hq + h) * T + t) * Dv + d] +=
                p[s] / sum * v[((b * Hkv + g) * S + s) * Dv + d];
      }
    }
  return out;
}

TEST_F(Attention, GroupedQueryCausal) {
  // B 1, Hq 4, Hkv 2, T = S = 3, D 2, Dv 3: query heads 0,1 read kv head 0.
  auto q = wave(24, 0.37, 0), k = wave(12, 0.91, 1), v = wave(18, 0.53, 2);
  RefTensor r =
      run1(R"(
    func.func @f(%q: tensor<1x4x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
      %0 = llmc.attention %q, %k, %v {causal} : (tensor<1x4x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x3xf32>) -> tensor<1x4x3x3xf32>
      return %0 : tensor<1x4x3x3xf32>
    })",
           {f32({1, 4, 3, 2}, q), f32({1, 2, 3, 2}, k), f32({1, 2, 3, 3}, v)});
  // Inputs went through f32; compare against the same rounded values.
  q = RefTensor::fromFloats(ElementKind::F32, {24}, q).floats;
  k = RefTensor::fromFloats(ElementKind::F32, {12}, k).floats;
  v = RefTensor::fromFloats(ElementKind::F32, {18}, v).floats;
  expectNear(r,
             naiveAttention(q, k, v, 1, 4, 2, 3, 3, 2, 3, 1 / std::sqrt(2.0),
                            [](int, int, int t, int s) {
                              return s > t ? -INFINITY : 0.0;
                            }),
             1e-6);
  // The first query row sees only key 0: it copies value row 0 of its group.
  EXPECT_NEAR(r.floats[0], v[0], 1e-7);
  EXPECT_NEAR(r.floats[2 * 9], v[9], 1e-7); // head 2 -> kv head 1
}

TEST_F(Attention, CausalWithFewerQueriesThanKeys) {
  // T 2, S 4: query t sees keys s <= t + 2 (the queries are the last ones).
  auto q = wave(4, 0.7, 0.3), k = wave(8, 0.4, 0), v = wave(8, 0.9, 1);
  RefTensor r =
      run1(R"(
    func.func @f(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x4x2xf32>, %v: tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32> {
      %0 = llmc.attention %q, %k, %v {causal, scale = 0.5 : f64} : (tensor<1x1x2x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
      return %0 : tensor<1x1x2x2xf32>
    })",
           {f32({1, 1, 2, 2}, q), f32({1, 1, 4, 2}, k), f32({1, 1, 4, 2}, v)});
  q = RefTensor::fromFloats(ElementKind::F32, {4}, q).floats;
  k = RefTensor::fromFloats(ElementKind::F32, {8}, k).floats;
  v = RefTensor::fromFloats(ElementKind::F32, {8}, v).floats;
  expectNear(r,
             naiveAttention(q, k, v, 1, 1, 1, 2, 4, 2, 2, 0.5,
                            [](int, int, int t, int s) {
                              return s > t + 2 ? -INFINITY : 0.0;
                            }),
             1e-6);
}

TEST_F(Attention, AdditiveFloatMaskBroadcasts) {
  auto q = wave(8, 0.3, 0), k = wave(8, 0.6, 0.5), v = wave(8, 1.1, 0);
  std::vector<double> mask = {0, -1, 2, 0.5};
  RefTensor r = run1(R"(
    func.func @f(%q: tensor<2x1x2x2xf32>, %k: tensor<2x1x2x2xf32>, %v: tensor<2x1x2x2xf32>, %m: tensor<2x2xf32>) -> tensor<2x1x2x2xf32> {
      %0 = llmc.attention %q, %k, %v mask %m : (tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>, tensor<2x2xf32>) -> tensor<2x1x2x2xf32>
      return %0 : tensor<2x1x2x2xf32>
    })",
                     {f32({2, 1, 2, 2}, q), f32({2, 1, 2, 2}, k),
                      f32({2, 1, 2, 2}, v), f32({2, 2}, mask)});
  q = RefTensor::fromFloats(ElementKind::F32, {8}, q).floats;
  k = RefTensor::fromFloats(ElementKind::F32, {8}, k).floats;
  v = RefTensor::fromFloats(ElementKind::F32, {8}, v).floats;
  expectNear(
      r,
      naiveAttention(q, k, v, 2, 1, 1, 2, 2, 2, 2, 1 / std::sqrt(2.0),
                     [&](int, int, int t, int s) { return mask[t * 2 + s]; }),
      1e-6);
}

TEST_F(Attention, FullyMaskedRowIsZero) {
  // i1 keep-mask [T, S]: row 0 keeps key 1 only, row 1 keeps nothing.
  auto q = wave(4, 0.3, 0), k = wave(4, 0.6, 0.5), v = wave(4, 1.1, 0);
  RefTensor r =
      run1(R"(
    func.func @f(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
      %m = llmc.constant dense<[[false, true], [false, false]]> : tensor<2x2xi1>
      %0 = llmc.attention %q, %k, %v mask %m : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<2x2xi1>) -> tensor<1x1x2x2xf32>
      return %0 : tensor<1x1x2x2xf32>
    })",
           {f32({1, 1, 2, 2}, q), f32({1, 1, 2, 2}, k), f32({1, 1, 2, 2}, v)});
  v = RefTensor::fromFloats(ElementKind::F32, {4}, v).floats;
  // Row 0 attends to key 1 alone: its value row. Row 1: zeros, not NaN.
  expectNear(r, {v[2], v[3], 0, 0}, 1e-7);
}

using Rotary = EvalTest;

TEST_F(Rotary, PartialRotateHalf) {
  // D 6, R 4: pairs (0, 2) and (1, 3) rotate by angles a0, a1; 4, 5 pass.
  std::vector<double> x = {1, 2, 3, 4, 5, 6, -1, 0.5, 2, -3, 7, 8};
  double a[2][2] = {{0.3, 0.1}, {1.2, -0.7}}; // [t][pair]
  std::vector<double> cosT, sinT;
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 4; ++i) {
      cosT.push_back(std::cos(a[t][i % 2]));
      sinT.push_back(std::sin(a[t][i % 2]));
    }
  // x: [heads 2, T 2, D 6] with the same rows in both heads; tables [T, R].
  std::vector<double> x2 = x;
  x2.insert(x2.end(), x.begin(), x.end());
  RefTensor r =
      run1(R"(
    func.func @f(%x: tensor<2x2x6xf32>, %c: tensor<2x4xf32>, %s: tensor<2x4xf32>) -> tensor<2x2x6xf32> {
      %0 = llmc.rotary %x, %c, %s : (tensor<2x2x6xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2x6xf32>
      return %0 : tensor<2x2x6xf32>
    })",
           {f32({2, 2, 6}, x2), f32({2, 4}, cosT), f32({2, 4}, sinT)});
  std::vector<double> want;
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < 2; ++t) {
      const double *row = &x[t * 6];
      std::vector<double> y(row, row + 6);
      for (int p = 0; p < 2; ++p) { // rotate the plane (p, p + 2)
        double c = std::cos(a[t][p]), s = std::sin(a[t][p]);
        y[p] = row[p] * c - row[p + 2] * s;
        y[p + 2] = row[p + 2] * c + row[p] * s;
      }
      want.insert(want.end(), y.begin(), y.end());
    }
  expectNear(r, want, 1e-5);
}

TEST_F(Rotary, Interleaved) {
  // GPT-J pairs (0, 1) and (2, 3); tables repeat each angle twice.
  std::vector<double> x = {1, 2, 3, 4};
  double a0 = 0.4, a1 = -1.3;
  std::vector<double> c = {std::cos(a0), std::cos(a0), std::cos(a1),
                           std::cos(a1)};
  std::vector<double> s = {std::sin(a0), std::sin(a0), std::sin(a1),
                           std::sin(a1)};
  RefTensor r = run1(R"(
    func.func @f(%x: tensor<1x4xf32>, %c: tensor<1x4xf32>, %s: tensor<1x4xf32>) -> tensor<1x4xf32> {
      %0 = llmc.rotary %x, %c, %s {interleaved} : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
      return %0 : tensor<1x4xf32>
    })",
                     {f32({1, 4}, x), f32({1, 4}, c), f32({1, 4}, s)});
  expectNear(r,
             {1 * std::cos(a0) - 2 * std::sin(a0),
              2 * std::cos(a0) + 1 * std::sin(a0),
              3 * std::cos(a1) - 4 * std::sin(a1),
              4 * std::cos(a1) + 3 * std::sin(a1)},
             1e-6);
}

using CrossEntropy = EvalTest;

TEST_F(CrossEntropy, ReductionsAndIgnoreIndex) {
  // Three positions of 3 classes; the middle one is ignored (-100).
  std::vector<double> logits = {1, 2, 3, 5, 5, 5, 0, -1, 2};
  std::vector<int64_t> targets = {2, -100, 0};
  auto r = run(R"(
    func.func @f(%l: tensor<3x3xf32>, %t: tensor<3xi64>) -> (tensor<f32>, tensor<f32>, tensor<3xf32>) {
      %0 = llmc.cross_entropy mean %l, %t : (tensor<3x3xf32>, tensor<3xi64>) -> tensor<f32>
      %1 = llmc.cross_entropy sum %l, %t : (tensor<3x3xf32>, tensor<3xi64>) -> tensor<f32>
      %2 = llmc.cross_entropy none %l, %t : (tensor<3x3xf32>, tensor<3xi64>) -> tensor<3xf32>
      return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<3xf32>
    })",
               {f32({3, 3}, logits), i64({3}, targets)});
  ASSERT_EQ(r.size(), 3u) << diagnostics;
  double l0 = std::log(std::exp(1) + std::exp(2) + std::exp(3)) - 3;
  double l2 = std::log(std::exp(0) + std::exp(-1) + std::exp(2)) - 0;
  expectNear(r[0], {(l0 + l2) / 2}, 1e-6); // mean over the 2 counted
  expectNear(r[1], {l0 + l2}, 1e-6);
  expectNear(r[2], {l0, 0, l2}, 1e-6);
}

TEST_F(CrossEntropy, CustomIgnoreIndexAndAllIgnored) {
  auto r = run(R"(
    func.func @f(%l: tensor<2x2xf32>, %t: tensor<2xi32>) -> (tensor<f32>, tensor<f32>) {
      %0 = llmc.cross_entropy mean %l, %t {ignore_index = 1 : i64} : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>
      %a = llmc.constant dense<1> : tensor<2xi32>
      %1 = llmc.cross_entropy mean %l, %a {ignore_index = 1 : i64} : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>
      return %0, %1 : tensor<f32>, tensor<f32>
    })",
               {f32({2, 2}, {0, 0, 3, 1}),
                RefTensor::fromInts(ElementKind::I32, {2}, {1, 0})});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  expectNear(r[0], {std::log(std::exp(3) + std::exp(1)) - 3}, 1e-6);
  expectNear(r[1], {NAN}, 0); // mean over nothing: 0 / 0
}

TEST_F(CrossEntropy, TargetOutOfRangeIsAnError) {
  auto r = run(R"(
    func.func @f(%l: tensor<2x3xf32>, %t: tensor<2xi64>) -> tensor<f32> {
      %0 = llmc.cross_entropy mean %l, %t : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
      return %0 : tensor<f32>
    })",
               {f32({2, 3}, {0, 0, 0, 0, 0, 0}), i64({2}, {0, 3})});
  EXPECT_TRUE(r.empty());
  EXPECT_NE(diagnostics.find("target 3 at position 1 is out of range for 3 "
                             "classes"),
            std::string::npos)
      << diagnostics;
}

// llmc-fold-attention-transposes on a GQA training block (k, v with 2
// heads of 4, bf16): the rewritten IR evaluates bitwise as the original
// (seq_major is addressing only), and the pass did rewrite it.
TEST_F(Attention, SeqMajorEvaluatesAsTransposes) {
  const std::string ir = R"(
    func.func @f(%q: tensor<2x5x4x8xbf16>, %k: tensor<2x5x2x8xbf16>, %v: tensor<2x5x2x8xbf16>, %dy: tensor<2x5x4x8xbf16>) -> (tensor<2x5x4x8xbf16>, tensor<2x5x4x8xbf16>, tensor<2x5x2x8xbf16>, tensor<2x5x2x8xbf16>) {
      %qt = llmc.transpose %q [0, 2, 1, 3] : (tensor<2x5x4x8xbf16>) -> tensor<2x4x5x8xbf16>
      %kt = llmc.transpose %k [0, 2, 1, 3] : (tensor<2x5x2x8xbf16>) -> tensor<2x2x5x8xbf16>
      %vt = llmc.transpose %v [0, 2, 1, 3] : (tensor<2x5x2x8xbf16>) -> tensor<2x2x5x8xbf16>
      %dyt = llmc.transpose %dy [0, 2, 1, 3] : (tensor<2x5x4x8xbf16>) -> tensor<2x4x5x8xbf16>
      %o, %lse = llmc.attention_lse %qt, %kt, %vt {causal} : (tensor<2x4x5x8xbf16>, tensor<2x2x5x8xbf16>, tensor<2x2x5x8xbf16>) -> (tensor<2x4x5x8xbf16>, tensor<2x4x5xf32>)
      %y = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x5x8xbf16>) -> tensor<2x5x4x8xbf16>
      %dq, %dk, %dv = llmc.attention_grad %qt, %kt, %vt, %o, %lse, %dyt {causal} : (tensor<2x4x5x8xbf16>, tensor<2x2x5x8xbf16>, tensor<2x2x5x8xbf16>, tensor<2x4x5x8xbf16>, tensor<2x4x5xf32>, tensor<2x4x5x8xbf16>) -> (tensor<2x4x5x8xbf16>, tensor<2x2x5x8xbf16>, tensor<2x2x5x8xbf16>)
      %a = llmc.transpose %dq [0, 2, 1, 3] : (tensor<2x4x5x8xbf16>) -> tensor<2x5x4x8xbf16>
      %b = llmc.transpose %dk [0, 2, 1, 3] : (tensor<2x2x5x8xbf16>) -> tensor<2x5x2x8xbf16>
      %c = llmc.transpose %dv [0, 2, 1, 3] : (tensor<2x2x5x8xbf16>) -> tensor<2x5x2x8xbf16>
      return %y, %a, %b, %c : tensor<2x5x4x8xbf16>, tensor<2x5x4x8xbf16>, tensor<2x5x2x8xbf16>, tensor<2x5x2x8xbf16>
    })";
  auto bf16 = [](std::vector<int64_t> shape, int n, double f) {
    return RefTensor::fromFloats(ElementKind::BF16, std::move(shape),
                                 wave(n, f, 0.3 * f));
  };
  std::vector<RefTensor> args = {bf16({2, 5, 4, 8}, 320, 0.37),
                                 bf16({2, 5, 2, 8}, 160, 0.91),
                                 bf16({2, 5, 2, 8}, 160, 0.53),
                                 bf16({2, 5, 4, 8}, 320, 0.29)};
  std::vector<RefTensor> before = run(ir, args);
  ASSERT_EQ(before.size(), 4u) << diagnostics;

  mlir::func::FuncOp func = parse(ir);
  ASSERT_TRUE(func);
  mlir::PassManager pm(&context);
  pm.addNestedPass<mlir::func::FuncOp>(
      mlir::llmc::createFoldAttentionTransposesPass());
  ASSERT_TRUE(mlir::succeeded(pm.run(*module)));
  int transposes = 0, seqMajor = 0;
  func.walk([&](mlir::Operation *op) {
    transposes += mlir::isa<mlir::llmc::TransposeOp>(op);
    seqMajor += op->hasAttr("seq_major");
  });
  EXPECT_EQ(transposes, 0);
  EXPECT_EQ(seqMajor, 2);
  auto after = evaluate(func, args);
  ASSERT_TRUE(mlir::succeeded(after));
  ASSERT_EQ(after->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*after)[i].shape, before[i].shape) << "result " << i;
    EXPECT_EQ((*after)[i].floats, before[i].floats) << "result " << i;
  }
}

} // namespace
