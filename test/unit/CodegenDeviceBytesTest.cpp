//===- CodegenDeviceBytesTest.cpp - Initial data straight to device bytes ===//
//
// The plan builders write parameters and constants through DeviceBytes.h,
// which links nothing of the evaluator and holds no doubles; the bytes must
// be exactly those of the evaluator's path (toDeviceBytes(initialParameter
// (...))), so that CPU and GPU training start from the same weights: both
// draw from compiler/common/ParameterInit.h's stream, one into doubles, one
// straight into each element type.
//
//===----------------------------------------------------------------------===//
#include "EvalTestUtils.h"

#include "compiler/codegen/DeviceBytes.h"
#include "compiler/eval/AttrTensors.h"
#include "compiler/eval/DeviceTensors.h"
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
      %t: tensor<i64> {llmc.param = "t", llmc.init_rule = "zeros"},
      %m: tensor<3xi1> {llmc.param = "m", llmc.init = dense<[true, false, true]> : tensor<3xi1>},
      %r: tensor<4xi1> {llmc.param = "r", llmc.init = dense_resource<blob2> : tensor<4xi1>},
      %q: tensor<5xi1> {llmc.param = "q", llmc.init_rule = "zeros"},
      %k: tensor<2x2xi32> {llmc.param = "k", llmc.init = dense<[[1, -2], [3, 2147483647]]> : tensor<2x2xi32>},
      %u: tensor<3xf16> {llmc.param = "u", llmc.init_rule = "ones"}) -> tensor<2xf32> {
    %c = llmc.constant dense<[true, false, true]> : tensor<3xi1>
    %d = llmc.constant dense<[1, -2, 3]> : tensor<3xi64>
    %e = llmc.constant dense<-1.5> : tensor<2x2xf16>
    %g = llmc.constant dense<true> : tensor<9xi1>
    %l = llmc.constant dense<[0.1, 1.0e-8, 65504.0]> : tensor<3xbf16>
    return %w : tensor<2xf32>
  }
  {-#
    dialect_resources: {
      builtin: {
        blob1: "0x040000000000803F00000040",
        blob2: "0x0100000002000001"
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
      EXPECT_EQ(*fast, toDeviceBytes(*slow))
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
    EXPECT_EQ(*fast, toDeviceBytes(*slow));
    ++constants;
  });
  EXPECT_EQ(constants, 5);
}

TEST_F(DeviceBytes, ErrorsAreTheEvaluatorsMessages) {
  mlir::func::FuncOp f = parse(R"mlir(
    func.func @forward(
        %a: tensor<2xf32> {llmc.param = "a", llmc.init_rule = "uniform"},
        %b: tensor<2xf32> {llmc.param = "b"},
        %c: tensor<2xf32> {llmc.param = "c", llmc.init = dense<1.0> : tensor<3xf32>},
        %d: tensor<2xi32> {llmc.param = "d", llmc.init_rule = "ones"},
        %e: tensor<2xi64> {llmc.param = "e", llmc.init_rule = "normal(0.5)"},
        %f: tensor<2xf32> {llmc.param = "f", llmc.init_rule = "normal(-1)"},
        %g: tensor<2xf32> {llmc.param = "g", llmc.init = dense_resource<nodata> : tensor<2xf32>},
        %h: tensor<3xbf16> {llmc.param = "h", llmc.init = dense_resource<short> : tensor<3xbf16>},
        %i: tensor<2xf16> {llmc.param = "i", llmc.init = dense<1.0> : tensor<2xbf16>}) {
      return
    }
    {-#
      dialect_resources: {
        builtin: {
          short: "0x04000000803F0040"
        }
      }
    #-}
  )mlir");
  ASSERT_TRUE(f);
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    std::string error, fastError;
    EXPECT_FALSE(initialParameter(f, i, 0, error));
    EXPECT_FALSE(codegen::initialParameterBytes(f, i, 0, fastError));
    EXPECT_FALSE(fastError.empty());
    EXPECT_EQ(fastError, error) << "argument #" << i;
  }
  std::string error;
  ASSERT_FALSE(codegen::initialParameterBytes(f, 7, 0, error));
  EXPECT_EQ(error, "parameter 'h': llmc.init: resource blob 'short' holds 4 "
                   "bytes, but bf16[3] needs 6");
}

// Types the device cannot hold never reach these functions from the plan
// builder (it checks argument and constant types first); called directly,
// they are errors, not bytes.
TEST_F(DeviceBytes, UnsupportedTypesAreErrors) {
  mlir::func::FuncOp f = parse(R"mlir(
    func.func @forward(
        %a: tensor<2xf64> {llmc.param = "a", llmc.init_rule = "zeros"},
        %b: tensor<?xf32> {llmc.param = "b", llmc.init_rule = "zeros"}) {
      %c = llmc.constant dense<1.0> : tensor<2xf64>
      return
    }
  )mlir");
  ASSERT_TRUE(f);
  std::string error;
  EXPECT_FALSE(codegen::initialParameterBytes(f, 0, 0, error));
  EXPECT_EQ(error, "argument 'a' has type tensor<2xf64>, which the CUDA "
                   "backend cannot hold (a static tensor of f32, bf16, f16, "
                   "i32, i64 or i1)");
  EXPECT_FALSE(codegen::initialParameterBytes(f, 1, 0, error));
  EXPECT_NE(error.find("argument 'b' has type tensor<?xf32>"),
            std::string::npos)
      << error;
  f.walk([&](mlir::llmc::ConstantOp c) {
    EXPECT_FALSE(codegen::attrDeviceBytes(c.getValue(), error));
    EXPECT_EQ(error, "unsupported tensor type in elements attribute");
  });
}

// The one stream both sides draw from: any even offset gives the samples
// of the whole stream from there (the parallel fill relies on it), and the
// per-sample form is the array form.
TEST_F(DeviceBytes, NormalStreamRangesAreSlicesOfTheStream) {
  std::vector<double> all = normalSamples(11, "wte", 1001);
  std::vector<double> part(301);
  normalSampleRange(11, "wte", 600, 301, part.data());
  EXPECT_EQ(part, std::vector<double>(all.begin() + 600, all.begin() + 901));
  std::vector<double> each(all.size());
  forEachNormalSample(11, "wte", 0, 1001,
                      [&](int64_t i, double x) { each[i] = x; });
  EXPECT_EQ(each, all);
  EXPECT_NE(normalSamples(12, "wte", 4), normalSamples(11, "wte", 4));
}

} // namespace
