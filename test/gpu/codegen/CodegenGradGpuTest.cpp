//===- CodegenGradGpuTest.cpp - Backward kernels vs the CPU reference -----===//
//
// The kernels of a training step's backward and optimizer ops (LlmcGradOps.td)
// on fresh random inputs against the reference evaluator, with the
// tolerances of CodegenGpuTest.cpp (relative L2 error below 1e-5 for f32,
// 1e-2 for bf16) and the bitwise graph-replay check. Shapes are not
// multiples of the block or tile sizes. Then GPT-2-size cases that also
// print timings, and the whole @train_step of the GPT-2 fixture (autodiff
// and AdamW run in-process) on the GPU.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include "dialects/llmc/LlmcDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

using namespace llmc::test;

struct GradCase {
  const char *name;
  const char *mlir;
};
void PrintTo(const GradCase &c, std::ostream *os) { *os << c.name; }

namespace {

const std::vector<GradCase> &cases() {
  static const std::vector<GradCase> all = {
      {"NormGrads",
       R"(func.func @forward(%x: tensor<3x7x333xf32>, %dy: tensor<3x7x333xf32>, %w: tensor<333xf32>,
                   %xl: tensor<2100x40xf32>, %dyl: tensor<2100x40xf32>, %wl: tensor<40xf32>)
    -> (tensor<3x7x333xf32>, tensor<333xf32>, tensor<333xf32>, tensor<3x7x333xf32>,
        tensor<3x7x333xf32>, tensor<333xf32>, tensor<2100x40xf32>,
        tensor<40xf32>, tensor<40xf32>, tensor<2100x40xf32>, tensor<40xf32>) {
  %0, %1, %2 = llmc.layer_norm_grad %x, %dy weight %w {bias_grad, epsilon = 1.0e-05 : f64} : (tensor<3x7x333xf32>, tensor<3x7x333xf32>, tensor<333xf32>) -> (tensor<3x7x333xf32>, tensor<333xf32>, tensor<333xf32>)
  %3 = llmc.layer_norm_grad %x, %dy {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<3x7x333xf32>, tensor<3x7x333xf32>) -> tensor<3x7x333xf32>
  %4, %5 = llmc.rms_norm_grad %x, %dy weight %w {epsilon = 1.0e-06 : f64} : (tensor<3x7x333xf32>, tensor<3x7x333xf32>, tensor<333xf32>) -> (tensor<3x7x333xf32>, tensor<333xf32>)
  %6, %7, %8 = llmc.layer_norm_grad %xl, %dyl weight %wl {bias_grad, epsilon = 1.0e-05 : f64} : (tensor<2100x40xf32>, tensor<2100x40xf32>, tensor<40xf32>) -> (tensor<2100x40xf32>, tensor<40xf32>, tensor<40xf32>)
  %9, %10 = llmc.layer_norm_grad %xl, %dyl {bias_grad, epsilon = 1.0e-05 : f64} : (tensor<2100x40xf32>, tensor<2100x40xf32>) -> (tensor<2100x40xf32>, tensor<40xf32>)
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10
    : tensor<3x7x333xf32>, tensor<333xf32>, tensor<333xf32>, tensor<3x7x333xf32>,
      tensor<3x7x333xf32>, tensor<333xf32>, tensor<2100x40xf32>,
      tensor<40xf32>, tensor<40xf32>, tensor<2100x40xf32>, tensor<40xf32>
})"},
      {"NormGradsBf16",
       R"(func.func @forward(%x: tensor<5x2000xbf16>, %dy: tensor<5x2000xbf16>, %w: tensor<2000xbf16>)
    -> (tensor<5x2000xbf16>, tensor<2000xbf16>, tensor<2000xbf16>, tensor<5x2000xbf16>, tensor<2000xbf16>) {
  %0, %1, %2 = llmc.layer_norm_grad %x, %dy weight %w {bias_grad, epsilon = 1.0e-05 : f64} : (tensor<5x2000xbf16>, tensor<5x2000xbf16>, tensor<2000xbf16>) -> (tensor<5x2000xbf16>, tensor<2000xbf16>, tensor<2000xbf16>)
  %3, %4 = llmc.rms_norm_grad %x, %dy weight %w {epsilon = 1.0e-06 : f64} : (tensor<5x2000xbf16>, tensor<5x2000xbf16>, tensor<2000xbf16>) -> (tensor<5x2000xbf16>, tensor<2000xbf16>)
  return %0, %1, %2, %3, %4 : tensor<5x2000xbf16>, tensor<2000xbf16>, tensor<2000xbf16>, tensor<5x2000xbf16>, tensor<2000xbf16>
})"},
      {"SoftmaxGrads",
       R"(func.func @forward(%x: tensor<3x7x333xf32>, %dy: tensor<3x7x333xf32>, %m: tensor<4x6x5xf32>,
                   %dm: tensor<4x6x5xf32>, %h: tensor<5x700xbf16>, %dh: tensor<5x700xbf16>)
    -> (tensor<3x7x333xf32>, tensor<3x7x333xf32>, tensor<4x6x5xf32>, tensor<4x6x5xf32>, tensor<5x700xbf16>) {
  %y = llmc.softmax %x {axis = -1 : i64} : tensor<3x7x333xf32>
  %0 = llmc.softmax_grad %y, %dy {axis = -1 : i64} : tensor<3x7x333xf32>
  %ly = llmc.log_softmax %x {axis = 2 : i64} : tensor<3x7x333xf32>
  %1 = llmc.log_softmax_grad %ly, %dy {axis = 2 : i64} : tensor<3x7x333xf32>
  %ym = llmc.softmax %m {axis = 1 : i64} : tensor<4x6x5xf32>
  %2 = llmc.softmax_grad %ym, %dm {axis = 1 : i64} : tensor<4x6x5xf32>
  %lm = llmc.log_softmax %m {axis = 0 : i64} : tensor<4x6x5xf32>
  %3 = llmc.log_softmax_grad %lm, %dm {axis = 0 : i64} : tensor<4x6x5xf32>
  %yh = llmc.softmax %h {axis = -1 : i64} : tensor<5x700xbf16>
  %4 = llmc.softmax_grad %yh, %dh {axis = -1 : i64} : tensor<5x700xbf16>
  return %0, %1, %2, %3, %4 : tensor<3x7x333xf32>, tensor<3x7x333xf32>, tensor<4x6x5xf32>, tensor<4x6x5xf32>, tensor<5x700xbf16>
})"},
      {"ActivationGrads",
       R"(func.func @forward(%x: tensor<7x129xf32>, %dy: tensor<7x129xf32>, %h: tensor<3x300xbf16>, %dh: tensor<3x300xbf16>)
    -> (tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>, tensor<3x300xbf16>, tensor<3x300xbf16>) {
  %0 = llmc.gelu_grad erf %x, %dy : tensor<7x129xf32>
  %1 = llmc.gelu_grad tanh %x, %dy : tensor<7x129xf32>
  %2 = llmc.silu_grad %x, %dy : tensor<7x129xf32>
  %3 = llmc.gelu_grad tanh %h, %dh : tensor<3x300xbf16>
  %4 = llmc.silu_grad %h, %dh : tensor<3x300xbf16>
  return %0, %1, %2, %3, %4 : tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>, tensor<3x300xbf16>, tensor<3x300xbf16>
})"},
      {"CrossEntropyGrad", R"(func.func @forward(%logits: tensor<3x41x13xf32>,
                   %t: tensor<3x41xi64> {gpu_test.range = array<i64: 0, 13>},
                   %g: tensor<f32>, %gn: tensor<3x41xf32>,
                   %lb: tensor<70x1000xbf16>,
                   %tb: tensor<70xi32> {gpu_test.range = array<i64: 0, 1000>}, %gb: tensor<bf16>)
    -> (tensor<3x41x13xf32>, tensor<3x41x13xf32>, tensor<3x41x13xf32>, tensor<70x1000xbf16>) {
  %0 = llmc.cross_entropy_grad mean %logits, %t, %g {ignore_index = 12 : i64} : (tensor<3x41x13xf32>, tensor<3x41xi64>, tensor<f32>) -> tensor<3x41x13xf32>
  %1 = llmc.cross_entropy_grad sum %logits, %t, %g {ignore_index = 12 : i64} : (tensor<3x41x13xf32>, tensor<3x41xi64>, tensor<f32>) -> tensor<3x41x13xf32>
  %2 = llmc.cross_entropy_grad none %logits, %t, %gn {ignore_index = 12 : i64} : (tensor<3x41x13xf32>, tensor<3x41xi64>, tensor<3x41xf32>) -> tensor<3x41x13xf32>
  %3 = llmc.cross_entropy_grad mean %lb, %tb, %gb {ignore_index = 0 : i64} : (tensor<70x1000xbf16>, tensor<70xi32>, tensor<bf16>) -> tensor<70x1000xbf16>
  return %0, %1, %2, %3 : tensor<3x41x13xf32>, tensor<3x41x13xf32>, tensor<3x41x13xf32>, tensor<70x1000xbf16>
})"},
      {"ScatterGrads",
       R"(func.func @forward(%g0: tensor<3x4x6xf32>, %idx: tensor<3x4xi64> {gpu_test.range = array<i64: -11, 11>},
                   %g1: tensor<6x3x4xf32>, %ge: tensor<2x3x2x5xf32>,
                   %ie: tensor<2x3x2x5xi32> {gpu_test.range = array<i64: -4, 4>},
                   %gt: tensor<16x1xf32>, %it: tensor<16x1xi64> {gpu_test.range = array<i64: 0, 512>},
                   %gs: tensor<2x2x2x2xf32>, %gb: tensor<3x1x5xbf16>,
                   %ib: tensor<40xi32> {gpu_test.range = array<i64: 0, 3>}, %gbb: tensor<40x5xbf16>)
    -> (tensor<11x6xf32>, tensor<6x11xf32>, tensor<2x4x4x5xf32>, tensor<16x512xf32>,
        tensor<2x3x4x5xf32>, tensor<3x9x5xbf16>, tensor<3x5xbf16>) {
  %0 = llmc.gather_grad %g0, %idx axis 0 : (tensor<3x4x6xf32>, tensor<3x4xi64>) -> tensor<11x6xf32>
  %1 = llmc.gather_grad %g1, %idx axis 1 : (tensor<6x3x4xf32>, tensor<3x4xi64>) -> tensor<6x11xf32>
  %2 = llmc.gather_elements_grad %ge, %ie axis 2 : (tensor<2x3x2x5xf32>, tensor<2x3x2x5xi32>) -> tensor<2x4x4x5xf32>
  %3 = llmc.gather_elements_grad %gt, %it axis 1 : (tensor<16x1xf32>, tensor<16x1xi64>) -> tensor<16x512xf32>
  %4 = llmc.slice_grad %gs starts [0, 1, 0, 1] limits [2, 3, 4, 5] strides [1, 1, 2, 2] : (tensor<2x2x2x2xf32>) -> tensor<2x3x4x5xf32>
  %5 = llmc.slice_grad %gb starts [0, 2, 0] limits [3, 3, 5] strides [1, 1, 1] : (tensor<3x1x5xbf16>) -> tensor<3x9x5xbf16>
  %6 = llmc.gather_grad %gbb, %ib axis 0 : (tensor<40x5xbf16>, tensor<40xi32>) -> tensor<3x5xbf16>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<11x6xf32>, tensor<6x11xf32>, tensor<2x4x4x5xf32>, tensor<16x512xf32>,
    tensor<2x3x4x5xf32>, tensor<3x9x5xbf16>, tensor<3x5xbf16>
})"},
      {"AttentionGrad",
       R"(func.func @forward(%q: tensor<2x4x45x64xf32>, %k: tensor<2x4x45x64xf32>, %v: tensor<2x4x45x64xf32>,
                   %do: tensor<2x4x45x64xf32>, %kg: tensor<2x2x70x64xf32>, %vg: tensor<2x2x70x48xf32>,
                   %dog: tensor<2x4x45x48xf32>, %fm: tensor<45x70xf32>, %bm: tensor<2x1x45x70xi1>)
    -> (tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>,
        tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>,
        tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>,
        tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>, tensor<2x4x45xf32>) {
  %o0, %l0 = llmc.attention_lse %q, %k, %v : (tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>) -> (tensor<2x4x45x64xf32>, tensor<2x4x45xf32>)
  %a0, %b0, %c0 = llmc.attention_grad %q, %k, %v, %o0, %l0, %do : (tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45xf32>, tensor<2x4x45x64xf32>) -> (tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>)
  %o1, %l1 = llmc.attention_lse %q, %k, %v {causal} : (tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>) -> (tensor<2x4x45x64xf32>, tensor<2x4x45xf32>)
  %a1, %b1, %c1 = llmc.attention_grad %q, %k, %v, %o1, %l1, %do {causal} : (tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45xf32>, tensor<2x4x45x64xf32>) -> (tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>)
  %o2, %l2 = llmc.attention_lse %q, %kg, %vg mask %fm {causal, scale = 0.2 : f64} : (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>, tensor<45x70xf32>) -> (tensor<2x4x45x48xf32>, tensor<2x4x45xf32>)
  %a2, %b2, %c2 = llmc.attention_grad %q, %kg, %vg, %o2, %l2, %dog mask %fm {causal, scale = 0.2 : f64} : (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>, tensor<2x4x45x48xf32>, tensor<2x4x45xf32>, tensor<2x4x45x48xf32>, tensor<45x70xf32>) -> (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>)
  %o3, %l3 = llmc.attention_lse %q, %kg, %vg mask %bm : (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>, tensor<2x1x45x70xi1>) -> (tensor<2x4x45x48xf32>, tensor<2x4x45xf32>)
  %a3, %b3, %c3 = llmc.attention_grad %q, %kg, %vg, %o3, %l3, %dog mask %bm : (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>, tensor<2x4x45x48xf32>, tensor<2x4x45xf32>, tensor<2x4x45x48xf32>, tensor<2x1x45x70xi1>) -> (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>)
  return %a0, %b0, %c0, %a1, %b1, %c1, %a2, %b2, %c2, %a3, %b3, %c3, %l3
    : tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>,
      tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>,
      tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>,
      tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>, tensor<2x4x45xf32>
})"},
      {"AttentionGradBf16Shapes",
       R"(func.func @forward(%q: tensor<2x4x45x64xbf16>, %k: tensor<2x4x45x64xbf16>, %v: tensor<2x4x45x64xbf16>,
                   %do: tensor<2x4x45x64xbf16>, %kg: tensor<2x2x70x64xbf16>, %vg: tensor<2x2x70x48xbf16>,
                   %dog: tensor<2x4x45x48xbf16>, %fm: tensor<45x70xbf16>, %bm: tensor<2x1x45x70xi1>)
    -> (tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>,
        tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>,
        tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>,
        tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>, tensor<2x4x45xf32>) {
  %o0, %l0 = llmc.attention_lse %q, %k, %v : (tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>) -> (tensor<2x4x45x64xbf16>, tensor<2x4x45xf32>)
  %a0, %b0, %c0 = llmc.attention_grad %q, %k, %v, %o0, %l0, %do : (tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45xf32>, tensor<2x4x45x64xbf16>) -> (tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>)
  %o1, %l1 = llmc.attention_lse %q, %k, %v {causal} : (tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>) -> (tensor<2x4x45x64xbf16>, tensor<2x4x45xf32>)
  %a1, %b1, %c1 = llmc.attention_grad %q, %k, %v, %o1, %l1, %do {causal} : (tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45xf32>, tensor<2x4x45x64xbf16>) -> (tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>)
  %o2, %l2 = llmc.attention_lse %q, %kg, %vg mask %fm {causal, scale = 0.2 : f64} : (tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>, tensor<45x70xbf16>) -> (tensor<2x4x45x48xbf16>, tensor<2x4x45xf32>)
  %a2, %b2, %c2 = llmc.attention_grad %q, %kg, %vg, %o2, %l2, %dog mask %fm {causal, scale = 0.2 : f64} : (tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>, tensor<2x4x45x48xbf16>, tensor<2x4x45xf32>, tensor<2x4x45x48xbf16>, tensor<45x70xbf16>) -> (tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>)
  %o3, %l3 = llmc.attention_lse %q, %kg, %vg mask %bm : (tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>, tensor<2x1x45x70xi1>) -> (tensor<2x4x45x48xbf16>, tensor<2x4x45xf32>)
  %a3, %b3, %c3 = llmc.attention_grad %q, %kg, %vg, %o3, %l3, %dog mask %bm : (tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>, tensor<2x4x45x48xbf16>, tensor<2x4x45xf32>, tensor<2x4x45x48xbf16>, tensor<2x1x45x70xi1>) -> (tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>)
  return %a0, %b0, %c0, %a1, %b1, %c1, %a2, %b2, %c2, %a3, %b3, %c3, %l3
    : tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>,
      tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>, tensor<2x4x45x64xbf16>,
      tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>,
      tensor<2x4x45x64xbf16>, tensor<2x2x70x64xbf16>, tensor<2x2x70x48xbf16>, tensor<2x4x45xf32>
})"},
      {"AttentionGradBf16",
       R"(func.func @forward(%q: tensor<1x2x100x128xbf16>, %k: tensor<1x2x100x128xbf16>, %v: tensor<1x2x100x128xbf16>, %do: tensor<1x2x100x128xbf16>)
    -> (tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>) {
  %o, %l = llmc.attention_lse %q, %k, %v {causal} : (tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>) -> (tensor<1x2x100x128xbf16>, tensor<1x2x100xf32>)
  %a, %b, %c = llmc.attention_grad %q, %k, %v, %o, %l, %do {causal} : (tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>, tensor<1x2x100xf32>, tensor<1x2x100x128xbf16>) -> (tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>)
  return %a, %b, %c : tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>
})"},
      {"AdamW",
       R"(func.func @forward(%p: tensor<33x31xf32>, %g: tensor<33x31xf32>, %m: tensor<33x31xf32>,
                   %v: tensor<33x31xf32> {gpu_test.abs},
                   %lr: tensor<f32> {gpu_test.abs, gpu_test.scale = 0.01 : f64},
                   %t: tensor<i64> {gpu_test.range = array<i64: 1, 50>},
                   %pb: tensor<700xbf16>, %gb: tensor<700xbf16>, %mb: tensor<700xbf16>,
                   %vb: tensor<700xbf16> {gpu_test.abs})
    -> (tensor<33x31xf32>, tensor<33x31xf32>, tensor<33x31xf32>, tensor<700xbf16>, tensor<700xbf16>, tensor<700xbf16>) {
  %0, %1, %2 = llmc.adamw_update %p, %g, %m, %v, %lr, %t {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<33x31xf32>, tensor<33x31xf32>, tensor<33x31xf32>, tensor<33x31xf32>, tensor<f32>, tensor<i64>) -> (tensor<33x31xf32>, tensor<33x31xf32>, tensor<33x31xf32>)
  %3, %4, %5 = llmc.adamw_update %pb, %gb, %mb, %vb, %lr, %t : (tensor<700xbf16>, tensor<700xbf16>, tensor<700xbf16>, tensor<700xbf16>, tensor<f32>, tensor<i64>) -> (tensor<700xbf16>, tensor<700xbf16>, tensor<700xbf16>)
  return %0, %1, %2, %3, %4, %5 : tensor<33x31xf32>, tensor<33x31xf32>, tensor<33x31xf32>, tensor<700xbf16>, tensor<700xbf16>, tensor<700xbf16>
})"},
      // Five tensors of different sizes and ranks (one of 9 chunks, a
      // rank-0 one, sizes that end mid-chunk) and weight decays, with the
      // clip scale: the chunk table, the offset table and per-tensor decay.
      {"MultiAdamW",
       R"(func.func @forward(%p0: tensor<33x31xf32>, %p1: tensor<700xf32>, %p2: tensor<3x100x117xf32>, %p3: tensor<f32>, %p4: tensor<4097xf32>,
                   %g0: tensor<33x31xf32>, %g1: tensor<700xf32>, %g2: tensor<3x100x117xf32>, %g3: tensor<f32>, %g4: tensor<4097xf32>,
                   %m0: tensor<33x31xf32>, %m1: tensor<700xf32>, %m2: tensor<3x100x117xf32>, %m3: tensor<f32>, %m4: tensor<4097xf32>,
                   %v0: tensor<33x31xf32> {gpu_test.abs}, %v1: tensor<700xf32> {gpu_test.abs}, %v2: tensor<3x100x117xf32> {gpu_test.abs},
                   %v3: tensor<f32> {gpu_test.abs}, %v4: tensor<4097xf32> {gpu_test.abs},
                   %lr: tensor<f32> {gpu_test.abs, gpu_test.scale = 0.01 : f64},
                   %t: tensor<i64> {gpu_test.range = array<i64: 1, 50>},
                   %c: tensor<f32> {gpu_test.abs, gpu_test.scale = 0.5 : f64})
    -> (tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>,
        tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>,
        tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>) {
  %r:15 = llmc.multi_adamw_update params(%p0, %p1, %p2, %p3, %p4) grads(%g0, %g1, %g2, %g3, %g4) m(%m0, %m1, %m2, %m3, %m4) v(%v0, %v1, %v2, %v3, %v4) lr(%lr) step(%t) scale(%c) {beta2 = 0.95 : f64, weight_decays = array<f64: 0.1, 0.0, 0.3, 0.0, 0.05>}
    : (tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>,
       tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>,
       tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>,
       tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>,
       tensor<f32>, tensor<i64>, tensor<f32>)
    -> (tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>,
        tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>,
        tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>)
  return %r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %r#6, %r#7, %r#8, %r#9, %r#10, %r#11, %r#12, %r#13, %r#14
    : tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>,
      tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>,
      tensor<33x31xf32>, tensor<700xf32>, tensor<3x100x117xf32>, tensor<f32>, tensor<4097xf32>
})"},
      {"MultiAdamWBf16",
       R"(func.func @forward(%p0: tensor<700xbf16>, %p1: tensor<9000xbf16>, %g0: tensor<700xbf16>, %g1: tensor<9000xbf16>,
                   %m0: tensor<700xbf16>, %m1: tensor<9000xbf16>,
                   %v0: tensor<700xbf16> {gpu_test.abs}, %v1: tensor<9000xbf16> {gpu_test.abs},
                   %lr: tensor<f32> {gpu_test.abs, gpu_test.scale = 0.01 : f64},
                   %t: tensor<i64> {gpu_test.range = array<i64: 1, 50>},
                   %c: tensor<bf16> {gpu_test.abs, gpu_test.scale = 0.5 : f64})
    -> (tensor<700xbf16>, tensor<9000xbf16>, tensor<700xbf16>, tensor<9000xbf16>, tensor<700xbf16>, tensor<9000xbf16>) {
  %r:6 = llmc.multi_adamw_update params(%p0, %p1) grads(%g0, %g1) m(%m0, %m1) v(%v0, %v1) lr(%lr) step(%t) scale(%c) {weight_decays = array<f64: 0.0, 0.1>} : (tensor<700xbf16>, tensor<9000xbf16>, tensor<700xbf16>, tensor<9000xbf16>, tensor<700xbf16>, tensor<9000xbf16>, tensor<700xbf16>, tensor<9000xbf16>, tensor<f32>, tensor<i64>, tensor<bf16>) -> (tensor<700xbf16>, tensor<9000xbf16>, tensor<700xbf16>, tensor<9000xbf16>, tensor<700xbf16>, tensor<9000xbf16>)
  return %r#0, %r#1, %r#2, %r#3, %r#4, %r#5 : tensor<700xbf16>, tensor<9000xbf16>, tensor<700xbf16>, tensor<9000xbf16>, tensor<700xbf16>, tensor<9000xbf16>
})"},
      // Many chunks (more than one per block of the partials kernel at
      // GPT-2's 2112 blocks: 12.6M elements), a rank-0 input and small ones.
      {"GlobalNorm",
       R"(func.func @forward(%a: tensor<50257x251xf32>, %b: tensor<f32>, %c: tensor<768xf32>, %d: tensor<3x5xf32>) -> tensor<f32> {
  %0 = llmc.global_norm %a, %b, %c, %d : (tensor<50257x251xf32>, tensor<f32>, tensor<768xf32>, tensor<3x5xf32>) -> tensor<f32>
  return %0 : tensor<f32>
})"},
      {"GlobalNormBf16",
       R"(func.func @forward(%a: tensor<1000x33xbf16>, %b: tensor<77xbf16>) -> tensor<f32> {
  %0 = llmc.global_norm %a, %b : (tensor<1000x33xbf16>, tensor<77xbf16>) -> tensor<f32>
  return %0 : tensor<f32>
})"},
  };
  return all;
}

