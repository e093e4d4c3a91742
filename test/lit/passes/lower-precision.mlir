// RUN: llmc-opt %s --split-input-file --llmc-lower-precision=precision=bf16 | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-lower-precision=precision=fp32 | FileCheck %s --check-prefix=FP32
// RUN: llmc-opt %s --split-input-file --llmc-lower-precision | FileCheck %s --check-prefix=FP32

// A linear layer, its bias, and a norm: the weight is cast once, right
// after the parameter, above its transpose; the activation right after its
// norm; the bias joins the matmul (autocast's addmm); the f32 norm after it
// gets a cast back. fp32 leaves everything as it was.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    (%[[X:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<16x8xf32> {llmc.param = "w"}, %[[B:.+]]: tensor<16xf32> {llmc.param = "b"}
// CHECK-NEXT:    %[[WB:.+]] = llmc.cast %[[W]] : tensor<16x8xf32> -> tensor<16x8xbf16>
// CHECK-NEXT:    %[[BB:.+]] = llmc.cast %[[B]] : tensor<16xf32> -> tensor<16xbf16>
// CHECK-NEXT:    %[[N:.+]] = llmc.layer_norm %[[X]] {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT:    %[[NB:.+]] = llmc.cast %[[N]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT:    %[[WT:.+]] = llmc.transpose %[[WB]] [1, 0] : (tensor<16x8xbf16>) -> tensor<8x16xbf16>
// CHECK-NEXT:    %[[Y:.+]] = llmc.matmul %[[NB]], %[[WT]] : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
// CHECK-NEXT:    %[[Z:.+]] = llmc.add %[[Y]], %[[BB]] : (tensor<4x16xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
// CHECK-NEXT:    %[[ZF:.+]] = llmc.cast %[[Z]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK-NEXT:    %[[S:.+]] = llmc.softmax %[[ZF]]{{.*}}: tensor<4x16xf32>
// CHECK-NEXT:    return %[[S]]
// CHECK-NOT:     f32> -> tensor<8x16xf32>
// FP32-LABEL: func.func @forward
// FP32-NOT:     bf16
func.func @forward(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {llmc.param = "w"},
                   %b: tensor<16xf32> {llmc.param = "b"}) -> tensor<4x16xf32> {
  %n = llmc.layer_norm %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %wt = llmc.transpose %w [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y = llmc.matmul %n, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %z = llmc.add %y, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %s = llmc.softmax %z {axis = -1 : i64} : tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

// One cast per weight however many matmuls use it (a tied weight); the
// gather of the embedding stays f32 (it follows its f32 table); the loss is
// f32 on the logits cast back; the residual add of a bf16 branch to the f32
// stream promotes to f32 (torch's type promotion).
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    %[[E:[^:]+]]: tensor<32x8xf32> {llmc.param = "wte"}
// CHECK:         llmc.cast %[[E]] : tensor<32x8xf32> -> tensor<32x8xbf16>
// CHECK-NOT:     llmc.cast %[[E]]
// CHECK:         llmc.gather %[[E]], {{.*}} -> tensor<2x4x8xf32>
// CHECK:         %[[M1:.+]] = llmc.matmul {{.*}} -> tensor<2x4x8xbf16>
// CHECK:         %[[M1F:.+]] = llmc.cast %[[M1]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK:         llmc.add {{.*}}, %[[M1F]] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK:         %[[L:.+]] = llmc.matmul {{.*}} {transpose_rhs} : (tensor<2x4x8xbf16>, tensor<32x8xbf16>) -> tensor<2x4x32xbf16>
// CHECK:         %[[LF:.+]] = llmc.cast %[[L]] : tensor<2x4x32xbf16> -> tensor<2x4x32xf32>
// CHECK:         llmc.cross_entropy mean %[[LF]], {{.*}} -> tensor<f32>
func.func @forward(%wte: tensor<32x8xf32> {llmc.param = "wte"},
                   %p: tensor<8x8xf32> {llmc.param = "p"},
                   %idx: tensor<2x4xi64> {llmc.input = "idx"},
                   %tgt: tensor<2x4xi64> {llmc.input = "tgt"}) -> tensor<f32> {
  %x = llmc.gather %wte, %idx axis 0 : (tensor<32x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %h = llmc.matmul %x, %p : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %r = llmc.add %x, %h : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %e2 = llmc.matmul %r, %wte {transpose_rhs} : (tensor<2x4x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32xf32>
  %l = llmc.cross_entropy mean %e2, %tgt : (tensor<2x4x32xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Attention takes q, k, v and its float mask in bf16 (autocast casts every
// float argument of a lower-precision op); gelu follows its
// bf16 operand (it is on no autocast list); a rank-0 constant does not
// promote a dimensioned bf16 operand (the scale is cast to bf16); the
// result keeps @forward's declared type.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    %[[MASK:[^:]+]]: tensor<4x4xf32>
// CHECK:         %[[MB:.+]] = llmc.cast %[[MASK]] : tensor<4x4xf32> -> tensor<4x4xbf16>
// CHECK:         llmc.attention {{.*}} mask %[[MB]] : (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<4x4xbf16>) -> tensor<1x2x4x8xbf16>
// CHECK:         llmc.gelu tanh {{.*}} : tensor<1x2x4x8xbf16>
// CHECK:         %[[C:.+]] = llmc.cast {{.*}} : tensor<f32> -> tensor<bf16>
// CHECK:         %[[S:.+]] = llmc.mul {{.*}}, %[[C]] : (tensor<1x2x4x8xbf16>, tensor<bf16>) -> tensor<1x2x4x8xbf16>
// CHECK:         %[[SF:.+]] = llmc.cast %[[S]] : tensor<1x2x4x8xbf16> -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    return %[[SF]] : tensor<1x2x4x8xf32>
func.func @forward(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>,
                   %v: tensor<1x2x4x8xf32>, %mask: tensor<4x4xf32>) -> tensor<1x2x4x8xf32> {
  %o = llmc.attention %q, %k, %v mask %mask : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  %g = llmc.gelu tanh %o : tensor<1x2x4x8xf32>
  %c = llmc.constant dense<0.5> : tensor<f32>
  %s = llmc.mul %g, %c : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  return %s : tensor<1x2x4x8xf32>
}

// -----

// Sums, exp/log/pow and rms_norm are on autocast's f32 list: a bf16 operand
// is cast back to f32 first; reduce_max follows its operand.
// CHECK-LABEL: func.func @forward
// CHECK:         %[[M:.+]] = llmc.matmul {{.*}} -> tensor<4x4xbf16>
// CHECK-NEXT:    %[[MF:.+]] = llmc.cast %[[M]] : tensor<4x4xbf16> -> tensor<4x4xf32>
// CHECK-NEXT:    llmc.reduce_max %[[M]] {{.*}} -> tensor<4xbf16>
// CHECK:         llmc.reduce_sum %[[MF]] {{.*}} -> tensor<4xf32>
// CHECK:         llmc.exp %[[MF]] : tensor<4x4xf32>
// CHECK:         llmc.rms_norm %[[MF]] {{.*}} -> tensor<4x4xf32>
func.func @forward(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %m = llmc.matmul %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %mx = llmc.reduce_max %m axes [1] : (tensor<4x4xf32>) -> tensor<4xf32>
  %s = llmc.reduce_sum %m axes [1] : (tensor<4x4xf32>) -> tensor<4xf32>
  %e = llmc.exp %m : tensor<4x4xf32>
  %r = llmc.rms_norm %m {axis = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %mx, %s, %e, %r : tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// RoPE's table: inv_freq (a frozen buffer) x positions (a constant) is a
// matmul on tables only, which transformers computes with autocast
// disabled: it stays f32, and so do cos/sin and the rotary that mixes them
// with the bf16 query (promotion, as in torch); attention then takes bf16.
// A matmul reading a trainable parameter is still lowered.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    %[[INV:[^ ]+]]: tensor<4x1xf32> {llmc.frozen, llmc.param = "inv_freq"}
// CHECK-NOT:     llmc.cast %[[INV]]
// CHECK:         llmc.matmul %[[INV]], %{{.+}} : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
// CHECK:         llmc.cos %{{.+}} : tensor<6x8xf32>
// CHECK:         llmc.matmul %{{.+}}, %{{.+}} : (tensor<1x6x8xbf16>, tensor<8x8xbf16>) -> tensor<1x6x8xbf16>
// CHECK:         llmc.rotary %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x1x6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<1x1x6x8xf32>
func.func @forward(%x: tensor<1x6x8xf32>, %wq: tensor<8x8xf32> {llmc.param = "wq"},
                      %inv: tensor<4x1xf32> {llmc.param = "inv_freq", llmc.frozen}) -> tensor<1x1x6x8xf32> {
  %pos = llmc.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x6xf32>
  %f = llmc.matmul %inv, %pos : (tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %ft = llmc.transpose %f [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %emb = llmc.concat %ft, %ft axis 1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  %cos = llmc.cos %emb : tensor<6x8xf32>
  %sin = llmc.sin %emb : tensor<6x8xf32>
  %q = llmc.matmul %x, %wq : (tensor<1x6x8xf32>, tensor<8x8xf32>) -> tensor<1x6x8xf32>
  %q4 = llmc.reshape %q : tensor<1x6x8xf32> -> tensor<1x1x6x8xf32>
  %r = llmc.rotary %q4, %cos, %sin : (tensor<1x1x6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<1x1x6x8xf32>
  return %r : tensor<1x1x6x8xf32>
}
