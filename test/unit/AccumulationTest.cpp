//===- AccumulationTest.cpp - k micro-batches of B are one batch of kB ----===//
//
// llmc-accumulate-gradients (docs/memory.md) in the reference evaluator:
// three micro-batches of 2 rows through @accumulate_step (its accumulators
// fed back through llmc.next, as the trainer does), then the apply step
// @train_step, against one plain step on the 6 rows together: the loss, the
// gradients and a clipped AdamW step agree within f32 rounding. The first
// micro-batch ignores one target, so the window's normalizer (5 tokens) is
// not a mean of micro-batch means, and the test checks that the two differ.
//
//===----------------------------------------------------------------------===//
#include "GradCheckUtils.h"

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace ::llmc;
using namespace ::llmc::test;

namespace {

// loss = cross_entropy(gelu(x @ w1) @ w2 + b): a hidden layer, so the
// gradients of w1 depend on the rows through a nonlinearity.
std::string model(int rows) {
  std::string n = std::to_string(rows);
  return R"(
func.func @forward(%x: tensor<)" +
         n + R"(x4xf32> {llmc.input = "x"},
                   %t: tensor<)" +
         n + R"(xi64> {llmc.input = "targets"},
                   %w1: tensor<4x8xf32> {llmc.param = "w1"},
                   %w2: tensor<8x5xf32> {llmc.param = "w2"},
                   %b: tensor<5xf32> {llmc.param = "b"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.matmul %x, %w1 : (tensor<)" +
         n + R"(x4xf32>, tensor<4x8xf32>) -> tensor<)" + n + R"(x8xf32>
  %1 = llmc.gelu tanh %0 : tensor<)" +
         n + R"(x8xf32>
  %2 = llmc.matmul %1, %w2 : (tensor<)" +
         n + R"(x8xf32>, tensor<8x5xf32>) -> tensor<)" + n + R"(x5xf32>
  %3 = llmc.add %2, %b : (tensor<)" +
         n + R"(x5xf32>, tensor<5xf32>) -> tensor<)" + n + R"(x5xf32>
  %4 = llmc.cross_entropy mean %3, %t : (tensor<)" +
         n + R"(x5xf32>, tensor<)" + n + R"(xi64>) -> tensor<f32>
  return %4 : tensor<f32>
})";
}

constexpr int kMicro = 2, kSteps = 3, kRows = kMicro * kSteps;
const char *kOptimizer =
    "llmc-append-optimizer{clip-norm=1.0 weight-decay=0.1 beta2=0.95}";

RefTensor f32(std::vector<int64_t> shape, std::vector<double> v) {
  return RefTensor::fromFloats(ElementKind::F32, std::move(shape),
                               std::move(v));
}

std::string nameOf(func::FuncOp f, unsigned i) {
  for (const char *key :
       {"llmc.param", "llmc.input", "llmc.state_of", "llmc.state"})
    if (auto a = f.getArgAttrOfType<StringAttr>(i, key))
      return std::string(key == std::string("llmc.state_of") ? "of:" : "") +
             a.getValue().str();
  return "";
}

class AccumulationTest : public GradCheck {
protected:
  AccumulationTest() { mlir::llmc::registerLlmcPasses(); }

  OwningOpRef<ModuleOp> compile(int rows, const std::string &pipeline) {
    auto module = parseSourceString<ModuleOp>(model(rows), &context);
    PassManager pm(&context);
    if (!module || failed(parsePassPipeline(pipeline, pm)) ||
        failed(pm.run(*module))) {
      ADD_FAILURE() << "pipeline " << pipeline << " failed:\n" << diagnostics;
      return nullptr;
    }
    return module;
  }

