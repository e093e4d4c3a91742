//===- Fp16GpuTest.cpp - fp16 kernels and the loss-scaled step vs f64 -----===//
//
// `--precision fp16` (docs/precision.md): the generated kernels on f16
// operands and the cuBLASLt f16 GEMMs against the reference evaluator (f64
// arithmetic, rounded to f16 where the IR says so): relative L2 error below
// 1e-2 for f16 results (2e-3 for attention on f16 tensor cores), 1e-5 for
// f32 ones, NaNs where the reference has them (GpuHarness.h). Then gpt2-tiny's whole fp16 training step with the
// dynamic loss scaler, at a scale that goes through and at one that
// overflows (the update is skipped on the device, the scale halved): the
// same parameters, state and counters as the reference. The NVRTC test
// compiles every kernel of that step without a GPU.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include "dialects/llmc/LlmcDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace llmc::test;

namespace {

// The kernel families of the fp16 policy, one @forward each (the tests
// below run them on the GPU; Fp16Kernels.ParseAndCompile needs none).
const char *const kElementwiseAndCasts =
    R"(func.func @forward(%a: tensor<3x300xf16>, %b: tensor<300xf16>, %x: tensor<3x300xf32>)
    -> (tensor<3x300xf16>, tensor<3x300xf16>, tensor<3x300xf16>, tensor<3x300xf16>, tensor<3x300xf32>) {
  %0 = llmc.add %a, %b : (tensor<3x300xf16>, tensor<300xf16>) -> tensor<3x300xf16>
  %1 = llmc.gelu tanh %0 : tensor<3x300xf16>
  %2 = llmc.silu %a : tensor<3x300xf16>
  %3 = llmc.cast %x : tensor<3x300xf32> -> tensor<3x300xf16>
  %4 = llmc.cast %a : tensor<3x300xf16> -> tensor<3x300xf32>
  return %0, %1, %2, %3, %4 : tensor<3x300xf16>, tensor<3x300xf16>, tensor<3x300xf16>, tensor<3x300xf16>, tensor<3x300xf32>
})";

const char *const kCastOverflow =
    R"(func.func @forward(%x: tensor<4x257xf32>) -> tensor<4x257xf16> {
  %0 = llmc.cast %x : tensor<4x257xf32> -> tensor<4x257xf16>
  return %0 : tensor<4x257xf16>
})";

const char *const kNormsSoftmaxAndLoss =
    R"(func.func @forward(%h: tensor<6x96xf16>, %w: tensor<96xf32>, %b: tensor<96xf32>,
                   %t: tensor<6xi64> {gpu_test.range = array<i64: 0, 96>})
    -> (tensor<6x96xf32>, tensor<6x96xf32>, tensor<f32>) {
  %x = llmc.cast %h : tensor<6x96xf16> -> tensor<6x96xf32>
  %0 = llmc.layer_norm %x weight %w bias %b {axis = 1 : i64} : (tensor<6x96xf32>, tensor<96xf32>, tensor<96xf32>) -> tensor<6x96xf32>
  %1 = llmc.softmax %x {axis = -1 : i64} : tensor<6x96xf32>
  %2 = llmc.cross_entropy mean %x, %t : (tensor<6x96xf32>, tensor<6xi64>) -> tensor<f32>
  return %0, %1, %2 : tensor<6x96xf32>, tensor<6x96xf32>, tensor<f32>
})";

const char *const kMatmulWithBias =
    R"(func.func @forward(%x: tensor<2x40x64xf16>, %w: tensor<96x64xf16>, %b: tensor<96xf16>)
    -> (tensor<2x40x96xf16>, tensor<2x40x96xf16>) {
  %0 = llmc.matmul %x, %w {transpose_rhs} : (tensor<2x40x64xf16>, tensor<96x64xf16>) -> tensor<2x40x96xf16>
  %1 = llmc.add %0, %b : (tensor<2x40x96xf16>, tensor<96xf16>) -> tensor<2x40x96xf16>
  return %0, %1 : tensor<2x40x96xf16>, tensor<2x40x96xf16>
})";

const char *const kCausalAttention =
    R"(func.func @forward(%q: tensor<2x4x33x32xf16>, %k: tensor<2x4x33x32xf16>, %v: tensor<2x4x33x32xf16>)
    -> tensor<2x4x33x32xf16> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<2x4x33x32xf16>, tensor<2x4x33x32xf16>, tensor<2x4x33x32xf16>) -> tensor<2x4x33x32xf16>
  return %0 : tensor<2x4x33x32xf16>
})";

