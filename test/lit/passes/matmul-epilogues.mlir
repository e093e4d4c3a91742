// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues --split-input-file | FileCheck %s
// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues="gelu=false gelu-grad=false bias-grad=false" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues="bias-grad-rhs=false" --split-input-file | FileCheck %s --check-prefix=NORHS
// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues="gelu-grad-bias=true" --split-input-file | FileCheck %s --check-prefix=BGRAD

// matmul + bias + gelu tanh, the pre-activation also read by a gelu_grad:
// one group (GELU_AUX_BIAS) yielding the gelu and the pre-activation (the
// aux output), which the gelu_grad reads.
// CHECK-LABEL: func.func @gelu_aux_bias
// CHECK:       %[[K:.+]]:2 = llmc.kernel -> (tensor<2x16x96xbf16>, tensor<2x16x96xbf16>) attributes {llmc.epilogue = "gelu"} {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg0, %arg1 {transpose_rhs}
// CHECK-NEXT:    %[[A:.+]] = llmc.add %[[M]], %arg2
// CHECK-NEXT:    %[[G:.+]] = llmc.gelu tanh %[[A]]
// CHECK-NEXT:    llmc.yield %[[G]], %[[A]]
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.gelu_grad tanh %[[K]]#1, %arg3
// CHECK-NOT:   llmc.kernel
// CHECK:       return %[[K]]#0
// OFF-LABEL:   func.func @gelu_aux_bias
// OFF-NOT:     llmc.epilogue
func.func @gelu_aux_bias(%x: tensor<2x16x64xbf16>, %w: tensor<96x64xbf16>, %b: tensor<96xbf16>, %dy: tensor<2x16x96xbf16>) -> (tensor<2x16x96xbf16>, tensor<2x16x96xbf16>) {
  %0 = llmc.matmul %x, %w {transpose_rhs} : (tensor<2x16x64xbf16>, tensor<96x64xbf16>) -> tensor<2x16x96xbf16>
  %1 = llmc.add %0, %b : (tensor<2x16x96xbf16>, tensor<96xbf16>) -> tensor<2x16x96xbf16>
  %2 = llmc.gelu tanh %1 : tensor<2x16x96xbf16>
  %3 = llmc.gelu_grad tanh %1, %dy : tensor<2x16x96xbf16>
  return %2, %3 : tensor<2x16x96xbf16>, tensor<2x16x96xbf16>
}

// -----

// No bias, nothing else reads the pre-activation: GELU, one result.
// CHECK-LABEL: func.func @gelu_alone
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<32x64xf16>) attributes {llmc.epilogue = "gelu"} {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg0, %arg1
// CHECK-NEXT:    %[[G:.+]] = llmc.gelu tanh %[[M]]
// CHECK-NEXT:    llmc.yield %[[G]] : tensor<32x64xf16>
// CHECK-NEXT:  }
// CHECK-NEXT:  return %[[K]]
func.func @gelu_alone(%x: tensor<32x16xf16>, %w: tensor<16x64xf16>) -> tensor<32x64xf16> {
  %0 = llmc.matmul %x, %w : (tensor<32x16xf16>, tensor<16x64xf16>) -> tensor<32x64xf16>
  %1 = llmc.gelu tanh %0 : tensor<32x64xf16>
  return %1 : tensor<32x64xf16>
}

// -----

// HF GPT-2's Conv1D: the gelu reads the [rows, n] product through a view
// to [B, T, n], as does the gelu_grad. The gelu joins the group in the
// product's shape; a reshape after it gives the next matmul's view its
// input back, and the gelu_grad reads the view of the aux output.
// CHECK-LABEL: func.func @gelu_through_view
// CHECK:       %[[K:.+]]:2 = llmc.kernel -> (tensor<32x96xbf16>, tensor<32x96xbf16>) attributes {llmc.epilogue = "gelu"} {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg0, %arg1
// CHECK-NEXT:    %[[A:.+]] = llmc.add %[[M]], %arg2
// CHECK-NEXT:    %[[G:.+]] = llmc.gelu tanh %[[A]] : tensor<32x96xbf16>
// CHECK-NEXT:    llmc.yield %[[G]], %[[A]] : tensor<32x96xbf16>, tensor<32x96xbf16>
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[B:.+]] = llmc.reshape %[[K]]#0 : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
// CHECK-NEXT:  %[[V:.+]] = llmc.reshape %[[K]]#1 : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
// CHECK:       llmc.reshape %[[B]] : tensor<2x16x96xbf16> -> tensor<32x96xbf16>
// CHECK:       llmc.gelu_grad tanh %[[V]], %arg3
// OFF-LABEL:   func.func @gelu_through_view
// OFF-NOT:     llmc.epilogue
// OFF:         llmc.gelu tanh %{{.+}} : tensor<2x16x96xbf16>
func.func @gelu_through_view(%x: tensor<32x64xbf16>, %w: tensor<64x96xbf16>, %b: tensor<96xbf16>, %dy: tensor<2x16x96xbf16>) -> (tensor<32x96xbf16>, tensor<2x16x96xbf16>) {
  %0 = llmc.matmul %x, %w : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %1 = llmc.add %0, %b : (tensor<32x96xbf16>, tensor<96xbf16>) -> tensor<32x96xbf16>
  %2 = llmc.reshape %1 : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
  %3 = llmc.gelu tanh %2 : tensor<2x16x96xbf16>
  %4 = llmc.reshape %3 : tensor<2x16x96xbf16> -> tensor<32x96xbf16>
  %5 = llmc.gelu_grad tanh %2, %dy : tensor<2x16x96xbf16>
  return %4, %5 : tensor<32x96xbf16>, tensor<2x16x96xbf16>
}

