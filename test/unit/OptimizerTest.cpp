//===- OptimizerTest.cpp - The optimizer step against PyTorch's formulas --===//
//
// Runs llmc-autodiff + llmc-append-optimizer on a small f64 model, executes
// several steps in the reference evaluator (feeding each result back into
// the argument its llmc.next names, as the runtime will) and compares the
// parameters with torch.optim.AdamW / SGD written out here as plain loops
// over the gradients that @train_step of llmc-autodiff alone computes.
//
//===----------------------------------------------------------------------===//
#include "GradCheckUtils.h"

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cmath>

using namespace mlir;
using namespace ::llmc;
using namespace ::llmc::test;

namespace {

// loss = sum(tanh(x @ w + b) * r): w [3, 2] decays, b [2] may not.
const char *kModel = R"(
func.func @forward(%w: tensor<3x2xf64> {llmc.param = "w", llmc.init_rule = "zeros"},
                   %b: tensor<2xf64> {llmc.param = "b", llmc.init_rule = "zeros"},
                   %x: tensor<4x3xf64> {llmc.input = "x"},
                   %r: tensor<4x2xf64> {llmc.input = "r"}) -> (tensor<f64> {llmc.output = "loss"}) {
  %0 = llmc.matmul %x, %w : (tensor<4x3xf64>, tensor<3x2xf64>) -> tensor<4x2xf64>
  %1 = llmc.add %0, %b : (tensor<4x2xf64>, tensor<2xf64>) -> tensor<4x2xf64>
  %2 = llmc.tanh %1 : tensor<4x2xf64>
  %3 = llmc.mul %2, %r : (tensor<4x2xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
  %4 = llmc.reduce_sum %3 axes [0, 1] : (tensor<4x2xf64>) -> tensor<f64>
  return %4 : tensor<f64>
})";

RefTensor f64(std::vector<int64_t> shape, std::vector<double> v) {
  return RefTensor::fromFloats(ElementKind::F64, std::move(shape),
                               std::move(v));
}

class OptimizerTest : public GradCheck {
protected:
  OptimizerTest() { mlir::llmc::registerLlmcPasses(); }

  /// The module after `pipeline` (passes on the module, comma-separated).
  OwningOpRef<ModuleOp> compile(const std::string &pipeline) {
    auto module = parseSourceString<ModuleOp>(kModel, &context);
    PassManager pm(&context);
    if (!module || failed(parsePassPipeline(pipeline, pm)) ||
        failed(pm.run(*module))) {
      ADD_FAILURE() << "pipeline " << pipeline << " failed:\n" << diagnostics;
      return nullptr;
    }
    return module;
  }

  /// Gradients of w and b at the given parameters (llmc-autodiff only).
  std::vector<RefTensor> grads(const RefTensor &w, const RefTensor &b) {
    auto module = compile("llmc-autodiff");
    auto train = module->lookupSymbol<func::FuncOp>("train_step");
    if (!train)
      return {};
    auto r = evaluate(train, {w, b, x, y});
    EXPECT_TRUE(succeeded(r));
    return {(*r)[1], (*r)[2]};
  }

  /// Runs `steps` steps of the full train_step with lr; returns the final
  /// parameters and the last results.
  std::vector<RefTensor> runSteps(func::FuncOp train, int steps, double lr,
                                  std::vector<RefTensor> &last) {
    std::vector<RefTensor> args = {
        w0, b0, x, y,
        RefTensor::fromFloats(ElementKind::F32, {}, {static_cast<float>(lr)})};
    for (unsigned i = args.size(); i < train.getNumArguments(); ++i) {
      auto type = cast<RankedTensorType>(train.getArgument(i).getType());
      args.emplace_back(*kindOf(type.getElementType()),
                        std::vector<int64_t>(type.getShape()));
    }
    for (int s = 0; s < steps; ++s) {
      auto r = evaluate(train, args);
      if (failed(r)) {
        ADD_FAILURE() << diagnostics;
        return {};
      }
      last = *r;
      for (unsigned i = 0; i < train.getNumResults(); ++i)
        if (auto next = train.getResultAttrOfType<IntegerAttr>(i, "llmc.next"))
          args[next.getInt()] = (*r)[i];
    }
    return {args[0], args[1]};
  }