// The 16-bit tensor-core attention kernels on f16 (AttentionBf16.cpp,
// AttentionGradBf16.cpp): the bf16 tests' shapes (CodegenGpuTest.cpp,
// CodegenGradGpuTest.cpp) with f16 operands. Head dim 128, causal; GQA with
// an f16 and an i1 mask, dims not multiples of the tiles; the GPT-2 layer.
const char *const kAttentionF16 = R"(func.func @forward(%q: tensor<1x2x100x128xf16>, %k: tensor<1x2x100x128xf16>, %v: tensor<1x2x100x128xf16>)
    -> tensor<1x2x100x128xf16> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>) -> tensor<1x2x100x128xf16>
  return %0 : tensor<1x2x100x128xf16>
})";

const char *const kAttentionF16Mask = R"(func.func @forward(%q: tensor<2x4x45x64xf16>, %k: tensor<2x2x70x64xf16>, %v: tensor<2x2x70x48xf16>,
                   %fm: tensor<45x70xf16>) -> tensor<2x4x45x48xf16> {
  %0 = llmc.attention %q, %k, %v mask %fm : (tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>, tensor<45x70xf16>) -> tensor<2x4x45x48xf16>
  return %0 : tensor<2x4x45x48xf16>
})";

const char *const kAttentionGradF16Shapes = R"(func.func @forward(%q: tensor<2x4x45x64xf16>, %k: tensor<2x4x45x64xf16>, %v: tensor<2x4x45x64xf16>,
                   %do: tensor<2x4x45x64xf16>, %kg: tensor<2x2x70x64xf16>, %vg: tensor<2x2x70x48xf16>,
                   %dog: tensor<2x4x45x48xf16>, %fm: tensor<45x70xf16>, %bm: tensor<2x1x45x70xi1>)
    -> (tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>,
        tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>,
        tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>,
        tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>, tensor<2x4x45xf32>) {
  %o0, %l0 = llmc.attention_lse %q, %k, %v : (tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>) -> (tensor<2x4x45x64xf16>, tensor<2x4x45xf32>)
  %a0, %b0, %c0 = llmc.attention_grad %q, %k, %v, %o0, %l0, %do : (tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45xf32>, tensor<2x4x45x64xf16>) -> (tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>)
  %o1, %l1 = llmc.attention_lse %q, %k, %v {causal} : (tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>) -> (tensor<2x4x45x64xf16>, tensor<2x4x45xf32>)
  %a1, %b1, %c1 = llmc.attention_grad %q, %k, %v, %o1, %l1, %do {causal} : (tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45xf32>, tensor<2x4x45x64xf16>) -> (tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>)
  %o2, %l2 = llmc.attention_lse %q, %kg, %vg mask %fm {causal, scale = 0.2 : f64} : (tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>, tensor<45x70xf16>) -> (tensor<2x4x45x48xf16>, tensor<2x4x45xf32>)
  %a2, %b2, %c2 = llmc.attention_grad %q, %kg, %vg, %o2, %l2, %dog mask %fm {causal, scale = 0.2 : f64} : (tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>, tensor<2x4x45x48xf16>, tensor<2x4x45xf32>, tensor<2x4x45x48xf16>, tensor<45x70xf16>) -> (tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>)
  %o3, %l3 = llmc.attention_lse %q, %kg, %vg mask %bm : (tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>, tensor<2x1x45x70xi1>) -> (tensor<2x4x45x48xf16>, tensor<2x4x45xf32>)
  %a3, %b3, %c3 = llmc.attention_grad %q, %kg, %vg, %o3, %l3, %dog mask %bm : (tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>, tensor<2x4x45x48xf16>, tensor<2x4x45xf32>, tensor<2x4x45x48xf16>, tensor<2x1x45x70xi1>) -> (tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>)
  return %a0, %b0, %c0, %a1, %b1, %c1, %a2, %b2, %c2, %a3, %b3, %c3, %l3
    : tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>,
      tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>, tensor<2x4x45x64xf16>,
      tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>,
      tensor<2x4x45x64xf16>, tensor<2x2x70x64xf16>, tensor<2x2x70x48xf16>, tensor<2x4x45xf32>
})";

const char *const kAttentionGradF16 = R"(func.func @forward(%q: tensor<1x2x100x128xf16>, %k: tensor<1x2x100x128xf16>, %v: tensor<1x2x100x128xf16>, %do: tensor<1x2x100x128xf16>)
    -> (tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>) {
  %o, %l = llmc.attention_lse %q, %k, %v {causal} : (tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>) -> (tensor<1x2x100x128xf16>, tensor<1x2x100xf32>)
  %a, %b, %c = llmc.attention_grad %q, %k, %v, %o, %l, %do {causal} : (tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>, tensor<1x2x100xf32>, tensor<1x2x100x128xf16>) -> (tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>)
  return %a, %b, %c : tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>
})";

