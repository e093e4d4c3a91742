//===- GradCheckElementwiseTest.cpp - Gradient rules of elementwise ops ---===//
//
// Every unary and binary rule against central differences, with operand
// shapes that broadcast (so the sum back to the operand's shape is checked),
// plus where, cast, a value used twice, and the tie conventions of max/min,
// relu and reduce_max, which finite differences cannot see.
//
//===----------------------------------------------------------------------===//
#include "GradCheckUtils.h"

#include "dialects/llmc/LlmcOps.h"

#include <set>

using namespace llmc;
using namespace llmc::test;

namespace {

const char *kT = "tensor<3x4xf64>";

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

struct UnaryCase {
  const char *op;
  double lo, hi; // input range (positive for log, sqrt, ...)
};

class UnaryGrad : public GradCheck,
                  public ::testing::WithParamInterface<UnaryCase> {};

TEST_P(UnaryGrad, MatchesFiniteDifferences) {
  UnaryCase c = GetParam();
  std::string body = std::string("  %y = llmc.") + c.op + " %x : " + kT;
  GradCheckOptions opt;
  opt.lo = c.lo;
  opt.hi = c.hi;
  EXPECT_EQ(check(lossOf({param("x", kT)}, body, kT), {}, opt), 12);
}

INSTANTIATE_TEST_SUITE_P(
    Ops, UnaryGrad,
    ::testing::Values(UnaryCase{"neg", -1, 1}, UnaryCase{"abs", -1, 1},
                      UnaryCase{"exp", -1, 1}, UnaryCase{"log", 0.5, 2},
                      UnaryCase{"sqrt", 0.5, 2}, UnaryCase{"rsqrt", 0.5, 2},
                      UnaryCase{"reciprocal", 0.5, 2}, UnaryCase{"tanh", -1, 1},
                      UnaryCase{"erf", -1, 1}, UnaryCase{"sigmoid", -2, 2},
                      UnaryCase{"relu", -1, 1}, UnaryCase{"cos", -2, 2},
                      UnaryCase{"sin", -2, 2}),
    [](const auto &info) { return std::string(info.param.op); });

//===----------------------------------------------------------------------===//
// Binary ops with broadcasting
//===----------------------------------------------------------------------===//

class BinaryGrad : public GradCheck,
                   public ::testing::WithParamInterface<const char *> {};

TEST_P(BinaryGrad, BroadcastOperandsSumBack) {
  // [2, 3, 4] op [3, 1]: the rhs is stretched along dims 0 and 2.
  std::string op = GetParam();
  const char *lt = "tensor<2x3x4xf64>", *rt = "tensor<3x1xf64>";
  std::string body =
      "  %y = llmc." + op + " %a, %b : (" + lt + ", " + rt + ") -> " + lt;
  GradCheckOptions opt;
  if (op == "pow" || op == "div") {
    opt.lo = 0.5; // positive bases, divisors away from zero
    opt.hi = 2.0;
  }
  EXPECT_EQ(check(lossOf({param("a", lt), param("b", rt)}, body, lt), {}, opt),
            24 + 3);
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryGrad,
                         ::testing::Values("add", "sub", "mul", "div", "pow",
                                           "max", "min"));

TEST_F(GradCheck, BinaryBothOperandsBroadcast) {
  // [4, 1] * [3]: both are stretched to [4, 3].
  std::string body = "  %y = llmc.mul %a, %b : (tensor<4x1xf64>, "
                     "tensor<3xf64>) -> tensor<4x3xf64>";
  EXPECT_EQ(
      check(lossOf({param("a", "tensor<4x1xf64>"), param("b", "tensor<3xf64>")},
                   body, "tensor<4x3xf64>")),
      7);
}

TEST_F(GradCheck, ValueUsedTwiceSumsItsCotangents) {
  // y = x * x + exp(x): three uses of x.
  std::string body = R"(
  %s = llmc.mul %x, %x : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
  %e = llmc.exp %x : tensor<3x4xf64>
  %y = llmc.add %s, %e : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>)";
  EXPECT_EQ(check(lossOf({param("x", kT)}, body, kT)), 12);
}

