//===- PaddingTest.cpp - Parameters between real and padded shapes --------===//
//
// runtime/Padding.h (the helper the trainer, verify and the JIT API share)
// and its users on the compiler side: a padded parameter's initial value
// is its real value with zero padding, in the evaluator's doubles and in
// the device bytes alike.
//
//===----------------------------------------------------------------------===//
#include "EvalTestUtils.h"

#include "compiler/codegen/DeviceBytes.h"
#include "compiler/eval/ModelArguments.h"
#include "runtime/Padding.h"
#include "runtime/Plan.h"

#include <cstring>

using namespace llmc;

namespace {

std::vector<uint8_t> bytesOf(const std::vector<float> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> floatsOf(const std::vector<uint8_t> &b) {
  std::vector<float> v(b.size() / sizeof(float));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

TEST(Padding, PadsRowsAndColumnsWithZeros) {
  // [2, 3] in [3, 4]: the real values in the leading corner.
  std::vector<uint8_t> out;
  Status s = padData(bytesOf({1, 2, 3, 4, 5, 6}).data(), 24, {2, 3}, {3, 4},
                     sizeof(float), out);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(floatsOf(out),
            (std::vector<float>{1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0, 0}));
}

TEST(Padding, UnpadInvertsPad) {
  // A rank-3 tensor padded in every dim comes back bit for bit.
  std::vector<float> real(2 * 3 * 5);
  for (size_t i = 0; i < real.size(); ++i)
    real[i] = 0.5f + static_cast<float>(i);
  std::vector<uint8_t> padded, back;
  ASSERT_TRUE(padData(bytesOf(real).data(), real.size() * 4, {2, 3, 5},
                      {4, 3, 8}, 4, padded));
  EXPECT_EQ(padded.size(), 4u * 3 * 8 * 4);
  ASSERT_TRUE(unpadData(padded.data(), padded.size(), {4, 3, 8}, {2, 3, 5}, 4,
                        back));
  EXPECT_EQ(floatsOf(back), real);
  // Only the real elements are non-zero.
  size_t nonZero = 0;
  for (float f : floatsOf(padded))
    nonZero += f != 0;
  EXPECT_EQ(nonZero, real.size());
}

TEST(Padding, VocabularyRowsAreOneRun) {
  // The case that matters: [V, d] in [Vp, d]; rows past V are zero.
  std::vector<uint8_t> out;
  std::vector<float> real(5 * 2, 1.0f);
  ASSERT_TRUE(padData(bytesOf(real).data(), 40, {5, 2}, {8, 2}, 4, out));
  std::vector<float> f = floatsOf(out);
  for (size_t i = 0; i < f.size(); ++i)
    EXPECT_EQ(f[i], i < 10 ? 1.0f : 0.0f) << i;
}

TEST(Padding, ValuesAndScalars) {
  std::vector<double> back;
  ASSERT_TRUE(unpadValues<double>({1, 2, 0, 3, 4, 0}, {2, 3}, {2, 2}, back));
  EXPECT_EQ(back, (std::vector<double>{1, 2, 3, 4}));
  std::vector<int64_t> padded;
  ASSERT_TRUE(padValues<int64_t>({7}, {}, {}, padded));
  EXPECT_EQ(padded, std::vector<int64_t>{7});
  EXPECT_FALSE(isPadded({3}, {3}));
  EXPECT_TRUE(isPadded({3}, {4}));
}

TEST(Padding, RejectsShapesThatDoNotFit) {
  std::vector<uint8_t> out;
  std::vector<uint8_t> data(16);
  Status s = padData(data.data(), 16, {4}, {3}, 4, out);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.message(), "padding: real shape [4] does not fit in padded "
                         "shape [3]");
  s = padData(data.data(), 16, {4}, {4, 1}, 4, out);
  EXPECT_FALSE(s);
  s = padData(data.data(), 12, {4}, {8}, 4, out);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.message(), "padding: 12 bytes of data for shape [4]");
  s = unpadData(data.data(), 16, {8}, {4}, 4, out);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.message(), "padding: 16 bytes of data for shape [8]");
}

