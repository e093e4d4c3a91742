//===- TrainerTest.cpp - The runtime training loop, on a scripted engine --===//
//
// runtime/Trainer.h's loop with a StepEngine whose numbers are known: a
// tiny state (w, its moment m, the step count) that each applied update
// moves by a fixed rule, and a loss that turns NaN on chosen batches. The
// NaN policies, checkpoints (save, keep, resume, refusals that leave the
// state untouched), signals and the schedule are checked exactly.
//
//===----------------------------------------------------------------------===//
#include "runtime/Checkpoint.h"
#include "runtime/DataLoader.h"
#include "runtime/PlanStepEngine.h"
#include "runtime/TokenFile.h"
#include "runtime/Trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <numeric>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace llmc;

namespace {

class ScriptedEngine : public StepEngine {
public:
  explicit ScriptedEngine(std::vector<int64_t> wShape = {2, 3})
      : w_(6, 1.0f), m_(6, 0.0f), wShape_(wShape) {}
  std::set<int64_t> nanBatches; // tokens[0] of batches whose loss is NaN
  bool canSkip = true;
  int raiseAtCall = -1; // raise SIGTERM inside this call
  int sleepUs = 0;      // each step takes at least this long
  std::vector<double> lrs;
  std::vector<float> w_, m_;
  int64_t step_ = 0;
  int calls = 0;

  std::string description() const override { return "the scripted engine"; }
  int64_t batch() const override { return 1; }
  int64_t seq() const override { return 4; }
  int64_t vocab() const override { return 0; }
  double flopsPerToken() const override { return 1000; }
  bool canSkipUpdate() const override { return canSkip; }
  Status step(const std::vector<int64_t> &tokens,
              const std::vector<int64_t> &, double lr, int64_t,
              bool skipNonFinite, StepResult &r) override {
    if (calls++ == raiseAtCall)
      ::raise(SIGTERM);
    if (sleepUs > 0)
      ::usleep(sleepUs);
    lrs.push_back(lr);
    bool nan = nanBatches.count(tokens[0]) > 0;
    r.loss = nan ? NAN : std::accumulate(w_.begin(), w_.end(), 0.0) +
                             1e-3 * static_cast<double>(tokens[0]);
    r.gradNorm = nan ? NAN : 0.5;
    r.hasGradNorm = true;
    r.applied = !(nan && skipNonFinite);
    if (!r.applied)
      return Status::ok();
    for (size_t i = 0; i < w_.size(); ++i) {
      // A non-finite step that cannot be skipped ruins the state, as on
      // the GPU.
      w_[i] = nan ? NAN : w_[i] - static_cast<float>(lr) * (i + 1);
      m_[i] += 1;
    }
    ++step_;
    return Status::ok();
  }
  Status evalLoss(const std::vector<int64_t> &, const std::vector<int64_t> &,
                  double &loss) override {
    loss = std::accumulate(w_.begin(), w_.end(), 0.0);
    return Status::ok();
  }
  bool reversed = false;      // list the state in another order
  bool momentIsParam = false; // call the moment a parameter
  std::vector<StateTensor> stateTensors() const override {
    std::vector<StateTensor> t = {{"w", false, DType::F32, wShape_},
                                  {"adamw.m:w", !momentIsParam, DType::F32,
                                   wShape_},
                                  {"step", true, DType::I64, {}}};
    if (reversed)
      std::reverse(t.begin(), t.end());
    return t;
  }
  Status readState(const StateTensor &t, std::vector<uint8_t> &b) override {
    const void *src = t.name == "w" ? static_cast<const void *>(w_.data())
                      : t.name == "step" ? static_cast<const void *>(&step_)
                                         : m_.data();
    b.resize(t.bytes());
    std::memcpy(b.data(), src, b.size());
    return Status::ok();
  }
  Status writeState(const StateTensor &t,
                    const std::vector<uint8_t> &b) override {
    void *dst = t.name == "w" ? static_cast<void *>(w_.data())
                : t.name == "step" ? static_cast<void *>(&step_)
                                   : m_.data();
    std::memcpy(dst, b.data(), b.size());
    return Status::ok();
  }

private:
  std::vector<int64_t> wShape_;
};

std::string tempDir(const std::string &name) {
  std::string dir = ::testing::TempDir() + "llmc-trainer-" +
                    std::to_string(::getpid()) + "-" + name;
  std::string rm = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(rm.c_str()), 0);
  return dir;
}

std::string dataFile() {
  static std::string path;
  if (path.empty()) {
    path = ::testing::TempDir() + std::to_string(::getpid()) + "-trainer.bin";
    std::vector<uint16_t> tokens(4000);
    std::iota(tokens.begin(), tokens.end(), 0);
    EXPECT_TRUE(writeTokenFile(path, tokens).isOk());
  }
  return path;
}

