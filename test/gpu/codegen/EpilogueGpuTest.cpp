//===- EpilogueGpuTest.cpp - GELU and bias-gradient cuBLASLt epilogues ----===//
//
// The groups of llmc-fuse-epilogues that carry `llmc.epilogue`
// (passes/MatmulEpilogues.h), one case each: GELU_AUX_BIAS (also through
// HF's view), DGELU (also in HF's layout and through its views),
// DGELU_BGRAD, BGRADB and BGRADA (the bias gradient of a weight-gradient
// matmul, the cotangent its lhs or, in HF's Conv1D layout, its rhs). Each
// is grouped with every epilogue on, runs on the GPU against the CPU
// reference evaluator on the grouped step (bf16 tolerance; NaN/inf never
// pass), and fused against unfused: not bitwise equal, since the epilogue
// applies gelu (gelu') to the fp32 accumulator (+ bias) where the unfused
// path rounds the product to bf16 first; the harness prints the relative
// error between the two. Without a GPU only the grouping, the lowering and
// the NVRTC checks run.
//
// EpilogueGpuBenchmark times GPT-2 124M's shapes (B 16 x T 1024) with and
// without each epilogue, each matmul tuned as the runtime tunes it
// (runtime/MatmulTune.cpp: the heuristic's first 8 answers timed, the
// fastest kept; LLMC_MATMUL_TUNE_LOG=1 prints each choice), and prints a
// table (docs/codegen.md "GELU and bias-gradient epilogues").
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include "dialects/llmc/LlmcDialect.h"

#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace llmc::test;

struct EpilogueCase {
  const char *name;
  const char *epilogue; // the `llmc.epilogue` group the case must form
  const char *mlir;
};
void PrintTo(const EpilogueCase &c, std::ostream *os) { *os << c.name; }