class CodegenGradGpu : public ::testing::TestWithParam<GradCase> {};

TEST_P(CodegenGradGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(GetParam().mlir);
}

// Needs no GPU: every case's kernels compile with NVRTC for sm_90.
TEST_P(CodegenGradGpu, CompilesWithNvrtc) { checkCompiles(GetParam().mlir); }

INSTANTIATE_TEST_SUITE_P(Backward, CodegenGradGpu, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GradCase> &info) {
                           return std::string(info.param.name);
                         });

//===----------------------------------------------------------------------===//
// GPT-2 sizes, with timings
//===----------------------------------------------------------------------===//

void printStepTimes(const char *what, const char *mlir) {
  for (const auto &[label, ms] : stepReplayMs(mlir))
    std::printf("[ timing   ] %s: step %s %.3f ms\n", what, label.c_str(), ms);
}

const char *kAttentionGpt2 =
    R"(func.func @forward(%q: tensor<2x12x1024x64xf32>, %k: tensor<2x12x1024x64xf32>,
                   %v: tensor<2x12x1024x64xf32>, %do: tensor<2x12x1024x64xf32>)
    -> (tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>) {
  %o, %l = llmc.attention_lse %q, %k, %v {causal} : (tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>) -> (tensor<2x12x1024x64xf32>, tensor<2x12x1024xf32>)
  %a, %b, %c = llmc.attention_grad %q, %k, %v, %o, %l, %do {causal} : (tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>, tensor<2x12x1024xf32>, tensor<2x12x1024x64xf32>) -> (tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>)
  return %a, %b, %c : tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>
})";