TrainOptions options(int64_t steps) {
  TrainOptions o;
  o.steps = steps;
  o.schedule.lr = 0.125; // exact in binary: the expected w is exact too
  o.progress = 0;
  o.handleSignals = false;
  return o;
}

struct RunResult {
  int code = 0;
  std::string out, err;
};

RunResult train(ScriptedEngine &e, const TrainOptions &o) {
  DataLoader data;
  EXPECT_TRUE(data.open(dataFile(), 1, 4).isOk());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  RunResult r;
  r.code = runTrainLoop(e, data, nullptr, o);
  r.out = ::testing::internal::GetCapturedStdout();
  r.err = ::testing::internal::GetCapturedStderr();
  return r;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

TEST(Trainer, StopsOnNaNByDefault) {
  ScriptedEngine e;
  e.nanBatches = {8}; // the third batch (steps read 4 tokens each)
  RunResult r = train(e, options(5));
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "llmc train: error: step 3: the loss is NaN "
                              "(lr 0.125): lower the learning rate"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "--on-nan skip|reduce-lr|rollback")) << r.err;
}

TEST(Trainer, SkipDropsTheUpdateAndGoesOn) {
  ScriptedEngine e;
  e.nanBatches = {8};
  TrainOptions o = options(5);
  o.onNan = NanPolicy::Skip;
  RunResult r = train(e, o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(e.step_, 4); // four updates of five steps
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(e.w_[i], 1.0f - 4 * 0.125f * (i + 1));
  EXPECT_TRUE(contains(r.out, "step 3 | loss nan")) << r.out;
  EXPECT_TRUE(contains(r.out, "| update skipped")) << r.out;
  EXPECT_TRUE(contains(r.out, "step 3: the loss is NaN; its update was "
                              "skipped"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "non-finite steps 1 (skipped 1, rollbacks 0)"))
      << r.out;
}

TEST(Trainer, ReduceLrHalvesTheRateFromThenOn) {
  ScriptedEngine e;
  e.nanBatches = {4, 12};
  TrainOptions o = options(5);
  o.onNan = NanPolicy::ReduceLr;
  RunResult r = train(e, o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(e.lrs, (std::vector<double>{0.125, 0.125, 0.0625, 0.0625,
                                        0.03125}));
  EXPECT_EQ(e.step_, 3);
}

TEST(Trainer, SkipIsRefusedWhereTheUpdateCannotBeDropped) {
  ScriptedEngine e;
  e.canSkip = false;
  TrainOptions o = options(2);
  o.onNan = NanPolicy::Skip;
  RunResult r = train(e, o);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "--on-nan skip needs a step that can drop its "
                              "update, which the scripted engine cannot yet; "
                              "use --on-nan rollback"))
      << r.err;
}

TEST(Trainer, RollbackNeedsCheckpoints) {
  ScriptedEngine e;
  TrainOptions o = options(2);
  o.onNan = NanPolicy::Rollback;
  RunResult r = train(e, o);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "--on-nan rollback reloads the last checkpoint: "
                              "pass --checkpoint-dir DIR and --save-every N"))
      << r.err;
}

TEST(Trainer, RollbackReloadsTheLastCheckpoint) {
  // An engine that cannot skip: the NaN step ruins w, the rollback restores
  // the checkpoint of step 4, and training goes on with the next batch.
  ScriptedEngine e;
  e.canSkip = false;
  e.nanBatches = {20}; // step 6
  TrainOptions o = options(8);
  o.onNan = NanPolicy::Rollback;
  o.checkpointDir = tempDir("rollback");
  o.saveEvery = 4;
  RunResult r = train(e, o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "step 6: the loss is NaN; rolled back to " +
                                  o.checkpointDir + "/step-00000004"))
      << r.out;
  // Updates: 4 before the checkpoint, then steps 7 and 8.
  EXPECT_EQ(e.step_, 6);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(e.w_[i], 1.0f - 6 * 0.125f * (i + 1));
  EXPECT_TRUE(contains(r.out, "non-finite steps 1 (skipped 0, rollbacks 1)"))
      << r.out;
}

