//===- Pipeline.cpp - The ordered pass list from a model to a step --------===//
//
// One function that reads top to bottom (STYLE.md §3), registered as
// `--llmc-pipeline`:
//
//   0. llmc-raise            buildRaisePipeline; loadModel runs it on every
//                            model it reads (compiler/ModelLoader.cpp), so
//                            that every command sees the same IR; the
//                            registered pipelines start with it (a no-op on
//                            raised IR)
//   1. llmc-append-loss      only when @forward returns no loss (logits)
//   1a. llmc-pad-shapes      nice-number padding (docs/padding.md; off with
//                            --no-pad), masks keep the results
//   1b. llmc-lower-precision casts for mixed precision (--precision), on
//                            @forward so that autodiff gives the backward
//                            the same casts (docs/precision.md)
//   2. llmc-autodiff         @forward => @train_step (loss, grads)
//  2a. llmc-accumulate-gradients  with --tokens-per-step: @accumulate_step
//                            and the apply step (docs/memory.md)
//   3. llmc-append-optimizer grads => updated params and state (llmc.next)
//   4. canonicalize, cse     fold what autodiff left (zero adds, reshapes)
//  4a. llmc-fold-position-gathers  position embeddings: a window of the
//                            table and a batch sum instead of a gather and
//                            a six-launch scatter (after cleanup: the
//                            position ids are a folded constant by then)
//   5. llmc-batch-adamw      the per-parameter AdamW updates into one
//                            multi-tensor update (after cse, so that the
//                            clip coefficient's casts are one value per type)
//  5b. llmc-rematerialize    activation checkpointing under --memory-budget
//                            (addRematerialize; compileModule runs it between
//                            the two pipelines, since it needs the fusion
//                            config): after cse, which would merge the
//                            recomputed copies back (every llmc op is Pure),
//                            and before kernel formation, so that the copies
//                            fuse like the originals
//
// Kernel formation (buildKernelPipeline, docs/kernel-ir.md) follows, for the
// CUDA backend only (the CPU evaluator runs the step as it is):
//
//   5a. llmc-fold-attention-transposes, llmc-fold-qkv-slices: attention
//                            reads [B, T, H, D] and the packed qkv in place
//                            (docs/fusion.md; --no-fuse=strided,qkv-slices)
//   6. llmc-form-kernels     every compute op in an llmc.kernel of its own
//   7. llmc-fuse-epilogues   bias adds into their matmul's group
//  7b. llmc-fuse-elementwise elementwise chains, casts into reductions,
//                            independent elementwise groups side by side
//   8. llmc-mark-in-place    llmc.next results written into their argument
//   9. llmc-mark-scalar-slots lr, step and loss as device scalar slots
//
// `--llmc-pipeline` and `--llmc-eval-pipeline` end with it: they show what
// `llmc compile` lowers.
//
// The eval pipeline (`--llmc-eval-pipeline`) is steps 1 (with 1a, 1b) and 4: @forward
// with its loss, no backward pass and no optimizer. It is what a loss needs
// when nothing is trained (validation, `llmc verify` of a graph that cannot
// be differentiated), and it is a prefix of the training pipeline, so both
// compute the loss with the same ops.
//
//===----------------------------------------------------------------------===//
#include "compiler/Pipeline.h"
#include "compiler/codegen/PlanBuilder.h"
#include "compiler/codegen/ShareKernels.h"
#include "passes/Passes.h"
#include "runtime/DeviceMemory.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace llmc {