// -----

// The same view, read by nothing but the gelu (inference): the view goes,
// and the group writes only the gelu.
// CHECK-LABEL: func.func @gelu_through_view_alone
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<32x96xbf16>) attributes {llmc.epilogue = "gelu"} {
// CHECK:         llmc.yield %{{.+}} : tensor<32x96xbf16>
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[B:.+]] = llmc.reshape %[[K]] : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
// CHECK-NEXT:  return %[[B]]
func.func @gelu_through_view_alone(%x: tensor<32x64xbf16>, %w: tensor<64x96xbf16>) -> tensor<2x16x96xbf16> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %1 = llmc.reshape %0 : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
  %2 = llmc.gelu tanh %1 : tensor<2x16x96xbf16>
  return %2 : tensor<2x16x96xbf16>
}

// -----

// Negative: a view of something that is not a matmul group (an argument).
// CHECK-LABEL: func.func @gelu_view_of_argument
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.gelu tanh
func.func @gelu_view_of_argument(%x: tensor<32x96xbf16>) -> tensor<2x16x96xbf16> {
  %0 = llmc.reshape %x : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
  %1 = llmc.gelu tanh %0 : tensor<2x16x96xbf16>
  return %1 : tensor<2x16x96xbf16>
}

// -----

// Negative: an erf gelu (cuBLASLt's GELU is the tanh form) stays a kernel
// of its own; the bias add still rides in the matmul (BIAS).
// CHECK-LABEL: func.func @gelu_erf
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.kernel
// CHECK-NEXT:    llmc.matmul
// CHECK-NEXT:    llmc.add
// CHECK-NEXT:    llmc.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  llmc.kernel
// CHECK-NEXT:    llmc.gelu erf
func.func @gelu_erf(%x: tensor<32x64xbf16>, %w: tensor<64x96xbf16>, %b: tensor<96xbf16>) -> tensor<32x96xbf16> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %1 = llmc.add %0, %b : (tensor<32x96xbf16>, tensor<96xbf16>) -> tensor<32x96xbf16>
  %2 = llmc.gelu erf %1 : tensor<32x96xbf16>
  return %2 : tensor<32x96xbf16>
}

// -----

// Negative: f32 (the epilogues are formed for bf16/f16 products only).
// CHECK-LABEL: func.func @gelu_f32
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.gelu tanh
func.func @gelu_f32(%x: tensor<32x64xf32>, %w: tensor<64x96xf32>) -> tensor<32x96xf32> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.gelu tanh %0 : tensor<32x96xf32>
  return %1 : tensor<32x96xf32>
}

// -----