namespace {

const std::vector<EpilogueCase> &cases() {
  static const std::vector<EpilogueCase> all = {
      // fc of a GPT-2 MLP: the pre-activation is returned too (the aux
      // output), as the backward's gelu_grad reads it.
      {"GeluAuxBias", "gelu",
       R"(func.func @forward(%x: tensor<4x32x64xbf16>, %w: tensor<96x64xbf16>, %b: tensor<96xbf16>) -> (tensor<4x32x96xbf16>, tensor<4x32x96xbf16>) {
  %0 = llmc.matmul %x, %w {transpose_rhs} : (tensor<4x32x64xbf16>, tensor<96x64xbf16>) -> tensor<4x32x96xbf16>
  %1 = llmc.add %0, %b : (tensor<4x32x96xbf16>, tensor<96xbf16>) -> tensor<4x32x96xbf16>
  %2 = llmc.gelu tanh %1 : tensor<4x32x96xbf16>
  return %2, %1 : tensor<4x32x96xbf16>, tensor<4x32x96xbf16>
})"},
      // HF GPT-2's Conv1D: the gelu reads the [rows, n] product through a
      // view to [B, T, n] (the group computes it in the product's shape; a
      // reshape after it restores the view), and the view is returned as
      // the backward's pre-activation.
      {"GeluThroughView", "gelu",
       R"(func.func @forward(%x: tensor<128x64xbf16>, %w: tensor<64x96xbf16>, %b: tensor<96xbf16>) -> (tensor<128x96xbf16>, tensor<4x32x96xbf16>) {
  %0 = llmc.matmul %x, %w : (tensor<128x64xbf16>, tensor<64x96xbf16>) -> tensor<128x96xbf16>
  %1 = llmc.add %0, %b : (tensor<128x96xbf16>, tensor<96xbf16>) -> tensor<128x96xbf16>
  %2 = llmc.reshape %1 : tensor<128x96xbf16> -> tensor<4x32x96xbf16>
  %3 = llmc.gelu tanh %2 : tensor<4x32x96xbf16>
  %4 = llmc.reshape %3 : tensor<4x32x96xbf16> -> tensor<128x96xbf16>
  return %4, %2 : tensor<128x96xbf16>, tensor<4x32x96xbf16>
})"},
      // The MLP backward: dh = dy W2 and gelu_grad (DGELU); the fc bias
      // gradient is left to the weight-gradient matmul.
      {"DGelu", "gelu_grad",
       R"(func.func @forward(%pre: tensor<4x32x96xbf16>, %dy: tensor<4x32x64xbf16>, %w2: tensor<64x96xbf16>) -> tensor<4x32x96xbf16> {
  %0 = llmc.matmul %dy, %w2 : (tensor<4x32x64xbf16>, tensor<64x96xbf16>) -> tensor<4x32x96xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<4x32x96xbf16>
  return %1 : tensor<4x32x96xbf16>
})"},
      // HF GPT-2's c_proj ([in, out] weight): dh = dy W^T, 72 rows (no
      // multiple of a tile), the pre-activation with a gelu's range.
      {"DGeluHfLayout", "gelu_grad",
       R"(func.func @forward(%pre: tensor<72x96xbf16> {gpu_test.scale = 3.0}, %dy: tensor<72x64xbf16>, %w: tensor<96x64xbf16>) -> tensor<72x96xbf16> {
  %0 = llmc.matmul %dy, %w {transpose_rhs} : (tensor<72x64xbf16>, tensor<96x64xbf16>) -> tensor<72x96xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<72x96xbf16>
  return %1 : tensor<72x96xbf16>
})"},
      // HF's dynamo export: gelu_grad(view(aux), view(dy W^T)), both
      // [rows, n] viewed as [B, T, n]; the gelu_grad joins the product's
      // group in its shape, reading the aux itself.
      {"DGeluThroughView", "gelu_grad",
       R"(func.func @forward(%aux: tensor<128x96xbf16>, %dy: tensor<128x64xbf16>, %w: tensor<96x64xbf16>) -> tensor<128x96xbf16> {
  %pre = llmc.reshape %aux : tensor<128x96xbf16> -> tensor<4x32x96xbf16>
  %0 = llmc.matmul %dy, %w {transpose_rhs} : (tensor<128x64xbf16>, tensor<96x64xbf16>) -> tensor<128x96xbf16>
  %1 = llmc.reshape %0 : tensor<128x96xbf16> -> tensor<4x32x96xbf16>
  %2 = llmc.gelu_grad tanh %pre, %1 : tensor<4x32x96xbf16>
  %3 = llmc.reshape %2 : tensor<4x32x96xbf16> -> tensor<128x96xbf16>
  return %3 : tensor<128x96xbf16>
})"},
      // The product viewed, the aux not a view: the group reads the aux
      // through a reshape to the product's shape.
      {"DGeluViewOfArgument", "gelu_grad",
       R"(func.func @forward(%pre: tensor<4x32x96xbf16>, %dy: tensor<128x64xbf16>, %w: tensor<64x96xbf16>) -> tensor<4x32x96xbf16> {
  %0 = llmc.matmul %dy, %w : (tensor<128x64xbf16>, tensor<64x96xbf16>) -> tensor<128x96xbf16>
  %1 = llmc.reshape %0 : tensor<128x96xbf16> -> tensor<4x32x96xbf16>
  %2 = llmc.gelu_grad tanh %pre, %1 : tensor<4x32x96xbf16>
  return %2 : tensor<4x32x96xbf16>
})"},
      // With the fc bias gradient (DGELU_BGRAD, FusionConfig::geluGradBiasGrad).
      {"DGeluBGrad", "gelu_grad",
       R"(func.func @forward(%pre: tensor<4x32x96xbf16>, %dy: tensor<4x32x64xbf16>, %w2: tensor<64x96xbf16>) -> (tensor<4x32x96xbf16>, tensor<96xbf16>) {
  %0 = llmc.matmul %dy, %w2 : (tensor<4x32x64xbf16>, tensor<64x96xbf16>) -> tensor<4x32x96xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<4x32x96xbf16>
  %2 = llmc.reduce_sum %1 axes [0, 1] : (tensor<4x32x96xbf16>) -> tensor<96xbf16>
  return %1, %2 : tensor<4x32x96xbf16>, tensor<96xbf16>
})"},
      // A weight gradient dW = c^T x and the bias gradient, c's row sum.
      {"BGradB", "bias_grad_lhs",
       R"(func.func @forward(%c: tensor<4x32x64xbf16>, %x: tensor<128x96xbf16>) -> (tensor<64xbf16>, tensor<64x96xbf16>) {
  %0 = llmc.reduce_sum %c axes [0, 1] : (tensor<4x32x64xbf16>) -> tensor<64xbf16>
  %1 = llmc.reshape %c : tensor<4x32x64xbf16> -> tensor<128x64xbf16>
  %2 = llmc.matmul %1, %x {transpose_lhs} : (tensor<128x64xbf16>, tensor<128x96xbf16>) -> tensor<64x96xbf16>
  return %0, %2 : tensor<64xbf16>, tensor<64x96xbf16>
})"},
      // HF Conv1D (weights [in, out]): dW = x^T c, c the rhs; its row sum.
      {"BGradA", "bias_grad_rhs",
       R"(func.func @forward(%c: tensor<4x32x64xbf16>, %x: tensor<128x96xbf16>) -> (tensor<64xbf16>, tensor<96x64xbf16>) {
  %0 = llmc.reduce_sum %c axes [0, 1] : (tensor<4x32x64xbf16>) -> tensor<64xbf16>
  %1 = llmc.reshape %c : tensor<4x32x64xbf16> -> tensor<128x64xbf16>
  %2 = llmc.matmul %x, %1 {transpose_lhs} : (tensor<128x96xbf16>, tensor<128x64xbf16>) -> tensor<96x64xbf16>
  return %0, %2 : tensor<64xbf16>, tensor<96x64xbf16>
})"},
      // Odd sizes: 1000 rows (no multiple of a tile), 40 columns.
      {"BGradAOdd", "bias_grad_rhs",
       R"(func.func @forward(%c: tensor<1000x40xbf16>, %x: tensor<1000x24xbf16>) -> (tensor<40xbf16>, tensor<24x40xbf16>) {
  %0 = llmc.reduce_sum %c axes [0] : (tensor<1000x40xbf16>) -> tensor<40xbf16>
  %1 = llmc.matmul %x, %c {transpose_lhs} : (tensor<1000x24xbf16>, tensor<1000x40xbf16>) -> tensor<24x40xbf16>
  return %0, %1 : tensor<40xbf16>, tensor<24x40xbf16>
})"},
  };
  return all;
}

