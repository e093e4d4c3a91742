// RUN: llmc-opt %s --split-input-file --llmc-chunk-classifier=chunks=2 | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-chunk-classifier | FileCheck %s --check-prefix=ONE
// RUN: llmc-opt %s --split-input-file --llmc-chunk-classifier=chunks=2 --llmc-form-kernels --llmc-fuse-elementwise --llmc-fuse-classifier | FileCheck %s --check-prefix=FUSED
// RUN: not llmc-opt %s --split-input-file --llmc-chunk-classifier=chunks=3 2>&1 | FileCheck %s --check-prefix=UNEVEN
// RUN: not llmc-opt %s --split-input-file --llmc-chunk-classifier=chunks=0 2>&1 | FileCheck %s --check-prefix=ZERO

// A bf16 classifier as the training pipeline leaves it (the tied weight
// transposed once, the logits widened into the loss, the gradient narrowed
// into the two products). With 2 chunks: one count of the whole batch's
// tokens, then per chunk a slice of the hidden states and targets, the
// chunk's logits, its summed loss and gradient (scaled by 1/count), its
// rows of dh and its partial dW; then the loss over the whole count, dh
// concatenated and dW summed in f32 and rounded once.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[H:[^:]+]]: tensor<2x4x8xbf16>{{.*}}, %[[W:[^:]+]]: tensor<16x8xbf16>{{.*}}, %[[T:[^:]+]]: tensor<2x4xi64>
// CHECK: %[[WT:.+]] = llmc.transpose %[[W]]
// CHECK: %[[T2:.+]] = llmc.reshape %[[T]] : tensor<2x4xi64> -> tensor<8xi64>
// CHECK: %[[VALID:.+]] = llmc.compare ne, %[[T2]]
// CHECK: %[[ONES:.+]] = llmc.cast %[[VALID]] : tensor<8xi1> -> tensor<8xf32>
// CHECK: %[[N:.+]] = llmc.reduce_sum %[[ONES]] axes [0]
// CHECK: %[[S:.+]] = llmc.div %{{.+}}, %[[N]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: %[[H2:.+]] = llmc.reshape %[[H]] : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
// CHECK: %[[H0:.+]] = llmc.slice %[[H2]] starts [0, 0] limits [4, 8]
// CHECK: %[[M0:.+]] = llmc.matmul %[[H0]], %[[WT]] : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
// CHECK: %[[X0:.+]] = llmc.cast %[[M0]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK: %[[T0:.+]] = llmc.slice %[[T2]] starts [0] limits [4]
// CHECK: %[[L0:.+]] = llmc.cross_entropy sum %[[X0]], %[[T0]] {classes = 13 : i64}
// CHECK: %[[G0:.+]] = llmc.cross_entropy_grad sum %[[X0]], %[[T0]], %[[S]] {classes = 13 : i64}
// CHECK: %[[GB0:.+]] = llmc.cast %[[G0]] : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK: %[[DH0:.+]] = llmc.matmul %[[GB0]], %[[WT]] {transpose_rhs} : (tensor<4x16xbf16>, tensor<8x16xbf16>) -> tensor<4x8xbf16>
// CHECK-NOT: llmc.cast
// CHECK-NOT: llmc.slice
// CHECK: %[[P0:.+]] = llmc.matmul %[[H0]], %[[GB0]] {transpose_lhs} : (tensor<4x8xbf16>, tensor<4x16xbf16>) -> tensor<8x16xbf16>
// CHECK: llmc.slice %[[H2]] starts [4, 0] limits [8, 8]
// CHECK: %[[L1:.+]] = llmc.cross_entropy sum
// CHECK: %[[DH1:.+]] = llmc.matmul {{.*}} {transpose_rhs}
// CHECK: %[[P1:.+]] = llmc.matmul {{.*}} {transpose_lhs}
// CHECK: %[[SUM:.+]] = llmc.add %[[L0]], %[[L1]]
// CHECK: %[[LOSS:.+]] = llmc.div %[[SUM]], %[[N]]
// CHECK: %[[DH:.+]] = llmc.concat %[[DH0]], %[[DH1]] axis 0
// CHECK: %[[DH3:.+]] = llmc.reshape %[[DH]] : tensor<8x8xbf16> -> tensor<2x4x8xbf16>
// CHECK: %[[W0:.+]] = llmc.cast %[[P0]] : tensor<8x16xbf16> -> tensor<8x16xf32>
// CHECK: %[[W1:.+]] = llmc.cast %[[P1]] : tensor<8x16xbf16> -> tensor<8x16xf32>
// CHECK: %[[WS:.+]] = llmc.add %[[W0]], %[[W1]]
// CHECK: %[[DWT:.+]] = llmc.cast %[[WS]] : tensor<8x16xf32> -> tensor<8x16xbf16>
// CHECK: %[[DW:.+]] = llmc.transpose %[[DWT]]
// CHECK-NOT: llmc.cross_entropy mean
// CHECK: return %[[LOSS]], %[[DH3]], %[[DW]]

