//===- TrainCuda.cpp - llmc train --device cuda ---------------------------===//
//
// runTrainCuda: open the plan (bundle or in-memory compile), then per step
// take the next llm.c batch, write tokens, targets, lr and step into the
// arena, replay the CUDA graph and read the loss; print the shared step line
// (TrainLog.h). A non-finite loss stops the run with the step that made it.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "compiler/CompileCache.h"
#include "compiler/CudaTrainer.h"
#include "compiler/TrainLog.h"

#include "runtime/Bundle.h"
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
    config.precision = cfg.precision;
    config.eval = kind == PlanKind::Eval;
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

/// Finds the token and target buffers and the scalar slots the loop needs;
/// a training step has `lr`, an eval plan has none (a plan without `lr`
/// trains nothing, one with it would change the parameters).
Status CudaTrainer::bind(PlanKind kind) {
  const Plan &plan = executor_->plan();
  std::vector<const BufferInfo *> ints;
  for (const BufferInfo &b : plan.buffers)
    if (b.role == BufferRole::Input && b.shape.size() == 2 &&
        (b.dtype == DType::I64 || b.dtype == DType::I32))
      ints.push_back(&b);
  std::string where = "'" + plan.name + "'";
  if (ints.size() < 2)
    return Status::error(
        where + " has " + std::to_string(ints.size()) +
        " integer [B, T] inputs; training on token shards needs two (token "
        "ids and targets, in that order)");
  if (ints[0]->shape != ints[1]->shape)
    return Status::error(where + ": the token ids '" + ints[0]->name +
                         "' and the targets '" + ints[1]->name +
                         "' have different shapes");
  tokens_ = ints[0]->name;
  targets_ = ints[1]->name;
  tokenType_ = ints[0]->dtype;
  targetType_ = ints[1]->dtype;
  batch_ = ints[0]->shape[0];
  seq_ = ints[0]->shape[1];
  kind_ = kind;
  bool hasLr = plan.findScalar("lr") != nullptr;
  if (kind == PlanKind::Eval && hasLr)
    return Status::error(where + " is a training step (it has the scalar slot "
                                 "'lr'); evaluation needs a plan compiled "
                                 "with `llmc compile --eval`");
  if (kind == PlanKind::Train && !hasLr && plan.findScalar("loss"))
    return Status::error(where + " has no scalar slot 'lr': it is an eval "
                                 "plan (llmc compile --eval), which computes "
                                 "the loss and trains nothing");
  std::vector<const char *> needed = {"loss"};
  if (kind == PlanKind::Train)
    needed.insert(needed.begin(), "lr");
  for (const char *name : needed)
    if (!plan.findScalar(name))
      return Status::error(where + " has no scalar slot '" + name +
                           (kind == PlanKind::Train
                                ? "': it is not a training step compiled by "
                                  "llmc compile"
                                : "': it is not a plan compiled by llmc "
                                  "compile --eval"));
  hasStep_ = plan.findScalar("step") != nullptr;
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

int runTrainCuda(const TrainConfig &cfg) {
  std::string why;
  if (!gpuAvailable(why))
    return fail("--device cuda needs a GPU: " + why);
  std::unique_ptr<CudaTrainer> trainer;
  if (Status s = CudaTrainer::open(cfg, trainer); !s)
    return fail(s.message());
  DataLoader train, val;
  int64_t b = trainer->batch(), t = trainer->seq();
  if (Status s = train.open(cfg.data, b, t, trainer->vocab()); !s)
    return fail(s.message());
  bool validating = !cfg.val.empty();
  if (validating)
    if (Status s = val.open(cfg.val, b, t, trainer->vocab()); !s)
      return fail(s.message());

  std::vector<int64_t> tokens, targets;
  for (int64_t step = 0; step < cfg.steps; ++step) {
    if (Status s = train.next(tokens, targets); !s)
      return fail(s.message());
    double lr = learningRateAt(cfg, step), loss = 0;
    auto start = std::chrono::steady_clock::now();
    // --profile: the last step is a real step, launched kernel by kernel
    // between events instead of replayed, so its ms line is slower.
    bool profiled = cfg.profile && step + 1 == cfg.steps;
    std::vector<float> stepMs;
    Status s = trainer->step(step, tokens, targets, lr, loss, /*plain=*/false,
                             profiled ? &stepMs : nullptr);
    if (!s)
      return fail("step " + std::to_string(step + 1) + ": " + s.message());
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (!std::isfinite(loss)) {
      char text[256];
      std::snprintf(text, sizeof text,
                    "the loss is %s at step %lld (lr %.4g): lower the "
                    "learning rate (--lr), add warmup (--warmup) or check "
                    "the data; stopping",
                    std::isnan(loss) ? "NaN" : "infinite",
                    static_cast<long long>(step + 1), lr);
      return fail(text);
    }
    printStepLine({step, loss, lr, ms, b * t});
    if (profiled) {
      std::fputs(formatStepProfile(trainer->executor().plan(), stepMs).c_str(),
                 stdout);
      std::fflush(stdout);
    }
    // Validate every --val-every steps and after the last step, as the CPU
    // trainer does.
    bool last = step + 1 == cfg.steps;
    bool due = cfg.valEvery > 0 && (step + 1) % cfg.valEvery == 0;
    if (validating && (due || last)) {
      double valLoss = 0;
      if (Status s = trainer->validate(val, cfg.valBatches, step + 1, valLoss);
          !s)
        return fail("validation after step " + std::to_string(step + 1) + ": " +
                    s.message());
      printValidationLine(step, valLoss);
    }
  }
  return 0;
}

} // namespace llmc