TEST(Padding, PlanRejectsARealShapeThatDoesNotFit) {
  Plan plan;
  plan.arenaBytes = 1024;
  BufferInfo b;
  b.name = "wte";
  b.role = BufferRole::Param;
  b.shape = {8, 2};
  b.bytes = 64;
  b.realShape = {9, 2};
  plan.buffers.push_back(b);
  Status s = validatePlan(plan);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("real shape [9, 2] does not fit in its padded "
                             "shape [8, 2]"),
            std::string::npos)
      << s.message();
  plan.buffers[0].realShape = {5, 2};
  EXPECT_TRUE(validatePlan(plan));
}

using PaddedParameters = test::EvalTest;

// The same parameter unpadded and padded (llmc-pad-shapes' llmc.real_shape):
// the real part is identical (the same normal stream, the same blob) and
// the padding is zero, on the evaluator's path and the device-bytes path.
const char *kModel = R"mlir(
  func.func @forward(
      %n: tensor<5x3xf32> {llmc.param = "n", llmc.init_rule = "normal(0.02)"},
      %np: tensor<8x3xf32> {llmc.param = "n", llmc.init_rule = "normal(0.02)",
                            llmc.real_shape = array<i64: 5, 3>},
      %d: tensor<2x2xf32> {llmc.param = "d", llmc.init = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>},
      %dp: tensor<2x4xbf16> {llmc.param = "dp", llmc.init = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>,
                            llmc.real_shape = array<i64: 2, 2>}) -> tensor<5x3xf32> {
    return %n : tensor<5x3xf32>
  }
)mlir";

TEST_F(PaddedParameters, InitialValuesArePaddedWithZeros) {
  mlir::func::FuncOp f = parse(kModel);
  ASSERT_TRUE(f);
  std::string error;
  auto real = initialParameter(f, 0, 3, error);
  auto padded = initialParameter(f, 1, 3, error);
  ASSERT_TRUE(real && padded) << error;
  EXPECT_EQ(padded->shape, (std::vector<int64_t>{8, 3}));
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_EQ(padded->floats[i], i < 15 ? real->floats[i] : 0.0) << i;
  EXPECT_EQ(realShapeOf(f, 1), (std::vector<int64_t>{5, 3}));
  EXPECT_FALSE(realShapeOf(f, 0));

  auto dense = initialParameter(f, 3, 0, error);
  ASSERT_TRUE(dense) << error;
  test::expectNear(*dense, {1, 2, 0, 0, 3, 4, 0, 0}, 0);
}

TEST_F(PaddedParameters, DeviceBytesArePaddedWithZeros) {
  mlir::func::FuncOp f = parse(kModel);
  ASSERT_TRUE(f);
  std::string error;
  auto real = codegen::initialParameterBytes(f, 0, 3, error);
  auto padded = codegen::initialParameterBytes(f, 1, 3, error);
  ASSERT_TRUE(real && padded) << error;
  ASSERT_EQ(padded->size(), 8u * 3 * 4);
  std::vector<float> r = floatsOf(*real), p = floatsOf(*padded);
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_EQ(p[i], i < 15 ? r[i] : 0.0f) << i;
  // bf16 from an llmc.init of the real shape: 1, 2, pad, pad, 3, 4, ...
  auto dense = codegen::initialParameterBytes(f, 3, 0, error);
  ASSERT_TRUE(dense) << error;
  std::vector<uint16_t> bits(8);
  ASSERT_EQ(dense->size(), 16u);
  std::memcpy(bits.data(), dense->data(), 16);
  EXPECT_EQ(bits, (std::vector<uint16_t>{0x3F80, 0x4000, 0, 0, 0x4040, 0x4080,
                                         0, 0}));
}

} // namespace