// Without chunks (the default), nothing changes.
// ONE-LABEL: func.func @train_step
// ONE: llmc.cross_entropy mean
// ONE: llmc.cross_entropy_grad mean
// ONE-NOT: llmc.slice

// Each chunk's loss and gradient fuse into one classifier group that
// writes the gradient over the chunk's logits.
// FUSED-LABEL: func.func @train_step
// FUSED-COUNT-2: llmc.overwrites = array<i64: -1,

// UNEVEN: error: llmc-chunk-classifier: 3 chunks do not divide the 8 tokens of the classifier
// ZERO: error: llmc-chunk-classifier: chunks must be at least 1, got 0
func.func @train_step(%h: tensor<2x4x8xbf16> {llmc.input = "h"},
                      %w: tensor<16x8xbf16> {llmc.param = "w"},
                      %t: tensor<2x4xi64> {llmc.input = "targets"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<2x4x8xbf16>,
        tensor<16x8xbf16> {llmc.grad_of = "w"}) {
  %one = llmc.constant dense<1.0> : tensor<f32>
  %wt = llmc.transpose %w [1, 0] : (tensor<16x8xbf16>) -> tensor<8x16xbf16>
  %m = llmc.matmul %h, %wt : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %r = llmc.reshape %m : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %x = llmc.cast %r : tensor<8x16xbf16> -> tensor<8x16xf32>
  %t2 = llmc.reshape %t : tensor<2x4xi64> -> tensor<8xi64>
  %l = llmc.cross_entropy mean %x, %t2 {classes = 13 : i64} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  %g = llmc.cross_entropy_grad mean %x, %t2, %one {classes = 13 : i64} : (tensor<8x16xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x16xf32>
  %gb = llmc.cast %g : tensor<8x16xf32> -> tensor<8x16xbf16>
  %g3 = llmc.reshape %gb : tensor<8x16xbf16> -> tensor<2x4x16xbf16>
  %dh = llmc.matmul %g3, %wt {transpose_rhs} : (tensor<2x4x16xbf16>, tensor<8x16xbf16>) -> tensor<2x4x8xbf16>
  %h2 = llmc.reshape %h : tensor<2x4x8xbf16> -> tensor<8x8xbf16>
  %dwt = llmc.matmul %h2, %gb {transpose_lhs} : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %dw = llmc.transpose %dwt [1, 0] : (tensor<8x16xbf16>) -> tensor<16x8xbf16>
  return %l, %dh, %dw : tensor<f32>, tensor<2x4x8xbf16>, tensor<16x8xbf16>
}

// -----

// The logits are also returned: chunking would have to write them whole,
// so the function stays as it is.
// CHECK-LABEL: func.func @logits_returned
// CHECK: llmc.cross_entropy mean
// CHECK-NOT: llmc.slice
func.func @logits_returned(%h: tensor<8x8xf32>, %w: tensor<8x16xf32>, %t: tensor<8xi64>)
    -> (tensor<f32>, tensor<8x16xf32>, tensor<8x8xf32>) {
  %one = llmc.constant dense<1.0> : tensor<f32>
  %x = llmc.matmul %h, %w : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %l = llmc.cross_entropy mean %x, %t : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  %g = llmc.cross_entropy_grad mean %x, %t, %one : (tensor<8x16xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x16xf32>
  %dh = llmc.matmul %g, %w {transpose_rhs} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32>
  return %l, %x, %dh : tensor<f32>, tensor<8x16xf32>, tensor<8x8xf32>
}

// -----

// f32 and `sum`: no count, the cotangent as it is, dW summed in place of
// the products' type without casts.
// CHECK-LABEL: func.func @f32_sum
// CHECK-NOT: llmc.compare
// CHECK: %[[GA:.+]] = llmc.cross_entropy_grad sum %{{.+}}, %{{.+}}, %[[COT:[^ ]+]] :
// CHECK: llmc.cross_entropy_grad sum %{{.+}}, %{{.+}}, %[[COT]] :
// CHECK: %[[LS:.+]] = llmc.add
// CHECK-NOT: llmc.div
// CHECK: %[[DW:.+]] = llmc.add %{{.+}}, %{{.+}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK: return %[[LS]], %[[DW]]
func.func @f32_sum(%h: tensor<8x8xf32>, %w: tensor<8x16xf32>, %t: tensor<8xi64>, %cot: tensor<f32>)
    -> (tensor<f32>, tensor<8x16xf32>) {
  %x = llmc.matmul %h, %w : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %l = llmc.cross_entropy sum %x, %t : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
  %g = llmc.cross_entropy_grad sum %x, %t, %cot : (tensor<8x16xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x16xf32>
  %dw = llmc.matmul %h, %g {transpose_lhs} : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %l, %dw : tensor<f32>, tensor<8x16xf32>
}

// -----

// The recipes' form: [B, T, V] logits of a transpose_rhs product, the
// weight gradient g^T h with the gradient as lhs. Targets are flattened
// once; each chunk is a slice of rows of the flattened operands.
// CHECK-LABEL: func.func @rank3
// CHECK-SAME: (%[[H:[^:]+]]: tensor<2x4x8xf32>, %[[W:[^:]+]]: tensor<16x8xf32>, %[[T:[^:]+]]: tensor<2x4xi64>)
// CHECK: %[[T2:.+]] = llmc.reshape %[[T]] : tensor<2x4xi64> -> tensor<8xi64>
// CHECK: %[[H2:.+]] = llmc.reshape %[[H]] : tensor<2x4x8xf32> -> tensor<8x8xf32>
// CHECK: %[[H0:.+]] = llmc.slice %[[H2]] starts [0, 0] limits [4, 8]
// CHECK: %[[X0:.+]] = llmc.matmul %[[H0]], %[[W]] {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK: llmc.slice %[[T2]] starts [0] limits [4]
// CHECK: %[[G0:.+]] = llmc.cross_entropy_grad sum %[[X0]]
// CHECK: llmc.matmul %[[G0]], %[[W]] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[P0:.+]] = llmc.matmul %[[G0]], %[[H0]] {transpose_lhs} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
// CHECK: %[[P1:.+]] = llmc.matmul %{{.+}}, %{{.+}} {transpose_lhs} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
// CHECK: llmc.concat {{.*}} axis 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK: llmc.reshape {{.*}} : tensor<8x8xf32> -> tensor<2x4x8xf32>
// CHECK: llmc.add %[[P0]], %[[P1]] : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
func.func @rank3(%h: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %t: tensor<2x4xi64>)
    -> (tensor<f32>, tensor<2x4x8xf32>, tensor<16x8xf32>) {
  %one = llmc.constant dense<1.0> : tensor<f32>
  %x = llmc.matmul %h, %w {transpose_rhs} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %l = llmc.cross_entropy mean %x, %t : (tensor<2x4x16xf32>, tensor<2x4xi64>) -> tensor<f32>
  %g = llmc.cross_entropy_grad mean %x, %t, %one : (tensor<2x4x16xf32>, tensor<2x4xi64>, tensor<f32>) -> tensor<2x4x16xf32>
  %dh = llmc.matmul %g, %w : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %h2 = llmc.reshape %h : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %g2 = llmc.reshape %g : tensor<2x4x16xf32> -> tensor<8x16xf32>
  %dw = llmc.matmul %g2, %h2 {transpose_lhs} : (tensor<8x16xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  return %l, %dh, %dw : tensor<f32>, tensor<2x4x8xf32>, tensor<16x8xf32>
}
