//===- Pipeline.h - The pass list from a model to a step --------*- C++ -*-===//
//
// The passes that turn a loaded model (@forward, already raised by
// ModelLoader) into the @train_step that the code generator lowers
// (docs/training-ir.md). `llmc compile`, `llmc train --device cuda` and
// `llmc-opt --llmc-pipeline` all run exactly this list. Eval plans (`llmc
// compile --eval`, `llmc verify --device cuda` of a loss-only graph) run its
// forward part only.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_PIPELINE_H
#define LLMC_COMPILER_PIPELINE_H

#include "compiler/Train.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

namespace llmc {

/// Raising (llmc-raise on every function): decomposed exporter output to
/// the composite ops. loadModel runs it on every model it reads.
void buildRaisePipeline(mlir::OpPassManager &pm);
mlir::LogicalResult runRaisePipeline(mlir::ModuleOp module);

/// Adds the training pipeline to `pm` (a ModuleOp pass manager).
/// `injectNanOp` (test only): gate that op's output of @forward by the
/// `nan_gate` input (llmc-inject-nan).
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const OptimizerConfig &optimizer,
                           const PrecisionConfig &precision = {},
                           const std::string &injectNanOp = "");

/// Runs the training pipeline on `module`; errors are emitted as
/// diagnostics at the op or function that caused them.
mlir::LogicalResult runTrainingPipeline(mlir::ModuleOp module,
                                        const OptimizerConfig &optimizer,
                                        const PrecisionConfig &precision = {},
                                        const std::string &injectNanOp = "");

/// llmc-lower-precision with `precision`'s options (docs/precision.md): on
/// the forward graph, after the loss is appended and before autodiff.
/// `explain` records every op's decision (llmc.precision_explain).
void addLowerPrecision(mlir::OpPassManager &pm,
                       const PrecisionConfig &precision, bool explain = false);

/// llmc-pad-shapes with `precision`'s padding options (docs/padding.md),
/// or nothing under --no-pad: on the forward graph, after the loss is
/// appended and before precision lowering.
void addPadShapes(mlir::OpPassManager &pm, const PrecisionConfig &precision);

/// The cost table llmc-pad-shapes has for `arch` (sm_8x: sm_80, else
/// sm_90, the yardstick's GPU).
std::string padArchFor(const std::string &arch);

/// The forward-only pipeline of an eval plan: @forward keeps its name and
/// gains a `loss` result (and a `targets` input) when it returns logits.
void buildEvalPipeline(mlir::OpPassManager &pm,
                       const PrecisionConfig &precision = {});
mlir::LogicalResult runEvalPipeline(mlir::ModuleOp module,
                                    const PrecisionConfig &precision = {});

/// The forward part of the pipeline up to llmc-lower-precision, with
/// `explain` on: `llmc compile --explain` runs it on a copy of the model
/// to read every op's precision decision (compiler/PrecisionExplain.h).
mlir::LogicalResult runPrecisionExplainPipeline(
    mlir::ModuleOp module, const PrecisionConfig &precision);

/// Which fusions the kernel pipeline runs (docs/fusion.md); `--no-fuse`
/// turns each off.
struct FusionConfig {
  bool epilogues = true;   // llmc-fuse-epilogues: bias adds into cuBLASLt
  bool elementwise = true; // llmc-fuse-elementwise vertical chains
  bool reductions = true;  // exact casts into row reductions
  bool horizontal = true;  // independent elementwise groups side by side
  bool normPrologue = true; // elementwise work computing a norm's row input
  // Elementwise work reading a norm gradient's dx (the residual-gradient add
  // and cast), computed in the norm kernel's stores (docs/fusion.md).
  bool normEpilogue = true;
  // Bias gradients of a norm gradient's row value (dx, the residual
  // gradient) summed in the norm's row kernel instead of a matmul's
  // cuBLASLt BGRADA/BGRADB, which runs a kernel of its own (~28 us each at
  // GPT-2 124M: docs/fusion.md "Column sums in the norm-gradient kernel").
  bool colSums = true;
  // GELU in the matmul (cuBLASLt GELU_AUX_BIAS): saves 0.08 ms and a launch
  // a layer at GPT-2 124M's MLP (H100, EpilogueGpuBenchmark). It applies
  // gelu to the unrounded product, one rounding fewer than autocast; the
  // CPU step models that and verify's bf16 loss tolerance bounds it
  // (docs/precision.md, "The GELU epilogue's rounding").
  bool geluEpilogue = true;
  // gelu_grad in the c_proj input-gradient matmul (cuBLASLt DGELU): 0.146
  // against 0.221 ms for the GEMM + gelu_grad kernel at GPT-2 124M's MLP
  // (H100, EpilogueGpuBenchmark.DGelu); rounds the product once, as the
  // GELU epilogue does (docs/codegen.md, "DGELU's numerics").
  bool geluGradEpilogue = true;
  // With it, the c_fc bias gradient too (DGELU_BGRAD): off, it loses 0.16 ms
  // a layer; the sum goes to the weight-gradient matmul's BGRADA/BGRADB.
  bool geluGradBiasGrad = false;
  bool biasGradEpilogue = true; // bias gradients in the matmul (cuBLASLt)
  bool strided = true;          // attention reads [B, T, H, D]: no transposes
  bool qkvSlices = true; // attention reads the packed qkv: no split/concat
  bool classifier = true; // llmc-fuse-classifier: loss + gradient, in place

