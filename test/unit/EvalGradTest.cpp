//===- EvalGradTest.cpp - Reference kernels of the backward ops -----------===//
//
// Closed-form values and errors of the backward kernels that the gradient
// checks cannot reach: scatter-add of repeated indices, slice_grad
// placement, the edge cases of cross_entropy_grad and attention_lse, and the
// errors for out-of-range indices and targets.
//
//===----------------------------------------------------------------------===//
#include "EvalTestUtils.h"

#include <cmath>

using namespace llmc;
using namespace llmc::test;

namespace {

using GradKernels = EvalTest;

TEST_F(GradKernels, GatherGradSumsRepeatedIndices) {
  auto r = run1(R"(
    func.func @f(%g: tensor<3x2xf32>, %i: tensor<3xi64>) -> tensor<4x2xf32> {
      %0 = llmc.gather_grad %g, %i axis 0 : (tensor<3x2xf32>, tensor<3xi64>) -> tensor<4x2xf32>
      return %0 : tensor<4x2xf32>
    })",
                {f32({3, 2}, {1, 2, 3, 4, 5, 6}), i64({3}, {2, 0, 2})});
  expectNear(r, {3, 4, 0, 0, 6, 8, 0, 0}, 0);
}

TEST_F(GradKernels, SliceGradPlacesTheWindow) {
  auto r = run1(R"(
    func.func @f(%g: tensor<2x2xf32>) -> tensor<3x4xf32> {
      %0 = llmc.slice_grad %g starts [1, 0] limits [3, 4] strides [1, 3] : (tensor<2x2xf32>) -> tensor<3x4xf32>
      return %0 : tensor<3x4xf32>
    })",
                {f32({2, 2}, {1, 2, 3, 4})});
  expectNear(r, {0, 0, 0, 0, 1, 0, 0, 2, 3, 0, 0, 4}, 0);
}

TEST_F(GradKernels, CrossEntropyGradWithNothingCountedIsZero) {
  auto r = run1(
      R"(
    func.func @f(%l: tensor<2x3xf32>, %t: tensor<2xi64>, %d: tensor<f32>) -> tensor<2x3xf32> {
      %0 = llmc.cross_entropy_grad mean %l, %t, %d : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })",
      {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64({2}, {-100, -100}), f32({}, {1})});
  expectNear(r, {0, 0, 0, 0, 0, 0}, 0);
}

TEST_F(GradKernels, CrossEntropyGradIsSoftmaxMinusOneHot) {
  // One counted position of two: mean divides by 1.
  auto r = run1(R"(
    func.func @f(%l: tensor<2x2xf32>, %t: tensor<2xi64>, %d: tensor<f32>) -> tensor<2x2xf32> {
      %0 = llmc.cross_entropy_grad mean %l, %t, %d : (tensor<2x2xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })",
                {f32({2, 2}, {0, 0, 5, 7}), i64({2}, {1, -100}), f32({}, {2})});
  expectNear(r, {1, -1, 0, 0}, 1e-6);
}

TEST_F(GradKernels, AttentionLseOfAFullyMaskedRow) {
  // Row 0 sees key 0 only (lse = its score, 0); row 1 sees nothing.
  auto r = run(R"(
    func.func @f(%q: tensor<1x1x2x2xf32>, %m: tensor<2x2xi1>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2xf32>) {
      %o, %lse = llmc.attention_lse %q, %q, %q mask %m : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<2x2xi1>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2xf32>)
      return %o, %lse : tensor<1x1x2x2xf32>, tensor<1x1x2xf32>
    })",
               {f32({1, 1, 2, 2}, {0, 0, 1, 2}),
                RefTensor::fromInts(ElementKind::I1, {2, 2}, {1, 0, 0, 0})});
  ASSERT_EQ(r.size(), 2u) << diagnostics;
  expectNear(r[0], {0, 0, 0, 0}, 0);
  expectNear(r[1], {0, -INFINITY}, 0);
}

TEST_F(GradKernels, ScatterIndexOutOfRangeIsAnError) {
  auto r = run(R"(
    func.func @f(%g: tensor<2xf32>, %i: tensor<2xi64>) -> tensor<3xf32> {
      %0 = llmc.gather_elements_grad %g, %i axis 0 : (tensor<2xf32>, tensor<2xi64>) -> tensor<3xf32>
      return %0 : tensor<3xf32>
    })",
               {f32({2}, {1, 2}), i64({2}, {0, 3})});
  EXPECT_TRUE(r.empty());
  EXPECT_NE(diagnostics.find("reference evaluator: index 3 (indices element "
                             "1) is out of range for size 3"),
            std::string::npos)
      << diagnostics;
  r = run(R"(
    func.func @f(%g: tensor<2xf32>, %i: tensor<2xi64>) -> tensor<3xf32> {
      %0 = llmc.gather_grad %g, %i axis 0 : (tensor<2xf32>, tensor<2xi64>) -> tensor<3xf32>
      return %0 : tensor<3xf32>
    })",
          {f32({2}, {1, 2}), i64({2}, {-4, 0})});
  EXPECT_TRUE(r.empty());
  EXPECT_NE(diagnostics.find("index -4 (indices element 0) is out of range"),
            std::string::npos)
      << diagnostics;
}

TEST_F(GradKernels, CrossEntropyGradTargetOutOfRangeIsAnError) {
  auto r =
      run(R"(
    func.func @f(%l: tensor<2x3xf32>, %t: tensor<2xi64>, %d: tensor<f32>) -> tensor<2x3xf32> {
      %0 = llmc.cross_entropy_grad sum %l, %t, %d : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })",
          {f32({2, 3}, {0, 0, 0, 0, 0, 0}), i64({2}, {0, 3}), f32({}, {1})});
  EXPECT_TRUE(r.empty());
  EXPECT_NE(diagnostics.find("target 3 at position 1 is out of range for 3 "
                             "classes (ignore_index is -100)"),
            std::string::npos)
      << diagnostics;
}

} // namespace