class EpilogueGpu : public ::testing::TestWithParam<EpilogueCase> {};

/// Every epilogue on, DGELU and DGELU_BGRAD too (off by default:
/// compiler/Pipeline.h).
llmc::FusionConfig everyEpilogue() {
  llmc::FusionConfig on;
  on.geluGradEpilogue = true;
  on.geluGradBiasGrad = true;
  return on;
}

/// The case's @forward grouped with everyEpilogue(), having formed the
/// case's epilogue (a gtest failure otherwise); null if it does not parse.
mlir::func::FuncOp grouped(const EpilogueCase &c, mlir::MLIRContext &context,
                           mlir::OwningOpRef<mlir::ModuleOp> &module) {
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  module = mlir::parseSourceString<mlir::ModuleOp>(c.mlir, &context);
  EXPECT_TRUE(module) << "test IR does not parse";
  if (!module)
    return nullptr;
  EXPECT_TRUE(succeeded(llmc::runKernelPipeline(*module, everyEpilogue())));
  int formed = 0;
  module->walk([&](mlir::Operation *op) {
    auto e = op->getAttrOfType<mlir::StringAttr>("llmc.epilogue");
    formed += e && e.getValue() == c.epilogue;
  });
  EXPECT_EQ(formed, 1) << c.name << ": no '" << c.epilogue << "' group";
  return module->lookupSymbol<mlir::func::FuncOp>("forward");
}

// The epilogue on the GPU against the evaluator, which models it (gelu and
// gelu' of the unrounded product, docs/precision.md).
TEST_P(EpilogueGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func = grouped(GetParam(), context, module);
  ASSERT_TRUE(func);
  checkFunctionAgainstReference(func, Tolerance{}, 0.5);
}

// Fewer launches fused, and within the bf16 tolerance of the unfused path
// (the harness prints the relative L2 error between the two).
TEST_P(EpilogueGpu, CloseToUnfused) {
  LLMC_REQUIRE_GPU();
  checkFusionConfigsMatch(GetParam().mlir, "forward", everyEpilogue(),
                          llmc::FusionConfig::none(), 0.5, /*bitwise=*/false,
                          Tolerance{});
}

// Without a GPU: the epilogue forms, lowers to its MatmulStep (codegen
// checks the group against its name) and the kernels compile.
TEST_P(EpilogueGpu, CompilesWithNvrtc) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func = grouped(GetParam(), context, module);
  ASSERT_TRUE(func);
  checkFunctionCompiles(func);
}

