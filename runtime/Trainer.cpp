//===- Trainer.cpp - The training step loop, for any step engine ----------===//
#include "runtime/Trainer.h"
#include "runtime/AtomicFile.h"
#include "runtime/Checkpoint.h"
#include "runtime/DataLoader.h"
#include "runtime/TrainLog.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace llmc {

StepEngine::~StepEngine() = default;

const char *nanPolicyName(NanPolicy policy) {
  switch (policy) {
  case NanPolicy::Stop:
    return "stop";
  case NanPolicy::Skip:
    return "skip";
  case NanPolicy::ReduceLr:
    return "reduce-lr";
  case NanPolicy::Rollback:
    return "rollback";
  }
  return "stop";
}

bool parseNanPolicy(const std::string &name, NanPolicy &policy) {
  for (auto p : {NanPolicy::Stop, NanPolicy::Skip, NanPolicy::ReduceLr,
                 NanPolicy::Rollback})
    if (name == nanPolicyName(p)) {
      policy = p;
      return true;
    }
  return false;
}

namespace {

//===----------------------------------------------------------------------===//
// SIGINT and SIGTERM: the step in flight finishes, then a checkpoint
//===----------------------------------------------------------------------===//

volatile std::sig_atomic_t gStopSignal = 0;
constexpr int kStopSignals[] = {SIGINT, SIGTERM};
struct sigaction gPrevious[2];

extern "C" void requestStop(int sig) {
  if (gStopSignal != 0) {
    // A second signal while the loop winds down: stop now, through the
    // previous disposition (AtomicFile's, which removes its temporaries).
    for (int i = 0; i < 2; ++i)
      if (kStopSignals[i] == sig)
        ::sigaction(sig, &gPrevious[i], nullptr);
    ::raise(sig);
    return;
  }
  gStopSignal = sig;
}

class StopSignals {
public:
  explicit StopSignals(bool install) : installed_(install) {
    gStopSignal = 0;
    if (!installed_)
      return;
    // AtomicFile's handlers first, so that they are what we put back.
    installAtomicFileSignalHandlers();
    for (int i = 0; i < 2; ++i) {
      // A signal ignored at start (nohup, a background job of a script)
      // stays ignored, as AtomicFile does.
      if (::sigaction(kStopSignals[i], nullptr, &gPrevious[i]) != 0 ||
          gPrevious[i].sa_handler == SIG_IGN)
        continue;
      struct sigaction action = {};
      action.sa_handler = requestStop;
      sigemptyset(&action.sa_mask);
      ::sigaction(kStopSignals[i], &action, nullptr);
      ours_[i] = true;
    }
  }
  ~StopSignals() {
    for (int i = 0; i < 2; ++i)
      if (ours_[i])
        ::sigaction(kStopSignals[i], &gPrevious[i], nullptr);
  }

private:
  bool installed_;
  bool ours_[2] = {false, false};
};

int fail(const std::string &message) {
  std::fprintf(stderr, "llmc train: error: %s\n", message.c_str());
  return 1;
}

void note(const std::string &message) {
  std::printf("llmc train: %s\n", message.c_str());
  std::fflush(stdout);
}

const char *nonFiniteName(double x) {
  return std::isnan(x) ? "NaN" : "infinite";
}

class Loop {
public:
  Loop(StepEngine &engine, DataLoader &train, DataLoader *val,
       const TrainOptions &o)
      : engine_(engine), train_(train), val_(val), o_(o) {}
  int run();

private:
  Status save(std::string &written);
  Status rollback(std::string &from);
  Status validate(int64_t step);
  void printStep(const StepLog &log);
  void clearProgress();

