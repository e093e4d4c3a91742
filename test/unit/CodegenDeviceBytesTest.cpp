//===- CodegenDeviceBytesTest.cpp - Initial data straight to device bytes ===//
//
// The plan builders write parameters and constants through DeviceBytes.h,
// which skips the evaluator's doubles; the bytes must be exactly those of
// the evaluator's path (toDeviceBytes(initialParameter(...))), so that CPU
// and GPU training start from the same weights.
//
//===----------------------------------------------------------------------===//
#include "EvalTestUtils.h"

#include "compiler/codegen/DeviceBytes.h"
#include "compiler/codegen/FunctionLowering.h"
#include "compiler/eval/AttrTensors.h"
#include "compiler/eval/ModelArguments.h"
#include "dialects/llmc/LlmcOps.h"

using namespace llmc;
using namespace llmc::test;

namespace {

using DeviceBytes = EvalTest;

// n is larger than one fill chunk (2^20 elements) and odd, so chunk
// boundaries and the last unpaired normal draw are both exercised.
const char *kModel = R"mlir(
  func.func @forward(
      %w: tensor<2xf32> {llmc.param = "w", llmc.init = dense_resource<blob1> : tensor<2xf32>},
      %b: tensor<2xf32> {llmc.param = "b", llmc.init = dense<[0.5, -0.5]> : tensor<2xf32>},
      %s: tensor<3x2xbf16> {llmc.param = "s", llmc.init = dense<0.25> : tensor<3x2xbf16>},
      %n: tensor<1048577x3xf32> {llmc.param = "n", llmc.init_rule = "normal(0.02)"},
      %h: tensor<1001xbf16> {llmc.param = "h", llmc.init_rule = "normal(1.5)"},
      %f: tensor<7xf16> {llmc.param = "f", llmc.init_rule = "normal(3.0)"},
      %o: tensor<3xbf16> {llmc.param = "o", llmc.init_rule = "ones"},
      %z: tensor<3xf32> {llmc.param = "z", llmc.init_rule = "zeros"},
      %t: tensor<i64> {llmc.param = "t", llmc.init_rule = "zeros"}) -> tensor<2xf32> {
    %c = llmc.constant dense<[true, false, true]> : tensor<3xi1>
    %d = llmc.constant dense<[1, -2, 3]> : tensor<3xi64>
    %e = llmc.constant dense<-1.5> : tensor<2x2xf16>
    return %w : tensor<2xf32>
  }
  {-#
    dialect_resources: {
      builtin: {
        blob1: "0x040000000000803F00000040"
      }
    }
  #-}
)mlir";

TEST_F(DeviceBytes, ParametersAreTheEvaluatorsBytes) {
  mlir::func::FuncOp f = parse(kModel);
  ASSERT_TRUE(f);
  for (uint64_t seed : {0ull, 7ull})
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      std::string error, fastError;
      auto slow = initialParameter(f, i, seed, error);
      ASSERT_TRUE(slow) << error;
      auto fast = codegen::initialParameterBytes(f, i, seed, fastError);
      ASSERT_TRUE(fast) << fastError;
      EXPECT_EQ(*fast, codegen::toDeviceBytes(*slow))
          << "argument #" << i << " seed " << seed;
    }
}

TEST_F(DeviceBytes, ConstantsAreTheEvaluatorsBytes) {
  mlir::func::FuncOp f = parse(kModel);
  ASSERT_TRUE(f);
  int constants = 0;
  f.walk([&](mlir::llmc::ConstantOp c) {
    std::string error, fastError;
    auto slow = tensorFromAttr(c.getValue(), error);
    ASSERT_TRUE(slow) << error;
    auto fast = codegen::attrDeviceBytes(c.getValue(), fastError);
    ASSERT_TRUE(fast) << fastError;
    EXPECT_EQ(*fast, codegen::toDeviceBytes(*slow));
    ++constants;
  });
  EXPECT_EQ(constants, 3);
}

TEST_F(DeviceBytes, ErrorsAreTheEvaluatorsMessages) {
  mlir::func::FuncOp f = parse(R"mlir(
    func.func @forward(
        %a: tensor<2xf32> {llmc.param = "a", llmc.init_rule = "uniform"},
        %b: tensor<2xf32> {llmc.param = "b"},
        %c: tensor<2xf32> {llmc.param = "c", llmc.init = dense<1.0> : tensor<3xf32>},
        %d: tensor<2xi32> {llmc.param = "d", llmc.init_rule = "ones"}) {
      return
    }
  )mlir");
  ASSERT_TRUE(f);
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    std::string error, fastError;
    EXPECT_FALSE(initialParameter(f, i, 0, error));
    EXPECT_FALSE(codegen::initialParameterBytes(f, i, 0, fastError));
    EXPECT_FALSE(fastError.empty());
    EXPECT_EQ(fastError, error) << "argument #" << i;
  }
}

} // namespace
