// RUN: llmc-opt %s --llmc-raise --split-input-file | FileCheck %s
// RUN: llmc-opt %s --llmc-raise=max-iterations=1 --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=ROUNDS

// One round rewrites, and a second one would be needed to see that nothing
// changes any more:
// ROUNDS: warning: llmc-raise stopped after 1 rounds without reaching a fixpoint

// Raisings that build on each other: the log_softmax is raised first, then
// the loss over it; the unweighted rms_norm gets its weight; each layer's
// copy of the causal mask becomes `causal`.
// CHECK-LABEL: func.func @composed
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x4x8xf32>, %[[W:.+]]: tensor<8xf32>, %[[L:.+]]: tensor<8x16xf32>, %[[T:.+]]: tensor<8xi64>)
// CHECK: %[[N:.+]] = llmc.rms_norm %[[X]] weight %[[W]] {epsilon = 1.000000e-05 : f64}
// CHECK: %[[A1:.+]] = llmc.attention %[[N]], %[[N]], %[[N]] {causal, llmc.eager}
// CHECK: %[[A2:.+]] = llmc.attention %[[A1]], %[[A1]], %[[A1]] {causal, llmc.eager}
// CHECK: %[[CE:.+]] = llmc.cross_entropy mean %[[L]], %[[T]] :
// CHECK: return %[[A2]], %[[CE]]
func.func @composed(%x: tensor<1x2x4x8xf32>, %w: tensor<8xf32>, %logits: tensor<8x16xf32>, %t: tensor<8xi64>) -> (tensor<1x2x4x8xf32>, tensor<f32>) {
  %two = llmc.constant dense<2.0> : tensor<f32>
  %eps = llmc.constant dense<1.0E-5> : tensor<f32>
  %sq = llmc.pow %x, %two : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %ms = llmc.reduce_mean %sq axes [3] keepdims : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x1xf32>
  %s = llmc.add %ms, %eps : (tensor<1x2x4x1xf32>, tensor<f32>) -> tensor<1x2x4x1xf32>
  %inv = llmc.rsqrt %s : tensor<1x2x4x1xf32>
  %n0 = llmc.mul %x, %inv : (tensor<1x2x4x8xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x8xf32>
  %n = llmc.mul %n0, %w : (tensor<1x2x4x8xf32>, tensor<8xf32>) -> tensor<1x2x4x8xf32>

  %mask1 = llmc.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %kt1 = llmc.transpose %n [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %c1 = llmc.constant dense<0.353553385> : tensor<f32>
  %sc1 = llmc.matmul %n, %kt1 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %ss1 = llmc.mul %sc1, %c1 : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m1 = llmc.add %ss1, %mask1 : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p1 = llmc.softmax %m1 : tensor<1x2x4x4xf32>
  %a1 = llmc.matmul %p1, %n : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>

  %mask2 = llmc.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %kt2 = llmc.transpose %a1 [0, 1, 3, 2] : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %c2 = llmc.constant dense<0.353553385> : tensor<f32>
  %sc2 = llmc.matmul %a1, %kt2 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %ss2 = llmc.mul %sc2, %c2 : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m2 = llmc.add %ss2, %mask2 : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p2 = llmc.softmax %m2 : tensor<1x2x4x4xf32>
  %a2 = llmc.matmul %p2, %a1 : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>

  %mx = llmc.reduce_max %logits axes [1] keepdims : (tensor<8x16xf32>) -> tensor<8x1xf32>
  %z = llmc.sub %logits, %mx : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %e = llmc.exp %z : tensor<8x16xf32>
  %se = llmc.reduce_sum %e axes [1] keepdims : (tensor<8x16xf32>) -> tensor<8x1xf32>
  %lse = llmc.log %se : tensor<8x1xf32>
  %lp = llmc.sub %z, %lse : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %ti = llmc.reshape %t : tensor<8xi64> -> tensor<8x1xi64>
  %g = llmc.gather_elements %lp, %ti axis 1 : (tensor<8x16xf32>, tensor<8x1xi64>) -> tensor<8x1xf32>
  %g1 = llmc.reshape %g : tensor<8x1xf32> -> tensor<8xf32>
  %nl = llmc.neg %g1 : tensor<8xf32>
  %loss = llmc.reduce_mean %nl axes [0] : (tensor<8xf32>) -> tensor<f32>
  return %a2, %loss : tensor<1x2x4x8xf32>, tensor<f32>
}

// -----

// Shape arithmetic left around the patterns folds away: a reshape of a
// reshape, a same-type cast and an identity transpose.
// CHECK-LABEL: func.func @folds
// CHECK-NEXT: llmc.silu
// CHECK-NEXT: return
func.func @folds(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = llmc.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %r2 = llmc.reshape %r : tensor<32xf32> -> tensor<4x8xf32>
  %c = llmc.cast %r2 : tensor<4x8xf32> -> tensor<4x8xf32>
  %t = llmc.transpose %c [0, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = llmc.sigmoid %t : tensor<4x8xf32>
  %y = llmc.mul %t, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