  RefTensor w0 = f64({3, 2}, {0.1, -0.2, 0.3, 0.4, -0.5, 0.6});
  RefTensor b0 = f64({2}, {0.05, -0.1});
  RefTensor x = f64({4, 3}, {1, 2, 3, -1, 0.5, 2, 0, 1, -2, 3, -1, 1});
  RefTensor y = f64({4, 2}, {0.5, -1, 2, 1, -0.5, 0.25, 1, -2});
};

TEST_F(OptimizerTest, AdamWMatchesTorch) {
  // lr 0.01 is an f32 input; betas (0.9, 0.95), eps 1e-8, wd 0.1 on w only.
  auto module = compile("llmc-autodiff, llmc-append-optimizer{"
                        "beta2=0.95 weight-decay=0.1 decay-min-rank=2}");
  ASSERT_TRUE(module);
  auto train = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(train);
  std::vector<RefTensor> last;
  std::vector<RefTensor> got = runSteps(train, 3, 0.01, last);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(last[3].ints, (std::vector<int64_t>{3})); // the step count

  // torch.optim.AdamW, written out.
  double lr = static_cast<float>(0.01), b1 = 0.9, b2 = 0.95, eps = 1e-8;
  std::vector<RefTensor> p = {w0, b0}, m = {w0, b0}, v = {w0, b0};
  for (auto *t : {&m, &v})
    for (RefTensor &s : *t)
      std::fill(s.floats.begin(), s.floats.end(), 0.0);
  for (int step = 1; step <= 3; ++step) {
    std::vector<RefTensor> g = grads(p[0], p[1]);
    for (int k = 0; k < 2; ++k) {
      double wd = k == 0 ? 0.1 : 0.0;
      for (size_t i = 0; i < p[k].floats.size(); ++i) {
        double gi = g[k].floats[i];
        p[k].floats[i] *= 1 - lr * wd;
        m[k].floats[i] = b1 * m[k].floats[i] + (1 - b1) * gi;
        v[k].floats[i] = b2 * v[k].floats[i] + (1 - b2) * gi * gi;
        double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
        double denom = std::sqrt(v[k].floats[i]) / std::sqrt(bc2) + eps;
        p[k].floats[i] -= lr / bc1 * m[k].floats[i] / denom;
      }
    }
  }
  for (int k = 0; k < 2; ++k)
    for (size_t i = 0; i < p[k].floats.size(); ++i)
      EXPECT_NEAR(got[k].floats[i], p[k].floats[i], 1e-12)
          << "param " << k << "[" << i << "]";
}

TEST_F(OptimizerTest, SgdMomentumMatchesTorch) {
  auto module = compile("llmc-autodiff, llmc-append-optimizer{"
                        "optimizer=sgd momentum=0.9 weight-decay=0.01}");
  ASSERT_TRUE(module);
  auto train = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(train);
  std::vector<RefTensor> last;
  std::vector<RefTensor> got = runSteps(train, 3, 0.1, last);
  ASSERT_EQ(got.size(), 2u);

  // torch.optim.SGD(momentum=0.9, weight_decay=0.01): buf = g on step 1.
  double lr = static_cast<float>(0.1);
  std::vector<RefTensor> p = {w0, b0}, buf = {w0, b0};
  for (int step = 1; step <= 3; ++step) {
    std::vector<RefTensor> g = grads(p[0], p[1]);
    for (int k = 0; k < 2; ++k)
      for (size_t i = 0; i < p[k].floats.size(); ++i) {
        double gi = g[k].floats[i] + 0.01 * p[k].floats[i];
        buf[k].floats[i] = step == 1 ? gi : 0.9 * buf[k].floats[i] + gi;
        p[k].floats[i] -= lr * buf[k].floats[i];
      }
  }
  for (int k = 0; k < 2; ++k)
    for (size_t i = 0; i < p[k].floats.size(); ++i)
      EXPECT_NEAR(got[k].floats[i], p[k].floats[i], 1e-12)
          << "param " << k << "[" << i << "]";
}

TEST_F(OptimizerTest, ClippingScalesByTheGlobalNorm) {
  // Plain SGD with clip-norm 0.5: p' = p - lr * g * min(1, 0.5 / (|g| + 1e-6)).
  auto module = compile("llmc-autodiff, llmc-append-optimizer{"
                        "optimizer=sgd clip-norm=0.5}");
  ASSERT_TRUE(module);
  auto train = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(train);
  std::vector<RefTensor> last;
  std::vector<RefTensor> got = runSteps(train, 1, 1.0, last);
  ASSERT_EQ(got.size(), 2u);
  std::vector<RefTensor> g = grads(w0, b0);
  double sq = 0;
  for (const RefTensor &t : g)
    for (double v : t.floats)
      sq += v * v;
  double norm = std::sqrt(sq);
  ASSERT_GT(norm, 0.5) << "the test needs a norm above the clip";
  EXPECT_NEAR(last[1].floats[0], norm, 1e-12); // the grad_norm output
  double coef = 0.5 / (norm + 1e-6);
  for (size_t i = 0; i < w0.floats.size(); ++i)
    EXPECT_NEAR(got[0].floats[i], w0.floats[i] - coef * g[0].floats[i], 1e-12);
}

TEST_F(OptimizerTest, BatchedAdamWEqualsPerParameter) {
  // llmc-batch-adamw (one multi_adamw_update reading the clip coefficient)
  // against one adamw_update per parameter: three clipped steps with decay
  // on the matrix only give the same parameters and state in the reference.
  const std::string optimizer =
      "llmc-autodiff, llmc-append-optimizer{clip-norm=0.5 weight-decay=0.1 "
      "decay-min-rank=2}";
  auto per = compile(optimizer);
  auto batched = compile(optimizer + ", func.func(llmc-batch-adamw)");
  ASSERT_TRUE(per && batched);
  auto perTrain = per->lookupSymbol<func::FuncOp>("train_step");
  auto batchedTrain = batched->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(perTrain && batchedTrain);
  int multi = 0;
  batchedTrain.walk([&](Operation *op) {
    multi += op->getName().getStringRef() == "llmc.multi_adamw_update";
    EXPECT_NE(op->getName().getStringRef(), "llmc.adamw_update");
  });
  EXPECT_EQ(multi, 1);
  std::vector<RefTensor> lastPer, lastBatched;
  std::vector<RefTensor> a = runSteps(perTrain, 3, 0.1, lastPer);
  std::vector<RefTensor> b = runSteps(batchedTrain, 3, 0.1, lastBatched);
  ASSERT_EQ(lastPer.size(), lastBatched.size());
  for (size_t r = 0; r < lastPer.size(); ++r) {
    EXPECT_EQ(lastPer[r].floats, lastBatched[r].floats) << "result " << r;
    EXPECT_EQ(lastPer[r].ints, lastBatched[r].ints) << "result " << r;
  }
}

} // namespace