const char *kAttentionGpt2Forward =
    R"(func.func @forward(%q: tensor<2x12x1024x64xf32>, %k: tensor<2x12x1024x64xf32>,
                   %v: tensor<2x12x1024x64xf32>) -> (tensor<2x12x1024x64xf32>, tensor<2x12x1024xf32>) {
  %o, %l = llmc.attention_lse %q, %k, %v {causal} : (tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>) -> (tensor<2x12x1024x64xf32>, tensor<2x12x1024xf32>)
  return %o, %l : tensor<2x12x1024x64xf32>, tensor<2x12x1024xf32>
})";

TEST(CodegenGradGpt2, AttentionGrad) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kAttentionGpt2);
  double both = bestReplayMs(kAttentionGpt2);
  double forward = bestReplayMs(kAttentionGpt2Forward);
  std::printf("[ timing   ] attention [2, 12, 1024, 64] causal f32: forward "
              "(attention_lse) %.3f ms, forward + attention_grad %.3f ms, "
              "attention_grad %.3f ms\n",
              forward, both, both - forward);
  printStepTimes("attention [2, 12, 1024, 64]", kAttentionGpt2);
}

/// The attention of GPT-2 124M's training step in bf16 (or `elt`, f16)
/// (one layer): B 2 for the reference check, B 16 (the benchmark's batch)
/// for the timing.
std::string attentionGpt2Bf16(int batch, bool backward,
                              const std::string &elt = "bf16") {
  std::string t =
      "tensor<" + std::to_string(batch) + "x12x1024x64x" + elt + ">";
  std::string l = "tensor<" + std::to_string(batch) + "x12x1024xf32>";
  std::string fwd = "  %o, %l = llmc.attention_lse %q, %k, %v {causal} : (" +
                    t + ", " + t + ", " + t + ") -> (" + t + ", " + l + ")\n";
  if (!backward)
    return "func.func @forward(%q: " + t + ", %k: " + t + ", %v: " + t +
           ") -> (" + t + ", " + l + ") {\n" + fwd + "  return %o, %l : " + t +
           ", " + l + "\n}";
  return "func.func @forward(%q: " + t + ", %k: " + t + ", %v: " + t +
         ", %do: " + t + ") -> (" + t + ", " + t + ", " + t + ") {\n" + fwd +
         "  %a, %b, %c = llmc.attention_grad %q, %k, %v, %o, %l, %do {causal} "
         ": (" + t + ", " + t + ", " + t + ", " + t + ", " + l + ", " + t +
         ") -> (" + t + ", " + t + ", " + t + ")\n  return %a, %b, %c : " + t +
         ", " + t + ", " + t + "\n}";
}