// Negative: n = 100 is no multiple of 8 (cuBLASLt's aux ld).
// CHECK-LABEL: func.func @gelu_ld
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.gelu tanh
func.func @gelu_ld(%x: tensor<32x64xbf16>, %w: tensor<64x100xbf16>) -> tensor<32x100xbf16> {
  %0 = llmc.matmul %x, %w : (tensor<32x64xbf16>, tensor<64x100xbf16>) -> tensor<32x100xbf16>
  %1 = llmc.gelu tanh %0 : tensor<32x100xbf16>
  return %1 : tensor<32x100xbf16>
}

// -----

// Negative: the raw product (before the bias) is read by another group, so
// the add stays out and the gelu reads an add, not a matmul group.
// CHECK-LABEL: func.func @gelu_product_read
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.gelu tanh
func.func @gelu_product_read(%x: tensor<32x64xbf16>, %w: tensor<64x96xbf16>, %b: tensor<96xbf16>) -> (tensor<32x96xbf16>, tensor<32x96xbf16>) {
  %0 = llmc.matmul %x, %w : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %1 = llmc.add %0, %b : (tensor<32x96xbf16>, tensor<96xbf16>) -> tensor<32x96xbf16>
  %2 = llmc.gelu tanh %1 : tensor<32x96xbf16>
  return %0, %2 : tensor<32x96xbf16>, tensor<32x96xbf16>
}

// -----

// Negative: a batched matmul (two GEMMs) has no single epilogue.
// CHECK-LABEL: func.func @gelu_batched
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.gelu tanh
func.func @gelu_batched(%x: tensor<2x32x64xbf16>, %w: tensor<2x64x96xbf16>) -> tensor<2x32x96xbf16> {
  %0 = llmc.matmul %x, %w : (tensor<2x32x64xbf16>, tensor<2x64x96xbf16>) -> tensor<2x32x96xbf16>
  %1 = llmc.gelu tanh %0 : tensor<2x32x96xbf16>
  return %1 : tensor<2x32x96xbf16>
}

// -----

