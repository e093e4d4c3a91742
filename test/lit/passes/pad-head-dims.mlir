// RUN: llmc-opt %s --split-input-file --llmc-pad-shapes=precision=bf16 | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-pad-shapes='precision=bf16 always=true' | FileCheck %s --check-prefix=ALWAYS
// RUN: llmc-opt %s --split-input-file --llmc-pad-shapes | FileCheck %s --check-prefix=FP32
// RUN: llmc-opt %s --split-input-file --llmc-pad-shapes=dims=40:48 | FileCheck %s --check-prefix=FORCED

// Head dim 40 at GPT-2 124M's batch (16 x 12 heads x 1024 tokens): the
// bf16 tensor-core attention needs head dims % 16, so 40 runs on the f32
// kernels; padded to 48 at the op (q, k, v concatenated with zeros), with
// `scale` pinned to 1/sqrt(40) and the result sliced back to 40. In fp32
// every head dim runs the same kernels: padding only adds FLOPs, and the
// dim is not listed (as an aligned parameter dim is not).
// CHECK-LABEL: module attributes {llmc.padding = [{extra_flops = {{[0-9]+}} : i64, from = 40 : i64, params = ["llmc.attention head dim (1 op: q, k, v, result)"], to = 48 : i64, why = "attention {{.*}} -> {{.*}} per step on sm_90 (bf16 tensor cores need head dims % 16), the padding copies {{.*}}"}]}
// CHECK:         %[[Z:.+]] = llmc.constant dense<0.000000e+00> : tensor<16x12x1024x8xf32>
// CHECK:         %[[Q:.+]] = llmc.concat %arg0, %[[Z]] axis 3 : (tensor<16x12x1024x40xf32>, tensor<16x12x1024x8xf32>) -> tensor<16x12x1024x48xf32>
// CHECK:         %[[K:.+]] = llmc.concat %arg1, %{{.+}} axis 3
// CHECK:         %[[V:.+]] = llmc.concat %arg2, %{{.+}} axis 3
// CHECK:         %[[O:.+]] = llmc.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 0.15811388300841897 : f64} : (tensor<16x12x1024x48xf32>, tensor<16x12x1024x48xf32>, tensor<16x12x1024x48xf32>) -> tensor<16x12x1024x48xf32>
// CHECK:         %[[S:.+]] = llmc.slice %[[O]] starts [0, 0, 0, 0] limits [16, 12, 1024, 40] strides [1, 1, 1, 1] : (tensor<16x12x1024x48xf32>) -> tensor<16x12x1024x40xf32>
// CHECK:         llmc.reduce_sum %[[S]]
// FP32-LABEL: module attributes {llmc.padding = []}
// FP32-NOT:     llmc.concat
// FP32:         llmc.attention %arg0, %arg1, %arg2 {causal} : (tensor<16x12x1024x40xf32>
// FORCED-LABEL: module attributes {llmc.padding = [{{.*}}from = 40 : i64, {{.*}}to = 48 : i64, why = "padded on request (dims=40:48); attention {{.*}} per step on sm_90 (f32), the padding copies {{.*}}"}]}
// FORCED:       llmc.attention {{.*}} {causal, scale = 0.15811388300841897 : f64} : (tensor<16x12x1024x48xf32>
func.func @forward(%q: tensor<16x12x1024x40xf32> {llmc.input = "q"},
                   %k: tensor<16x12x1024x40xf32> {llmc.input = "k"},
                   %v: tensor<16x12x1024x40xf32> {llmc.input = "v"}) -> tensor<f32> {
  %o = llmc.attention %q, %k, %v {causal} : (tensor<16x12x1024x40xf32>, tensor<16x12x1024x40xf32>, tensor<16x12x1024x40xf32>) -> tensor<16x12x1024x40xf32>
  %s = llmc.reduce_sum %o axes [0, 1, 2, 3] : (tensor<16x12x1024x40xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Heads made by a reshape of a [B, T, H*D] projection (grouped-query, an
// explicit scale kept as it is): the pad reaches q, k and v at the op, not
// the projection weights, whose per-head zero columns no real shape can
// describe (docs/padding.md, "Head dims"); the weights keep their shapes.
// CHECK-LABEL: module attributes {llmc.padding = [{{.*}}from = 40 : i64, params = ["llmc.attention head dim (1 op: q, k, v, result)"], to = 48 : i64
// CHECK:         %arg1: tensor<80x160xf32> {llmc.param = "wq"}
// CHECK:         llmc.attention {{.*}} {causal, scale = 1.250000e-01 : f64} : (tensor<8x4x512x48xf32>, tensor<8x2x512x48xf32>, tensor<8x2x512x48xf32>) -> tensor<8x4x512x48xf32>
// CHECK:         llmc.slice {{.*}} -> tensor<8x4x512x40xf32>
// CHECK:         llmc.transpose
func.func @forward(%h: tensor<8x512x80xf32> {llmc.input = "x"},
                   %wq: tensor<80x160xf32> {llmc.param = "wq"},
                   %k: tensor<8x2x512x40xf32> {llmc.input = "k"},
                   %v: tensor<8x2x512x40xf32> {llmc.input = "v"}) -> tensor<8x512x160xf32> {
  %x = llmc.matmul %h, %wq : (tensor<8x512x80xf32>, tensor<80x160xf32>) -> tensor<8x512x160xf32>
  %r = llmc.reshape %x : tensor<8x512x160xf32> -> tensor<8x512x4x40xf32>
  %q = llmc.transpose %r [0, 2, 1, 3] : (tensor<8x512x4x40xf32>) -> tensor<8x4x512x40xf32>
  %o = llmc.attention %q, %k, %v {causal, scale = 0.125 : f64} : (tensor<8x4x512x40xf32>, tensor<8x2x512x40xf32>, tensor<8x2x512x40xf32>) -> tensor<8x4x512x40xf32>
  %t = llmc.transpose %o [0, 2, 1, 3] : (tensor<8x4x512x40xf32>) -> tensor<8x512x4x40xf32>
  %y = llmc.reshape %t : tensor<8x512x4x40xf32> -> tensor<8x512x160xf32>
  return %y : tensor<8x512x160xf32>
}

// -----

// Aligned already: head dim 64 (and 128) is what the bf16 kernels take;
// nothing changes and nothing is listed, even when asked to pad.
// CHECK-LABEL: module attributes {llmc.padding = []}
// CHECK-NOT:     llmc.concat
// ALWAYS-LABEL: module attributes {llmc.padding = []}
// ALWAYS-NOT:    llmc.concat
func.func @forward(%q: tensor<16x12x1024x64xf32> {llmc.input = "q"},
                   %k: tensor<16x12x1024x64xf32> {llmc.input = "k"},
                   %v: tensor<16x12x1024x128xf32> {llmc.input = "v"}) -> tensor<16x12x1024x128xf32> {
  %o = llmc.attention %q, %k, %v {causal} : (tensor<16x12x1024x64xf32>, tensor<16x12x1024x64xf32>, tensor<16x12x1024x128xf32>) -> tensor<16x12x1024x128xf32>
  return %o : tensor<16x12x1024x128xf32>
}

// -----

// Not worth it: 32 tokens of 2 heads are launch-bound either way, and the
// copies would cost more. `always` pads anyway (how the tests check it).
// CHECK-LABEL: module attributes {llmc.padding = [{extra_flops = 0 : i64, from = 40 : i64, {{.*}}to = 40 : i64, why = "not worth it: attention {{.*}}, launch-bound or cheaper than the padding's copies"}]}
// CHECK-NOT:     llmc.concat
// ALWAYS-LABEL: module attributes {llmc.padding = [{{.*}}from = 40 : i64, {{.*}}to = 48 : i64, why = "padded on request (always); attention
// ALWAYS:        llmc.attention {{.*}} -> tensor<1x2x32x48xf32>
func.func @forward(%q: tensor<1x2x32x40xf32> {llmc.input = "q"},
                   %k: tensor<1x2x32x40xf32> {llmc.input = "k"},
                   %v: tensor<1x2x32x40xf32> {llmc.input = "v"}) -> tensor<1x2x32x40xf32> {
  %o = llmc.attention %q, %k, %v : (tensor<1x2x32x40xf32>, tensor<1x2x32x40xf32>, tensor<1x2x32x40xf32>) -> tensor<1x2x32x40xf32>
  return %o : tensor<1x2x32x40xf32>
}

// -----

// No kernel to pad to: above head dim 128 there is no bf16 tensor-core
// attention, so 136 stays; the value head dim 64 is listed with it.
// CHECK-LABEL: module attributes {llmc.padding = [{extra_flops = 0 : i64, from = 136 : i64, params = ["llmc.attention head dim (1 op: q, k)"], to = 136 : i64, why = "not worth it: no bf16 tensor-core attention above head dim 128"}, {extra_flops = 0 : i64, from = 64 : i64, params = ["llmc.attention value head dim (1 op: v, result)"], to = 64 : i64
// CHECK-NOT:     llmc.concat
func.func @forward(%q: tensor<16x12x1024x136xf32> {llmc.input = "q"},
                   %k: tensor<16x12x1024x136xf32> {llmc.input = "k"},
                   %v: tensor<16x12x1024x64xf32> {llmc.input = "v"}) -> tensor<16x12x1024x64xf32> {
  %o = llmc.attention %q, %k, %v {causal} : (tensor<16x12x1024x136xf32>, tensor<16x12x1024x136xf32>, tensor<16x12x1024x64xf32>) -> tensor<16x12x1024x64xf32>
  return %o : tensor<16x12x1024x64xf32>
}