TEST(CodegenGradGpt2, AttentionGradBf16) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(attentionGpt2Bf16(2, true).c_str());
}

TEST(CodegenGradGpt2, AttentionGradBf16Timing) {
  LLMC_REQUIRE_GPU();
  const std::string both = attentionGpt2Bf16(16, true);
  const std::string forward = attentionGpt2Bf16(16, false);
  double fwdMs = bestReplayMs(forward.c_str());
  double bothMs = bestReplayMs(both.c_str());
  // Causal: half of 4 B H T^2 D multiply-adds forward, 2.5x that backward
  // (FlashAttention's convention for reporting TFLOP/s).
  const double fwdFlops = 4.0 * 16 * 12 * 1024.0 * 1024.0 * 64 / 2;
  std::printf("[ timing   ] attention [16, 12, 1024, 64] causal bf16: forward "
              "%.3f ms (%.0f TFLOP/s), attention_grad %.3f ms (%.0f TFLOP/s)\n",
              fwdMs, fwdFlops / fwdMs * 1e-9, bothMs - fwdMs,
              2.5 * fwdFlops / (bothMs - fwdMs) * 1e-9);
  printStepTimes("attention bf16 [16, 12, 1024, 64]", both.c_str());
}

// The same kernels on f16 tiles (the fp16 policy): they should time as
// bf16 does (the same instruction shape and bytes).
TEST(CodegenGradGpt2, AttentionGradF16Timing) {
  LLMC_REQUIRE_GPU();
  const std::string both = attentionGpt2Bf16(16, true, "f16");
  const std::string forward = attentionGpt2Bf16(16, false, "f16");
  double fwdMs = bestReplayMs(forward.c_str());
  double bothMs = bestReplayMs(both.c_str());
  const double fwdFlops = 4.0 * 16 * 12 * 1024.0 * 1024.0 * 64 / 2;
  std::printf("[ timing   ] attention [16, 12, 1024, 64] causal f16: forward "
              "%.3f ms (%.0f TFLOP/s), attention_grad %.3f ms (%.0f TFLOP/s)\n",
              fwdMs, fwdFlops / fwdMs * 1e-9, bothMs - fwdMs,
              2.5 * fwdFlops / (bothMs - fwdMs) * 1e-9);
}

