//===- CodegenGpuTest.cpp - Generated kernels vs the CPU reference --------===//
//
// One test per kernel family: the family's ops on random inputs (shapes that
// are not multiples of the block or tile sizes), run on the GPU and in the
// reference evaluator; relative L2 error below 1e-5 for f32 results and
// 1e-2 for bf16/f16, integers exact (GpuHarness.h). The last test runs the
// whole GPT-2 fixture forward (cuBLASLt matmuls included).
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace llmc::test;

struct GpuCase {
  const char *name;
  const char *mlir;
};
void PrintTo(const GpuCase &c, std::ostream *os) { *os << c.name; }

namespace {

/// The IR of every case: one function @forward per kernel family.
const std::vector<GpuCase> &cases() {
  static const std::vector<GpuCase> all = {
      {"UnaryF32",
       R"(func.func @forward(%x: tensor<7x129xf32>) -> (tensor<7x129xf32>, tensor<7x129xf32>,
    tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>,
    tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>,
    tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>,
    tensor<7x129xf32>, tensor<7x129xf32>) {
  %0 = llmc.neg %x : tensor<7x129xf32>
  %1 = llmc.abs %x : tensor<7x129xf32>
  %2 = llmc.exp %x : tensor<7x129xf32>
  %3 = llmc.log %1 : tensor<7x129xf32>
  %4 = llmc.sqrt %1 : tensor<7x129xf32>
  %5 = llmc.rsqrt %1 : tensor<7x129xf32>
  %6 = llmc.reciprocal %x : tensor<7x129xf32>
  %7 = llmc.tanh %x : tensor<7x129xf32>
  %8 = llmc.erf %x : tensor<7x129xf32>
  %9 = llmc.sigmoid %x : tensor<7x129xf32>
  %10 = llmc.relu %x : tensor<7x129xf32>
  %11 = llmc.cos %x : tensor<7x129xf32>
  %12 = llmc.sin %x : tensor<7x129xf32>
  %13 = llmc.silu %x : tensor<7x129xf32>
  %14 = llmc.gelu erf %x : tensor<7x129xf32>
  %15 = llmc.gelu tanh %x : tensor<7x129xf32>
  return %0, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %1
    : tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>,
      tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>,
      tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>,
      tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>, tensor<7x129xf32>
})"},
      {"BinaryBroadcastCompareWhere",
       R"(func.func @forward(%a: tensor<5x1x33xf32>, %b: tensor<3x33xf32>, %c: tensor<5x3x1xi1>)
    -> (tensor<5x3x33xf32>, tensor<5x3x33xf32>, tensor<5x3x33xf32>, tensor<5x3x33xf32>,
        tensor<5x3x33xf32>, tensor<5x3x33xf32>, tensor<5x3x33xf32>, tensor<5x3x33xi1>,
        tensor<5x3x33xi1>, tensor<5x3x33xi1>, tensor<5x3x33xf32>, tensor<5x3x33xi1>) {
  %0 = llmc.add %a, %b : (tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xf32>
  %1 = llmc.sub %a, %b : (tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xf32>
  %2 = llmc.mul %a, %b : (tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xf32>
  %3 = llmc.div %a, %b : (tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xf32>
  %pa = llmc.abs %a : tensor<5x1x33xf32>
  %4 = llmc.pow %pa, %b : (tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xf32>
  %5 = llmc.max %a, %b : (tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xf32>
  %6 = llmc.min %a, %b : (tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xf32>
  %7 = llmc.compare lt, %a, %b : (tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xi1>
  %8 = llmc.compare ge, %a, %b : (tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xi1>
  %9 = llmc.compare ne, %a, %b : (tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xi1>
  %10 = llmc.where %c, %a, %b : (tensor<5x3x1xi1>, tensor<5x1x33xf32>, tensor<3x33xf32>) -> tensor<5x3x33xf32>
  %l = llmc.log %3 : tensor<5x3x33xf32>
  %11 = llmc.isnan %l : tensor<5x3x33xf32> -> tensor<5x3x33xi1>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11
    : tensor<5x3x33xf32>, tensor<5x3x33xf32>, tensor<5x3x33xf32>, tensor<5x3x33xf32>,
      tensor<5x3x33xf32>, tensor<5x3x33xf32>, tensor<5x3x33xf32>, tensor<5x3x33xi1>,
      tensor<5x3x33xi1>, tensor<5x3x33xi1>, tensor<5x3x33xf32>, tensor<5x3x33xi1>
})"},
      {"IntegersAndCasts",
       R"(func.func @forward(%i: tensor<4x37xi32> {gpu_test.range = array<i64: -1000, 1000>},
                   %j: tensor<37xi32> {gpu_test.range = array<i64: 1, 50>},
                   %k: tensor<4x37xi64> {gpu_test.range = array<i64: -100000, 100000>},
                   %x: tensor<4x37xf32>, %h: tensor<4x37xbf16>)
    -> (tensor<4x37xi32>, tensor<4x37xi32>, tensor<4x37xi32>, tensor<4x37xi32>,
        tensor<4x37xi32>, tensor<4x37xi64>, tensor<4x37xi1>, tensor<4x37xi32>,
        tensor<4x37xf32>, tensor<4x37xbf16>, tensor<4x37xf32>, tensor<4x37xf32>,
        tensor<4x37xf16>, tensor<4x37xbf16>) {
  %0 = llmc.add %i, %j : (tensor<4x37xi32>, tensor<37xi32>) -> tensor<4x37xi32>
  %1 = llmc.mul %i, %j : (tensor<4x37xi32>, tensor<37xi32>) -> tensor<4x37xi32>
  %2 = llmc.div %i, %j : (tensor<4x37xi32>, tensor<37xi32>) -> tensor<4x37xi32>
  %3 = llmc.neg %i : tensor<4x37xi32>
  %4 = llmc.max %i, %j : (tensor<4x37xi32>, tensor<37xi32>) -> tensor<4x37xi32>
  %5 = llmc.abs %k : tensor<4x37xi64>
  %6 = llmc.compare eq, %i, %j : (tensor<4x37xi32>, tensor<37xi32>) -> tensor<4x37xi1>
  %x10 = llmc.constant dense<10.0> : tensor<f32>
  %xs = llmc.mul %x, %x10 : (tensor<4x37xf32>, tensor<f32>) -> tensor<4x37xf32>
  %7 = llmc.cast %xs : tensor<4x37xf32> -> tensor<4x37xi32>
  %8 = llmc.cast %k : tensor<4x37xi64> -> tensor<4x37xf32>
  %9 = llmc.cast %x : tensor<4x37xf32> -> tensor<4x37xbf16>
  %10 = llmc.cast %h : tensor<4x37xbf16> -> tensor<4x37xf32>
  %11 = llmc.cast %6 : tensor<4x37xi1> -> tensor<4x37xf32>
  %12 = llmc.cast %h : tensor<4x37xbf16> -> tensor<4x37xf16>
  %13 = llmc.cast %k : tensor<4x37xi64> -> tensor<4x37xbf16>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13
    : tensor<4x37xi32>, tensor<4x37xi32>, tensor<4x37xi32>, tensor<4x37xi32>,
      tensor<4x37xi32>, tensor<4x37xi64>, tensor<4x37xi1>, tensor<4x37xi32>,
      tensor<4x37xf32>, tensor<4x37xbf16>, tensor<4x37xf32>, tensor<4x37xf32>,
      tensor<4x37xf16>, tensor<4x37xbf16>
})"},
      {"Bf16Elementwise",
       R"(func.func @forward(%a: tensor<3x300xbf16>, %b: tensor<300xbf16>)
    -> (tensor<3x300xbf16>, tensor<3x300xbf16>, tensor<3x300xbf16>) {
  %0 = llmc.add %a, %b : (tensor<3x300xbf16>, tensor<300xbf16>) -> tensor<3x300xbf16>
  %1 = llmc.gelu tanh %0 : tensor<3x300xbf16>
  %2 = llmc.silu %a : tensor<3x300xbf16>
  return %0, %1, %2 : tensor<3x300xbf16>, tensor<3x300xbf16>, tensor<3x300xbf16>
})"},
      {"DataMovement",
       R"(func.func @forward(%x: tensor<2x3x4x5xf32>, %a: tensor<2x3xf32>, %b: tensor<2x7xf32>,
                   %c: tensor<2x1xf32>, %s: tensor<3x1x5xbf16>,
                   %table: tensor<11x6xf32>,
                   %idx: tensor<3x4xi64> {gpu_test.range = array<i64: -11, 11>},
                   %ge: tensor<2x3x2x5xi32> {gpu_test.range = array<i64: -4, 4>})
    -> (tensor<2x4x5x3xf32>, tensor<2x2x2x3xf32>, tensor<2x11xf32>, tensor<2x2xf32>,
        tensor<2x5xf32>, tensor<2x4xf32>, tensor<4x3x6x5xbf16>, tensor<3x4x6xf32>,
        tensor<11x3x4xf32>, tensor<2x3x2x5xf32>, tensor<3x7xf32>, tensor<5x9xi64>,
        tensor<2x2x2x2xf32>) {
  %0 = llmc.transpose %x [0, 2, 3, 1] : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
  %1 = llmc.slice %x starts [0, 1, 0, 1] limits [2, 3, 4, 5] strides [1, 1, 2, 2] : (tensor<2x3x4x5xf32>) -> tensor<2x2x2x2xf32>
  %t1 = llmc.transpose %1 [0, 1, 3, 2] : (tensor<2x2x2x2xf32>) -> tensor<2x2x2x2xf32>
  %s1 = llmc.slice %x starts [0, 0, 0, 0] limits [2, 2, 2, 3] strides [1, 1, 1, 1] : (tensor<2x3x4x5xf32>) -> tensor<2x2x2x3xf32>
  %2 = llmc.concat %a, %b, %c axis 1 : (tensor<2x3xf32>, tensor<2x7xf32>, tensor<2x1xf32>) -> tensor<2x11xf32>
  %3, %4, %5 = llmc.split %2 axis 1 sizes [2, 5, 4] : (tensor<2x11xf32>) -> (tensor<2x2xf32>, tensor<2x5xf32>, tensor<2x4xf32>)
  %6 = llmc.broadcast_to %s : tensor<3x1x5xbf16> -> tensor<4x3x6x5xbf16>
  %7 = llmc.gather %table, %idx axis 0 : (tensor<11x6xf32>, tensor<3x4xi64>) -> tensor<3x4x6xf32>
  %tt = llmc.transpose %table [1, 0] : (tensor<11x6xf32>) -> tensor<6x11xf32>
  %8 = llmc.gather %tt, %idx axis 1 : (tensor<6x11xf32>, tensor<3x4xi64>) -> tensor<6x3x4xf32>
  %s8 = llmc.slice %8 starts [0, 0, 0] limits [6, 3, 4] strides [1, 1, 1] : (tensor<6x3x4xf32>) -> tensor<6x3x4xf32>
  %9 = llmc.gather_elements %x, %ge axis 2 : (tensor<2x3x4x5xf32>, tensor<2x3x2x5xi32>) -> tensor<2x3x2x5xf32>
  %10 = llmc.iota dim 1 {start = 0.5, step = 2.0} : tensor<3x7xf32>
  %11 = llmc.iota dim 0 {start = -3.0, step = 4.0} : tensor<5x9xi64>
  %g2 = llmc.gather %table, %idx axis 0 : (tensor<11x6xf32>, tensor<3x4xi64>) -> tensor<3x4x6xf32>
  %g3 = llmc.transpose %g2 [2, 0, 1] : (tensor<3x4x6xf32>) -> tensor<6x3x4xf32>
  %g4 = llmc.sub %g3, %s8 : (tensor<6x3x4xf32>, tensor<6x3x4xf32>) -> tensor<6x3x4xf32>
  %g5 = llmc.broadcast_to %g4 : tensor<6x3x4xf32> -> tensor<11x6x3x4xf32>
  %g6 = llmc.reduce_sum %g5 axes [1] : (tensor<11x6x3x4xf32>) -> tensor<11x3x4xf32>
  return %0, %s1, %2, %3, %4, %5, %6, %7, %g6, %9, %10, %11, %t1
    : tensor<2x4x5x3xf32>, tensor<2x2x2x3xf32>, tensor<2x11xf32>, tensor<2x2xf32>,
      tensor<2x5xf32>, tensor<2x4xf32>, tensor<4x3x6x5xbf16>, tensor<3x4x6xf32>,
      tensor<11x3x4xf32>, tensor<2x3x2x5xf32>, tensor<3x7xf32>, tensor<5x9xi64>,
      tensor<2x2x2x2xf32>
})"},
      {"Reductions",
       R"(func.func @forward(%x: tensor<6x5x700xf32>, %y: tensor<4x9x3xbf16>,
                   %i: tensor<3x50xi32> {gpu_test.range = array<i64: -100, 100>})
    -> (tensor<6x5xf32>, tensor<6x1x700xf32>, tensor<5xf32>, tensor<6xf32>,
        tensor<9xbf16>, tensor<3xi32>, tensor<50xi32>, tensor<6x5x1xf32>) {
  %0 = llmc.reduce_sum %x axes [2] : (tensor<6x5x700xf32>) -> tensor<6x5xf32>
  %1 = llmc.reduce_mean %x axes [1] keepdims : (tensor<6x5x700xf32>) -> tensor<6x1x700xf32>
  %2 = llmc.reduce_max %x axes [0, 2] : (tensor<6x5x700xf32>) -> tensor<5xf32>
  %3 = llmc.reduce_mean %x axes [1, 2] : (tensor<6x5x700xf32>) -> tensor<6xf32>
  %4 = llmc.reduce_sum %y axes [0, 2] : (tensor<4x9x3xbf16>) -> tensor<9xbf16>
  %5 = llmc.reduce_sum %i axes [1] : (tensor<3x50xi32>) -> tensor<3xi32>
  %6 = llmc.reduce_max %i axes [0] : (tensor<3x50xi32>) -> tensor<50xi32>
  %7 = llmc.reduce_max %x axes [2] keepdims : (tensor<6x5x700xf32>) -> tensor<6x5x1xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7
    : tensor<6x5xf32>, tensor<6x1x700xf32>, tensor<5xf32>, tensor<6xf32>,
      tensor<9xbf16>, tensor<3xi32>, tensor<50xi32>, tensor<6x5x1xf32>
})"},
      {"ColumnReductions",
       R"(func.func @forward(%x: tensor<20x30x70xf32>, %y: tensor<1000x3x40xbf16>)
    -> (tensor<70xf32>, tensor<1x1x70xf32>, tensor<3x40xbf16>) {
  %0 = llmc.reduce_sum %x axes [0, 1] : (tensor<20x30x70xf32>) -> tensor<70xf32>
  %1 = llmc.reduce_mean %x axes [0, 1] keepdims : (tensor<20x30x70xf32>) -> tensor<1x1x70xf32>
  %2 = llmc.reduce_sum %y axes [0] : (tensor<1000x3x40xbf16>) -> tensor<3x40xbf16>
  return %0, %1, %2 : tensor<70xf32>, tensor<1x1x70xf32>, tensor<3x40xbf16>
})"},
      // rms_norm over the bf16 rows of 2000: the warp row kernel (500 vectors).
      {"RowOps",
       R"(func.func @forward(%x: tensor<3x7x333xf32>, %w: tensor<333xf32>, %b: tensor<333xf32>,
                   %h: tensor<5x2000xbf16>, %hw: tensor<2000xbf16>, %m: tensor<4x6x5xf32>)
    -> (tensor<3x7x333xf32>, tensor<3x7x333xf32>, tensor<3x7x333xf32>, tensor<3x7x333xf32>,
        tensor<3x7x333xf32>, tensor<5x2000xbf16>, tensor<5x2000xbf16>, tensor<4x6x5xf32>,
        tensor<4x6x5xf32>, tensor<3x7x333xf32>, tensor<5x2000xbf16>) {
  %0 = llmc.softmax %x {axis = -1 : i64} : tensor<3x7x333xf32>
  %1 = llmc.log_softmax %x {axis = 2 : i64} : tensor<3x7x333xf32>
  %2 = llmc.layer_norm %x weight %w bias %b {epsilon = 1.0e-05 : f64} : (tensor<3x7x333xf32>, tensor<333xf32>, tensor<333xf32>) -> tensor<3x7x333xf32>
  %3 = llmc.layer_norm %x {epsilon = 1.0e-05 : f64} : (tensor<3x7x333xf32>) -> tensor<3x7x333xf32>
  %4 = llmc.rms_norm %x weight %w {epsilon = 1.0e-06 : f64} : (tensor<3x7x333xf32>, tensor<333xf32>) -> tensor<3x7x333xf32>
  %5 = llmc.layer_norm %h weight %hw {epsilon = 1.0e-05 : f64} : (tensor<5x2000xbf16>, tensor<2000xbf16>) -> tensor<5x2000xbf16>
  %6 = llmc.softmax %h {axis = -1 : i64} : tensor<5x2000xbf16>
  %7 = llmc.softmax %m {axis = 1 : i64} : tensor<4x6x5xf32>
  %8 = llmc.log_softmax %m {axis = 0 : i64} : tensor<4x6x5xf32>
  %big = llmc.constant dense<30.0> : tensor<f32>
  %xs = llmc.add %x, %big : (tensor<3x7x333xf32>, tensor<f32>) -> tensor<3x7x333xf32>
  %9 = llmc.layer_norm %xs {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<3x7x333xf32>) -> tensor<3x7x333xf32>
  %10 = llmc.rms_norm %h weight %hw {epsilon = 1.0e-05 : f64} : (tensor<5x2000xbf16>, tensor<2000xbf16>) -> tensor<5x2000xbf16>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10
    : tensor<3x7x333xf32>, tensor<3x7x333xf32>, tensor<3x7x333xf32>, tensor<3x7x333xf32>,
      tensor<3x7x333xf32>, tensor<5x2000xbf16>, tensor<5x2000xbf16>, tensor<4x6x5xf32>,
      tensor<4x6x5xf32>, tensor<3x7x333xf32>, tensor<5x2000xbf16>
})"},
      {"CrossEntropy", R"(func.func @forward(%logits: tensor<3x41x13xf32>,
                   %t: tensor<3x41xi64> {gpu_test.range = array<i64: 0, 13>},
                   %lb: tensor<70x1000xbf16>,
                   %tb: tensor<70xi32> {gpu_test.range = array<i64: -100, 1000>})
    -> (tensor<f32>, tensor<f32>, tensor<3x41xf32>, tensor<bf16>) {
  %0 = llmc.cross_entropy mean %logits, %t {ignore_index = 12 : i64} : (tensor<3x41x13xf32>, tensor<3x41xi64>) -> tensor<f32>
  %1 = llmc.cross_entropy sum %logits, %t {ignore_index = 12 : i64} : (tensor<3x41x13xf32>, tensor<3x41xi64>) -> tensor<f32>
  %2 = llmc.cross_entropy none %logits, %t {ignore_index = 12 : i64} : (tensor<3x41x13xf32>, tensor<3x41xi64>) -> tensor<3x41xf32>
  %tc = llmc.constant dense<0> : tensor<i32>
  %tpos = llmc.max %tb, %tc : (tensor<70xi32>, tensor<i32>) -> tensor<70xi32>
  %3 = llmc.cross_entropy mean %lb, %tpos {ignore_index = 0 : i64} : (tensor<70x1000xbf16>, tensor<70xi32>) -> tensor<bf16>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<3x41xf32>, tensor<bf16>
})"},
      {"Attention",
       R"(func.func @forward(%q: tensor<2x4x45x64xf32>, %k: tensor<2x4x45x64xf32>, %v: tensor<2x4x45x64xf32>,
                   %kg: tensor<2x2x70x64xf32>, %vg: tensor<2x2x70x48xf32>,
                   %fm: tensor<45x70xf32>, %bm: tensor<2x1x45x70xi1>)
    -> (tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x48xf32>,
        tensor<2x4x45x48xf32>, tensor<2x4x45x48xf32>) {
  %0 = llmc.attention %q, %k, %v : (tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>) -> tensor<2x4x45x64xf32>
  %1 = llmc.attention %q, %k, %v {causal} : (tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>) -> tensor<2x4x45x64xf32>
  %2 = llmc.attention %q, %kg, %vg {causal, scale = 0.2 : f64} : (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>) -> tensor<2x4x45x48xf32>
  %3 = llmc.attention %q, %kg, %vg mask %fm : (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>, tensor<45x70xf32>) -> tensor<2x4x45x48xf32>
  %4 = llmc.attention %q, %kg, %vg mask %bm {causal} : (tensor<2x4x45x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x48xf32>, tensor<2x1x45x70xi1>) -> tensor<2x4x45x48xf32>
  return %0, %1, %2, %3, %4 : tensor<2x4x45x64xf32>, tensor<2x4x45x64xf32>, tensor<2x4x45x48xf32>,
    tensor<2x4x45x48xf32>, tensor<2x4x45x48xf32>
})"},
      {"AttentionBf16",
       R"(func.func @forward(%q: tensor<1x2x100x128xbf16>, %k: tensor<1x2x100x128xbf16>, %v: tensor<1x2x100x128xbf16>)
    -> tensor<1x2x100x128xbf16> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>, tensor<1x2x100x128xbf16>) -> tensor<1x2x100x128xbf16>
  return %0 : tensor<1x2x100x128xbf16>
})"},
      {"AttentionCudaCores",
       R"(func.func @forward(%q: tensor<1x3x37x20xf32>, %k: tensor<1x3x37x20xf32>, %v: tensor<1x3x37x20xf32>)
    -> tensor<1x3x37x20xf32> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<1x3x37x20xf32>, tensor<1x3x37x20xf32>, tensor<1x3x37x20xf32>) -> tensor<1x3x37x20xf32>
  return %0 : tensor<1x3x37x20xf32>
})"},
      {"AttentionGpt2Size", R"(func.func @forward(%q: tensor<2x12x1024x64xf32>, %k: tensor<2x12x1024x64xf32>, %v: tensor<2x12x1024x64xf32>)
    -> tensor<2x12x1024x64xf32> {
  %0 = llmc.attention %q, %k, %v {causal} : (tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>, tensor<2x12x1024x64xf32>) -> tensor<2x12x1024x64xf32>
  return %0 : tensor<2x12x1024x64xf32>
})"},
      {"CrossEntropyGpt2Vocab", R"(func.func @forward(%logits: tensor<2x64x50257xf32>,
    %t: tensor<2x64xi64> {gpu_test.range = array<i64: 0, 50257>}) -> tensor<f32> {
  %0 = llmc.cross_entropy mean %logits, %t : (tensor<2x64x50257xf32>, tensor<2x64xi64>) -> tensor<f32>
  return %0 : tensor<f32>
})"},
      {"Rotary",
       R"(func.func @forward(%x: tensor<2x3x17x24xf32>, %cos: tensor<17x16xf32>, %sin: tensor<17x16xf32>,
                   %c2: tensor<2x1x17x24xf32>, %s2: tensor<2x1x17x24xf32>)
    -> (tensor<2x3x17x24xf32>, tensor<2x3x17x24xf32>) {
  %0 = llmc.rotary %x, %cos, %sin : (tensor<2x3x17x24xf32>, tensor<17x16xf32>, tensor<17x16xf32>) -> tensor<2x3x17x24xf32>
  %1 = llmc.rotary %x, %c2, %s2 {interleaved} : (tensor<2x3x17x24xf32>, tensor<2x1x17x24xf32>, tensor<2x1x17x24xf32>) -> tensor<2x3x17x24xf32>
  return %0, %1 : tensor<2x3x17x24xf32>, tensor<2x3x17x24xf32>
})"},
      // Bias adds fused into the matmul's cuBLASLt epilogue (EpilogueFusion.h):
      // an [n] and a [1, 1, n] bias (the add's operands swapped), bf16, and
      // an add that stays a kernel because the matmul result is returned too.
      {"MatmulBiasEpilogue",
       R"(func.func @forward(%x: tensor<2x37x48xf32>, %w: tensor<48x40xf32>, %b: tensor<40xf32>,
                   %wt: tensor<40x48xf32>, %c: tensor<1x1x40xf32>,
                   %h: tensor<3x29x64xbf16>, %hw: tensor<64x72xbf16>, %hb: tensor<72xbf16>)
    -> (tensor<2x37x40xf32>, tensor<2x37x40xf32>, tensor<3x29x72xbf16>,
        tensor<2x37x40xf32>, tensor<2x37x40xf32>, tensor<2x37x40xf32>) {
  %0 = llmc.matmul %x, %w : (tensor<2x37x48xf32>, tensor<48x40xf32>) -> tensor<2x37x40xf32>
  %1 = llmc.add %0, %b : (tensor<2x37x40xf32>, tensor<40xf32>) -> tensor<2x37x40xf32>
  %2 = llmc.matmul %x, %wt {transpose_rhs} : (tensor<2x37x48xf32>, tensor<40x48xf32>) -> tensor<2x37x40xf32>
  %3 = llmc.add %c, %2 : (tensor<1x1x40xf32>, tensor<2x37x40xf32>) -> tensor<2x37x40xf32>
  %4 = llmc.matmul %h, %hw : (tensor<3x29x64xbf16>, tensor<64x72xbf16>) -> tensor<3x29x72xbf16>
  %5 = llmc.add %4, %hb : (tensor<3x29x72xbf16>, tensor<72xbf16>) -> tensor<3x29x72xbf16>
  %6 = llmc.matmul %x, %w : (tensor<2x37x48xf32>, tensor<48x40xf32>) -> tensor<2x37x40xf32>
  %7 = llmc.add %6, %b : (tensor<2x37x40xf32>, tensor<40xf32>) -> tensor<2x37x40xf32>
  %8 = llmc.gelu tanh %1 : tensor<2x37x40xf32>
  return %1, %3, %5, %7, %6, %8 : tensor<2x37x40xf32>, tensor<2x37x40xf32>, tensor<3x29x72xbf16>,
    tensor<2x37x40xf32>, tensor<2x37x40xf32>, tensor<2x37x40xf32>
})"},
  };
  return all;
}