  /// Arguments by name (`by`), zeros for the rest (state).
  std::vector<RefTensor> arguments(func::FuncOp f,
                                   const std::map<std::string, RefTensor> &by) {
    std::vector<RefTensor> args;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      auto it = by.find(nameOf(f, i));
      if (it != by.end()) {
        args.push_back(it->second);
        continue;
      }
      auto type = cast<RankedTensorType>(f.getArgument(i).getType());
      args.emplace_back(*kindOf(type.getElementType()),
                        std::vector<int64_t>(type.getShape()));
    }
    return args;
  }

  std::map<std::string, RefTensor> rows(int first, int count) {
    RefTensor xs = f32({count, 4}, {}),
              ts = RefTensor::fromInts(ElementKind::I64, {count}, {});
    xs.floats.assign(x.floats.begin() + first * 4,
                     x.floats.begin() + (first + count) * 4);
    ts.ints.assign(t.ints.begin() + first, t.ints.begin() + first + count);
    return {{"x", xs}, {"targets", ts}, {"w1", w1}, {"w2", w2}, {"b", b}};
  }

  /// The apply step's results after kSteps micro-batches (`lr` when the
  /// optimizer is appended).
  std::vector<RefTensor> window(ModuleOp module, double lr) {
    auto acc = module.lookupSymbol<func::FuncOp>("accumulate_step");
    auto apply = module.lookupSymbol<func::FuncOp>("train_step");
    if (!acc || !apply) {
      ADD_FAILURE() << "no @accumulate_step or @train_step";
      return {};
    }
    std::vector<RefTensor> state; // the accumulators, by state position
    std::map<std::string, RefTensor> accumulated;
    for (int s = 0; s < kSteps; ++s) {
      std::vector<RefTensor> args = arguments(acc, rows(s * kMicro, kMicro));
      for (unsigned r = 0; r < state.size(); ++r)
        args[acc.getResultAttrOfType<IntegerAttr>(r, "llmc.next").getInt()] =
            state[r];
      auto out = evaluate(acc, args);
      if (failed(out)) {
        ADD_FAILURE() << diagnostics;
        return {};
      }
      state = *out;
    }
    for (unsigned r = 0; r < state.size(); ++r) {
      unsigned arg =
          acc.getResultAttrOfType<IntegerAttr>(r, "llmc.next").getInt();
      std::string name = nameOf(acc, arg);
      accumulated[name.rfind("of:", 0) == 0
                      ? "accum.grad:" + name.substr(3)
                      : acc.getArgAttrOfType<StringAttr>(arg, "llmc.state")
                            .getValue()
                            .str()] = state[r];
    }
    accumulated["w1"] = w1;
    accumulated["w2"] = w2;
    accumulated["b"] = b;
    accumulated["lr"] = f32({}, {lr});
    auto out = evaluate(apply, arguments(apply, accumulated));
    if (failed(out)) {
      ADD_FAILURE() << diagnostics;
      return {};
    }
    return *out;
  }

  /// Within f32 rounding: 4e-7 of the tensor's largest element, plus 2e-8
  /// for sums that cancel (the bias gradient adds per-row softmax terms of
  /// order 1 into results of order 1e-3: one f32 rounding of such a term
  /// is 6e-8, and the window rounds its sum at other places).
  void expectClose(const RefTensor &got, const RefTensor &want,
                   const std::string &what) {
    ASSERT_EQ(got.floats.size(), want.floats.size()) << what;
    double scale = 0;
    for (double v : want.floats)
      scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < got.floats.size(); ++i)
      EXPECT_NEAR(got.floats[i], want.floats[i], 4e-7 * scale + 2e-8)
          << what << " element " << i;
  }

  RefTensor x =
      f32({kRows, 4},
          {0.3,  -1.2, 0.8, 0.1, 1.5, 0.2,  -0.7, 0.9,  -0.4, 0.6, 1.1,  -1.3,
           0.05, -0.8, 0.4, 1.7, 0.9, -0.3, 0.2,  -0.6, -1.1, 1.0, 0.35, 0.75});
  // Row 1 is ignored: micro-batch 0 counts 1 token, the others 2 each.
  RefTensor t =
      RefTensor::fromInts(ElementKind::I64, {kRows}, {3, -100, 0, 4, 1, 2});
  RefTensor w1 = f32({4, 8}, {0.2,  -0.1, 0.4,  0.3,  -0.5, 0.1,  0.7,  -0.2,
                              0.05, 0.6,  -0.3, 0.2,  0.1,  -0.4, 0.3,  0.5,
                              -0.6, 0.2,  0.15, -0.1, 0.4,  0.3,  -0.2, 0.1,
                              0.3,  -0.5, 0.2,  0.6,  -0.1, 0.25, 0.1,  -0.3});
  RefTensor w2 =
      f32({8, 5}, {0.1,  0.2,   -0.3, 0.4,  -0.1, 0.3,  -0.2, 0.1,   0.5, 0.2,
                   -0.4, 0.1,   0.2,  -0.1, 0.3,  0.2,  0.3,  -0.5,  0.1, 0.05,
                   0.15, -0.25, 0.35, 0.2,  -0.1, 0.4,  0.1,  -0.2,  0.3, -0.3,
                   -0.2, 0.1,   0.2,  0.3,  -0.4, 0.05, 0.25, -0.15, 0.1, 0.3});
  RefTensor b = f32({5}, {0.01, -0.02, 0.03, 0.0, -0.01});
};