const char *kGatherGradGpt2 = R"(func.func @forward(%g: tensor<16x1024x768xf32>,
    %idx: tensor<16x1024xi64> {gpu_test.range = array<i64: 0, 50257>}) -> tensor<50257x768xf32> {
  %0 = llmc.gather_grad %g, %idx axis 0 : (tensor<16x1024x768xf32>, tensor<16x1024xi64>) -> tensor<50257x768xf32>
  return %0 : tensor<50257x768xf32>
})";

// Natural text repeats tokens far more than uniform ids do: a 50-token
// vocabulary stresses the per-row buckets (about 330 positions each).
const char *kGatherGradSkewed =
    R"(func.func @forward(%g: tensor<16x1024x768xf32>,
    %idx: tensor<16x1024xi64> {gpu_test.range = array<i64: 0, 50>}) -> tensor<50257x768xf32> {
  %0 = llmc.gather_grad %g, %idx axis 0 : (tensor<16x1024x768xf32>, tensor<16x1024xi64>) -> tensor<50257x768xf32>
  return %0 : tensor<50257x768xf32>
})";

TEST(CodegenGradGpt2, GatherGrad) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kGatherGradGpt2);
  double uniform = bestReplayMs(kGatherGradGpt2);
  double skewed = bestReplayMs(kGatherGradSkewed);
  std::printf("[ timing   ] gather_grad 16384 tokens into [50257, 768] f32: "
              "%.3f ms (uniform ids), %.3f ms (50 distinct ids)\n",
              uniform, skewed);
  printStepTimes("gather_grad uniform", kGatherGradGpt2);
  printStepTimes("gather_grad 50 ids", kGatherGradSkewed);
}