  StepEngine &engine_;
  DataLoader &train_;
  DataLoader *val_;
  const TrainOptions &o_;
  TrainState st_;
  std::FILE *json_ = nullptr;
  bool progress_ = false, progressShown_ = false;
  std::chrono::steady_clock::time_point start_;
  int64_t firstStep_ = 0;
  double bestVal_ = NAN, lastVal_ = NAN;
  std::string lastCheckpoint_;
};

Status Loop::save(std::string &written) {
  CheckpointInfo info;
  info.state = st_;
  info.schedule = o_.schedule;
  info.seed = o_.seed;
  info.modelName = o_.modelName;
  LLMC_RETURN_IF_ERROR(
      saveCheckpoint(o_.checkpointDir, info, engine_, o_.keep, written));
  if (json_)
    ::fsync(::fileno(json_));
  lastCheckpoint_ = written;
  return Status::ok();
}

/// Reloads weights and optimizer state from the newest checkpoint; the
/// loop's position (step, data) goes on, so the batches that went bad are
/// not replayed.
Status Loop::rollback(std::string &from) {
  CheckpointInfo info;
  LLMC_RETURN_IF_ERROR(
      loadCheckpoint(o_.checkpointDir, o_.modelName, engine_, info, from));
  st_.updates = info.state.updates;
  return Status::ok();
}

Status Loop::validate(int64_t step) {
  val_->reset();
  std::vector<int64_t> x, y;
  double sum = 0;
  LLMC_RETURN_IF_ERROR(engine_.beginValidation());
  for (int64_t b = 0; b < o_.valBatches; ++b) {
    LLMC_RETURN_IF_ERROR(val_->next(x, y));
    double loss = 0;
    LLMC_RETURN_IF_ERROR(engine_.evalLoss(x, y, loss));
    sum += loss;
  }
  LLMC_RETURN_IF_ERROR(engine_.endValidation());
  lastVal_ = sum / static_cast<double>(o_.valBatches);
  if (!(lastVal_ >= bestVal_))
    bestVal_ = std::isnan(bestVal_) ? lastVal_ : std::fmin(bestVal_, lastVal_);
  clearProgress();
  printValidationLine(step, lastVal_);
  if (json_) {
    std::fprintf(json_, "{\"step\": %lld, \"val_loss\": %.17g}\n",
                 static_cast<long long>(step + 1), lastVal_);
    std::fflush(json_);
  }
  return Status::ok();
}

void Loop::clearProgress() {
  if (progressShown_) {
    std::fputs("\r\033[K", stdout);
    progressShown_ = false;
  }
}

void Loop::printStep(const StepLog &log) {
  clearProgress();
  printStepLine(log);
  if (json_) {
    std::fprintf(json_, "%s\n", formatStepJson(log).c_str());
    std::fflush(json_);
  }
  if (progress_) {
    int64_t done = log.step + 1 - firstStep_;
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start_)
                         .count();
    double left = done > 0 ? elapsed / done * (o_.steps - log.step - 1) : 0;
    std::fputs(formatProgress(log.step + 1, o_.steps, left).c_str(), stdout);
    std::fflush(stdout);
    progressShown_ = true;
  }
}