TEST_F(AccumulationTest, LossAndGradientsOfTheWindowAreThoseOfOneBatch) {
  auto whole = compile(kRows, "llmc-autodiff{keep-forward=false}");
  auto split = compile(kMicro, "llmc-autodiff{keep-forward=false}, "
                               "llmc-accumulate-gradients");
  ASSERT_TRUE(whole && split);
  auto step = whole->lookupSymbol<func::FuncOp>("train_step");
  auto want = evaluate(step, arguments(step, rows(0, kRows)));
  ASSERT_TRUE(succeeded(want)) << diagnostics;
  std::vector<RefTensor> got = window(*split, 0);
  ASSERT_EQ(got.size(), want->size());
  expectClose(got[0], (*want)[0], "loss");
  for (size_t i = 1; i < got.size(); ++i)
    expectClose(got[i], (*want)[i], "gradient " + std::to_string(i));

  // A mean of the micro-batches' means is another number: the window's
  // normalizer counts its 5 tokens.
  auto micro = compile(kMicro, "llmc-autodiff{keep-forward=false}");
  auto microStep = micro->lookupSymbol<func::FuncOp>("train_step");
  double meanOfMeans = 0;
  for (int s = 0; s < kSteps; ++s) {
    auto r =
        evaluate(microStep, arguments(microStep, rows(s * kMicro, kMicro)));
    ASSERT_TRUE(succeeded(r)) << diagnostics;
    meanOfMeans += (*r)[0].floats[0] / kSteps;
  }
  EXPECT_GT(std::fabs(meanOfMeans - (*want)[0].floats[0]), 1e-3);
}

TEST_F(AccumulationTest, ClippedAdamWStepOfTheWindowIsThatOfOneBatch) {
  auto whole = compile(
      kRows, std::string("llmc-autodiff{keep-forward=false}, ") + kOptimizer);
  auto split = compile(kMicro, std::string("llmc-autodiff{keep-forward=false}, "
                                           "llmc-accumulate-gradients, ") +
                                   kOptimizer);
  ASSERT_TRUE(whole && split);
  auto step = whole->lookupSymbol<func::FuncOp>("train_step");
  std::map<std::string, RefTensor> args = rows(0, kRows);
  args["lr"] = f32({}, {0.01});
  auto want = evaluate(step, arguments(step, args));
  ASSERT_TRUE(succeeded(want)) << diagnostics;
  std::vector<RefTensor> got = window(*split, 0.01);
  // (loss, grad_norm, w1', w2', b', step', m..., v...): the same layout.
  ASSERT_EQ(got.size(), want->size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].isFloat())
      expectClose(got[i], (*want)[i], "result " + std::to_string(i));
    else
      EXPECT_EQ(got[i].ints, (*want)[i].ints) << "result " << i;
  }
}

} // namespace