// The GPT-2 124M bf16 step's own case: the padded table (50304 rows, 50257
// real) in bf16. The chain is _count (with the scan in its last block),
// _place, _rank, _sum: four launches where there were six (_zero and _scan
// gone); the sums and their order are the former chain's.
const char *kGatherGradGpt2Bf16 =
    R"(func.func @forward(%g: tensor<16x1024x768xbf16>,
    %idx: tensor<16x1024xi64> {gpu_test.range = array<i64: 0, 50257>}) -> tensor<50304x768xbf16> {
  %0 = llmc.gather_grad %g, %idx axis 0 {bound = 50257 : i64} : (tensor<16x1024x768xbf16>, tensor<16x1024xi64>) -> tensor<50304x768xbf16>
  return %0 : tensor<50304x768xbf16>
})";

TEST(CodegenGradGpt2, GatherGradBf16Padded) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(kGatherGradGpt2Bf16);
  double ms = bestReplayMs(kGatherGradGpt2Bf16);
  // Bytes it must move: grad read once, the table written once.
  double mb = (16384.0 * 768 * 2 + 50304.0 * 768 * 2) * 1e-6;
  std::printf("[ timing   ] gather_grad 16384 tokens into [50304, 768] bf16 "
              "(bound 50257): %.3f ms, %.1f MB, %.0f GB/s\n",
              ms, mb, mb / ms);
  printStepTimes("gather_grad bf16 padded", kGatherGradGpt2Bf16);
}