INSTANTIATE_TEST_SUITE_P(Epilogues, EpilogueGpu, ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

/// One table row: `mlir` per step under `on` and under `off`.
void timeConfigs(const char *what, const std::string &mlir,
                 const llmc::FusionConfig &on, const llmc::FusionConfig &off) {
  auto fused = stepReplayMs(mlir, 20, on);
  auto unfused = stepReplayMs(mlir, 20, off);
  ASSERT_FALSE(fused.empty()) << "the fused timing run failed";
  ASSERT_FALSE(unfused.empty()) << "the unfused timing run failed";
  double f = 0, u = 0, uGemm = 0;
  for (auto &[label, ms] : fused)
    f += ms;
  for (auto &[label, ms] : unfused) {
    u += ms;
    if (label.rfind("matmul", 0) == 0)
      uGemm += ms;
  }
  std::printf("[ epilogue ] %-44s fused %8.4f ms (%zu steps) | unfused "
              "%8.4f ms (%zu steps; GEMM %8.4f + other %8.4f) | saves "
              "%+.4f ms\n",
              what, f, fused.size(), u, unfused.size(), uGemm, u - uGemm,
              u - f);
  EXPECT_LT(fused.size(), unfused.size()) << what << ": nothing was fused";
}

/// The time of `mlir` with every epilogue (DGELU_BGRAD too) and without the
/// GELU and bias-gradient ones, per step, as one table row.
void timeBothWays(const char *what, const std::string &mlir) {
  llmc::FusionConfig off;
  off.geluEpilogue = off.geluGradEpilogue = false;
  off.biasGradEpilogue = false;
  llmc::FusionConfig on;
  on.geluGradEpilogue = true; // on by default since session 9
  on.geluGradBiasGrad = true;
  timeConfigs(what, mlir, on, off);
}

// GPT-2 124M, B 16 x T 1024 (16384 rows), d 768, the MLP 3072 wide.
TEST(EpilogueGpuBenchmark, Gpt2Shapes) {
  LLMC_REQUIRE_GPU();
  timeBothWays(
      "fc fwd: GELU_AUX_BIAS [16384,768]x[768,3072]",
      R"(func.func @forward(%x: tensor<16384x768xbf16>, %w: tensor<3072x768xbf16>, %b: tensor<3072xbf16>) -> (tensor<16384x3072xbf16>, tensor<16384x3072xbf16>) {
  %0 = llmc.matmul %x, %w {transpose_rhs} : (tensor<16384x768xbf16>, tensor<3072x768xbf16>) -> tensor<16384x3072xbf16>
  %1 = llmc.add %0, %b : (tensor<16384x3072xbf16>, tensor<3072xbf16>) -> tensor<16384x3072xbf16>
  %2 = llmc.gelu tanh %1 : tensor<16384x3072xbf16>
  return %2, %1 : tensor<16384x3072xbf16>, tensor<16384x3072xbf16>
})");
  timeBothWays(
      "fc bwd: DGELU_BGRAD [16384,768]x[768,3072]",
      R"(func.func @forward(%pre: tensor<16384x3072xbf16>, %dy: tensor<16384x768xbf16>, %w2: tensor<768x3072xbf16>) -> (tensor<16384x3072xbf16>, tensor<3072xbf16>) {
  %0 = llmc.matmul %dy, %w2 : (tensor<16384x768xbf16>, tensor<768x3072xbf16>) -> tensor<16384x3072xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<16384x3072xbf16>
  %2 = llmc.reduce_sum %1 axes [0] : (tensor<16384x3072xbf16>) -> tensor<3072xbf16>
  return %1, %2 : tensor<16384x3072xbf16>, tensor<3072xbf16>
})");
  // Weight gradients, B 16 x T 1024 = 16384 rows: c [16384, n] the
  // cotangent, x [16384, in] the layer input. [out, in] weights (llmc's
  // recipes) give dW = c^T x (BGRADB); HF GPT-2's Conv1D stores [in, out]
  // and gives dW = x^T c (BGRADA), the four per layer.
  struct WeightGrad {
    const char *what;
    int n, in;
    bool rhs; // c is the matmul's rhs (HF layout)
  } grads[] = {
      {"qkv dW: BGRADB [2304,16384]x[16384,768]", 2304, 768, false},
      {"attn proj dW: BGRADB [768,16384]x[16384,768]", 768, 768, false},
      {"mlp proj dW: BGRADB [768,16384]x[16384,3072]", 768, 3072, false},
      {"HF qkv dW: BGRADA [768,16384]x[16384,2304]", 2304, 768, true},
      {"HF attn proj dW: BGRADA [768,16384]x[16384,768]", 768, 768, true},
      {"HF fc dW: BGRADA [768,16384]x[16384,3072]", 3072, 768, true},
      {"HF mlp proj dW: BGRADA [3072,16384]x[16384,768]", 768, 3072, true}};
  for (const WeightGrad &g : grads) {
    std::string n = std::to_string(g.n), in = std::to_string(g.in);
    std::string c = "tensor<16384x" + n + "xbf16>",
                x = "tensor<16384x" + in + "xbf16>";
    std::string dw = g.rhs ? "tensor<" + in + "x" + n + "xbf16>"
                           : "tensor<" + n + "x" + in + "xbf16>";
    std::string mlir =
        "func.func @forward(%c: " + c + ", %x: " + x + ") -> (tensor<" + n +
        "xbf16>, " + dw + ") {\n"
        "  %0 = llmc.reduce_sum %c axes [0] : (" + c + ") -> tensor<" + n +
        "xbf16>\n" +
        (g.rhs ? "  %1 = llmc.matmul %x, %c {transpose_lhs} : (" + x + ", " +
                     c + ") -> " + dw + "\n"
               : "  %1 = llmc.matmul %c, %x {transpose_lhs} : (" + c + ", " +
                     x + ") -> " + dw + "\n") +
        "  return %0, %1 : tensor<" + n + "xbf16>, " + dw + "\n}\n";
    timeBothWays(g.what, mlir);
  }
}