// The GPT-2 MLP backward: dh = matmul(dy, W2); gelu_grad tanh %pre, dh;
// its row sum is the fc bias gradient. By default (gelu-grad-bias=false)
// the gelu_grad joins the matmul alone (DGELU) and the sum goes to the
// weight gradient that reads the gelu_grad (BGRADB); with gelu-grad-bias
// it is one group (DGELU_BGRAD) yielding the gelu_grad and the sum.
// CHECK-LABEL: func.func @dgelu_bgrad
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<2x16x96xbf16>) attributes {llmc.epilogue = "gelu_grad"} {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg1, %arg2
// CHECK-NEXT:    %[[G:.+]] = llmc.gelu_grad tanh %arg0, %[[M]]
// CHECK-NEXT:    llmc.yield %[[G]]
// CHECK-NEXT:  }
// CHECK:       %[[V:.+]] = llmc.reshape %[[K]]
// CHECK-NEXT:  %[[W:.+]]:2 = llmc.kernel {{.*}}attributes {llmc.epilogue = "bias_grad_lhs"} {
// CHECK-NEXT:    llmc.matmul %[[V]], %arg3 {transpose_lhs}
// CHECK-NEXT:    llmc.reduce_sum %[[K]] axes [0, 1]
// CHECK:       return %[[W]]#1, %[[W]]#0
// BGRAD-LABEL: func.func @dgelu_bgrad
// BGRAD:       %[[K:.+]]:2 = llmc.kernel -> (tensor<2x16x96xbf16>, tensor<96xbf16>) attributes {llmc.epilogue = "gelu_grad"} {
// BGRAD-NEXT:    %[[M:.+]] = llmc.matmul %arg1, %arg2
// BGRAD-NEXT:    %[[G:.+]] = llmc.gelu_grad tanh %arg0, %[[M]]
// BGRAD-NEXT:    %[[S:.+]] = llmc.reduce_sum %[[G]] axes [0, 1]
// BGRAD-NEXT:    llmc.yield %[[G]], %[[S]]
// BGRAD-NEXT:  }
// BGRAD:       llmc.reshape %[[K]]#0
// BGRAD:       return %[[K]]#1
// OFF-LABEL:   func.func @dgelu_bgrad
// OFF-NOT:     llmc.epilogue
func.func @dgelu_bgrad(%pre: tensor<2x16x96xbf16>, %dy: tensor<2x16x64xbf16>, %w2: tensor<64x96xbf16>, %x: tensor<32x64xbf16>) -> (tensor<96xbf16>, tensor<96x64xbf16>) {
  %0 = llmc.matmul %dy, %w2 : (tensor<2x16x64xbf16>, tensor<64x96xbf16>) -> tensor<2x16x96xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<2x16x96xbf16>
  %2 = llmc.reduce_sum %1 axes [0, 1] : (tensor<2x16x96xbf16>) -> tensor<96xbf16>
  %3 = llmc.reshape %1 : tensor<2x16x96xbf16> -> tensor<32x96xbf16>
  %4 = llmc.matmul %3, %x {transpose_lhs} : (tensor<32x96xbf16>, tensor<32x64xbf16>) -> tensor<96x64xbf16>
  return %2, %4 : tensor<96xbf16>, tensor<96x64xbf16>
}

// -----

// gelu_grad without a bias gradient: DGELU, one result; none with the
// option off.
// CHECK-LABEL: func.func @dgelu
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<32x96xbf16>) attributes {llmc.epilogue = "gelu_grad"} {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul
// CHECK-NEXT:    %[[G:.+]] = llmc.gelu_grad tanh %arg0, %[[M]]
// CHECK-NEXT:    llmc.yield %[[G]]
// OFF-LABEL:   func.func @dgelu
// OFF-NOT:     llmc.epilogue
// OFF:         llmc.gelu_grad
func.func @dgelu(%pre: tensor<32x96xbf16>, %dy: tensor<32x64xbf16>, %w2: tensor<64x96xbf16>) -> tensor<32x96xbf16> {
  %0 = llmc.matmul %dy, %w2 : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<32x96xbf16>
  return %1 : tensor<32x96xbf16>
}

// -----

// HF GPT-2's export as the pipeline sees it: c_proj's weight is [in, out]
// (dh = dy W^T, dy [B, T, d] folding into the rows), and the fc weight
// gradient dW = x^T dpre reads the gelu_grad as its rhs: DGELU on the dgrad,
// the fc bias gradient in the weight gradient (BGRADA), not in the DGELU.
// CHECK-LABEL: func.func @dgelu_hf
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<2x16x96xbf16>) attributes {llmc.epilogue = "gelu_grad"} {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg1, %arg2 {transpose_rhs}
// CHECK-NEXT:    %[[G:.+]] = llmc.gelu_grad tanh %arg0, %[[M]]
// CHECK-NEXT:    llmc.yield %[[G]]
// CHECK:       llmc.epilogue = "bias_grad_rhs"
// CHECK-NEXT:    llmc.matmul %{{.+}}, %{{.+}} {transpose_lhs}
// CHECK-NEXT:    llmc.reduce_sum %[[K]] axes [0, 1]
// BGRAD-LABEL: func.func @dgelu_hf
// BGRAD:       llmc.kernel -> (tensor<2x16x96xbf16>, tensor<96xbf16>) attributes {llmc.epilogue = "gelu_grad"}
// BGRAD-NOT:   bias_grad_rhs
// BGRAD:       return
func.func @dgelu_hf(%pre: tensor<2x16x96xbf16>, %dy: tensor<2x16x64xbf16>, %w2: tensor<96x64xbf16>, %x: tensor<32x64xbf16>) -> (tensor<96xbf16>, tensor<64x96xbf16>) {
  %0 = llmc.matmul %dy, %w2 {transpose_rhs} : (tensor<2x16x64xbf16>, tensor<96x64xbf16>) -> tensor<2x16x96xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<2x16x96xbf16>
  %2 = llmc.reshape %1 : tensor<2x16x96xbf16> -> tensor<32x96xbf16>
  %3 = llmc.matmul %x, %2 {transpose_lhs} : (tensor<32x64xbf16>, tensor<32x96xbf16>) -> tensor<64x96xbf16>
  %4 = llmc.reduce_sum %1 axes [0, 1] : (tensor<2x16x96xbf16>) -> tensor<96xbf16>
  return %4, %3 : tensor<96xbf16>, tensor<64x96xbf16>
}

// -----

// HF's dynamo export: gelu_grad(view(aux), view(dy W^T)). The gelu_grad
// joins the product's group in the product's shape reading the aux itself
// (its view goes away); a reshape after the group restores the view its
// readers see, and the fc bias gradient still goes to the weight gradient.
// CHECK-LABEL: func.func @dgelu_through_view
// CHECK-NOT:   llmc.reshape %arg0
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<32x96xbf16>) attributes {llmc.epilogue = "gelu_grad"} {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg1, %arg2 {transpose_rhs}
// CHECK-NEXT:    %[[G:.+]] = llmc.gelu_grad tanh %arg0, %[[M]] : tensor<32x96xbf16>
// CHECK-NEXT:    llmc.yield %[[G]]
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[B:.+]] = llmc.reshape %[[K]] : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
// CHECK:       llmc.epilogue = "bias_grad_rhs"
// CHECK:         llmc.reduce_sum %[[B]] axes [0, 1]
// OFF-LABEL:   func.func @dgelu_through_view
// OFF-NOT:     llmc.epilogue = "gelu_grad"
// OFF:         return
func.func @dgelu_through_view(%aux: tensor<32x96xbf16>, %dy: tensor<32x64xbf16>, %w: tensor<96x64xbf16>, %x: tensor<32x64xbf16>) -> (tensor<96xbf16>, tensor<64x96xbf16>) {
  %pre = llmc.reshape %aux : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
  %0 = llmc.matmul %dy, %w {transpose_rhs} : (tensor<32x64xbf16>, tensor<96x64xbf16>) -> tensor<32x96xbf16>
  %1 = llmc.reshape %0 : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
  %2 = llmc.gelu_grad tanh %pre, %1 : tensor<2x16x96xbf16>
  %3 = llmc.reshape %2 : tensor<2x16x96xbf16> -> tensor<32x96xbf16>
  %4 = llmc.matmul %x, %3 {transpose_lhs} : (tensor<32x64xbf16>, tensor<32x96xbf16>) -> tensor<64x96xbf16>
  %5 = llmc.reduce_sum %2 axes [0, 1] : (tensor<2x16x96xbf16>) -> tensor<96xbf16>
  return %5, %4 : tensor<96xbf16>, tensor<64x96xbf16>
}

