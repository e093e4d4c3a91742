//===- GradCheckNNTest.cpp - Gradient rules of the composite ops ----------===//
//
// The fused backward ops (through the rules that emit them and their
// reference kernels) against central differences: gelu, silu, layer_norm
// and rms_norm with and without parameters, softmax, log_softmax,
// attention (causal, GQA, bool/float masks, T != S, a fully masked row,
// a trained float mask),
// rotary (partial, interleaved, learned tables), cross_entropy (every
// reduction, ignored positions), and a whole GPT-2 layer in f64.
//
//===----------------------------------------------------------------------===//
#include "GradCheckUtils.h"

#include <fstream>
#include <regex>
#include <sstream>

using namespace llmc;
using namespace llmc::test;

namespace {

const char *kX = "tensor<2x3x4xf64>";

RefTensor i64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return RefTensor::fromInts(ElementKind::I64, std::move(shape), std::move(v));
}

TEST_F(GradCheck, Activations) {
  for (const char *op : {"gelu erf", "gelu tanh", "silu"}) {
    std::string body = std::string("  %y = llmc.") + op + " %x : " + kX;
    GradCheckOptions opt;
    opt.lo = -3;
    opt.hi = 3;
    EXPECT_EQ(check(lossOf({param("x", kX)}, body, kX), {}, opt), 24) << op;
  }
}

TEST_F(GradCheck, LayerNormWithWeightAndBias) {
  std::string body = "  %y = llmc.layer_norm %x weight %w bias %b : (" +
                     std::string(kX) + ", tensor<4xf64>, tensor<4xf64>) -> " +
                     kX;
  EXPECT_EQ(check(lossOf({param("x", kX), param("w", "tensor<4xf64>"),
                          param("b", "tensor<4xf64>")},
                         body, kX)),
            32);
}

TEST_F(GradCheck, LayerNormOverTwoDimsWithoutParams) {
  std::string body = "  %y = llmc.layer_norm %x {axis = 1 : i64, epsilon = "
                     "0.1 : f64} : (" +
                     std::string(kX) + ") -> " + kX;
  EXPECT_EQ(check(lossOf({param("x", kX)}, body, kX)), 24);
}

TEST_F(GradCheck, LayerNormWeightOnly) {
  std::string body =
      "  %y = llmc.layer_norm %x weight %w {axis = 1 : i64} : (" +
      std::string(kX) + ", tensor<3x4xf64>) -> " + kX;
  EXPECT_EQ(
      check(lossOf({param("x", kX), param("w", "tensor<3x4xf64>")}, body, kX)),
      36);
}

TEST_F(GradCheck, RmsNorm) {
  std::string withWeight = "  %y = llmc.rms_norm %x weight %w : (" +
                           std::string(kX) + ", tensor<4xf64>) -> " + kX;
  EXPECT_EQ(check(lossOf({param("x", kX), param("w", "tensor<4xf64>")},
                         withWeight, kX)),
            28);
  std::string plain = "  %y = llmc.rms_norm %x {epsilon = 0.01 : f64} : (" +
                      std::string(kX) + ") -> " + kX;
  EXPECT_EQ(check(lossOf({param("x", kX)}, plain, kX)), 24);
}