TEST_F(GradCheck, WhereRoutesEachBranch) {
  std::string body = "  %y = llmc.where %c, %a, %b : (tensor<3x1xi1>, "
                     "tensor<3x4xf64>, tensor<4xf64>) -> tensor<3x4xf64>";
  RefTensor cond = RefTensor::fromInts(ElementKind::I1, {3, 1}, {1, 0, 1});
  EXPECT_EQ(check(lossOf({input("c", "tensor<3x1xi1>"), param("a", kT),
                          param("b", "tensor<4xf64>")},
                         body, kT),
                  {{"c", cond}}),
            16);
}

TEST_F(GradCheck, CastRoundTrip) {
  // f64 -> f32 -> f64: the cotangent converts back at each cast. f32
  // rounding limits the difference quotient to about 1e-4 relative.
  std::string body = R"(
  %n = llmc.cast %x : tensor<3x4xf64> -> tensor<3x4xf32>
  %t = llmc.tanh %n : tensor<3x4xf32>
  %y = llmc.cast %t : tensor<3x4xf32> -> tensor<3x4xf64>)";
  GradCheckOptions opt;
  opt.h = 1e-3;
  opt.rtol = 1e-3;
  opt.atol = 1e-4;
  EXPECT_EQ(check(lossOf({param("x", kT)}, body, kT), {}, opt), 12);
}

//===----------------------------------------------------------------------===//
// Conventions at non-differentiable points
//===----------------------------------------------------------------------===//

RefTensor f64(std::vector<int64_t> shape, std::vector<double> v) {
  return RefTensor::fromFloats(ElementKind::F64, std::move(shape),
                               std::move(v));
}

TEST_F(GradCheck, MaxMinSplitTiesEvenly) {
  // torch.maximum/minimum: equal operands share the gradient.
  for (const char *op : {"max", "min"}) {
    std::string ir =
        std::string(R"(
func.func @forward(%a: tensor<3xf64> {llmc.param = "a", llmc.init_rule = "zeros"},
                   %b: tensor<3xf64> {llmc.param = "b", llmc.init_rule = "zeros"})
    -> (tensor<f64> {llmc.output = "loss"}) {
  %m = llmc.)") +
        op + R"( %a, %b : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %l = llmc.reduce_sum %m axes [0] : (tensor<3xf64>) -> tensor<f64>
  return %l : tensor<f64>
})";
    auto g =
        gradients(ir, {{"a", f64({3}, {1, 2, 3})}, {"b", f64({3}, {1, 5, 0})}});
    ASSERT_EQ(g.size(), 2u) << diagnostics;
    bool isMax = std::string(op) == "max";
    EXPECT_EQ(g[0].floats,
              (std::vector<double>{0.5, isMax ? 0.0 : 1.0, isMax ? 1.0 : 0.0}));
    EXPECT_EQ(g[1].floats,
              (std::vector<double>{0.5, isMax ? 1.0 : 0.0, isMax ? 0.0 : 1.0}));
  }
}