// -----

// The product viewed, the aux an argument of the view's shape: the group
// reads the aux through a reshape to the product's shape, made before it.
// CHECK-LABEL: func.func @dgelu_view_of_argument
// CHECK:       %[[P:.+]] = llmc.reshape %arg0 : tensor<2x16x96xbf16> -> tensor<32x96xbf16>
// CHECK-NEXT:  %[[K:.+]] = llmc.kernel -> (tensor<32x96xbf16>) attributes {llmc.epilogue = "gelu_grad"} {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg1, %arg2
// CHECK-NEXT:    llmc.gelu_grad tanh %[[P]], %[[M]] : tensor<32x96xbf16>
// CHECK:       %[[B:.+]] = llmc.reshape %[[K]] : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
// CHECK-NEXT:  return %[[B]]
func.func @dgelu_view_of_argument(%pre: tensor<2x16x96xbf16>, %dy: tensor<32x64xbf16>, %w2: tensor<64x96xbf16>) -> tensor<2x16x96xbf16> {
  %0 = llmc.matmul %dy, %w2 : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %1 = llmc.reshape %0 : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
  %2 = llmc.gelu_grad tanh %pre, %1 : tensor<2x16x96xbf16>
  return %2 : tensor<2x16x96xbf16>
}

// -----

// Negative: the product's view is read by something else too (returned),
// and another product is read both through a view and directly: cuBLASLt
// never stores the product itself.
// CHECK-LABEL: func.func @dgelu_view_read
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.gelu_grad tanh
// CHECK:       llmc.gelu_grad tanh
func.func @dgelu_view_read(%pre: tensor<2x16x96xbf16>, %dy: tensor<32x64xbf16>, %w2: tensor<64x96xbf16>) -> (tensor<2x16x96xbf16>, tensor<2x16x96xbf16>, tensor<2x16x96xbf16>, tensor<32x96xbf16>) {
  %0 = llmc.matmul %dy, %w2 : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %1 = llmc.reshape %0 : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
  %2 = llmc.gelu_grad tanh %pre, %1 : tensor<2x16x96xbf16>
  %3 = llmc.matmul %dy, %w2 : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %4 = llmc.reshape %3 : tensor<32x96xbf16> -> tensor<2x16x96xbf16>
  %5 = llmc.gelu_grad tanh %pre, %4 : tensor<2x16x96xbf16>
  return %1, %2, %5, %3 : tensor<2x16x96xbf16>, tensor<2x16x96xbf16>, tensor<2x16x96xbf16>, tensor<32x96xbf16>
}