TEST_F(GradCheck, SoftmaxAndLogSoftmax) {
  for (const char *op : {"softmax", "log_softmax"})
    for (const char *axis : {"-1", "0", "1"}) {
      std::string body = std::string("  %y = llmc.") + op +
                         " %x {axis = " + axis + " : i64} : " + kX;
      GradCheckOptions opt;
      opt.lo = -2;
      opt.hi = 2;
      EXPECT_EQ(check(lossOf({param("x", kX)}, body, kX), {}, opt), 24)
          << op << " axis " << axis;
    }
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

/// @forward with attention(q, k, v [mask]) {attrs}, all of q, k, v trained.
std::string attention(const std::string &q, const std::string &kv,
                      const std::string &out, const std::string &mask,
                      const std::string &attrs) {
  std::vector<std::string> args = {param("q", q), param("k", kv),
                                   param("v", kv)};
  std::string operands = "%q, %k, %v", types = q + ", " + kv + ", " + kv;
  if (!mask.empty()) {
    args.push_back(input("m", mask));
    operands += " mask %m";
    types += ", " + mask;
  }
  std::string body = "  %y = llmc.attention " + operands + " " + attrs +
                     " : (" + types + ") -> " + out;
  return lossOf(args, body, out);
}

TEST_F(GradCheck, AttentionCausalGroupedQuery) {
  // 4 query heads over 2 key/value heads: dk, dv sum over each group.
  EXPECT_EQ(check(attention("tensor<1x4x3x4xf64>", "tensor<1x2x3x4xf64>",
                            "tensor<1x4x3x4xf64>", "", "{causal}")),
            48 + 24 + 24);
}

TEST_F(GradCheck, AttentionKeysLongerThanQueries) {
  // T = 2 queries at the end of S = 4 keys (bottom-right causal), scale set.
  EXPECT_GT(check(attention("tensor<2x1x2x3xf64>", "tensor<2x1x4x3xf64>",
                            "tensor<2x1x2x3xf64>", "",
                            "{causal, scale = 0.7 : f64}")),
            0);
}

TEST_F(GradCheck, AttentionBoolMaskWithAFullyMaskedRow) {
  // Query row 1 sees no key: its output is 0 and nothing flows through it.
  RefTensor mask =
      RefTensor::fromInts(ElementKind::I1, {3, 3}, {1, 0, 1, 0, 0, 0, 1, 1, 0});
  EXPECT_GT(check(attention("tensor<1x2x3x4xf64>", "tensor<1x2x3x4xf64>",
                            "tensor<1x2x3x4xf64>", "tensor<3x3xi1>", ""),
                  {{"m", mask}}),
            0);
}

TEST_F(GradCheck, AttentionFloatMask) {
  EXPECT_GT(check(attention("tensor<2x2x3x4xf64>", "tensor<2x1x3x4xf64>",
                            "tensor<2x2x3x4xf64>", "tensor<2x1x1x3xf64>", "")),
            0);
}

/// @forward with attention(q, k, v mask %b) and the mask a parameter: a
/// learned relative-position bias (MPNet, DeBERTa-v2), d(mask) = dS summed
/// over the dims it broadcasts along.
std::string trainedMask(const std::string &q, const std::string &kv,
                        const std::string &mask, const std::string &attrs) {
  std::string body = "  %y = llmc.attention %q, %k, %v mask %b " + attrs +
                     " : (" + q + ", " + kv + ", " + kv + ", " + mask +
                     ") -> " + q;
  return lossOf({param("q", q), param("k", kv), param("v", kv),
                 param("b", mask)},
                body, q);
}

TEST_F(GradCheck, AttentionTrainedMask) {
  // A [1, H, T, S] bias shared by the batch, as MPNet's.
  EXPECT_EQ(check(trainedMask("tensor<2x2x3x4xf64>", "tensor<2x2x3x4xf64>",
                              "tensor<1x2x3x3xf64>", "{scale = 0.6 : f64}")),
            48 + 48 + 48 + 18);
}

TEST_F(GradCheck, AttentionTrainedMaskGroupedCausal) {
  // 4 query heads over 2 key/value heads, causal with T = 3 > S = 2: query
  // row 0 sees no key and passes no gradient to the [T, S] bias.
  EXPECT_EQ(check(trainedMask("tensor<1x4x3x4xf64>", "tensor<1x2x2x4xf64>",
                              "tensor<3x2xf64>", "{causal}")),
            48 + 16 + 16 + 6);
}

//===----------------------------------------------------------------------===//
// rotary
//===----------------------------------------------------------------------===//

TEST_F(GradCheck, RotaryPartialWithLearnedTables) {
  // D = 6 features, the first R = 4 rotate; the [T, R] tables broadcast
  // over batch and heads and are parameters here, so they get gradients.
  const char *x = "tensor<2x2x3x6xf64>", *t = "tensor<3x4xf64>";
  std::string body = std::string("  %y = llmc.rotary %x, %c, %s : (") + x +
                     ", " + t + ", " + t + ") -> " + x;
  EXPECT_EQ(
      check(lossOf({param("x", x), param("c", t), param("s", t)}, body, x)),
      48 + 12 + 12);
}

TEST_F(GradCheck, RotaryInterleaved) {
  const char *x = "tensor<1x2x3x4xf64>", *t = "tensor<1x1x3x4xf64>";
  std::string body = std::string("  %y = llmc.rotary %x, %c, %s "
                                 "{interleaved} : (") +
                     x + ", " + t + ", " + t + ") -> " + x;
  EXPECT_EQ(
      check(lossOf({param("x", x), input("c", t), param("s", t)}, body, x)),
      24 + 12);
}

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

TEST_F(GradCheck, CrossEntropyReductions) {
  // Position 2 is ignored (-100) and must neither count nor get gradient.
  RefTensor targets = i64({2, 3}, {0, 4, -100, 2, 2, 1});
  for (const char *reduction : {"mean", "sum"}) {
    std::string body = std::string("  %y = llmc.cross_entropy ") + reduction +
                       " %l, %t : (tensor<2x3x5xf64>, tensor<2x3xi64>) -> "
                       "tensor<f64>";
    EXPECT_EQ(check(lossOf({param("l", "tensor<2x3x5xf64>"),
                            input("t", "tensor<2x3xi64>")},
                           body, "tensor<f64>"),
                    {{"t", targets}}),
              30)
        << reduction;
  }
  std::string none = "  %y = llmc.cross_entropy none %l, %t {ignore_index = "
                     "2 : i64} : (tensor<2x3x5xf64>, tensor<2x3xi64>) -> "
                     "tensor<2x3xf64>";
  EXPECT_EQ(check(lossOf({param("l", "tensor<2x3x5xf64>"),
                          input("t", "tensor<2x3xi64>")},
                         none, "tensor<2x3xf64>"),
                  {{"t", i64({2, 3}, {0, 4, 3, 2, 2, 1})}}),
            30);
}

//===----------------------------------------------------------------------===//
// A whole model
//===----------------------------------------------------------------------===//

TEST_F(GradCheck, Gpt2LayerInFloat64) {
  // test/models/gpt2-tiny.mlir with f64 in place of f32: embeddings with a
  // tied lm_head, layer norms, attention, GELU MLP and the loss.
  std::ifstream file(LLMC_TEST_MODELS "/gpt2-tiny.mlir");
  ASSERT_TRUE(file.good());
  std::stringstream ss;
  ss << file.rdbuf();
  std::string ir = std::regex_replace(ss.str(), std::regex("f32"), "f64");
  std::vector<int64_t> idx, tgt;
  for (int i = 0; i < 32; ++i) {
    idx.push_back((i * 37) % 512);
    tgt.push_back(i % 5 == 0 ? -100 : (i * 101) % 512);
  }
  GradCheckOptions opt;
  opt.maxPerParam = 6;
  opt.lo = -0.5;
  opt.hi = 0.5;
  // 16 parameters, 6 sampled elements each.
  EXPECT_EQ(check(ir,
                  {{"idx", i64({2, 16}, idx)}, {"targets", i64({2, 16}, tgt)}},
                  opt),
            96);
}

} // namespace