TEST_F(GradCheck, ReluAndAbsHaveZeroGradientAtZero) {
  std::string ir = R"(
func.func @forward(%x: tensor<3xf64> {llmc.param = "x", llmc.init_rule = "zeros"},
                   %z: tensor<3xf64> {llmc.param = "z", llmc.init_rule = "zeros"})
    -> (tensor<f64> {llmc.output = "loss"}) {
  %r = llmc.relu %x : tensor<3xf64>
  %a = llmc.abs %z : tensor<3xf64>
  %s = llmc.add %r, %a : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %l = llmc.reduce_sum %s axes [0] : (tensor<3xf64>) -> tensor<f64>
  return %l : tensor<f64>
})";
  auto g =
      gradients(ir, {{"x", f64({3}, {-1, 0, 2})}, {"z", f64({3}, {-1, 0, 2})}});
  ASSERT_EQ(g.size(), 2u) << diagnostics;
  EXPECT_EQ(g[0].floats, (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(g[1].floats, (std::vector<double>{-1, 0, 1}));
}

TEST_F(GradCheck, ReduceMaxSharesTiedMaxima) {
  std::string ir = R"(
func.func @forward(%x: tensor<2x3xf64> {llmc.param = "x", llmc.init_rule = "zeros"})
    -> (tensor<f64> {llmc.output = "loss"}) {
  %m = llmc.reduce_max %x axes [1] : (tensor<2x3xf64>) -> tensor<2xf64>
  %l = llmc.reduce_sum %m axes [0] : (tensor<2xf64>) -> tensor<f64>
  return %l : tensor<f64>
})";
  auto g = gradients(ir, {{"x", f64({2, 3}, {1, 4, 4, 2, 0, 1})}});
  ASSERT_EQ(g.size(), 1u) << diagnostics;
  EXPECT_EQ(g[0].floats, (std::vector<double>{0, 0.5, 0.5, 1, 0, 0}));
}

TEST_F(GradCheck, PowGuardsZeroBaseAndZeroExponent) {
  // d/dx x^0 = 0 (not 0 * x^-1 = NaN at 0); d/de 0^e = 0 for e >= 0.
  std::string ir = R"(
func.func @forward(%x: tensor<2xf64> {llmc.param = "x", llmc.init_rule = "zeros"},
                   %e: tensor<2xf64> {llmc.param = "e", llmc.init_rule = "zeros"})
    -> (tensor<f64> {llmc.output = "loss"}) {
  %p = llmc.pow %x, %e : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  %l = llmc.reduce_sum %p axes [0] : (tensor<2xf64>) -> tensor<f64>
  return %l : tensor<f64>
})";
  auto g = gradients(ir, {{"x", f64({2}, {0, 0})}, {"e", f64({2}, {0, 2})}});
  ASSERT_EQ(g.size(), 2u) << diagnostics;
  EXPECT_EQ(g[0].floats, (std::vector<double>{0, 0}));
  EXPECT_EQ(g[1].floats, (std::vector<double>{0, 0}));
}

} // namespace

//===----------------------------------------------------------------------===//
// Coverage
//===----------------------------------------------------------------------===//

namespace {

TEST(GradientRules, EveryFloatForwardOpHasOne) {
  // A new forward op must declare Llmc_Differentiable (or be listed here
  // with the reason it needs no rule), so that autodiff never meets a
  // float op it cannot differentiate in a model.
  const std::set<std::string> exempt = {
      "llmc.constant",      "llmc.iota",  // no operands
      "llmc.compare",       "llmc.isnan", // i1 results
      "llmc.attention_lse",               // emitted by autodiff itself
      "llmc.dropout_mask",                // only an i64 step operand
      "llmc.kernel",        "llmc.yield", // kernel groups, after autodiff
  };
  mlir::MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect>();
  int differentiable = 0;
  for (mlir::RegisteredOperationName op : context.getRegisteredOperations()) {
    std::string name = op.getStringRef().str();
    // Backward and optimizer ops (llmc-append-optimizer, llmc-batch-adamw)
    // come after autodiff.
    bool backward = name.find("_grad") != std::string::npos ||
                    name == "llmc.adamw_update" ||
                    name == "llmc.multi_adamw_update" ||
                    name == "llmc.global_norm";
    if (op.getDialectNamespace() != "llmc" || backward || exempt.count(name))
      continue;
    EXPECT_TRUE(op.hasInterface<mlir::llmc::DifferentiableOpInterface>())
        << name << " has no gradient rule";
    ++differentiable;
  }
  EXPECT_EQ(differentiable, 43); // 22 elementwise, 11 shape, 10 composite
}

} // namespace