// -----

// Negative: an f32 product keeps its kernels (not the step DGELU is for,
// and its f32 kernels are unmeasured), and a product whose ld (n = 100) is
// no multiple of 8 (cuBLASLt's aux ld).
// CHECK-LABEL: func.func @dgelu_f32
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.gelu_grad tanh
// CHECK:       llmc.gelu_grad tanh
func.func @dgelu_f32(%pre: tensor<32x96xf32>, %dy: tensor<32x64xf32>, %w2: tensor<64x96xf32>, %p: tensor<32x100xbf16>, %d: tensor<32x64xbf16>, %w: tensor<64x100xbf16>) -> (tensor<32x96xf32>, tensor<32x100xbf16>) {
  %0 = llmc.matmul %dy, %w2 : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<32x96xf32>
  %2 = llmc.matmul %d, %w : (tensor<32x64xbf16>, tensor<64x100xbf16>) -> tensor<32x100xbf16>
  %3 = llmc.gelu_grad tanh %p, %2 : tensor<32x100xbf16>
  return %1, %3 : tensor<32x96xf32>, tensor<32x100xbf16>
}

// -----

// Negative: the product dh is also returned (cuBLASLt's D is the
// gelu_grad, dh itself is never stored).
// CHECK-LABEL: func.func @dgelu_dh_read
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.gelu_grad
func.func @dgelu_dh_read(%pre: tensor<32x96xbf16>, %dy: tensor<32x64xbf16>, %w2: tensor<64x96xbf16>) -> (tensor<32x96xbf16>, tensor<32x96xbf16>) {
  %0 = llmc.matmul %dy, %w2 : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<32x96xbf16>
  return %0, %1 : tensor<32x96xbf16>, tensor<32x96xbf16>
}

// -----

// Negative: the pre-activation is computed after the matmul (the epilogue
// reads it there), and an erf gelu_grad.
// CHECK-LABEL: func.func @dgelu_pre_late
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.gelu_grad tanh
// CHECK:       llmc.gelu_grad erf
func.func @dgelu_pre_late(%p: tensor<32x96xbf16>, %dy: tensor<32x64xbf16>, %w2: tensor<64x96xbf16>) -> (tensor<32x96xbf16>, tensor<32x96xbf16>) {
  %0 = llmc.matmul %dy, %w2 : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %pre = llmc.neg %p : tensor<32x96xbf16>
  %1 = llmc.gelu_grad tanh %pre, %0 : tensor<32x96xbf16>
  %2 = llmc.matmul %dy, %w2 : (tensor<32x64xbf16>, tensor<64x96xbf16>) -> tensor<32x96xbf16>
  %3 = llmc.gelu_grad erf %p, %2 : tensor<32x96xbf16>
  return %1, %3 : tensor<32x96xbf16>, tensor<32x96xbf16>
}

// -----

// A bias gradient summed over all rows of the cotangent that the weight
// gradient reads transposed (through its [rows, n] reshape): BGRADB on the
// weight-gradient matmul; the sum moves there.
// CHECK-LABEL: func.func @bgrad
// CHECK:       %[[V:.+]] = llmc.reshape %arg0
// CHECK-NEXT:  %[[K:.+]]:2 = llmc.kernel -> (tensor<64x96xbf16>, tensor<64xbf16>) attributes {llmc.epilogue = "bias_grad_lhs"} {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %[[V]], %arg1 {transpose_lhs}
// CHECK-NEXT:    %[[S:.+]] = llmc.reduce_sum %arg0 axes [0, 1]
// CHECK-NEXT:    llmc.yield %[[M]], %[[S]]
// CHECK-NEXT:  }
// CHECK-NEXT:  return %[[K]]#1, %[[K]]#0
// OFF-LABEL:   func.func @bgrad
// OFF-NOT:     llmc.epilogue
// NORHS-LABEL: func.func @bgrad
// NORHS:       llmc.epilogue = "bias_grad_lhs"
func.func @bgrad(%c: tensor<2x16x64xbf16>, %x: tensor<32x96xbf16>) -> (tensor<64xbf16>, tensor<64x96xbf16>) {
  %0 = llmc.reduce_sum %c axes [0, 1] : (tensor<2x16x64xbf16>) -> tensor<64xbf16>
  %1 = llmc.reshape %c : tensor<2x16x64xbf16> -> tensor<32x64xbf16>
  %2 = llmc.matmul %1, %x {transpose_lhs} : (tensor<32x64xbf16>, tensor<32x96xbf16>) -> tensor<64x96xbf16>
  return %0, %2 : tensor<64xbf16>, tensor<64x96xbf16>
}

