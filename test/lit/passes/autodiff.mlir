// RUN: llmc-opt %s --split-input-file --llmc-autodiff | FileCheck %s

// Each case is a module with a @forward; the checks follow the reverse pass
// of the ops that matter for it. AUX differentiates the "aux" output of the
// last case instead of the only-rank-0 default (the other cases have no
// "aux" and fail, which AUX checks once).

// Broadcasting, a value used twice, a frozen parameter and an input: the
// two uses of %0 sum, b's gradient is summed over the broadcast dim, and
// neither the frozen parameter nor the input gets one.
// CHECK-LABEL: func.func @forward
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "w"}, tensor<8xf32> {llmc.grad_of = "b"})
// CHECK: %[[X:.+]] = llmc.add %arg0, %arg1
// CHECK: llmc.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[G0:.+]] = llmc.mul %{{.+}}, %[[X]] :
// CHECK: %[[G1:.+]] = llmc.mul %{{.+}}, %[[X]] :
// CHECK: %[[GW:.+]] = llmc.add %[[G0]], %[[G1]]
// CHECK: %[[GB:.+]] = llmc.reduce_sum %[[GW]] axes [0] : (tensor<4x8xf32>) -> tensor<8xf32>
// CHECK: return %{{.+}}, %[[GW]], %[[GB]] :
func.func @forward(%w: tensor<4x8xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                   %b: tensor<8xf32> {llmc.param = "b", llmc.init_rule = "zeros"},
                   %f: tensor<8xf32> {llmc.param = "frozen", llmc.frozen, llmc.init_rule = "zeros"},
                   %x: tensor<4x8xf32> {llmc.input = "x"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.add %w, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = llmc.mul %0, %0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = llmc.mul %1, %f : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = llmc.mul %2, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = llmc.reduce_sum %3 axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// matmul: a shared weight times a batch folds the batch into the rows of
// one GEMM; batch-broadcast operands are summed back; transpose_lhs uses
// the transposed formulas.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[DMEAN:.+]] = llmc.broadcast_to %{{.+}} : tensor<1x1x1x1xf32> -> tensor<2x3x8x5xf32>
// CHECK: %[[DSUM:.+]] = llmc.broadcast_to %{{.+}} : tensor<1x1x1xf32> -> tensor<2x4x16xf32>
// CHECK: %[[DD0:.+]] = llmc.matmul %arg2, %[[DMEAN]] {transpose_rhs} : (tensor<3x4x5xf32>, tensor<2x3x8x5xf32>) -> tensor<2x3x4x8xf32>
// CHECK: %[[DD1:.+]] = llmc.reduce_sum %[[DD0]] axes [1] : (tensor<2x3x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[DD:.+]] = llmc.reshape %[[DD1]] : tensor<2x4x8xf32> -> tensor<2x1x4x8xf32>
// CHECK: %[[DC0:.+]] = llmc.matmul %arg3, %[[DMEAN]] : (tensor<2x1x4x8xf32>, tensor<2x3x8x5xf32>) -> tensor<2x3x4x5xf32>
// CHECK: %[[DC:.+]] = llmc.reduce_sum %[[DC0]] axes [0] : (tensor<2x3x4x5xf32>) -> tensor<3x4x5xf32>
// CHECK: %[[DA:.+]] = llmc.matmul %[[DSUM]], %arg1 {transpose_rhs} : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[A2:.+]] = llmc.reshape %arg0 : tensor<2x4x8xf32> -> tensor<8x8xf32>
// CHECK: %[[G2:.+]] = llmc.reshape %[[DSUM]] : tensor<2x4x16xf32> -> tensor<8x16xf32>
// CHECK: %[[DW:.+]] = llmc.matmul %[[A2]], %[[G2]] {transpose_lhs} : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK: return %{{.+}}, %[[DA]], %[[DW]], %[[DC]], %[[DD]] :
func.func @forward(%a: tensor<2x4x8xf32> {llmc.param = "a", llmc.init_rule = "zeros"},
                   %w: tensor<8x16xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                   %c: tensor<3x4x5xf32> {llmc.param = "c", llmc.init_rule = "zeros"},
                   %d: tensor<2x1x4x8xf32> {llmc.param = "d", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.matmul %a, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %1 = llmc.matmul %d, %c {transpose_lhs} : (tensor<2x1x4x8xf32>, tensor<3x4x5xf32>) -> tensor<2x3x8x5xf32>
  %2 = llmc.reduce_sum %0 axes [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<f32>
  %3 = llmc.reduce_mean %1 axes [0, 1, 2, 3] : (tensor<2x3x8x5xf32>) -> tensor<f32>
  %4 = llmc.add %2, %3 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// Elementwise rules and their conventions: reduce_max shares the gradient
// among tied maxima, relu'(0) = 0, casts convert the cotangent back, pow
// guards its zero cases, max gives half to each operand on ties.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[HIT:.+]] = llmc.compare eq, %{{.+}}, %{{.+}} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xi1>
// CHECK: %[[HITF:.+]] = llmc.cast %[[HIT]] : tensor<4x8xi1> -> tensor<4x8xf32>
// CHECK: %[[COUNT:.+]] = llmc.reduce_sum %[[HITF]] axes [1] keepdims
// CHECK: llmc.div %{{.+}}, %[[COUNT]]
// CHECK: %[[POS:.+]] = llmc.compare gt, %{{.+}}, %{{.+}} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
// CHECK: %[[RELU:.+]] = llmc.where %[[POS]]
// CHECK: llmc.cast %[[RELU]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: llmc.sub %{{.+}}, %{{.+}} : (tensor<bf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: llmc.cast %{{.+}} : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: llmc.where %arg2, %{{.+}}, %{{.+}} : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>)
// CHECK: llmc.where %arg2, %{{.+}}, %{{.+}} : (tensor<4x8xi1>, tensor<f32>, tensor<4x8xf32>)
// CHECK: llmc.compare eq, %arg1, %{{.+}} : (tensor<8xf32>, tensor<f32>) -> tensor<8xi1>
// CHECK: llmc.log
// CHECK: llmc.compare ge, %arg1
// CHECK: %[[TIE:.+]] = llmc.constant dense<5.000000e-01> : tensor<f32>
// CHECK: llmc.compare gt, %arg0, %arg1
// CHECK: llmc.compare gt, %arg1, %arg0
func.func @forward(%x: tensor<4x8xf32> {llmc.param = "x", llmc.init_rule = "zeros"},
                   %y: tensor<8xf32> {llmc.param = "y", llmc.init_rule = "zeros"},
                   %m: tensor<4x8xi1> {llmc.input = "m"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.max %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = llmc.pow %0, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = llmc.where %m, %1, %y : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = llmc.cast %2 : tensor<4x8xf32> -> tensor<4x8xbf16>
  %4 = llmc.tanh %3 : tensor<4x8xbf16>
  %5 = llmc.cast %4 : tensor<4x8xbf16> -> tensor<4x8xf32>
  %6 = llmc.relu %5 : tensor<4x8xf32>
  %7 = llmc.reduce_max %6 axes [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %8 = llmc.reduce_sum %7 axes [0] : (tensor<4xf32>) -> tensor<f32>
  return %8 : tensor<f32>
}

// -----

// Data movement: gather_elements and gather scatter-add, a split piece
// without a cotangent is zeros, slice is placed back by slice_grad, the
// two uses of a concatenated value sum, an unused parameter gets zeros.
// CHECK-LABEL: func.func @train_step
// CHECK: llmc.gather_elements_grad %{{.+}}, %arg4 axis 2 : (tensor<2x3x1xf32>, tensor<2x3x1xi64>) -> tensor<2x3x4xf32>
// CHECK: %[[ZERO:.+]] = llmc.constant dense<0.000000e+00> : tensor<4x2x3xf32>
// CHECK: llmc.concat %[[ZERO]], %{{.+}} axis 0
// CHECK: llmc.transpose %{{.+}} [1, 2, 0]
// CHECK: llmc.slice_grad %{{.+}} starts [0, 0] limits [3, 16] strides [1, 2] : (tensor<3x8xf32>) -> tensor<3x16xf32>
// CHECK: llmc.slice %{{.+}} starts [0, 0] limits [3, 8]
// CHECK: llmc.slice %{{.+}} starts [0, 8] limits [3, 16]
// CHECK: %[[DB:.+]] = llmc.reshape %{{.+}} : tensor<8xf32> -> tensor<1x8xf32>
// CHECK: %[[DE:.+]] = llmc.gather_grad %{{.+}}, %arg3 axis 0 : (tensor<2x3x8xf32>, tensor<2x3xi64>) -> tensor<16x8xf32>
// CHECK: %[[DU:.+]] = llmc.constant dense<0.000000e+00> : tensor<8xf32>
// CHECK: return %{{.+}}, %[[DE]], %[[DB]], %[[DU]] :

func.func @forward(%e: tensor<16x8xf32> {llmc.param = "e", llmc.init_rule = "zeros"},
                   %b: tensor<1x8xf32> {llmc.param = "b", llmc.init_rule = "zeros"},
                   %u: tensor<8xf32> {llmc.param = "unused", llmc.init_rule = "zeros"},
                   %idx: tensor<2x3xi64> {llmc.input = "idx"},
                   %sel: tensor<2x3x1xi64> {llmc.input = "sel"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.gather %e, %idx axis 0 : (tensor<16x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  %1 = llmc.broadcast_to %b : tensor<1x8xf32> -> tensor<3x8xf32>
  %2 = llmc.concat %1, %1 axis 1 : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x16xf32>
  %3 = llmc.slice %2 starts [0, 0] limits [3, 16] strides [1, 2] : (tensor<3x16xf32>) -> tensor<3x8xf32>
  %4 = llmc.add %0, %3 : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
  %5 = llmc.transpose %4 [2, 0, 1] : (tensor<2x3x8xf32>) -> tensor<8x2x3xf32>
  %6:2 = llmc.split %5 axis 0 sizes [4, 4] : (tensor<8x2x3xf32>) -> (tensor<4x2x3xf32>, tensor<4x2x3xf32>)
  %7 = llmc.transpose %6#1 [1, 2, 0] : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  %8 = llmc.gather_elements %7, %sel axis 2 : (tensor<2x3x4xf32>, tensor<2x3x1xi64>) -> tensor<2x3x1xf32>
  %9 = llmc.reduce_sum %8 axes [0, 1, 2] : (tensor<2x3x1xf32>) -> tensor<f32>
  return %9 : tensor<f32>
}

// -----

// Composites map to their fused backward ops; attention becomes
// attention_lse (GQA: dk and dv have the key/value shape, and k feeds both,
// so they sum); rotary's dx is a rotary with the negated, half-swapped sin.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[O:.+]], %[[LSE:.+]] = llmc.attention_lse %[[QR:.+]], %arg3, %arg3 mask %arg6 {causal}
// CHECK-NOT: llmc.attention %
// CHECK: llmc.cross_entropy_grad sum %{{.+}}, %arg7, %{{.+}} {ignore_index = 0 : i64}
// CHECK: %[[G:.+]]:3 = llmc.attention_grad %[[QR]], %arg3, %arg3, %[[O]], %[[LSE]], %{{.+}} mask %arg6 {causal}
// CHECK-SAME: -> (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
// CHECK: %[[DKV:.+]] = llmc.add %[[G]]#1, %[[G]]#2
// CHECK: %[[S1:.+]] = llmc.slice %arg5 starts [0, 8] limits [8, 16]
// CHECK: %[[S0:.+]] = llmc.slice %arg5 starts [0, 0] limits [8, 8]
// CHECK: %[[SW:.+]] = llmc.concat %[[S1]], %[[S0]] axis 1
// CHECK: %[[NS:.+]] = llmc.neg %[[SW]]
// CHECK: %[[DQR:.+]] = llmc.rotary %[[G]]#0, %arg4, %[[NS]]
// CHECK: llmc.log_softmax_grad %{{.+}}, %{{.+}} {axis = 1 : i64}
// CHECK: llmc.softmax_grad
// CHECK: llmc.gelu_grad erf
// CHECK: llmc.silu_grad
// CHECK: %[[RMS:.+]]:2 = llmc.rms_norm_grad %{{.+}}, %{{.+}} weight %arg1
// CHECK: %[[LN:.+]]:2 = llmc.layer_norm_grad %arg0, %[[RMS]]#0 weight %arg1 :
// CHECK: %[[DW:.+]] = llmc.add %[[RMS]]#1, %[[LN]]#1
// CHECK: return %{{.+}}, %[[LN]]#0, %[[DW]], %[[DQR]], %[[DKV]] :
func.func @forward(%x: tensor<2x8x16xf32> {llmc.param = "x", llmc.init_rule = "zeros"},
                   %w: tensor<16xf32> {llmc.param = "w", llmc.init_rule = "ones"},
                   %q: tensor<1x4x8x16xf32> {llmc.param = "q", llmc.init_rule = "zeros"},
                   %k: tensor<1x2x8x16xf32> {llmc.param = "k", llmc.init_rule = "zeros"},
                   %cos: tensor<8x16xf32> {llmc.input = "cos"}, %sin: tensor<8x16xf32> {llmc.input = "sin"},
                   %mask: tensor<8x8xi1> {llmc.input = "mask"},
                   %t: tensor<2x8xi64> {llmc.input = "t"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %0 = llmc.layer_norm %x weight %w : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %1 = llmc.rms_norm %0 weight %w : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %2 = llmc.silu %1 : tensor<2x8x16xf32>
  %3 = llmc.gelu erf %2 : tensor<2x8x16xf32>
  %4 = llmc.softmax %3 : tensor<2x8x16xf32>
  %5 = llmc.log_softmax %4 {axis = 1 : i64} : tensor<2x8x16xf32>
  %qr = llmc.rotary %q, %cos, %sin : (tensor<1x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = llmc.attention %qr, %k, %k mask %mask {causal} : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8x8xi1>) -> tensor<1x4x8x16xf32>
  %o2 = llmc.reshape %o : tensor<1x4x8x16xf32> -> tensor<2x2x8x16xf32>
  %o3 = llmc.reduce_sum %o2 axes [1] : (tensor<2x2x8x16xf32>) -> tensor<2x8x16xf32>
  %6 = llmc.add %5, %o3 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %7 = llmc.cross_entropy sum %6, %t {ignore_index = 0 : i64} : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<f32>
  return %7 : tensor<f32>
}

// -----

// A trained float mask (a relative-position bias) gets dS, built next to
// attention_grad in lse's type (f32 for bf16 operands): grouped-query heads
// split as [B, Hkv, G, T, D] so k and v broadcast over G, P rebuilt from lse
// (0 on a row whose lse is -inf), summed over the broadcast dims and cast
// back to the mask's type. It is not scaled: the mask is added after scale.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[O:.+]], %[[LSE:.+]] = llmc.attention_lse %arg0, %arg1, %arg1 mask %arg2
// CHECK: %[[G:.+]]:3 = llmc.attention_grad %arg0, %arg1, %arg1, %[[O]], %[[LSE]], %[[DO:[^ ]+]] mask %arg2
// CHECK: %[[K5:.+]] = llmc.reshape %{{.+}} : tensor<1x2x3x8xf32> -> tensor<1x2x1x3x8xf32>
// CHECK: %[[Q5:.+]] = llmc.reshape %{{.+}} : tensor<1x4x3x8xf32> -> tensor<1x2x2x3x8xf32>
// CHECK: %[[QK:.+]] = llmc.matmul %[[Q5]], %[[K5]] {transpose_rhs} : (tensor<1x2x2x3x8xf32>, tensor<1x2x1x3x8xf32>) -> tensor<1x2x2x3x3xf32>
// CHECK: %[[MF:.+]] = llmc.cast %arg2 : tensor<3x3xbf16> -> tensor<3x3xf32>
// CHECK: %[[Z:.+]] = llmc.add %{{.+}}, %[[MF]] : (tensor<1x4x3x3xf32>, tensor<3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK: %[[ROW:.+]] = llmc.reshape %[[LSE]] : tensor<1x4x3xf32> -> tensor<1x4x3x1xf32>
// CHECK: %[[ZL:.+]] = llmc.sub %[[Z]], %[[ROW]]
// CHECK: %[[E:.+]] = llmc.exp %[[ZL]]
// CHECK: %[[P:.+]] = llmc.where %{{.+}}, %{{.+}}, %[[E]]
// CHECK: %[[DOT:.+]] = llmc.reduce_sum %{{.+}} axes [3] keepdims : (tensor<1x4x3x8xf32>) -> tensor<1x4x3x1xf32>
// CHECK: %[[DPD:.+]] = llmc.sub %{{.+}}, %[[DOT]]
// CHECK: %[[DS:.+]] = llmc.mul %[[P]], %[[DPD]] : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK: %[[SUM:.+]] = llmc.reduce_sum %[[DS]] axes [0, 1] : (tensor<1x4x3x3xf32>) -> tensor<3x3xf32>
// CHECK: %[[DM:.+]] = llmc.cast %[[SUM]] : tensor<3x3xf32> -> tensor<3x3xbf16>
// CHECK: return %{{.+}}, %[[G]]#0, %[[DM]] :
func.func @forward(%q: tensor<1x4x3x8xbf16> {llmc.param = "q", llmc.init_rule = "zeros"},
                   %kv: tensor<1x2x3x8xbf16> {llmc.input = "kv"},
                   %bias: tensor<3x3xbf16> {llmc.param = "bias", llmc.init_rule = "zeros"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %o = llmc.attention %q, %kv, %kv mask %bias : (tensor<1x4x3x8xbf16>, tensor<1x2x3x8xbf16>, tensor<1x2x3x8xbf16>, tensor<3x3xbf16>) -> tensor<1x4x3x8xbf16>
  %of = llmc.cast %o : tensor<1x4x3x8xbf16> -> tensor<1x4x3x8xf32>
  %l = llmc.reduce_sum %of axes [0, 1, 2, 3] : (tensor<1x4x3x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
