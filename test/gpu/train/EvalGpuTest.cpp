//===- EvalGpuTest.cpp - Eval plans (forward and loss) on a GPU -----------===//
//
// For each fixture the eval plan (`llmc compile --eval`): without a GPU, it
// holds no gradients, optimizer state or `lr`, and takes the train plan's
// inputs and parameters under the same names, shapes and initial data; on a
// GPU, its loss matches the reference evaluator running the same @forward
// (relative error below 1e-5) and the train step's loss on the same batch, a
// graph replay is bitwise equal to the plain stream, and no parameter moves.
// The exporter-optimized ONNX graph, whose training step does not compile,
// is the case the eval plan exists for (`llmc verify --device cuda`).
//
//===----------------------------------------------------------------------===//
#include "test/gpu/train/TrainHarness.h"

#include "compiler/CudaTrainer.h"
#include "compiler/Driver.h"
#include "compiler/eval/Evaluator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

using namespace llmc;
using namespace llmc::test;

namespace {

struct EvalCase {
  const char *name;
  const char *file;
  bool trains;   // its training step compiles too (not the optimized export)
  int64_t vocab; // token ids below this; 0: the loss's classes
};

void PrintTo(const EvalCase &c, std::ostream *os) { *os << c.name; }

const EvalCase kEvalCases[] = {
    {"BigramTiny", "bigram-tiny.mlir", true, 256}, // a hand-written loss
    {"Gpt2Tiny", "gpt2-tiny.mlir", true, 0},
    {"TinyGptOnnx", "tiny_gpt_dynamo_loss.onnx", true, 0},
    {"TinyGptOnnxLogits", "tiny_gpt_dynamo_logits.onnx", true, 0},
    {"TinyGptOnnxOptimized", "tiny_gpt_dynamo_loss_opt.onnx", false, 0},
};

/// The index of the result named `loss` (llmc.output).
int lossResult(mlir::func::FuncOp func) {
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    if (auto n = func.getResultAttrOfType<mlir::StringAttr>(r, "llmc.output");
        n && n.getValue() == "loss")
      return static_cast<int>(r);
  return -1;
}

/// "param:<name>" or "input:<name>": how an argument of @forward is found
/// among @train_step's ("" for lr and state, which @forward lacks).
std::string argumentKey(mlir::func::FuncOp func, unsigned i) {
  for (const char *attr : {"llmc.param", "llmc.input"})
    if (auto n = func.getArgAttrOfType<mlir::StringAttr>(i, attr))
      return std::string(attr + 5) + ":" + n.getValue().str();
  return "";
}

double relative(double a, double b) {
  return std::abs(a - b) / std::max(1e-30, std::abs(b));
}

std::map<std::string, std::vector<uint8_t>> readParams(Executor &exec,
                                                       bool &ok) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const BufferInfo &b : exec.plan().buffers)
    if (b.role == BufferRole::Param)
      ok &= static_cast<bool>(exec.readBuffer(b.name, out[b.name]));
  return out;
}

class EvalGpuTest : public ::testing::TestWithParam<EvalCase> {
protected:
  void compile(Fixture &f, bool eval) {
    std::string error;
    OptimizerConfig adamw;
    ASSERT_TRUE(compileFixture(GetParam().file, adamw, f, error, eval))
        << error;
    if (GetParam().vocab)
      f.compiled.report.vocab = GetParam().vocab;
  }
  /// The reference evaluator's loss of the eval fixture on `args`.
  double referenceLoss(const std::vector<RefTensor> &args) {
    auto results = evaluate(eval_.step(), args);
    EXPECT_TRUE(mlir::succeeded(results));
    int r = lossResult(eval_.step());
    EXPECT_GE(r, 0);
    return mlir::succeeded(results) && r >= 0 ? (*results)[r].floats[0] : NAN;
  }
  Fixture eval_;
};