const char *const kAttentionGradF16Gpt2 =
    R"(func.func @forward(%q: tensor<2x12x1024x64xf16>, %k: tensor<2x12x1024x64xf16>, %v: tensor<2x12x1024x64xf16>, %do: tensor<2x12x1024x64xf16>)
    -> (tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>) {
  %o, %l = llmc.attention_lse %q, %k, %v {causal} : (tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>) -> (tensor<2x12x1024x64xf16>, tensor<2x12x1024xf32>)
  %a, %b, %c = llmc.attention_grad %q, %k, %v, %o, %l, %do {causal} : (tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>, tensor<2x12x1024xf32>, tensor<2x12x1024x64xf16>) -> (tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>)
  return %o, %a, %b, %c : tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>, tensor<2x12x1024x64xf16>
})";

// f16 attention results against the f64 evaluator (which rounds P to f16
// as the kernels do, not dS): bf16's kernels measured 2.6e-3 relative L2 on
// dQ/dK/dV at the GPT-2 shape, 2.4x the 1.1e-3 of rounding a result to bf16
// (docs/codegen.md). f16 has 3 more mantissa bits, so the same kernels
// should land near 3e-4; 2e-3 (inside the issue's 1e-3..1e-2 band for
// 16-bit operands) leaves 6x, while a dropped tile or a misplaced fragment
// errs by order 1. A NaN where the reference has none fails whatever the
// tolerance (GpuHarness.h).
constexpr Tolerance kF16Attention{1e-5, 2e-3};

TEST(Fp16Kernels, ElementwiseAndCasts) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kElementwiseAndCasts);
}

// Casts to f16 overflow to inf above 65504 as the evaluator's rounding does
// (the loss scaler depends on it): inputs of scale 1e5.
TEST(Fp16Kernels, CastOverflowsToInf) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kCastOverflow, {}, 1e5);
}

// The policy's row kernels read f16 and compute in f32.
TEST(Fp16Kernels, NormsSoftmaxAndLossOnF16) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kNormsSoftmaxAndLoss);
}

// f16 A, B and D on cuBLASLt with f32 accumulation, the bias of a linear
// layer rounded once with the product (the epilogue).
TEST(Fp16Kernels, MatmulWithBias) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kMatmulWithBias);
}

TEST(Fp16Kernels, CausalAttentionForward) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kCausalAttention, kF16Attention);
}

TEST(Fp16Kernels, AttentionTensorCores) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kAttentionF16, kF16Attention);
  checkAgainstReference(kAttentionF16Mask, kF16Attention);
}

TEST(Fp16Kernels, AttentionGradTensorCores) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kAttentionGradF16Shapes, kF16Attention);
  checkAgainstReference(kAttentionGradF16, kF16Attention);
}

TEST(Fp16Kernels, AttentionGradGpt2Size) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kAttentionGradF16Gpt2, kF16Attention);
}

// No GPU needed: every test IR above parses, verifies, runs on the
// reference and compiles with NVRTC, so that a GPU run never finds a test
// that cannot start ("test IR does not parse" was NormsSoftmaxAndLossOnF16's
// failure on the H100: the layer_norm syntax had changed under it). All but
// the GPT-2-sized one, whose CPU reference takes most of a minute: it is
// kAttentionGradF16 at another shape.
TEST(Fp16Kernels, EveryTestIrCompiles) {
  for (const char *ir :
       {kElementwiseAndCasts, kCastOverflow, kNormsSoftmaxAndLoss,
        kMatmulWithBias, kCausalAttention, kAttentionF16, kAttentionF16Mask,
        kAttentionGradF16Shapes, kAttentionGradF16}) {
    SCOPED_TRACE(ir);
    checkCompiles(ir);
  }
}