// -----

// Negative: a sum over the batch axis only (not all rows), an f32 sum, and
// a sum read before the weight gradient is computed.
// CHECK-LABEL: func.func @bgrad_negative
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.reduce_sum %arg0 axes [0] :
// CHECK:       llmc.reduce_sum %arg2 axes [0, 1]
// CHECK:       llmc.reduce_sum %arg0 axes [0, 1]
// CHECK:       llmc.neg
// CHECK:       llmc.matmul
func.func @bgrad_negative(%c: tensor<2x16x64xbf16>, %x: tensor<32x96xbf16>, %c32: tensor<2x16x64xf32>, %x32: tensor<32x96xf32>) -> (tensor<16x64xbf16>, tensor<64x96xbf16>, tensor<64xf32>, tensor<64x96xf32>, tensor<64xbf16>) {
  %0 = llmc.reduce_sum %c axes [0] : (tensor<2x16x64xbf16>) -> tensor<16x64xbf16>
  %1 = llmc.reshape %c : tensor<2x16x64xbf16> -> tensor<32x64xbf16>
  %3 = llmc.reduce_sum %c32 axes [0, 1] : (tensor<2x16x64xf32>) -> tensor<64xf32>
  %4 = llmc.reshape %c32 : tensor<2x16x64xf32> -> tensor<32x64xf32>
  %5 = llmc.matmul %4, %x32 {transpose_lhs} : (tensor<32x64xf32>, tensor<32x96xf32>) -> tensor<64x96xf32>
  %6 = llmc.reduce_sum %c axes [0, 1] : (tensor<2x16x64xbf16>) -> tensor<64xbf16>
  %7 = llmc.neg %6 : tensor<64xbf16>
  %9 = llmc.matmul %1, %x {transpose_lhs} : (tensor<32x64xbf16>, tensor<32x96xbf16>) -> tensor<64x96xbf16>
  return %0, %9, %3, %5, %7 : tensor<16x64xbf16>, tensor<64x96xbf16>, tensor<64xf32>, tensor<64x96xf32>, tensor<64xbf16>
}

// -----

// HF GPT-2's Conv1D layout (weights [in, out]): dW = x^T c reads the
// cotangent as the rhs (through its [rows, n] reshape): BGRADA on the
// weight-gradient matmul, the bias gradient the [n] columns of dW.
// CHECK-LABEL: func.func @bgrad_rhs
// CHECK:       %[[V:.+]] = llmc.reshape %arg0
// CHECK-NEXT:  %[[K:.+]]:2 = llmc.kernel -> (tensor<96x64xbf16>, tensor<64xbf16>) attributes {llmc.epilogue = "bias_grad_rhs"} {
// CHECK-NEXT:    %[[M:.+]] = llmc.matmul %arg1, %[[V]] {transpose_lhs}
// CHECK-NEXT:    %[[S:.+]] = llmc.reduce_sum %arg0 axes [0, 1]
// CHECK-NEXT:    llmc.yield %[[M]], %[[S]]
// CHECK-NEXT:  }
// CHECK-NEXT:  return %[[K]]#1, %[[K]]#0
// OFF-LABEL:   func.func @bgrad_rhs
// OFF-NOT:     llmc.epilogue
// NORHS-LABEL: func.func @bgrad_rhs
// NORHS-NOT:   llmc.epilogue
func.func @bgrad_rhs(%c: tensor<2x16x64xbf16>, %x: tensor<32x96xbf16>) -> (tensor<64xbf16>, tensor<96x64xbf16>) {
  %0 = llmc.reduce_sum %c axes [0, 1] : (tensor<2x16x64xbf16>) -> tensor<64xbf16>
  %1 = llmc.reshape %c : tensor<2x16x64xbf16> -> tensor<32x64xbf16>
  %2 = llmc.matmul %x, %1 {transpose_lhs} : (tensor<32x96xbf16>, tensor<32x64xbf16>) -> tensor<96x64xbf16>
  return %0, %2 : tensor<64xbf16>, tensor<96x64xbf16>
}