// Needs no GPU (NVRTC only): what the plan holds, and the reference loss of
// an untrained model, about ln(vocab).
TEST_P(EvalGpuTest, PlanIsForwardAndLossOnly) {
  compile(eval_, /*eval=*/true);
  if (HasFatalFailure())
    return;
  const Plan &plan = eval_.compiled.planned.plan;
  std::printf("[ compile  ] %s --eval\n%s", GetParam().file,
              formatReport(eval_.compiled.report).c_str());
  EXPECT_TRUE(plan.findScalar("loss"));
  EXPECT_FALSE(plan.findScalar("lr"));
  EXPECT_FALSE(plan.findScalar("step"));
  int ints = 0;
  for (const BufferInfo &b : plan.buffers) {
    EXPECT_NE(b.role, BufferRole::Grad) << b.name;
    EXPECT_NE(b.role, BufferRole::OptimizerState) << b.name;
    ints += b.role == BufferRole::Input && b.shape.size() == 2 &&
            (b.dtype == DType::I64 || b.dtype == DType::I32);
  }
  EXPECT_GE(ints, 2) << "token ids and targets";
  for (const KernelInfo &k : plan.kernels) {
    EXPECT_EQ(k.name.find("adamw"), std::string::npos) << k.name;
    EXPECT_EQ(k.name.find("_grad"), std::string::npos) << k.name;
  }
  double loss = referenceLoss(stepArguments(eval_, 7, 0));
  double uniform = std::log(static_cast<double>(eval_.compiled.report.vocab));
  std::printf("[ reference] %s: forward loss %.6f, ln(vocab) %.6f\n",
              GetParam().name, loss, uniform);
  EXPECT_NEAR(loss, uniform, 0.25);
}

// Needs no GPU: the eval plan reads the train plan's inputs and parameters
// (same names, order, shapes, dtypes and initial data), and the reference
// loss of @forward is the loss @train_step reports on the same arguments.
TEST_P(EvalGpuTest, SameInputsAndLossAsTheTrainStep) {
  if (!GetParam().trains)
    GTEST_SKIP() << GetParam().file << " has no training step to compare";
  Fixture train;
  compile(train, /*eval=*/false);
  compile(eval_, /*eval=*/true);
  if (HasFatalFailure())
    return;
  auto listOf = [](const Plan &plan, BufferRole role) {
    std::vector<const BufferInfo *> out;
    for (const BufferInfo &b : plan.buffers)
      if (b.role == role)
        out.push_back(&b);
    return out;
  };
  for (BufferRole role : {BufferRole::Input, BufferRole::Param}) {
    auto e = listOf(eval_.compiled.planned.plan, role);
    auto t = listOf(train.compiled.planned.plan, role);
    ASSERT_EQ(e.size(), t.size()) << roleName(role);
    for (size_t i = 0; i < e.size(); ++i) {
      EXPECT_EQ(e[i]->name, t[i]->name);
      EXPECT_EQ(e[i]->shape, t[i]->shape) << e[i]->name;
      EXPECT_EQ(e[i]->dtype, t[i]->dtype) << e[i]->name;
      EXPECT_TRUE(e[i]->init == t[i]->init) << e[i]->name;
    }
  }
  std::vector<RefTensor> evalArgs = stepArguments(eval_, 11, 0);
  std::map<std::string, const RefTensor *> byKey;
  for (unsigned i = 0; i < evalArgs.size(); ++i)
    byKey[argumentKey(eval_.step(), i)] = &evalArgs[i];
  std::vector<RefTensor> trainArgs = stepArguments(train, 11, 1e-3);
  for (unsigned i = 0; i < trainArgs.size(); ++i)
    if (auto it = byKey.find(argumentKey(train.step(), i)); it != byKey.end())
      trainArgs[i] = *it->second;
  auto trained = evaluate(train.step(), trainArgs);
  ASSERT_TRUE(mlir::succeeded(trained));
  double trainLoss = (*trained)[lossResult(train.step())].floats[0];
  double evalLoss = referenceLoss(evalArgs);
  std::printf("[ reference] %s: forward loss %.9f, train step loss %.9f\n",
              GetParam().name, evalLoss, trainLoss);
  EXPECT_LT(relative(evalLoss, trainLoss), 1e-6);
}

TEST_P(EvalGpuTest, LossMatchesTheReference) {
  LLMC_REQUIRE_GPU();
  compile(eval_, /*eval=*/true);
  if (HasFatalFailure())
    return;
  std::vector<RefTensor> args = stepArguments(eval_, 7, 0);
  double reference = referenceLoss(args);
  std::unique_ptr<Executor> exec;
  Status s = Executor::create(eval_.compiled.planned.plan, {}, exec);
  ASSERT_TRUE(s) << s.message();
  bool ok = true;
  auto before = readParams(*exec, ok);
  ASSERT_TRUE(writeInputs(*exec, eval_, args));
  ASSERT_TRUE(exec->runPlain());
  double plain = 0, replayed = 0;
  ASSERT_TRUE(exec->readScalar("loss", plain));
  for (int i = 0; i < 2; ++i) {
    s = exec->replay();
    ASSERT_TRUE(s) << s.message();
  }
  ASSERT_TRUE(exec->readScalar("loss", replayed));
  EXPECT_EQ(exec->captureCount(), 1u);
  EXPECT_EQ(plain, replayed) << "graph replay vs plain stream";
  EXPECT_LT(relative(plain, reference), 1e-5);
  EXPECT_TRUE(before == readParams(*exec, ok)) << "a parameter changed";
  EXPECT_TRUE(ok);
  std::printf("[ numerics ] %s: eval loss gpu %.7f reference %.7f (relative "
              "%.3g); replay bitwise equal, parameters unchanged\n",
              GetParam().name, plain, reference, relative(plain, reference));
}

