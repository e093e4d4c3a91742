//===- JitApiTest.cpp - The C++ JIT API on the CPU path -------------------===//
//
// llmc::jit::Step with device cpu (the reference evaluator; CI has no GPU):
// its losses against CpuTrainer's, the one `llmc train --device cpu` uses,
// bit for bit; evaluate() changing nothing; parameters by name and their
// round trip; the learning-rate schedule; and every error a caller can
// cause, each with its message and no crash. The GPU side of the same API is
// test/gpu/JitGpuTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "llmc/Step.h"

#include "compiler/CpuTrainer.h"
#include "compiler/ModelLoader.h"
#include "frontends/json/Json.h"
#include "frontends/json/recipes/Recipes.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace llmc;

using jit::TensorView;

namespace {

const std::string kTiny =
    std::string(LLMC_TEST_MODELS) + "/tiny_gpt_dynamo_loss_dyn.onnx";
constexpr int64_t B = 2, T = 16, V = 512;

void expectError(const Status &s, const std::string &part);

jit::Options tinyOptions() {
  jit::Options o;
  o.batch = B;
  o.seq = T;
  return o;
}

/// Deterministic token batches: ids and next-token targets.
struct Batch {
  std::vector<int64_t> idx, tgt;
  explicit Batch(int seed) {
    for (int64_t i = 0; i < B * T + 1; ++i)
      idx.push_back((seed * 131 + i * 37 + (i * i) % 11) % V);
    tgt.assign(idx.begin() + 1, idx.end());
    idx.pop_back();
  }
  std::vector<TensorView> views() const {
    return {TensorView::host(idx.data(), {B, T}),
            TensorView::host(tgt.data(), {B, T})};
  }
};

class JitApiTest : public ::testing::Test {
protected:
  void SetUp() override {
    Status s = jit::compile(kTiny, tinyOptions(), step);
    ASSERT_TRUE(s) << s.message();
  }
  jit::Step step;
};

TEST_F(JitApiTest, DescribesInputsParametersAndReport) {
  ASSERT_EQ(step.inputs().size(), 2u);
  EXPECT_EQ(step.inputs()[0].name, "idx");
  EXPECT_EQ(step.inputs()[0].dtype, jit::DType::I64);
  EXPECT_EQ(step.inputs()[0].shape, (std::vector<int64_t>{B, T}));
  EXPECT_EQ(step.inputs()[1].name, "tgt");
  ASSERT_FALSE(step.parameterInfo().empty());
  EXPECT_EQ(step.parameterInfo()[0].name, "m.wte.weight");
  EXPECT_EQ(step.parameterInfo()[0].shape, (std::vector<int64_t>{V, 64}));
  const jit::CompileReport &r = step.report();
  EXPECT_EQ(r.device, jit::Device::Cpu);
  EXPECT_EQ(r.vocab, V);
  EXPECT_EQ(r.tokens, B * T);
  int64_t n = 0;
  for (const jit::TensorInfo &p : step.parameterInfo()) {
    int64_t e = 1;
    for (int64_t d : p.shape)
      e *= d;
    n += e;
  }
  EXPECT_EQ(r.parameters, n);
  std::string json = r.toJson();
  EXPECT_NE(json.find("\"device\": \"cpu\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"vocab\": 512"), std::string::npos) << json;
}

// The same model, seed and batches through CpuTrainer (llmc train --device
// cpu): the API's losses are the trainer's, exactly.
TEST_F(JitApiTest, LossesMatchTheCpuTrainerExactly) {
  mlir::MLIRContext context;
  ModelOptions mo;
  mo.batch = B;
  mo.seq = T;
  auto module = loadModel(kTiny, mo, context);
  ASSERT_TRUE(module);
  OptimizerConfig opt;
  auto trainer = CpuTrainer::create(*module, &opt, /*seed=*/0);
  ASSERT_TRUE(mlir::succeeded(trainer));
  for (int s = 0; s < 3; ++s) {
    Batch b(s);
    double loss = 0;
    Status st = step.run(b.views(), 1e-2, loss);
    ASSERT_TRUE(st) << st.message();
    auto ref = (*trainer)->step(
        {{"idx", RefTensor::fromInts(ElementKind::I64, {B, T}, b.idx)},
         {"tgt", RefTensor::fromInts(ElementKind::I64, {B, T}, b.tgt)}},
        1e-2);
    ASSERT_TRUE(mlir::succeeded(ref));
    EXPECT_EQ(loss, *ref) << "step " << s;
  }
  EXPECT_EQ(step.stepsTaken(), 3);
}

// A fresh model starts near ln(V); steps on one repeated batch lower its
// loss (the model can memorize it).
TEST_F(JitApiTest, TrainingLowersTheLoss) {
  Batch b(0);
  double first = 0, loss = 0, after = 0;
  ASSERT_TRUE(step.evaluate(b.views(), first));
  EXPECT_NEAR(first, std::log(double(V)), 0.3);
  for (int s = 0; s < 5; ++s)
    ASSERT_TRUE(step.run(b.views(), 3e-3, loss));
  ASSERT_TRUE(step.evaluate(b.views(), after));
  EXPECT_LT(after, first - 0.5) << "from " << first;
}

TEST_F(JitApiTest, EvaluateChangesNothing) {
  Batch b(1);
  std::vector<jit::HostTensor> before, after;
  ASSERT_TRUE(step.parameters(before));
  double l1 = 0, l2 = 0;
  ASSERT_TRUE(step.evaluate(b.views(), l1));
  ASSERT_TRUE(step.evaluate(b.views(), l2));
  ASSERT_TRUE(step.parameters(after));
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(step.stepsTaken(), 0);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(before[i].bytes, after[i].bytes) << before[i].name;
  // The loss of a training step is the loss before its update.
  double trained = 0;
  ASSERT_TRUE(step.run(b.views(), 1e-3, trained));
  EXPECT_EQ(trained, l1);
}

TEST_F(JitApiTest, ParametersRoundTrip) {
  std::vector<jit::HostTensor> initial;
  ASSERT_TRUE(step.parameters(initial));
  ASSERT_EQ(initial.size(), step.parameterInfo().size());
  for (size_t i = 0; i < initial.size(); ++i) {
    EXPECT_EQ(initial[i].name, step.parameterInfo()[i].name);
    EXPECT_EQ(initial[i].dtype, jit::DType::F32);
    int64_t n = 1;
    for (int64_t d : initial[i].shape)
      n *= d;
    EXPECT_EQ(initial[i].bytes.size(), size_t(4 * n));
  }
  Batch b(2);
  double l0 = 0, l1 = 0, l2 = 0, ignored = 0;
  ASSERT_TRUE(step.evaluate(b.views(), l0));
  ASSERT_TRUE(step.run(b.views(), 1e-2, ignored));
  ASSERT_TRUE(step.evaluate(b.views(), l1));
  EXPECT_NE(l0, l1);
  // Writing the initial weights back restores the initial loss.
  std::vector<jit::NamedTensor> values;
  for (const jit::HostTensor &t : initial)
    values.push_back({t.name, TensorView::host(
                                  reinterpret_cast<const float *>(t.bytes.data()),
                                  t.shape)});
  Status s = step.loadParameters(values);
  ASSERT_TRUE(s) << s.message();
  ASSERT_TRUE(step.evaluate(b.views(), l2));
  EXPECT_EQ(l0, l2);
  // One parameter by name; a subset loads with strict = false.
  jit::HostTensor wte;
  ASSERT_TRUE(step.parameter("m.wte.weight", wte));
  EXPECT_EQ(wte.bytes, initial[0].bytes);
  std::vector<float> zeros(wte.bytes.size() / 4, 0.0f);
  ASSERT_TRUE(step.loadParameters(
      {{"m.wte.weight", TensorView::host(zeros.data(), wte.shape)}},
      /*strict=*/false));
  ASSERT_TRUE(step.parameter("m.wte.weight", wte));
  EXPECT_EQ(std::vector<uint8_t>(wte.bytes.size(), 0), wte.bytes);
}

// launch() queues a step without reading its loss; lastLoss() reads it.
TEST_F(JitApiTest, LaunchThenLastLoss) {
  jit::Step other;
  ASSERT_TRUE(jit::compile(kTiny, tinyOptions(), other));
  double a = 0, b = 0, last = 0;
  for (int s = 0; s < 2; ++s) {
    ASSERT_TRUE(step.launch(Batch(s).views(), 1e-3));
    ASSERT_TRUE(other.run(Batch(s).views(), 1e-3, a));
  }
  ASSERT_TRUE(step.lastLoss(last));
  EXPECT_EQ(last, a);
  EXPECT_EQ(step.stepsTaken(), 2);
  ASSERT_TRUE(step.evaluate(Batch(5).views(), b));
  ASSERT_TRUE(step.lastLoss(last));
  EXPECT_EQ(last, b);
  expectError(step.launch({Batch(0).views()[0]}, 1e-3), "takes 2 inputs");
  expectError(jit::Step().lastLoss(last), "not compiled");
}

TEST_F(JitApiTest, ScheduleWarmsUpLinearly) {
  jit::Options o = tinyOptions();
  o.lr = 1e-3;
  o.warmup = 4;
  jit::Step s;
  ASSERT_TRUE(jit::compile(kTiny, o, s));
  EXPECT_DOUBLE_EQ(s.scheduledLearningRate(), 0.25e-3);
  Batch b(0);
  double loss = 0;
  ASSERT_TRUE(s.run(b.views(), loss));
  EXPECT_DOUBLE_EQ(s.scheduledLearningRate(), 0.5e-3);
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(s.run(b.views(), loss));
  EXPECT_DOUBLE_EQ(s.scheduledLearningRate(), 1e-3);
}

TEST_F(JitApiTest, JsonGraphText) {
  auto graph = json::buildGpt2("tiny");
  ASSERT_TRUE(graph);
  jit::Step s;
  Status st = jit::compileJsonGraph(json::dump(*graph), tinyOptions(), s);
  ASSERT_TRUE(st) << st.message();
  ASSERT_EQ(s.inputs().size(), 2u);
  EXPECT_EQ(s.inputs()[0].shape, (std::vector<int64_t>{B, T}));
  Batch b(3);
  double loss = 0;
  ASSERT_TRUE(s.run(b.views(), 1e-3, loss));
  EXPECT_NEAR(loss, std::log(double(V)), 0.3);
}

//===----------------------------------------------------------------------===//
// Errors a caller can cause: a status with a message, nothing run
//===----------------------------------------------------------------------===//

void expectError(const Status &s, const std::string &part) {
  ASSERT_FALSE(s) << "expected an error containing: " << part;
  EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
}

TEST_F(JitApiTest, WrongInputsAreRefused) {
  Batch b(0);
  double loss = -1;
  std::vector<int32_t> narrow(b.idx.begin(), b.idx.end());
  expectError(step.run({TensorView::host(narrow.data(), {B, T}),
                        b.views()[1]},
                       1e-3, loss),
              "input 'idx' (#0) is i32[2, 16] but the model expects "
              "i64[2, 16]");
  expectError(step.run({TensorView::host(b.idx.data(), {B, T / 2}),
                        b.views()[1]},
                       1e-3, loss),
              "input 'idx' (#0) is i64[2, 8] but the model expects i64[2, 16]");
  expectError(step.run({b.views()[0]}, 1e-3, loss),
              "the step takes 2 inputs (idx i64[2, 16], tgt i64[2, 16]), got 1");
  expectError(step.run({TensorView::cuda(b.idx.data(), jit::DType::I64, {B, T}),
                        b.views()[1]},
                       1e-3, loss),
              "input 'idx' (#0) is in GPU memory, but this step runs on the "
              "CPU");
  expectError(step.run({TensorView::host(static_cast<const int64_t *>(nullptr),
                                         {B, T}),
                        b.views()[1]},
                       1e-3, loss),
              "input 'idx' (#0) has a null data pointer");
  Batch bad(0);
  bad.tgt[5] = V;
  expectError(step.run(bad.views(), 1e-3, loss),
              "input 'tgt' (#1) holds 512 at element 5, but the model's "
              "vocabulary has 512 entries");
  expectError(step.run(b.views(), std::nan(""), loss),
              "the learning rate must be finite");
  expectError(step.evaluate({b.views()[1]}, loss), "the step takes 2 inputs");
  EXPECT_EQ(loss, -1);
  EXPECT_EQ(step.stepsTaken(), 0);
}

TEST_F(JitApiTest, WrongParametersAreRefused) {
  std::vector<float> small(4, 0.0f);
  expectError(step.loadParameters({{"m.nope", TensorView::host(small.data(),
                                                               {4})}}),
              "the model has no parameter 'm.nope'");
  expectError(step.loadParameters(
                  {{"m.lnf.bias", TensorView::host(small.data(), {4})}}),
              "parameter 'm.lnf.bias' is f32[4] but the model expects "
              "f32[64]");
  std::vector<float> bias(64, 1.0f);
  expectError(step.loadParameters(
                  {{"m.lnf.bias", TensorView::host(bias.data(), {64})}}),
              "parameter 'm.wte.weight' is missing (pass strict = false");
  expectError(step.loadParameters(
                  {{"m.lnf.bias", TensorView::host(bias.data(), {64})},
                   {"m.lnf.bias", TensorView::host(bias.data(), {64})}},
                  false),
              "parameter 'm.lnf.bias' is given twice");
  // Nothing was written by the refused calls.
  jit::HostTensor b;
  ASSERT_TRUE(step.parameter("m.lnf.bias", b));
  EXPECT_EQ(b.bytes, std::vector<uint8_t>(256, 0));
  expectError(step.parameter("m.nope", b), "the model has no parameter");
}

TEST(JitApiErrors, InvalidStep) {
  jit::Step step;
  EXPECT_FALSE(step.valid());
  double loss = 0;
  expectError(step.run({}, 1e-3, loss), "the step is not compiled");
  expectError(step.evaluate({}, loss), "the step is not compiled");
  std::vector<jit::HostTensor> p;
  expectError(step.parameters(p), "the step is not compiled");
  expectError(step.loadParameters({}), "the step is not compiled");
  EXPECT_TRUE(step.inputs().empty());
  // A moved-from step is invalid too.
  jit::Step a;
  ASSERT_TRUE(jit::compile(kTiny, tinyOptions(), a));
  jit::Step b = std::move(a);
  EXPECT_TRUE(b.valid());
  expectError(a.run({}, 1e-3, loss), "moved-from");
}

TEST(JitApiErrors, ModelsThatDoNotCompile) {
  jit::Step step;
  expectError(jit::compile("/nonexistent/m.onnx", tinyOptions(), step),
              "cannot load '/nonexistent/m.onnx'");
  EXPECT_FALSE(step.valid());
  expectError(jit::compile(std::string(LLMC_TEST_MODELS) + "/README.md",
                           tinyOptions(), step),
              "is not a model llmc reads");
  expectError(jit::compileJsonGraph("{\"format\": \"llmc-graph\"", {}, step),
              "cannot load '<json graph>'");
  const char *unknownOp = R"({"format": "llmc-graph", "version": 1,
    "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
    "nodes": [{"op": "frobnicate", "inputs": ["x"], "outputs": ["y"]}],
    "outputs": ["y"]})";
  expectError(jit::compileJsonGraph(unknownOp, {}, step), "frobnicate");
  // A graph whose output is no loss and no logits cannot be trained.
  const char *noLoss = R"({"format": "llmc-graph", "version": 1,
    "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
    "nodes": [{"op": "tanh", "inputs": ["x"], "outputs": ["y"]}],
    "outputs": ["y"]})";
  expectError(jit::compileJsonGraph(noLoss, {}, step),
              "cannot build the training step of '<json graph>'");
  EXPECT_FALSE(step.valid());
}