namespace {

/// Step 1: a loss for a @forward that ends in logits.
void addAppendLoss(mlir::OpPassManager &pm) {
  mlir::llmc::AppendLossPassOptions loss;
  loss.ifNoLoss = true;
  pm.addPass(mlir::llmc::createAppendLossPass(loss));
}

/// Step 4.
void addCleanup(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

} // namespace

void buildRaisePipeline(mlir::OpPassManager &pm) {
  pm.addNestedPass<mlir::func::FuncOp>(mlir::llmc::createRaisePass());
  // After raising, which matches attention's explicit transpose of k and
  // forms the rotary.
  pm.addNestedPass<mlir::func::FuncOp>(
      mlir::llmc::createFoldMatmulTransposesPass());
  pm.addNestedPass<mlir::func::FuncOp>(
      mlir::llmc::createSinkRotaryTransposesPass());
}

mlir::LogicalResult runRaisePipeline(mlir::ModuleOp module) {
  mlir::PassManager pm(module->getContext());
  buildRaisePipeline(pm);
  return pm.run(module);
}

std::string padArchFor(const std::string &arch) {
  return llvm::StringRef(arch).starts_with("sm_8") ? "sm_80" : "sm_90";
}

void addPadShapes(mlir::OpPassManager &pm, const PrecisionConfig &precision) {
  if (!precision.pad)
    return;
  mlir::llmc::PadShapesPassOptions pad;
  pad.arch = precision.padArch;
  // fp16 tiles like bf16 (2-byte elements on the same tensor cores).
  pad.precision = precision.precision == "bf16" || precision.precision == "fp16"
                      ? "bf16"
                      : "fp32";
  pad.always = precision.padAlways;
  pad.dims = precision.padDims;
  pm.addPass(mlir::llmc::createPadShapesPass(pad));
}

void addLowerPrecision(mlir::OpPassManager &pm,
                       const PrecisionConfig &precision, bool explain) {
  mlir::llmc::LowerPrecisionPassOptions lower;
  lower.precision = precision.precision;
  lower.mutation = precision.mutation;
  lower.explain = explain;
  pm.addPass(mlir::llmc::createLowerPrecisionPass(lower));
}

void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const OptimizerConfig &optimizer,
                           const PrecisionConfig &precision,
                           const std::string &injectNanOp) {
  addAppendLoss(pm);
  // Test only (--debug-inject-nan): on the forward graph, before autodiff
  // and kernel formation, so the backward sees the NaN and fusion keeps it.
  if (!injectNanOp.empty()) {
    mlir::llmc::InjectNanPassOptions inject;
    inject.op = injectNanOp;
    pm.addPass(mlir::llmc::createInjectNanPass(inject));
  }
  addPadShapes(pm, precision);
  addLowerPrecision(pm, precision);

  mlir::llmc::AutodiffPassOptions autodiff;
  autodiff.keepForward = false;
  if (precision.precision == "fp16")
    autodiff.lossScale = precision.lossScaleInit;
  pm.addPass(mlir::llmc::createAutodiffPass(autodiff));
  // --tokens-per-step: @accumulate_step per micro-batch, and @train_step
  // becomes the apply step that the optimizer is appended to.
  if (optimizer.accumulate)
    pm.addPass(mlir::llmc::createAccumulateGradientsPass());

  mlir::llmc::AppendOptimizerPassOptions opt;
  opt.optimizer = optimizer.kind;
  opt.beta1 = optimizer.beta1;
  opt.beta2 = optimizer.beta2;
  opt.epsilon = optimizer.epsilon;
  opt.weightDecay = optimizer.weightDecay;
  opt.decayMinRank = optimizer.decayMinRank;
  opt.momentum = optimizer.momentum;
  opt.clipNorm = optimizer.clipNorm;
  opt.lossScaleGrowthInterval = precision.lossScaleGrowthInterval;
  pm.addPass(mlir::llmc::createAppendOptimizerPass(opt));

  addCleanup(pm);
  // After autodiff and cleanup: the position ids are a folded constant and
  // each gather has its gather_grad (docs/codegen.md "scatter").
  pm.addNestedPass<mlir::func::FuncOp>(
      mlir::llmc::createFoldPositionGathersPass());
  if (optimizer.multiTensor)
    pm.addNestedPass<mlir::func::FuncOp>(mlir::llmc::createBatchAdamWPass());
}

mlir::LogicalResult runTrainingPipeline(mlir::ModuleOp module,
                                        const OptimizerConfig &optimizer,
                                        const PrecisionConfig &precision,
                                        const std::string &injectNanOp) {
  mlir::PassManager pm(module->getContext());
  buildTrainingPipeline(pm, optimizer, precision, injectNanOp);
  return pm.run(module);
}

void buildEvalPipeline(mlir::OpPassManager &pm,
                       const PrecisionConfig &precision) {
  addAppendLoss(pm);
  addPadShapes(pm, precision);
  addLowerPrecision(pm, precision);
  addCleanup(pm);
}

mlir::LogicalResult runEvalPipeline(mlir::ModuleOp module,
                                    const PrecisionConfig &precision) {
  mlir::PassManager pm(module->getContext());
  buildEvalPipeline(pm, precision);
  return pm.run(module);
}

