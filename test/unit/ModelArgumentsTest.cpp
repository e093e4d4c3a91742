//===- ModelArgumentsTest.cpp - Parameters and inputs of a model ----------===//
#include "EvalTestUtils.h"

#include "compiler/eval/ModelArguments.h"
#include "runtime/Safetensors.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace llmc;
using namespace llmc::test;

namespace {

using ModelArguments = EvalTest;

const char *kModel = R"mlir(
  func.func @forward(
      %w: tensor<2xf32> {llmc.param = "w", llmc.init = dense_resource<blob1> : tensor<2xf32>},
      %b: tensor<2xf32> {llmc.param = "b", llmc.init = dense<[0.5, -0.5]> : tensor<2xf32>},
      %n: tensor<100x100xf32> {llmc.param = "n", llmc.init_rule = "normal(0.02)"},
      %o: tensor<3xbf16> {llmc.param = "o", llmc.init_rule = "ones"},
      %z: tensor<3xf32> {llmc.param = "z", llmc.init_rule = "zeros"},
      %idx: tensor<2x2xi64> {llmc.input = "idx"}) -> tensor<2xf32> {
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

std::string tempPath(const char *name) {
  // The pid goes first: readInputFile dispatches on the extension.
  return ::testing::TempDir() + std::to_string(::getpid()) + name;
}

TEST_F(ModelArguments, ParametersFromInitAndRules) {
  mlir::func::FuncOp f = parse(kModel);
  ASSERT_TRUE(f);
  InputMap inputs;
  inputs["idx"] = i64({2, 2}, {1, 2, 3, 4});
  std::string error;
  auto args = buildArguments(f, inputs, /*seed=*/7, error);
  ASSERT_TRUE(args) << error;
  ASSERT_EQ(args->size(), 6u);
  expectNear((*args)[0], {1, 2}, 0); // from the resource blob's bytes
  expectNear((*args)[1], {0.5, -0.5}, 0);
  EXPECT_EQ((*args)[3].kind, ElementKind::BF16);
  expectNear((*args)[3], {1, 1, 1}, 0);
  expectNear((*args)[4], {0, 0, 0}, 0);
  EXPECT_EQ((*args)[5].ints, (std::vector<int64_t>{1, 2, 3, 4}));

  const RefTensor &n = (*args)[2];
  double mean = 0, sq = 0;
  for (double v : n.floats) {
    mean += v / 10000;
    sq += v * v / 10000;
  }
  EXPECT_NEAR(mean, 0, 0.001);
  EXPECT_NEAR(std::sqrt(sq - mean * mean), 0.02, 0.001);

  // Deterministic in (seed, name); a different seed gives other values.
  auto again = buildArguments(f, inputs, 7, error);
  EXPECT_EQ((*again)[2].floats, n.floats);
  auto other = buildArguments(f, inputs, 8, error);
  EXPECT_NE((*other)[2].floats, n.floats);
  EXPECT_NE(normalSamples(7, "a", 4), normalSamples(7, "b", 4));
}

TEST_F(ModelArguments, InputErrorsNameTheInput) {
  mlir::func::FuncOp f = parse(kModel);
  ASSERT_TRUE(f);
  std::string error;
  EXPECT_FALSE(buildArguments(f, {}, 0, error));
  EXPECT_EQ(error, "missing input 'idx' (i64[2, 2]) in the inputs file");
  InputMap wrong;
  wrong["idx"] = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_FALSE(buildArguments(f, wrong, 0, error));
  EXPECT_EQ(error, "input 'idx' has shape [2, 3] but the model expects [2, 2]");
  wrong["idx"] = i64({2, 2}, {1, 2, 3, 4});
  wrong["extra"] = i64({1}, {1});
  EXPECT_FALSE(buildArguments(f, wrong, 0, error));
  EXPECT_NE(error.find("'extra', which is not an input"), std::string::npos);
}

TEST_F(ModelArguments, UnknownInitRuleIsAnError) {
  mlir::func::FuncOp f = parse(R"mlir(
    func.func @forward(%w: tensor<2xf32> {llmc.param = "w", llmc.init_rule = "uniform(1)"}) -> tensor<2xf32> {
      return %w : tensor<2xf32>
    })mlir");
  ASSERT_TRUE(f);
  std::string error;
  EXPECT_FALSE(buildArguments(f, {}, 0, error));
  EXPECT_NE(error.find("unknown llmc.init_rule \"uniform(1)\""),
            std::string::npos)
      << error;
}

TEST_F(ModelArguments, ReadsJsonInputs) {
  std::map<std::string, RefTensor> expected;
  expected["idx"] = RefTensor(ElementKind::I64, {});
  expected["x"] = RefTensor(ElementKind::BF16, {});
  std::string path = tempPath("in.json");
  std::ofstream(path)
      << R"({"idx": [[1, 2, 3], [4, 5, 6]], "x": [1.00390625, "-inf"]})";
  std::string error;
  auto inputs = readInputFile(path, expected, error);
  ASSERT_TRUE(inputs) << error;
  EXPECT_EQ(inputs->at("idx").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(inputs->at("idx").ints, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  expectNear(inputs->at("x"), {1, -INFINITY}, 0); // rounded to bf16

  std::ofstream(path) << R"({"idx": [[1, 2], [3]]})";
  EXPECT_FALSE(readInputFile(path, expected, error));
  EXPECT_NE(error.find("input 'idx': nested lists are not rectangular"),
            std::string::npos)
      << error;
  std::ofstream(path) << R"({"idx": [1.5]})";
  EXPECT_FALSE(readInputFile(path, expected, error));
  EXPECT_NE(error.find("expected an integer for i64, got 1.5"),
            std::string::npos)
      << error;
  std::remove(path.c_str());
}

TEST_F(ModelArguments, ReadsSafetensorsInputs) {
  std::map<std::string, RefTensor> expected;
  expected["idx"] = RefTensor(ElementKind::I64, {});
  expected["x"] = RefTensor(ElementKind::F32, {});
  std::string path = tempPath("in.safetensors");
  // idx as I32 (converted to i64 exactly, sign-extended); x as BF16.
  std::vector<SafeTensor> tensors = {
      {"idx", "I32", {2}, {5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}},
      {"x", "BF16", {1, 2}, {0x80, 0x3F, 0x49, 0x40}}};
  ASSERT_TRUE(writeSafetensors(path, tensors).isOk());
  std::string error;
  auto inputs = readInputFile(path, expected, error);
  ASSERT_TRUE(inputs) << error;
  EXPECT_EQ(inputs->at("idx").ints, (std::vector<int64_t>{5, -1}));
  EXPECT_EQ(inputs->at("x").shape, (std::vector<int64_t>{1, 2}));
  expectNear(inputs->at("x"), {1, 3.140625}, 0);

  tensors = {{"idx", "F32", {1}, {0, 0, 0x80, 0x3F}}};
  ASSERT_TRUE(writeSafetensors(path, tensors).isOk());
  EXPECT_FALSE(readInputFile(path, expected, error));
  EXPECT_EQ(error, "input 'idx' has dtype F32 but the model expects i64");
  std::remove(path.c_str());
}

} // namespace