class CodegenGpu : public ::testing::TestWithParam<GpuCase> {};

TEST_P(CodegenGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  checkAgainstReference(GetParam().mlir);
}

// Needs no GPU: every case's kernels compile with NVRTC for sm_90.
TEST_P(CodegenGpu, CompilesWithNvrtc) { checkCompiles(GetParam().mlir); }

INSTANTIATE_TEST_SUITE_P(Families, CodegenGpu, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GpuCase> &info) {
                           return std::string(info.param.name);
                         });

/// The GPT-2 fixture with token ids and targets in [0, 512), the vocabulary.
std::string gpt2Tiny() {
  const char *dir = std::getenv("LLMC_TEST_MODELS");
  std::string path =
      std::string(dir ? dir : LLMC_TEST_MODELS_DIR) + "/gpt2-tiny.mlir";
  std::ifstream in(path);
  if (!in)
    return "";
  std::stringstream text;
  text << in.rdbuf();
  std::string mlir = text.str();
  for (std::string name :
       {"llmc.input = \"idx\"", "llmc.input = \"targets\""}) {
    size_t at = mlir.find(name);
    if (at == std::string::npos)
      return "";
    mlir.insert(at + name.size(), ", gpu_test.range = array<i64: 0, 512>");
  }
  return mlir;
}

TEST(CodegenGpuModel, Gpt2TinyForward) {
  LLMC_REQUIRE_GPU();
  std::string mlir = gpt2Tiny();
  ASSERT_FALSE(mlir.empty()) << "cannot read gpt2-tiny.mlir (LLMC_TEST_MODELS)";
  // Weights N(0, 0.1): the scale of a trained model's.
  checkAgainstReference(mlir, {}, 0.1);
}

TEST(CodegenGpuModel, Gpt2TinyCompilesWithNvrtc) {
  std::string mlir = gpt2Tiny();
  ASSERT_FALSE(mlir.empty()) << "cannot read gpt2-tiny.mlir (LLMC_TEST_MODELS)";
  checkCompiles(mlir);
}

} // namespace