mlir::LogicalResult runPrecisionExplainPipeline(
    mlir::ModuleOp module, const PrecisionConfig &precision) {
  mlir::PassManager pm(module->getContext());
  addAppendLoss(pm);
  addPadShapes(pm, precision);
  addLowerPrecision(pm, precision, /*explain=*/true);
  return pm.run(module);
}

/// Steps 6-9: fusion decides what runs together before in-place does, since
/// a fused group reads more than each of its ops.
void buildKernelPipeline(mlir::OpPassManager &pm, const FusionConfig &fusion) {
  if (fusion.strided)
    pm.addNestedPass<mlir::func::FuncOp>(
        mlir::llmc::createFoldAttentionTransposesPass());
  // After the transposes: it needs seq_major attention.
  if (fusion.strided && fusion.qkvSlices)
    pm.addNestedPass<mlir::func::FuncOp>(
        mlir::llmc::createFoldQkvSlicesPass());
  pm.addNestedPass<mlir::func::FuncOp>(mlir::llmc::createFormKernelsPass());
  if (fusion.epilogues) {
    mlir::llmc::FuseEpiloguesPassOptions o;
    o.gelu = fusion.geluEpilogue;
    o.geluGrad = fusion.geluGradEpilogue;
    o.geluGradBias = fusion.geluGradBiasGrad;
    o.biasGrad = fusion.biasGradEpilogue;
    pm.addNestedPass<mlir::func::FuncOp>(
        mlir::llmc::createFuseEpiloguesPass(o));
  }
  if (fusion.elementwise || fusion.reductions || fusion.horizontal ||
      fusion.normPrologue || fusion.normEpilogue || fusion.colSums) {
    mlir::llmc::FuseElementwisePassOptions o;
    o.vertical = fusion.elementwise;
    o.reductions = fusion.reductions;
    o.horizontal = fusion.horizontal;
    o.normPrologue = fusion.normPrologue;
    o.normEpilogue = fusion.normEpilogue;
    o.colSums = fusion.colSums;
    pm.addNestedPass<mlir::func::FuncOp>(
        mlir::llmc::createFuseElementwisePass(o));
  }
  if (fusion.classifier)
    pm.addNestedPass<mlir::func::FuncOp>(
        mlir::llmc::createFuseClassifierPass());
  pm.addNestedPass<mlir::func::FuncOp>(mlir::llmc::createMarkInPlacePass());
  pm.addNestedPass<mlir::func::FuncOp>(mlir::llmc::createMarkScalarSlotsPass());
}

void addRematerialize(mlir::OpPassManager &pm, const RecomputeConfig &recompute,
                      const FusionConfig &fusion) {
  if (!recompute.active())
    return;
  mlir::llmc::RematerializePassOptions o;
  o.budget = recompute.budget;
  o.levels = recompute.levels;
  // Four times the pass's default: a budget between two levels recomputes
  // up to the next cut, so finer levels recompute less (GPT-2 124M bf16
  // B 16 at the budget that halves its activation memory: 57 values, 2.28
  // ms modelled at 24 levels, 54 values, 2.20 ms at 48), for a few more
  // planner runs (docs/memory.md, "The order").
  o.maxLevels = 48;
  pm.addPass(mlir::llmc::createRematerializePass(
      o, [fusion](mlir::ModuleOp module, llvm::StringRef func) {
        return plannedPeak(module, func, fusion);
      }));
}

void addRoundingFusions(mlir::OpPassManager &pm,
                        const PrecisionConfig &precision,
                        const FusionConfig &fusion) {
  bool narrow = precision.precision == "bf16" || precision.precision == "fp16";
  if (!narrow || !fusion.epilogues ||
      !(fusion.geluEpilogue || fusion.geluGradEpilogue))
    return;
  pm.addNestedPass<mlir::func::FuncOp>(mlir::llmc::createFormKernelsPass());
  mlir::llmc::FuseEpiloguesPassOptions o;
  o.gelu = fusion.geluEpilogue;
  // DGELU reads the unrounded product too. Its bias gradient (BGRAD) would
  // sum unrounded values where the evaluator sums the rounded gelu_grad; it
  // is off by default and left out here (docs/precision.md).
  o.geluGrad = fusion.geluGradEpilogue;
  o.biasGrad = false;
  pm.addNestedPass<mlir::func::FuncOp>(
      mlir::llmc::createFuseEpiloguesPass(o));
}