  /// Every rewrite off (`--no-fuse=all`).
  static FusionConfig none() {
    FusionConfig c;
    c.epilogues = c.elementwise = c.reductions = c.horizontal = false;
    c.normPrologue = c.normEpilogue = c.colSums = false;
    c.geluEpilogue = c.biasGradEpilogue = c.strided = c.classifier = false;
    c.qkvSlices = c.geluGradEpilogue = c.geluGradBiasGrad = false;
    return c;
  }
  /// Every rewrite that is bit-exact against the unfused kernels: all but
  /// the cuBLASLt GELU and bias-gradient epilogues, which round once where
  /// the unfused path rounds the product first (docs/codegen.md).
  static FusionConfig exact() {
    FusionConfig c;
    c.geluEpilogue = c.geluGradEpilogue = c.biasGradEpilogue = false;
    c.geluGradBiasGrad = false;
    return c;
  }
};

/// Parses `--no-fuse`'s value, a comma-separated list of elementwise,
/// reductions, horizontal, epilogues (all of them), gelu-epilogue,
/// bias-grad-epilogue, strided, qkv-slices, classifier or all; an error
/// names a bad
/// entry.
mlir::LogicalResult parseNoFuse(llvm::StringRef list, FusionConfig &config,
                                std::string &error);

/// Kernel formation for the CUDA backend (docs/kernel-ir.md): llmc.kernel
/// groups, fused (docs/fusion.md), in-place updates marked. Idempotent;
/// runs on every function of the module.
void buildKernelPipeline(mlir::OpPassManager &pm,
                         const FusionConfig &fusion = {});
mlir::LogicalResult runKernelPipeline(mlir::ModuleOp module,
                                      const FusionConfig &fusion = {});

/// Registers `--llmc-pipeline` (with the optimizer options) and
/// `--llmc-eval-pipeline` for llmc-opt.
/// Step 5b, llmc-rematerialize (docs/memory.md): after canonicalize/CSE
/// (which would merge recomputed copies back), before kernel formation;
/// nothing when `recompute` is inactive. Its budget is judged by
/// plannedPeak under `fusion`.
void addRematerialize(mlir::OpPassManager &pm, const RecomputeConfig &recompute,
                      const FusionConfig &fusion = {});
/// For the CPU evaluator: the kernel-pipeline rewrites that change what a
/// step computes, so that it is the step the GPU runs under `fusion`. Only
/// the GELU and DGELU epilogues do (their gelu and gelu' read the unrounded
/// product; docs/precision.md): kernel formation and those epilogues,
/// bf16/f16 only.
/// Every other fusion is exact and left out (FusionEvalTest).
void addRoundingFusions(mlir::OpPassManager &pm,
                        const PrecisionConfig &precision,
                        const FusionConfig &fusion);
mlir::LogicalResult runRematerialize(mlir::ModuleOp module,
                                     const RecomputeConfig &recompute,
                                     const FusionConfig &fusion = {});

/// The planned device peak of `func` in `module` (which it rewrites: kernel
/// formation and fusion under `fusion`): the arena, scalar slots, cuBLASLt
/// workspace and every fixed cost of runtime/DeviceMemory.h, with one 64 KiB
/// module granule per kernel since no cubin exists yet. What
/// `--memory-budget` bounds.
mlir::FailureOr<uint64_t> plannedPeak(mlir::ModuleOp module,
                                      llvm::StringRef func,
                                      const FusionConfig &fusion = {});

/// Registers llmc-rematerialize with plannedPeak as its planner; call it
/// before mlir::llmc::registerLlmcPasses(), whose registration of the same
/// pass (no planner) then leaves this one in place.
void registerRematerializeWithPlanner();

void registerTrainingPipeline();

} // namespace llmc

#endif // LLMC_COMPILER_PIPELINE_H