//===----------------------------------------------------------------------===//
// The GPT-2 fixture's whole training step
//===----------------------------------------------------------------------===//

/// Builds @train_step of gpt2-tiny.mlir with llmc-autodiff and
/// llmc-append-optimizer and marks its arguments for the harness: token ids
/// in the vocabulary, step 1, m = 0, v = |N(0, 0.01)|, a learning rate of
/// about 1e-2. v is not 0 (a true first step) on purpose: there the update
/// is lr * g / (|g| + eps), the sign of g, and gradients that are zero in
/// exact arithmetic (the key bias: softmax ignores a per-row constant) have
/// a rounding-noise sign on either side; with v > 0 the update is smooth in
/// g, and m' = 0.1 g still checks every gradient.
///
/// `multiTensor` builds the pipeline's optimizer instead: clipping at 1
/// (llmc.global_norm), decay 0.1 on matrices only, and llmc-batch-adamw (one
/// multi_adamw_update with the clip scale).
mlir::func::FuncOp gpt2TinyTrainStep(mlir::MLIRContext &context,
                                     mlir::OwningOpRef<mlir::ModuleOp> &module,
                                     bool multiTensor = false) {
  std::string text = readTestModel("gpt2-tiny.mlir");
  if (text.empty())
    return nullptr;
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  if (!module)
    return nullptr;
  mlir::PassManager pm(&context);
  pm.addPass(mlir::llmc::createAutodiffPass());
  mlir::llmc::AppendOptimizerPassOptions optimizer;
  if (multiTensor) {
    optimizer.clipNorm = 1.0;
    optimizer.weightDecay = 0.1;
    optimizer.decayMinRank = 2;
  }
  pm.addPass(mlir::llmc::createAppendOptimizerPass(optimizer));
  if (multiTensor)
    pm.addNestedPass<mlir::func::FuncOp>(mlir::llmc::createBatchAdamWPass());
  if (mlir::failed(pm.run(*module)))
    return nullptr;
  auto func = module->lookupSymbol<mlir::func::FuncOp>("train_step");
  if (!func)
    return nullptr;
  markTrainStepArguments(func);
  return func;
}