// DGELU alone (the fc bias gradient left to the weight-gradient matmul's
// BGRADA/BGRADB, as the pipeline does): the c_proj input-gradient GEMM of
// GPT-2 124M's MLP, B 16 x T 1024, with gelu_grad in its epilogue, against
// the same GEMM and the generated gelu_grad kernel, in both weight layouts.
// The pipeline's default fusion both ways, geluGradEpilogue the one
// difference. Then, at the same shape, fused against unfused within the
// bf16 tolerance (the small cases above check both against the evaluator).
TEST(EpilogueGpuBenchmark, DGelu) {
  LLMC_REQUIRE_GPU();
  llmc::FusionConfig on, off;
  on.geluGradEpilogue = true;
  off.geluGradEpilogue = false;
  const std::string recipe =
      R"(func.func @forward(%pre: tensor<16384x3072xbf16>, %dy: tensor<16384x768xbf16>, %w2: tensor<768x3072xbf16>) -> tensor<16384x3072xbf16> {
  %0 = llmc.matmul %dy, %w2 : (tensor<16384x768xbf16>, tensor<768x3072xbf16>) -> tensor<16384x3072xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<16384x3072xbf16>
  return %1 : tensor<16384x3072xbf16>
})";
  // HF's export: c_proj's weight [3072, 768], dy [B, T, 768] (the batch
  // folds into the rows: one GEMM), exactly as llmc compile sees it.
  const std::string hf =
      R"(func.func @forward(%pre: tensor<16x1024x3072xbf16>, %dy: tensor<16x1024x768xbf16>, %w: tensor<3072x768xbf16>) -> tensor<16x1024x3072xbf16> {
  %0 = llmc.matmul %dy, %w {transpose_rhs} : (tensor<16x1024x768xbf16>, tensor<3072x768xbf16>) -> tensor<16x1024x3072xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<16x1024x3072xbf16>
  return %1 : tensor<16x1024x3072xbf16>
})";
  timeConfigs("mlp dgrad: DGELU [16384,768]x[768,3072]", recipe, on, off);
  timeConfigs("HF mlp dgrad: DGELU [16384,768]x[3072,768]^T", hf, on, off);
  checkFusionConfigsMatch(hf, "forward", on, off, 1.0, /*bitwise=*/false,
                          Tolerance{});
}

/// `mlir` per step under `config`: the total and each step, one line.
double timeOne(const char *what, const std::string &mlir,
               const llmc::FusionConfig &config) {
  auto steps = stepReplayMs(mlir, 20, config);
  EXPECT_FALSE(steps.empty()) << what << ": the timing run failed";
  double total = 0;
  std::string parts;
  for (auto &[label, ms] : steps) {
    total += ms;
    char part[160];
    std::snprintf(part, sizeof(part), " | %.4f %s", ms, label.c_str());
    parts += part;
  }
  std::printf("[ mlp bwd ] %-34s %8.4f ms (%zu steps)%s\n", what, total,
              steps.size(), parts.c_str());
  return total;
}