// -----

// A rank-2 cotangent read directly as the rhs (no reshape) fuses too.
// CHECK-LABEL: func.func @bgrad_rhs_direct
// CHECK:       llmc.kernel -> (tensor<96x64xf16>, tensor<64xf16>) attributes {llmc.epilogue = "bias_grad_rhs"} {
// CHECK-NEXT:    llmc.matmul %arg1, %arg0 {transpose_lhs}
// CHECK-NEXT:    llmc.reduce_sum %arg0 axes [0]
func.func @bgrad_rhs_direct(%c: tensor<32x64xf16>, %x: tensor<32x96xf16>) -> (tensor<64xf16>, tensor<96x64xf16>) {
  %0 = llmc.reduce_sum %c axes [0] : (tensor<32x64xf16>) -> tensor<64xf16>
  %1 = llmc.matmul %x, %c {transpose_lhs} : (tensor<32x96xf16>, tensor<32x64xf16>) -> tensor<96x64xf16>
  return %0, %1 : tensor<64xf16>, tensor<96x64xf16>
}

// -----

// Negative, rhs side: the lhs not transposed (not the wgrad layout the GPU
// test measures), an f32 product, a sum read before the weight gradient,
// and a sum over the batch axis only.
// CHECK-LABEL: func.func @bgrad_rhs_negative
// CHECK-NOT:   llmc.epilogue
// CHECK:       llmc.reduce_sum %arg0 axes [0, 1]
// CHECK:       llmc.matmul %arg1, %{{.+}} :
// CHECK:       llmc.reduce_sum %arg2 axes [0]
// CHECK:       llmc.reduce_sum %arg4 axes [0] :
// CHECK:       llmc.reduce_sum %arg4 axes [0, 1]
// CHECK:       llmc.neg
// CHECK:       llmc.matmul %arg5, %{{.+}} {transpose_lhs}
func.func @bgrad_rhs_negative(%c: tensor<2x16x64xbf16>, %y: tensor<96x32xbf16>, %c32: tensor<32x64xf32>, %x32: tensor<32x96xf32>, %d: tensor<2x16x64xbf16>, %x: tensor<32x96xbf16>) -> (tensor<64xbf16>, tensor<96x64xbf16>, tensor<64xf32>, tensor<96x64xf32>, tensor<64xbf16>, tensor<96x64xbf16>, tensor<16x64xbf16>) {
  %0 = llmc.reduce_sum %c axes [0, 1] : (tensor<2x16x64xbf16>) -> tensor<64xbf16>
  %1 = llmc.reshape %c : tensor<2x16x64xbf16> -> tensor<32x64xbf16>
  %2 = llmc.matmul %y, %1 : (tensor<96x32xbf16>, tensor<32x64xbf16>) -> tensor<96x64xbf16>
  %3 = llmc.reduce_sum %c32 axes [0] : (tensor<32x64xf32>) -> tensor<64xf32>
  %4 = llmc.matmul %x32, %c32 {transpose_lhs} : (tensor<32x96xf32>, tensor<32x64xf32>) -> tensor<96x64xf32>
  %5 = llmc.reduce_sum %d axes [0] : (tensor<2x16x64xbf16>) -> tensor<16x64xbf16>
  %6 = llmc.reduce_sum %d axes [0, 1] : (tensor<2x16x64xbf16>) -> tensor<64xbf16>
  %7 = llmc.neg %6 : tensor<64xbf16>
  %8 = llmc.reshape %d : tensor<2x16x64xbf16> -> tensor<32x64xbf16>
  %9 = llmc.matmul %x, %8 {transpose_lhs} : (tensor<32x96xbf16>, tensor<32x64xbf16>) -> tensor<96x64xbf16>
  return %0, %2, %3, %4, %7, %9, %5 : tensor<64xbf16>, tensor<96x64xbf16>, tensor<64xf32>, tensor<96x64xf32>, tensor<64xbf16>, tensor<96x64xbf16>, tensor<16x64xbf16>
}