TEST(Trainer, ResumeContinuesExactlyAndKeepsTheLastK) {
  TrainOptions o = options(6);
  o.checkpointDir = tempDir("resume");
  o.saveEvery = 2;
  o.keep = 2;
  ScriptedEngine full;
  RunResult a = train(full, o);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(listCheckpoints(o.checkpointDir),
            (std::vector<std::string>{o.checkpointDir + "/step-00000004",
                                      o.checkpointDir + "/step-00000006"}));
  // Resume from step 4 in a fresh engine.
  std::string rm = "rm -rf '" + o.checkpointDir + "/step-00000006'";
  ASSERT_EQ(std::system(rm.c_str()), 0);
  ScriptedEngine resumed;
  TrainOptions ro = o;
  ro.resume = o.checkpointDir;
  RunResult b = train(resumed, ro);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_TRUE(contains(b.out, "resumed from " + o.checkpointDir +
                                  "/step-00000004 at step 4"))
      << b.out;
  EXPECT_EQ(resumed.lrs.size(), 2u);
  EXPECT_EQ(resumed.w_, full.w_);
  EXPECT_EQ(resumed.m_, full.m_);
  EXPECT_EQ(resumed.step_, full.step_);
  // The step lines of the resumed steps are the uninterrupted run's.
  auto lines = [](const std::string &out, const char *prefix) {
    size_t at = out.find(prefix);
    return out.substr(at, out.find('\n', at) - at).substr(0, 30);
  };
  EXPECT_EQ(lines(a.out, "step 6 |"), lines(b.out, "step 6 |"));
}

/// A saved checkpoint of the scripted engine, to damage.
std::string savedCheckpoint(const std::string &name) {
  ScriptedEngine e;
  TrainOptions o = options(2);
  o.checkpointDir = tempDir(name);
  o.saveEvery = 2;
  EXPECT_EQ(train(e, o).code, 0);
  return o.checkpointDir + "/step-00000002";
}

/// Loads `path` into a fresh engine; the error, and that the engine's state
/// was not touched.
std::string refused(const std::string &path,
                    std::vector<int64_t> shape = {2, 3}) {
  ScriptedEngine e(shape);
  CheckpointInfo info;
  std::string loaded;
  Status s = loadCheckpoint(path, "", e, info, loaded);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(e.w_, std::vector<float>(6, 1.0f)) << "half-loaded";
  EXPECT_EQ(e.step_, 0) << "half-loaded";
  return s.message();
}

void flipLastByte(const std::string &path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-1, std::ios::end);
  char c = 0;
  f.read(&c, 1);
  c ^= 0x40;
  f.seekp(-1, std::ios::end);
  f.write(&c, 1);
}

TEST(Checkpoint, BadCheckpointsAreRefusedWhole) {
  std::string ck = savedCheckpoint("damaged");
  // The optimizer file is read after the model file, so a damaged
  // optimizer checks that nothing was written before the refusal.
  flipLastByte(ck + "/optimizer.safetensors");
  EXPECT_EQ(refused(ck),
            "checkpoint '" + ck + "': tensor 'step' in optimizer.safetensors "
            "does not match its checksum in manifest.json (the file is "
            "damaged or from another checkpoint)");

  ck = savedCheckpoint("truncated");
  struct stat st;
  ASSERT_EQ(::stat((ck + "/model.safetensors").c_str(), &st), 0);
  ASSERT_EQ(::truncate((ck + "/model.safetensors").c_str(), st.st_size - 4), 0);
  EXPECT_EQ(refused(ck), "checkpoint '" + ck + "': reading '" + ck +
                             "/model.safetensors': tensor 'w': data_offsets "
                             "[0, 24] exceed the 20 data bytes");

  ck = savedCheckpoint("shapes");
  EXPECT_EQ(refused(ck, {3, 2}),
            "checkpoint '" + ck + "' is not of this model: its tensor 'w' has "
            "shape [2, 3], the model's has [3, 2]");

  ck = savedCheckpoint("manifest");
  std::ofstream(ck + "/manifest.json") << "{\"format\": \"llmc-checkpoint\"";
  EXPECT_EQ(refused(ck), "checkpoint '" + ck + "': manifest.json is not valid "
                         "JSON (the file is damaged)");

  std::string missing = tempDir("missing");
  EXPECT_EQ(refused(missing), "cannot resume from '" + missing +
                                  "': No such file or directory");
  ASSERT_EQ(::mkdir(missing.c_str(), 0777), 0);
  EXPECT_EQ(refused(missing),
            "cannot resume from '" + missing + "': it holds no checkpoint (no "
            "manifest.json in it or in a step-* folder)");
}

// The GPU plan and the CPU evaluator list the same state in different
// orders (a padded parameter moves in the plan): loading goes by name, so
// the order must not matter; the kind of a tensor must.
TEST(Checkpoint, StateOrderDoesNotMatterItsKindDoes) {
  std::string ck = savedCheckpoint("order");
  ScriptedEngine e;
  e.reversed = true;
  CheckpointInfo info;
  std::string loaded;
  Status s = loadCheckpoint(ck, "", e, info, loaded);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(e.step_, 2);
  EXPECT_NE(e.w_, std::vector<float>(6, 1.0f));

  ScriptedEngine kind;
  kind.momentIsParam = true;
  s = loadCheckpoint(ck, "", kind, info, loaded);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "checkpoint '" + ck + "' is not of this model: its "
                         "model hash does not match (the state tensors "
                         "differ in kind)");
  EXPECT_EQ(kind.step_, 0) << "half-loaded";
}

