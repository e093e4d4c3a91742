//===- TrainCuda.cpp - llmc train --device cuda ---------------------------===//
//
// runTrainCuda: open the plan (bundle or in-memory compile) and run the
// runtime's training loop (runtime/Trainer.h) on it through PlanStepEngine:
// the same loop, log, checkpoints and NaN policies as the CPU path.
//
//===----------------------------------------------------------------------===//
#include "compiler/BatchAuto.h"
#include "compiler/Compile.h"
#include "compiler/CompileCache.h"
#include "compiler/CpuStepEngine.h"
#include "compiler/CudaTrainer.h"
#include "compiler/GpuAnomalyEngine.h"
#include "compiler/ModelLoader.h"

#include "runtime/AtomicFile.h"
#include "runtime/Bundle.h"
#include "runtime/MaskedDiffusion.h"
#include "runtime/StepProfile.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace llmc {

//===----------------------------------------------------------------------===//
// Opening a plan
//===----------------------------------------------------------------------===//

Status CudaTrainer::open(const TrainConfig &cfg,
                         std::unique_ptr<CudaTrainer> &out, const char *command,
                         PlanKind kind) {
  Plan plan;
  if (llvm::StringRef(cfg.model).ends_with(".llmc")) {
    LLMC_RETURN_IF_ERROR(readBundle(cfg.model, plan));
  } else {
    mlir::MLIRContext context;
    installCliDiagnostics(context, command, cfg.model);
    CompileConfig config;
    config.name = llvm::sys::path::stem(cfg.model).str();
    config.seed = cfg.seed;
    config.optimizer = cfg.optimizer;
    // --tokens-per-step: the accumulate and apply steps in one plan.
    config.optimizer.accumulate =
        kind == PlanKind::Train && cfg.tokensPerStep > 0;
    config.precision = cfg.precision;
    config.eval = kind == PlanKind::Eval;
    if (!config.eval)
      config.recompute = cfg.recompute;
    config.injectNanOp = cfg.injectNanOp;
    // Through the compile cache: a second run of the same model starts
    // without importing or compiling it (CompileCache.h).
    auto compiled =
        compileModelFile(cfg.model, cfg.modelOptions, config, context);
    if (mlir::failed(compiled))
      return Status::error("cannot compile '" + cfg.model +
                           "' for the GPU (see the errors above)");
    plan = std::move(compiled->planned.plan);
  }
  return fromPlan(std::move(plan), cfg.model, out, kind);
}

Status CudaTrainer::fromPlan(Plan plan, const std::string &source,
                             std::unique_ptr<CudaTrainer> &out, PlanKind kind) {
  std::unique_ptr<CudaTrainer> t(new CudaTrainer());
  // From the compiler, or from a bundle (0 for bundles written before plans
  // recorded it: no check).
  t->vocab_ = plan.vocab;
  ExecutorOptions options;
  options.source = source;
  LLMC_RETURN_IF_ERROR(
      Executor::create(std::move(plan), options, t->executor_));
  LLMC_RETURN_IF_ERROR(t->bind(kind));
  out = std::move(t);
  return Status::ok();
}