TEST(JitApiErrors, BadOptions) {
  jit::Step step;
  jit::Options o = tinyOptions();
  o.precision = "fp8";
  expectError(jit::compile(kTiny, o, step),
              "precision 'fp8' is not one of fp32, bf16");
  o = tinyOptions();
  o.arch = "compute_90";
  expectError(jit::compile(kTiny, o, step), "arch 'compute_90' is not sm_XY");
  o = tinyOptions();
  o.beta2 = 1.0;
  expectError(jit::compile(kTiny, o, step), "beta1 and beta2");
  o = tinyOptions();
  o.batch = -1;
  expectError(jit::compile(kTiny, o, step), "batch and seq must be >= 0");
  expectError(jit::compile("model.llmc", tinyOptions(), step),
              "'model.llmc' is a compiled bundle, which runs on the GPU");
}

TEST(JitApiErrors, CudaWithoutAGpu) {
  std::string why;
  jit::Options o = tinyOptions();
  o.device = jit::Device::Cuda;
  jit::Step step;
  Status s = jit::compile(kTiny, o, step);
  if (s)
    GTEST_SKIP() << "a GPU is present: test/gpu/JitGpuTest.cpp covers it";
  expectError(s, "device 'cuda' needs a GPU: ");
  EXPECT_NE(s.message().find("device 'cpu' runs the reference evaluator"),
            std::string::npos);
}

// memory_budget (docs/memory.md): "all" recomputes every saved activation
// and the losses stay bit for bit; a malformed budget is refused.
TEST(JitRecompute, EveryActivationRecomputedSameLosses) {
  jit::Step plain, recomputed;
  jit::Options o = tinyOptions();
  ASSERT_TRUE(jit::compile(kTiny, o, plain));
  o.memoryBudget = "all";
  Status st = jit::compile(kTiny, o, recomputed);
  ASSERT_TRUE(st) << st.message();
  for (int s = 0; s < 3; ++s) {
    Batch b(s);
    double want = 0, got = 0;
    ASSERT_TRUE(plain.run(b.views(), 1e-2, want));
    ASSERT_TRUE(recomputed.run(b.views(), 1e-2, got));
    EXPECT_EQ(got, want) << "step " << s;
  }
  jit::Step bad;
  o.memoryBudget = "lots";
  expectError(jit::compile(kTiny, o, bad),
              "memory_budget: --memory-budget needs a size");
}

} // namespace