TEST(CodegenGradModel, Gpt2TinyTrainStep) {
  LLMC_REQUIRE_GPU();
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func = gpt2TinyTrainStep(context, module);
  ASSERT_TRUE(func) << "cannot build @train_step of gpt2-tiny.mlir";
  // Weights N(0, 0.1): the scale of a trained model's. The new m is 0.1 g:
  // it checks every gradient.
  checkFunctionAgainstReference(func, {}, 0.1);
}

TEST(CodegenGradModel, Gpt2TinyTrainStepCompilesWithNvrtc) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func = gpt2TinyTrainStep(context, module);
  ASSERT_TRUE(func) << "cannot build @train_step of gpt2-tiny.mlir";
  checkFunctionCompiles(func);
}

// The same step with the multi-tensor optimizer: one global_norm, one
// multi_adamw_update over the 16 parameters with the clip coefficient.
TEST(CodegenGradModel, Gpt2TinyTrainStepMultiTensor) {
  LLMC_REQUIRE_GPU();
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func = gpt2TinyTrainStep(context, module, true);
  ASSERT_TRUE(func) << "cannot build @train_step of gpt2-tiny.mlir";
  checkFunctionAgainstReference(func, {}, 0.1);
}

TEST(CodegenGradModel, Gpt2TinyTrainStepMultiTensorCompilesWithNvrtc) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func = gpt2TinyTrainStep(context, module, true);
  ASSERT_TRUE(func) << "cannot build @train_step of gpt2-tiny.mlir";
  checkFunctionCompiles(func);
}

} // namespace