/// gpt2-tiny.mlir's @train_step under `--precision fp16`: lower-precision,
/// autodiff seeded with the loss scale, AdamW with clipping and the scaler.
/// The scale argument is |N(0, scale)|; the counters small integers.
mlir::func::FuncOp fp16TrainStep(mlir::MLIRContext &context,
                                 mlir::OwningOpRef<mlir::ModuleOp> &module,
                                 double scale) {
  const char *dir = std::getenv("LLMC_TEST_MODELS");
  std::string path =
      std::string(dir ? dir : LLMC_TEST_MODELS_DIR) + "/gpt2-tiny.mlir";
  std::ifstream in(path);
  if (!in)
    return nullptr;
  std::stringstream text;
  text << in.rdbuf();
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  module = mlir::parseSourceString<mlir::ModuleOp>(text.str(), &context);
  if (!module)
    return nullptr;
  mlir::PassManager pm(&context);
  mlir::llmc::LowerPrecisionPassOptions lower;
  lower.precision = "fp16";
  pm.addPass(mlir::llmc::createLowerPrecisionPass(lower));
  mlir::llmc::AutodiffPassOptions autodiff;
  autodiff.lossScale = 65536.0;
  pm.addPass(mlir::llmc::createAutodiffPass(autodiff));
  mlir::llmc::AppendOptimizerPassOptions optimizer;
  optimizer.clipNorm = 1.0;
  pm.addPass(mlir::llmc::createAppendOptimizerPass(optimizer));
  if (mlir::failed(pm.run(*module)))
    return nullptr;
  auto func = module->lookupSymbol<mlir::func::FuncOp>("train_step");
  if (!func)
    return nullptr;
  mlir::Builder b(&context);
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto input = func.getArgAttrOfType<mlir::StringAttr>(i, "llmc.input");
    auto state = func.getArgAttrOfType<mlir::StringAttr>(i, "llmc.state");
    if (input && (input.getValue() == "idx" || input.getValue() == "targets"))
      func.setArgAttr(i, "gpu_test.range", b.getDenseI64ArrayAttr({0, 512}));
    if (input && input.getValue() == "lr") {
      func.setArgAttr(i, "gpu_test.abs", b.getUnitAttr());
      func.setArgAttr(i, "gpu_test.scale", b.getF64FloatAttr(0.01));
    }
    if (!state)
      continue;
    llvm::StringRef kind = state.getValue();
    if (kind == "step" || kind == "amp.growth_tracker" || kind == "amp.skipped")
      func.setArgAttr(i, "gpu_test.range", b.getDenseI64ArrayAttr({1, 3}));
    if (kind == "adamw.m")
      func.setArgAttr(i, "gpu_test.zeros", b.getUnitAttr());
    if (kind == "adamw.v" || kind == "amp.scale") {
      func.setArgAttr(i, "gpu_test.abs", b.getUnitAttr());
      func.setArgAttr(i, "gpu_test.scale",
                      b.getF64FloatAttr(kind == "amp.scale" ? scale : 0.01));
    }
  }
  return func;
}

// The f32 results (new parameters, moments, norm) are computed from f16
// values: where cuBLASLt's f32 sum and the evaluator's exact one lie on
// either side of an f16 rounding boundary they round an ulp apart (2^-11,
// 4.9e-4 relative), and the moments carry the gradients' such differences.
// Measured on an H100 (session 5, before this tolerance): 1.2e-5 to 1.9e-4
// relative L2, no NaN; f32's 1e-5 cannot hold. 1e-3 is 5x the largest
// measured, and about what an ulp of error at every element would reach.
constexpr Tolerance kFp16Step{1e-3, 1e-2};

TEST(Fp16TrainStep, LossScaledStepMatchesReference) {
  LLMC_REQUIRE_GPU();
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func = fp16TrainStep(context, module, 1024.0);
  ASSERT_TRUE(func) << "cannot build the fp16 @train_step of gpt2-tiny.mlir";
  checkFunctionAgainstReference(func, kFp16Step, 0.1);
}

// The diagnostic for a NaN in the step: every value of the plan, in
// program order, against the reference's (GpuHarness.h); the first value
// that differs is printed as `[ first divergence ]`; f32 values at the
// step's tolerance (kFp16Step), NaN and inf positions exactly.
TEST(Fp16TrainStep, EveryValueMatchesReference) {
  LLMC_REQUIRE_GPU();
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func = fp16TrainStep(context, module, 1024.0);
  ASSERT_TRUE(func) << "cannot build the fp16 @train_step of gpt2-tiny.mlir";
  checkEveryValueAgainstReference(func, kFp16Step, 0.1);
}

// A scale near f32's top: the f16 gradients overflow, the norm is inf, and
// both sides keep every parameter and moment, halve the scale and count the
// skipped step.
TEST(Fp16TrainStep, OverflowSkipsTheUpdateOnTheDevice) {
  LLMC_REQUIRE_GPU();
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func = fp16TrainStep(context, module, 1e36);
  ASSERT_TRUE(func) << "cannot build the fp16 @train_step of gpt2-tiny.mlir";
  checkFunctionAgainstReference(func, {}, 0.1);
}

// No GPU needed: every kernel of the fp16 step compiles with NVRTC.
TEST(Fp16TrainStep, CompilesWithNvrtc) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func = fp16TrainStep(context, module, 1024.0);
  ASSERT_TRUE(func) << "cannot build the fp16 @train_step of gpt2-tiny.mlir";
  checkFunctionCompiles(func);
}

} // namespace