/// The token and target buffers and the scalar slots the loop needs
/// (runtime/PlanStepEngine.h: bindPlan, shared with the runtime's loop).
Status CudaTrainer::bind(PlanKind kind) {
  PlanBinding b;
  LLMC_RETURN_IF_ERROR(bindPlan(executor_->plan(), kind, b));
  tokens_ = b.tokens;
  targets_ = b.targets;
  tokenType_ = b.tokenType;
  targetType_ = b.targetType;
  batch_ = b.batch;
  seq_ = b.seq;
  kind_ = kind;
  hasStep_ = b.hasStep;
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

Status CudaTrainer::writeTokens(const std::string &buffer,
                                const std::vector<int64_t> &values) {
  DType type = buffer == tokens_ ? tokenType_ : targetType_;
  if (type == DType::I64)
    return executor_->writeBuffer(buffer, values.data(), values.size() * 8);
  std::vector<int32_t> narrow(values.begin(), values.end());
  return executor_->writeBuffer(buffer, narrow.data(), narrow.size() * 4);
}

Status CudaTrainer::step(int64_t index, const std::vector<int64_t> &tokens,
                         const std::vector<int64_t> &targets, double lr,
                         double &loss, bool plain,
                         std::vector<float> *stepMs) {
  LLMC_RETURN_IF_ERROR(writeTokens(tokens_, tokens));
  LLMC_RETURN_IF_ERROR(writeTokens(targets_, targets));
  return run(index, lr, loss, plain, stepMs);
}

Status CudaTrainer::run(int64_t index, double lr, double &loss, bool plain,
                        std::vector<float> *stepMs) {
  if (kind_ == PlanKind::Train)
    LLMC_RETURN_IF_ERROR(executor_->setScalar("lr", lr));
  if (hasStep_)
    LLMC_RETURN_IF_ERROR(
        executor_->setScalar("step", static_cast<double>(index)));
  LLMC_RETURN_IF_ERROR(stepMs  ? executor_->runProfiled(*stepMs)
                       : plain ? executor_->runPlain()
                               : executor_->replay());
  return executor_->readScalar("loss", loss);
}

Status CudaTrainer::writeInput(const std::string &name,
                               const std::vector<double> &values) {
  const BufferInfo *b = executor_->plan().findBuffer(name);
  if (!b || b->role != BufferRole::Input)
    return Status::error("the plan has no input buffer '" + name + "'");
  if (static_cast<uint64_t>(values.size()) != b->elementCount())
    return Status::error("input '" + name + "' takes " +
                         std::to_string(b->elementCount()) + " values, got " +
                         std::to_string(values.size()));
  auto write = [&](auto zero) {
    std::vector<decltype(zero)> typed(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      typed[i] = static_cast<decltype(zero)>(values[i]);
    return executor_->writeBuffer(name, typed.data(),
                                  typed.size() * sizeof(zero));
  };
  switch (b->dtype) {
  case DType::I64:
    return write(int64_t{});
  case DType::I32:
    return write(int32_t{});
  case DType::U8:
    return write(uint8_t{});
  case DType::F32:
    return write(float{});
  default:
    return Status::error("input '" + name + "' has the dtype " +
                         dtypeName(b->dtype) +
                         ", which the host cannot write yet");
  }
}

Status CudaTrainer::saveState(Snapshot &out) {
  out.clear();
  for (const BufferInfo &b : executor_->plan().buffers)
    if (b.role == BufferRole::Param || b.role == BufferRole::OptimizerState) {
      out.push_back({b.name, {}});
      LLMC_RETURN_IF_ERROR(executor_->readBuffer(b.name, out.back().second));
    }
  return Status::ok();
}

Status CudaTrainer::restoreState(const Snapshot &saved) {
  for (auto &[name, bytes] : saved)
    LLMC_RETURN_IF_ERROR(
        executor_->writeBuffer(name, bytes.data(), bytes.size()));
  return executor_->synchronize();
}

Status CudaTrainer::validate(DataLoader &loader, int64_t batches,
                             int64_t stepsTaken, double &loss) {
  Snapshot saved;
  LLMC_RETURN_IF_ERROR(saveState(saved));
  loader.reset();
  std::vector<int64_t> tokens, targets;
  double sum = 0;
  for (int64_t i = 0; i < batches; ++i) {
    LLMC_RETURN_IF_ERROR(loader.next(tokens, targets));
    double l = 0;
    LLMC_RETURN_IF_ERROR(step(stepsTaken, tokens, targets, 0.0, l));
    sum += l;
  }
  LLMC_RETURN_IF_ERROR(restoreState(saved));
  loss = batches > 0 ? sum / static_cast<double>(batches) : 0.0;
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// The loop
//===----------------------------------------------------------------------===//

static int fail(const std::string &message) {
  std::fprintf(stderr, "llmc train: error: %s\n", message.c_str());
  return 1;
}

/// --batch auto: the configuration with the chosen batch, its report
/// printed; false after printing the error.
static bool chooseBatchFor(TrainConfig &cfg) {
  CompileConfig config;
  config.seed = cfg.seed;
  config.optimizer = cfg.optimizer;
  config.precision = cfg.precision;
  config.recompute = cfg.recompute;
  config.injectNanOp = cfg.injectNanOp;
  BatchAutoConfig batchAuto;
  batchAuto.enabled = true;
  batchAuto.deviceMemory = cfg.deviceMemory;
  std::string error;
  auto choice = chooseBatch(cfg.model, cfg.modelOptions, config,
                            cfg.tokensPerStep, batchAuto, error);
  if (mlir::failed(choice)) {
    fail(error);
    return false;
  }
  cfg.modelOptions.batch = choice->candidates[choice->chosen].batch;
  for (const std::string &l : batchChoiceLines(*choice))
    std::printf("llmc train: batch auto: %s\n", l.c_str());
  std::fflush(stdout);
  return true;
}

int runTrainCuda(const TrainConfig &given) {
  std::string why;
  if (!gpuAvailable(why))
    return fail("--device cuda needs a GPU: " + why);
  TrainConfig cfg = given;
  if (cfg.batchAuto && !chooseBatchFor(cfg))
    return 1;
  std::unique_ptr<CudaTrainer> trainer;
  if (Status s = CudaTrainer::open(cfg, trainer); !s)
    return fail(s.message());
  std::unique_ptr<PlanStepEngine> engine;
  if (Status s = PlanStepEngine::create(trainer->executor(), engine); !s)
    return fail(s.message());
  if (cfg.tokensPerStep > 0) {
    std::string error;
    int64_t k = microBatchesFor(cfg.tokensPerStep,
                                engine->batch() * engine->seq(), error);
    if (k == 0)
      return fail(error);
    if (Status s = engine->setMicroBatches(k); !s)
      return fail(s.message());
    std::printf("llmc train: %lld tokens per step: %lld micro-batches of "
                "%lld x %lld, gradients accumulated on the GPU (%llu "
                "accumulate steps per micro-batch)\n",
                static_cast<long long>(cfg.tokensPerStep),
                static_cast<long long>(k),
                static_cast<long long>(engine->batch() / k),
                static_cast<long long>(engine->seq()),
                static_cast<unsigned long long>(
                    trainer->executor().plan().accumulateSteps));
  }
  // Before the first step: what the plan takes on this GPU, by item, with
  // what loading learnt (local memory, resident threads).
  DeviceMemoryPlan memory = trainer->executor().memoryPlan();
  std::printf("llmc train: device memory %s (%llu bytes) on GPU 0:\n%s",
              formatMemoryBytes(memory.total()).c_str(),
              static_cast<unsigned long long>(memory.total()),
              formatDeviceMemory(memory, "  ").c_str());
  if (!trainer->executor().matmulTuning().empty())
    std::printf("llmc train: cuBLASLt algorithms: %s\n",
                trainer->executor().matmulTuning().c_str());
  std::fflush(stdout);
  DataLoader train, val;
  int64_t b = engine->batch(), t = engine->seq();
  if (Status s = train.open(cfg.data, b, t, engine->vocab()); !s)
    return fail(s.message());
  train.readDelayMs = cfg.slowReaderMs;
  bool validating = !cfg.val.empty();
  if (validating)
    if (Status s = val.open(cfg.val, b, t, engine->vocab()); !s)
      return fail(s.message());

  // --detect-anomaly: the same model on the reference evaluator, to replay
  // a bad step from the GPU's state (GpuAnomalyEngine.h).
  // The context and the module outlive the run (the evaluator keeps
  // pointers into the module).
  mlir::MLIRContext cpuContext;
  mlir::OwningOpRef<mlir::ModuleOp> cpuModule;
  std::unique_ptr<GpuAnomalyEngine> checked;
  if (cfg.detectAnomaly) {
    installCliDiagnostics(cpuContext, "train", cfg.model);
    cpuModule = loadModel(cfg.model, cfg.modelOptions, cpuContext);
    if (!cpuModule)
      return 1;
    OptimizerConfig optimizer = cfg.optimizer;
    auto cpuTrainer = CpuTrainer::create(*cpuModule, &optimizer, cfg.seed,
                                         cfg.precision, cfg.injectNanOp);
    if (mlir::failed(cpuTrainer))
      return 1;
    std::unique_ptr<CpuStepEngine> cpu;
    if (Status s = CpuStepEngine::create(std::move(*cpuTrainer), cpu); !s)
      return fail(s.message());
    if (Status s = GpuAnomalyEngine::create(*engine, std::move(cpu), checked);
        !s)
      return fail(s.message());
  }
  std::unique_ptr<MaskedDiffusionEngine> masked;
  if (Status s = withDataMode(cfg, *engine, masked); !s)
    return fail(s.message());
  StepEngine &stepEngine =
      masked    ? static_cast<StepEngine &>(*masked)
      : checked ? static_cast<StepEngine &>(*checked)
                : *engine;

  TrainOptions options = loopOptions(cfg);
  // --profile, --breakdown, --trace: the last step is a real step, replayed
  // from a second graph with an event around each launch, so its ms line is
  // a little slower (StepProfile.h). What the profiler does itself (capture
  // its graph, read the events, time the plain graph) is outside the step.
  StepTimeline timeline;
  if (cfg.profile || cfg.breakdown) {
    Executor &executor = trainer->executor();
    double captureStart = hostNowMs();
    if (Status s = executor.prepareProfiled(); !s)
      return fail(s.message());
    timeline.captureMs = hostNowMs() - captureStart;
    options.beforeStep = [&](int64_t step) {
      if (step + 1 == cfg.steps)
        engine->profileNext = &timeline;
    };
    options.stepTimes = [&](int64_t step, const LoopTimes &times) {
      if (step + 1 != cfg.steps)
        return;
      timeline.step = times.step;
      timeline.dataWait = times.dataWait;
      timeline.prepare = times.prepare;
      timeline.log = times.log;
    };
    options.afterStep = [&](int64_t step) {
      // The plain graph's time, read after the step before the profiled one.
      float ms = 0;
      if (step + 2 == cfg.steps && executor.lastRunMs(ms).isOk())
        timeline.plainGraphMs = ms;
      if (step + 1 != cfg.steps)
        return;
      if (Status s = executor.readProfiled(timeline.gpu); !s) {
        std::fprintf(stderr, "llmc train: error: %s\n", s.message().c_str());
        return;
      }
      const Plan &plan = executor.plan();
      if (cfg.profile) {
        std::fputs(formatStepProfile(plan, kernelTimes(timeline)).c_str(),
                   stdout);
        // After the step: the copies' buffers come and go outside it.
        double copyGBs = 0;
        if (Status s = executor.measureCopyBandwidth(copyGBs); !s)
          std::printf("llmc train: copy bandwidth not measured: %s\n",
                      s.message().c_str());
        std::fputs(
            formatBandwidth(plan, kernelTimes(timeline), copyGBs).c_str(),
            stdout);
      }
      if (cfg.breakdown)
        std::fputs(formatBreakdown(plan, timeline).c_str(), stdout);
      std::fflush(stdout);
      if (!cfg.trace.empty()) {
        if (Status s = writeFileAtomically(cfg.trace,
                                           formatChromeTrace(plan, timeline));
            !s)
          std::fprintf(stderr, "llmc train: error: %s\n", s.message().c_str());
        else
          std::printf("llmc train: trace of step %lld in %s\n",
                      static_cast<long long>(step + 1), cfg.trace.c_str());
      }
    };
  }
  return runTrainLoop(stepEngine, train, validating ? &val : nullptr, options);
}

} // namespace llmc