int Loop::run() {
  bool canSkip = engine_.canSkipUpdate();
  if ((o_.onNan == NanPolicy::Skip || o_.onNan == NanPolicy::ReduceLr) &&
      !canSkip)
    return fail(std::string("--on-nan ") + nanPolicyName(o_.onNan) +
                " needs a step that can drop its update, which " +
                engine_.description() + " cannot yet; use --on-nan rollback");
  // The replay starts from the state before the bad step: its update must
  // be droppable (the stop policy stops anyway, so dropping costs nothing).
  if (o_.detectAnomaly && !canSkip) {
    std::string where;
    return fail(engine_.findAnomaly({}, {}, 0, where).message());
  }
  if (o_.onNan == NanPolicy::Rollback &&
      (o_.checkpointDir.empty() || o_.saveEvery == 0))
    return fail("--on-nan rollback reloads the last checkpoint: pass "
                "--checkpoint-dir DIR and --save-every N");
  StopSignals signals(o_.handleSignals);
  if (!o_.checkpointDir.empty())
    cleanCheckpointDir(o_.checkpointDir);

  if (!o_.resume.empty()) {
    CheckpointInfo info;
    std::string from;
    if (Status s = loadCheckpoint(o_.resume, o_.modelName, engine_, info, from);
        !s)
      return fail(s.message());
    if (info.state.step >= o_.steps) {
      // A finished run restarted by a scheduler: not an error.
      note("checkpoint " + from + " is at step " +
           std::to_string(info.state.step) + ", and --steps is " +
           std::to_string(o_.steps) + ": nothing left to train");
      return 0;
    }
    if (Status s = train_.seek(info.state.dataPosition); !s)
      return fail("checkpoint '" + from + "': " + s.message());
    st_ = info.state;
    lastCheckpoint_ = from;
    const LrSchedule &a = info.schedule, &b = o_.schedule;
    if (a.lr != b.lr || a.warmup != b.warmup || a.decay != b.decay ||
        a.decaySteps != b.decaySteps || a.minLr != b.minLr)
      note("warning: the learning-rate schedule differs from the one the "
           "checkpoint was trained with; the run goes on with the new one");
    note("resumed from " + from + " at step " + std::to_string(st_.step));
  }

  if (!o_.logJson.empty()) {
    json_ = std::fopen(o_.logJson.c_str(), o_.resume.empty() ? "w" : "a");
    if (!json_)
      return fail("cannot write '" + o_.logJson + "': " + std::strerror(errno));
  }
  struct CloseJson {
    std::FILE *&f;
    ~CloseJson() {
      if (f)
        std::fclose(f);
    }
  } closeJson{json_};

  // The next batch is read while the step runs.
  train_.enablePrefetch();
  progress_ = o_.progress < 0 ? ::isatty(STDOUT_FILENO) : o_.progress > 0;
  start_ = std::chrono::steady_clock::now();
  firstStep_ = st_.step;
  int64_t tokens = engine_.batch() * engine_.seq();
  double flops = engine_.flopsPerToken();
  double runMs = 0, lastLoss = NAN;
  int64_t timedSteps = 0, skipped = 0;
  std::vector<int64_t> x, y;
  int stopSignal = 0;

  for (int64_t step = st_.step; step < o_.steps; ++step) {
    // The step's spans (--breakdown); `ms` and `data_ms` in the log are the
    // engine's and the data wait's.
    LoopTimes times;
    times.step.startMs = times.dataWait.startMs = hostNowMs();
    if (Status s = train_.next(x, y); !s)
      return fail(s.message());
    times.dataWait.endMs = hostNowMs();
    times.prepare.startMs = hostNowMs();
    double dataMs = times.dataWait.ms();
    double lr = o_.schedule.at(step) * st_.lrScale;
    if (o_.beforeStep)
      o_.beforeStep(step);
    if (o_.nanGateStep > 0)
      if (Status s = engine_.setNanGate(step + 1 == o_.nanGateStep ? NAN : 1.0);
          !s)
        return fail(s.message());
    StepResult r;
    times.prepare.endMs = hostNowMs();
    times.engine.startMs = hostNowMs();
    if (Status s = engine_.step(x, y, lr, st_.updates,
                                (o_.onNan != NanPolicy::Stop ||
                                 o_.detectAnomaly) &&
                                    canSkip,
                                r);
        !s)
      return fail("step " + std::to_string(step + 1) + ": " + s.message());
    times.engine.endMs = hostNowMs();
    times.log.startMs = hostNowMs();
    double ms = times.engine.ms();
    // Right after the step's log line, in either branch below.
    auto logged = [&] {
      times.step.endMs = times.log.endMs = hostNowMs();
      if (o_.stepTimes)
        o_.stepTimes(step, times);
    };
    st_.step = step + 1;
    st_.dataPosition = train_.position();
    // A loss-scaler overflow is the step's own business (it skipped its
    // update and halved the scale on the device), not a NaN to act on.
    bool bad = !std::isfinite(r.loss) ||
               (r.hasGradNorm && !std::isfinite(r.gradNorm) && !r.overflow);
    StepLog log{step,       r.loss,        lr, ms,         dataMs,
                tokens,     r.gradNorm,    r.hasGradNorm,  -1,
                !r.applied};
    log.hasLossScale = r.hasLossScale;
    log.lossScale = r.lossScale;
    log.overflow = r.overflow;
    log.scalerSkipped = r.scalerSkipped;
    if (flops > 0 && o_.peakFlops > 0)
      log.mfu = flops * tokensPerSecond(log) / o_.peakFlops;
    if (step > firstStep_ || o_.steps - firstStep_ == 1) {
      runMs += ms; // the first step captures the graph: not in the mean
      ++timedSteps;
    }

    if (!bad) {
      st_.badInARow = 0;
      lastLoss = r.loss;
      if (!r.overflow)
        ++st_.updates;
      printStep(log);
      logged();
      if (o_.afterStep)
        o_.afterStep(step);
    } else {
      ++st_.nanSteps;
      ++st_.badInARow;
      if (r.applied)
        ++st_.updates;
      else
        ++skipped;
      printStep(log);
      logged();
      std::string what = "step " + std::to_string(step + 1) + ": the " +
                         (!std::isfinite(r.loss)
                              ? std::string("loss is ") + nonFiniteName(r.loss)
                              : std::string("gradient norm is ") +
                                    nonFiniteName(r.gradNorm));
      char lrText[32];
      std::snprintf(lrText, sizeof lrText, "%.4g", lr);
      if (o_.detectAnomaly) {
        std::string where;
        if (Status s = engine_.findAnomaly(x, y, lr, where); !s)
          return fail(what + "; --detect-anomaly: " + s.message());
        note("step " + std::to_string(step + 1) + ": --detect-anomaly: " +
             (where.empty() ? "the replay of the step made no non-finite "
                              "value (is the fault nondeterministic?)"
                            : "the first non-finite value comes from " +
                                  where));
      }
      switch (o_.onNan) {
      case NanPolicy::Stop:
        clearProgress();
        return fail(what + " (lr " + lrText +
                    "): lower the learning rate (--lr), add warmup "
                    "(--warmup) or check the data; or pass --on-nan "
                    "skip|reduce-lr|rollback to go on; stopping");
      case NanPolicy::Skip:
        note("warning: " + what + "; its update was skipped");
        break;
      case NanPolicy::ReduceLr:
        st_.lrScale *= 0.5;
        note("warning: " + what + "; its update was skipped and the "
             "learning rate halved (now x" + std::to_string(st_.lrScale) + ")");
        break;
      case NanPolicy::Rollback:
        if (st_.badInARow >= o_.nanPatience || r.applied) {
          std::string from;
          if (lastCheckpoint_.empty() && listCheckpoints(o_.checkpointDir).empty())
            return fail(what + ", and there is no checkpoint to roll back to "
                               "yet (--save-every " +
                        std::to_string(o_.saveEvery) + ")");
          if (Status s = rollback(from); !s)
            return fail("rollback after " + what + ": " + s.message());
          ++st_.rollbacks;
          st_.badInARow = 0;
          note("warning: " + what + "; rolled back to " + from +
               " (weights and optimizer state), going on with the next batch");
        } else {
          note("warning: " + what + "; its update was skipped (" +
               std::to_string(st_.badInARow) + " in a row; rollback at " +
               std::to_string(o_.nanPatience) + ")");
        }
        break;
      }
    }

    bool last = step + 1 == o_.steps;
    bool due = o_.valEvery > 0 && (step + 1) % o_.valEvery == 0;
    if (val_ && (due || last))
      if (Status s = validate(step); !s)
        return fail("validation after step " + std::to_string(step + 1) +
                    ": " + s.message());
    stopSignal = gStopSignal;
    bool saveDue = o_.saveEvery > 0 && (step + 1) % o_.saveEvery == 0;
    if (!o_.checkpointDir.empty() && (saveDue || last || stopSignal)) {
      std::string written;
      if (Status s = save(written); !s)
        return fail("checkpoint after step " + std::to_string(step + 1) +
                    ": " + s.message());
      clearProgress();
      note("checkpoint " + written);
    }
    if (stopSignal)
      break;
  }
  clearProgress();

  // The summary.
  double wall = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - start_)
                    .count();
  int64_t ran = st_.step - firstStep_;
  char line[512];
  double meanMs = timedSteps > 0 ? runMs / timedSteps : 0;
  double tps = meanMs > 0 ? tokens / (meanMs / 1000.0) : 0;
  int n = std::snprintf(
      line, sizeof line,
      "%s: %lld steps in %.2f s | final loss %.6f | mean ms %.2f | tok/s %.0f",
      stopSignal ? "stopped" : "done", static_cast<long long>(ran), wall,
      lastLoss, meanMs, tps);
  if (flops > 0 && o_.peakFlops > 0)
    n += std::snprintf(line + n, sizeof line - n, " | mfu %.2f%%",
                       100.0 * flops * tps / o_.peakFlops);
  if (!std::isnan(bestVal_))
    n += std::snprintf(line + n, sizeof line - n, " | best val loss %.6f",
                       bestVal_);
  if (st_.nanSteps > 0)
    n += std::snprintf(line + n, sizeof line - n,
                       " | non-finite steps %lld (skipped %lld, rollbacks %lld)",
                       static_cast<long long>(st_.nanSteps),
                       static_cast<long long>(skipped),
                       static_cast<long long>(st_.rollbacks));
  note(line);
  if (stopSignal) {
    note(std::string("stopped by ") +
         (stopSignal == SIGINT ? "SIGINT" : "SIGTERM") + " after step " +
         std::to_string(st_.step) +
         (lastCheckpoint_.empty() ? std::string(" (no --checkpoint-dir: "
                                                "nothing saved)")
                                  : "; resume with --resume " +
                                        o_.checkpointDir));
    return 128 + stopSignal;
  }
  return 0;
}

} // namespace

int runTrainLoop(StepEngine &engine, DataLoader &train, DataLoader *val,
                 const TrainOptions &options) {
  return Loop(engine, train, val, options).run();
}

} // namespace llmc