mlir::LogicalResult runRematerialize(mlir::ModuleOp module,
                                     const RecomputeConfig &recompute,
                                     const FusionConfig &fusion) {
  mlir::PassManager pm(module->getContext());
  addRematerialize(pm, recompute, fusion);
  return pm.run(module);
}

mlir::FailureOr<uint64_t> plannedPeak(mlir::ModuleOp module,
                                      llvm::StringRef name,
                                      const FusionConfig &fusion) {
  // One module granule per kernel (DeviceMemory.cpp rounds each cubin up to
  // 64 KiB; llmc's cubins fit one): the cubins come after NVRTC.
  constexpr uint64_t kModuleGranule = 64ull << 10;
  if (mlir::failed(runKernelPipeline(module, fusion)))
    return mlir::failure();
  auto func = module.lookupSymbol<mlir::func::FuncOp>(name);
  if (!func)
    return mlir::failure();
  // Attention marked for cuDNN (AttentionBackend.h) lowers to cuDNN steps
  // here too, so the report below holds their modelled workspace.
  auto lowered = codegen::lowerFunction(func, codegen::CodegenOptions());
  if (mlir::failed(lowered))
    return mlir::failure();
  codegen::PlanBuildOptions options;
  options.initialData = false; // the layout is the same; the draws are slow
  // Gradient accumulation: the accumulate step runs in one arena with the
  // apply step (@train_step), so the budget bounds the plan of both, as
  // compileModule builds it.
  auto apply = module.lookupSymbol<mlir::func::FuncOp>("train_step");
  mlir::FailureOr<codegen::PlannedFunction> planned;
  if (name == "accumulate_step" && apply) {
    auto applyLowered = codegen::lowerFunction(apply, codegen::CodegenOptions());
    if (mlir::failed(applyLowered))
      return mlir::failure();
    planned = codegen::buildAccumulatingPlan(func, *lowered, apply,
                                             *applyLowered, options);
  } else {
    planned = codegen::buildPlannedPlan(func, *lowered, options);
  }
  if (mlir::failed(planned))
    return mlir::failure();
  Plan &plan = planned->plan;
  codegen::shareIdenticalKernels(plan);
  return planDeviceMemory(plan, DeviceFacts(),
                          plan.kernels.size() * kModuleGranule)
      .total();
}

void registerRematerializeWithPlanner() {
  mlir::registerPass([] {
    return mlir::llmc::createRematerializePass(
        mlir::llmc::RematerializePassOptions(),
        [](mlir::ModuleOp module, llvm::StringRef func) {
          return plannedPeak(module, func, FusionConfig());
        });
  });
}

mlir::LogicalResult parseNoFuse(llvm::StringRef list, FusionConfig &config,
                                std::string &error) {
  llvm::SmallVector<llvm::StringRef> names;
  list.split(names, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef name : names) {
    name = name.trim();
    if (name == "all")
      config = FusionConfig::none();
    else if (name == "elementwise")
      config.elementwise = false;
    else if (name == "reductions")
      config.reductions = false;
    else if (name == "horizontal")
      config.horizontal = false;
    else if (name == "norm-prologue")
      config.normPrologue = false;
    else if (name == "norm-epilogue")
      config.normEpilogue = false;
    else if (name == "colsum")
      config.colSums = false;
    else if (name == "epilogues")
      config.epilogues = false;
    else if (name == "gelu-epilogue")
      config.geluEpilogue = false;
    else if (name == "gelu-grad-epilogue")
      config.geluGradEpilogue = false;
    else if (name == "bias-grad-epilogue")
      config.biasGradEpilogue = false;
    else if (name == "strided")
      config.strided = false;
    else if (name == "qkv-slices")
      config.qkvSlices = false;
    else if (name == "classifier")
      config.classifier = false;
    else {
      error = "--no-fuse: unknown fusion '" + name.str() +
              "' (elementwise, reductions, horizontal, norm-prologue, "
              "norm-epilogue, colsum, epilogues, gelu-epilogue, "
              "gelu-grad-epilogue, bias-grad-epilogue, "
              "strided, qkv-slices, classifier or all)";
      return mlir::failure();
    }
  }
  return mlir::success();
}

mlir::LogicalResult runKernelPipeline(mlir::ModuleOp module,
                                      const FusionConfig &fusion) {
  mlir::PassManager pm(module->getContext());
  buildKernelPipeline(pm, fusion);
  return pm.run(module);
}