// The eval plan and the train step, each opened as `llmc train --device
// cuda` opens a plan, agree on the loss of the same batch.
TEST_P(EvalGpuTest, LossEqualsTheTrainStepLoss) {
  LLMC_REQUIRE_GPU();
  if (!GetParam().trains)
    GTEST_SKIP() << GetParam().file << " has no training step to compare";
  Fixture train;
  compile(train, /*eval=*/false);
  compile(eval_, /*eval=*/true);
  if (HasFatalFailure())
    return;
  std::unique_ptr<CudaTrainer> trainer, evaluator;
  Status s =
      CudaTrainer::fromPlan(train.compiled.planned.plan, "train", trainer);
  ASSERT_TRUE(s) << s.message();
  s = CudaTrainer::fromPlan(eval_.compiled.planned.plan, "eval", evaluator,
                            PlanKind::Eval);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(trainer->batch(), evaluator->batch());
  ASSERT_EQ(trainer->seq(), evaluator->seq());
  int64_t vocab = std::max<int64_t>(1, eval_.compiled.report.vocab);
  int64_t n = trainer->batch() * trainer->seq();
  std::vector<int64_t> tokens(n), targets(n);
  for (int64_t i = 0; i < n; ++i) {
    tokens[i] = (i * 7 + 3) % vocab;
    targets[i] = (i * 13 + 5) % vocab;
  }
  double trained = 0, evaluated = 0;
  ASSERT_TRUE(trainer->step(0, tokens, targets, 1e-3, trained));
  ASSERT_TRUE(evaluator->step(0, tokens, targets, 1e-3, evaluated));
  std::printf("[ vs train ] %s: eval plan %.7f, train step %.7f\n",
              GetParam().name, evaluated, trained);
  EXPECT_LT(relative(evaluated, trained), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Models, EvalGpuTest, ::testing::ValuesIn(kEvalCases),
                         [](const auto &info) { return info.param.name; });

// A plan opened as the other kind says what it is.
TEST(EvalPlanKindTest, MismatchedKindsAreErrors) {
  LLMC_REQUIRE_GPU();
  Fixture train, eval;
  std::string error;
  OptimizerConfig sgd;
  sgd.kind = "sgd";
  ASSERT_TRUE(compileFixture("bigram-tiny.mlir", sgd, train, error)) << error;
  ASSERT_TRUE(compileFixture("bigram-tiny.mlir", sgd, eval, error, true))
      << error;
  std::unique_ptr<CudaTrainer> t;
  Status s = CudaTrainer::fromPlan(eval.compiled.planned.plan, "eval", t);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("has no scalar slot 'lr': it is an eval plan"),
            std::string::npos)
      << s.message();
  s = CudaTrainer::fromPlan(train.compiled.planned.plan, "train", t,
                            PlanKind::Eval);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("is a training step (it has the scalar slot "
                             "'lr'); evaluation needs a plan compiled with "
                             "`llmc compile --eval`"),
            std::string::npos)
      << s.message();
}

// The command this plan was built for: verify of an exporter-optimized
// graph on the GPU checks the loss and skips the rest, as on the CPU.
TEST(EvalPlanVerifyTest, OptimizedExportVerifiesOnTheGpu) {
  LLMC_REQUIRE_GPU();
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int rc = runVerify({modelPath("tiny_gpt_dynamo_loss_opt.onnx"), "--ref",
                      modelPath("tiny_gpt_dynamo_loss_opt.ref.json"),
                      "--device", "cuda"});
  std::string out = ::testing::internal::GetCapturedStdout();
  std::string err = ::testing::internal::GetCapturedStderr();
  std::printf("%s%s", out.c_str(), err.c_str());
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("skipped: the exporter optimized the graph"),
            std::string::npos);
  EXPECT_NE(out.find("2 checks, 0 failed"), std::string::npos);
}

} // namespace