TEST(Checkpoint, CleaningRemovesWhatAKilledRunLeft) {
  std::string ck = savedCheckpoint("clean");
  std::string dir = ck.substr(0, ck.rfind('/'));
  // A temporary of a process that is gone (pid 2^22 + 1 is beyond Linux's
  // pid_max default), and a folder without a manifest.
  std::string stale = ck + "/model.safetensors.tmp.4194305.0";
  std::ofstream(stale) << "x";
  std::string partial = dir + "/step-00000009";
  ASSERT_EQ(::mkdir(partial.c_str(), 0777), 0);
  std::ofstream(partial + "/model.safetensors") << "x";
  cleanCheckpointDir(dir);
  EXPECT_NE(::access(stale.c_str(), F_OK), 0);
  EXPECT_NE(::access(partial.c_str(), F_OK), 0);
  EXPECT_EQ(::access((ck + "/manifest.json").c_str(), F_OK), 0);
}

TEST(Trainer, SigtermFinishesTheStepAndSaves) {
  ScriptedEngine e;
  e.raiseAtCall = 2; // during step 3
  TrainOptions o = options(6);
  o.handleSignals = true;
  o.checkpointDir = tempDir("sigterm");
  RunResult r = train(e, o);
  EXPECT_EQ(r.code, 128 + SIGTERM) << r.err;
  EXPECT_EQ(e.step_, 3);
  EXPECT_TRUE(contains(r.out, "stopped by SIGTERM after step 3; resume with "
                              "--resume " + o.checkpointDir))
      << r.out;
  EXPECT_EQ(listCheckpoints(o.checkpointDir),
            std::vector<std::string>{o.checkpointDir + "/step-00000003"});
}

// --breakdown's host side (docs/trainer.md): the loop's spans of a step
// follow one another from asking for the batch to the end of the log line,
// and what lies between them (work nobody timed) stays under 1% of the
// step, good steps and a bad one alike. The engine sleeps 2 ms, so the
// 1% is 20 us: many times what the clock reads between spans take.
TEST(Trainer, LoopSpansCoverTheStep) {
  ScriptedEngine e;
  e.sleepUs = 2000;
  e.nanBatches = {8};
  TrainOptions o = options(5);
  o.onNan = NanPolicy::Skip;
  std::vector<LoopTimes> seen;
  o.stepTimes = [&](int64_t step, const LoopTimes &t) {
    EXPECT_EQ(static_cast<size_t>(step), seen.size());
    seen.push_back(t);
  };
  RunResult r = train(e, o);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(seen.size(), 5u);
  for (const LoopTimes &t : seen) {
    const HostSpan *order[] = {&t.dataWait, &t.prepare, &t.engine, &t.log};
    EXPECT_EQ(t.dataWait.startMs, t.step.startMs);
    EXPECT_EQ(t.log.endMs, t.step.endMs);
    double named = 0;
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_GE(order[i]->ms(), 0);
      if (i > 0) {
        EXPECT_GE(order[i]->startMs, order[i - 1]->endMs);
      }
      named += order[i]->ms();
    }
    EXPECT_GE(t.engine.ms(), 2.0);
    double unattributed = t.step.ms() - named;
    EXPECT_GE(unattributed, 0);
    EXPECT_LE(unattributed, 0.01 * t.step.ms())
        << "of a " << t.step.ms() << " ms step";
  }
}

TEST(LrSchedule, WarmupThenDecayToTheFloor) {
  LrSchedule s;
  s.lr = 1.0;
  s.warmup = 4;
  EXPECT_EQ(s.at(0), 0.25);
  EXPECT_EQ(s.at(3), 1.0);
  EXPECT_EQ(s.at(100), 1.0); // constant
  s.decay = LrSchedule::Decay::Linear;
  s.decaySteps = 14;
  s.minLr = 0.1;
  EXPECT_EQ(s.at(4), 1.0);
  EXPECT_NEAR(s.at(9), 0.55, 1e-15);
  EXPECT_EQ(s.at(14), 0.1);
  EXPECT_EQ(s.at(1000), 0.1);
  s.decay = LrSchedule::Decay::Cosine;
  EXPECT_NEAR(s.at(9), 0.55, 1e-15); // cos(pi/2) = 0: the midpoint
  EXPECT_NEAR(s.at(6), 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * 0.2)), 1e-15);
}

} // namespace