namespace {

/// The optimizer options of `--llmc-pipeline`; defaults are TrainConfig's
/// (nanoGPT/llm.c: beta2 0.95, weight decay 0.1 on matrices, clip 1.0).
struct PipelineCliOptions
    : public mlir::PassPipelineOptions<PipelineCliOptions> {
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("adamw or sgd"),
                                llvm::cl::init("adamw")};
  Option<double> beta1{*this, "beta1", llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::init(0.95)};
  Option<double> epsilon{*this, "epsilon", llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::init(0.1)};
  Option<int64_t> decayMinRank{*this, "decay-min-rank", llvm::cl::init(2)};
  Option<double> momentum{*this, "momentum", llvm::cl::init(0.0)};
  Option<double> clipNorm{*this, "clip-norm", llvm::cl::desc("0: no clipping"),
                          llvm::cl::init(1.0)};
  Option<bool> multiTensor{
      *this, "multi-tensor",
      llvm::cl::desc("one multi-tensor AdamW update (llmc-batch-adamw)"),
      llvm::cl::init(true)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32, bf16, fp16 (with dynamic loss scaling) or tf32 "
                     "(llmc-lower-precision)"),
      llvm::cl::init("fp32")};
  Option<double> lossScaleInit{
      *this, "loss-scale-init",
      llvm::cl::desc("fp16: the initial dynamic loss scale"),
      llvm::cl::init(65536.0)};
  Option<int64_t> lossScaleGrowthInterval{
      *this, "loss-scale-growth-interval",
      llvm::cl::desc("fp16: clean steps before the loss scale doubles"),
      llvm::cl::init(2000)};
  Option<bool> noPad{*this, "no-pad",
                     llvm::cl::desc("skip llmc-pad-shapes"),
                     llvm::cl::init(false)};
  Option<bool> padAlways{
      *this, "pad-always",
      llvm::cl::desc("llmc-pad-shapes pads every dim the ops allow (tests)"),
      llvm::cl::init(false)};
  Option<std::string> padDims{
      *this, "pad-dims",
      llvm::cl::desc("llmc-pad-shapes pads these sizes, FROM:TO,... (tests)"),
      llvm::cl::init("")};
  Option<std::string> arch{*this, "arch",
                           llvm::cl::desc("the GPU of the padding cost table"),
                           llvm::cl::init("sm_90")};
};

} // namespace

void registerTrainingPipeline() {
  mlir::PassPipelineRegistration<PipelineCliOptions>(
      "llmc-pipeline",
      "The whole pipeline: raise; append-loss (when @forward returns "
      "logits), pad-shapes, lower-precision, autodiff, append-optimizer, "
      "canonicalize, cse, batch-adamw; form-kernels, fuse-epilogues, "
      "fuse-elementwise, mark-in-place, "
      "mark-scalar-slots",
      [](mlir::OpPassManager &pm, const PipelineCliOptions &cli) {
        OptimizerConfig o;
        o.kind = cli.optimizer;
        o.beta1 = cli.beta1;
        o.beta2 = cli.beta2;
        o.epsilon = cli.epsilon;
        o.weightDecay = cli.weightDecay;
        o.decayMinRank = cli.decayMinRank;
        o.momentum = cli.momentum;
        o.clipNorm = cli.clipNorm;
        o.multiTensor = cli.multiTensor;
        PrecisionConfig p;
        p.precision = cli.precision;
        p.lossScaleInit = cli.lossScaleInit;
        p.lossScaleGrowthInterval = cli.lossScaleGrowthInterval;
        p.pad = !cli.noPad;
        p.padAlways = cli.padAlways;
        p.padDims = cli.padDims;
        p.padArch = padArchFor(cli.arch);
        buildRaisePipeline(pm);
        buildTrainingPipeline(pm, o, p);
        buildKernelPipeline(pm);
      });
  mlir::PassPipelineRegistration<>(
      "llmc-eval-pipeline",
      "The eval pipeline: raise; append-loss (when @forward returns "
      "logits), pad-shapes, canonicalize, cse; @forward stays, with its "
      "loss; form-kernels, fuse-epilogues, fuse-elementwise, mark-in-place, "
      "mark-scalar-slots",
      [](mlir::OpPassManager &pm) {
        buildRaisePipeline(pm);
        buildEvalPipeline(pm);
        buildKernelPipeline(pm);
      });
}

} // namespace llmc