// The c_fc bias gradient wherever it lands (cuBLASLt's BGRADA/BGRADB runs
// a kernel of its own inside the wgrad call): the MLP backward from dh's
// GEMM to the c_fc weight and bias gradients, B 16 x T 1024, in the five
// ways the options allow, in both weight layouts. Then DGELU_BGRAD and
// DGELU + BGRAD on the wgrad against today's step, within the bf16
// tolerance.
TEST(EpilogueGpuBenchmark, MlpBackwardBiasGrad) {
  LLMC_REQUIRE_GPU();
  // HF (Conv1D [in, out]): dh = dy W2^T, dW1 = x^T dpre (BGRADA).
  const std::string hf =
      R"(func.func @forward(%pre: tensor<16384x3072xbf16>, %dy: tensor<16384x768xbf16>, %w2: tensor<3072x768xbf16>, %x: tensor<16384x768xbf16>) -> (tensor<3072xbf16>, tensor<768x3072xbf16>) {
  %0 = llmc.matmul %dy, %w2 {transpose_rhs} : (tensor<16384x768xbf16>, tensor<3072x768xbf16>) -> tensor<16384x3072xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<16384x3072xbf16>
  %2 = llmc.matmul %x, %1 {transpose_lhs} : (tensor<16384x768xbf16>, tensor<16384x3072xbf16>) -> tensor<768x3072xbf16>
  %3 = llmc.reduce_sum %1 axes [0] : (tensor<16384x3072xbf16>) -> tensor<3072xbf16>
  return %3, %2 : tensor<3072xbf16>, tensor<768x3072xbf16>
})";
  // llmc's recipes ([out, in]): dh = dy W2, dW1 = dpre^T x (BGRADB).
  const std::string recipe =
      R"(func.func @forward(%pre: tensor<16384x3072xbf16>, %dy: tensor<16384x768xbf16>, %w2: tensor<768x3072xbf16>, %x: tensor<16384x768xbf16>) -> (tensor<3072xbf16>, tensor<3072x768xbf16>) {
  %0 = llmc.matmul %dy, %w2 : (tensor<16384x768xbf16>, tensor<768x3072xbf16>) -> tensor<16384x3072xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<16384x3072xbf16>
  %2 = llmc.matmul %1, %x {transpose_lhs} : (tensor<16384x3072xbf16>, tensor<16384x768xbf16>) -> tensor<3072x768xbf16>
  %3 = llmc.reduce_sum %1 axes [0] : (tensor<16384x3072xbf16>) -> tensor<3072xbf16>
  return %3, %2 : tensor<3072xbf16>, tensor<3072x768xbf16>
})";
  llmc::FusionConfig today; // gelu_grad kernel, BGRAD on the wgrad
  llmc::FusionConfig dgelu = today; // DGELU, BGRAD on the wgrad
  dgelu.geluGradEpilogue = true;
  llmc::FusionConfig dgeluBgrad = dgelu; // DGELU_BGRAD, plain wgrad
  dgeluBgrad.geluGradBiasGrad = true;
  llmc::FusionConfig dgeluSum = dgelu; // DGELU, the sum a kernel
  dgeluSum.biasGradEpilogue = false;
  llmc::FusionConfig todaySum = today; // gelu_grad kernel, sum a kernel
  todaySum.biasGradEpilogue = false;
  for (auto [layout, mlir] : {std::pair<const char *, const std::string *>{
                                  "HF", &hf},
                              {"recipe", &recipe}}) {
    std::printf("[ mlp bwd ] %s layout, B 16 x T 1024, d 768, 3072 wide\n",
                layout);
    double t = timeOne("gelu_grad kernel + BGRAD wgrad", *mlir, today);
    double a = timeOne("DGELU + BGRAD wgrad", *mlir, dgelu);
    double b = timeOne("DGELU_BGRAD + wgrad", *mlir, dgeluBgrad);
    double c = timeOne("DGELU + wgrad + sum kernel", *mlir, dgeluSum);
    double d = timeOne("gelu_grad kernel + wgrad + sum", *mlir, todaySum);
    std::printf("[ mlp bwd ] %s: against today's %.4f ms: DGELU+BGRAD "
                "%+.4f, DGELU_BGRAD %+.4f, DGELU+sum %+.4f, no BGRAD "
                "%+.4f ms a layer\n",
                layout, t, a - t, b - t, c - t, d - t);
  }
  checkFusionConfigsMatch(hf, "forward", dgeluBgrad, today, 1.0,
                          /*bitwise=*/false, Tolerance{});
  checkFusionConfigsMatch(recipe, "forward", dgelu, todaySum, 1.0,
                          /*bitwise=*/false, Tolerance{});
}

} // namespace
