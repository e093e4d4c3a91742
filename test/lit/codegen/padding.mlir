// RUN: env LLMC_DEBUG=4 llmc codegen %s 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --compile | FileCheck %s --check-prefix=NVRTC

// The kernels of padded ops (llmc-pad-shapes, docs/padding.md): logits of
// row stride 1024 whose first 1001 columns are classes, and a 1024-row
// table whose first 1001 rows are real. The softmax runs over kClasses;
// the gradient writes zeros past it; gathers and their scatter-add check
// indices against kBound.
// CHECK-LABEL: // ===== gather_0.cu =====
// CHECK:       constexpr index_t kBound = 1001;  // indices in range: the real rows of a padded table
// CHECK:       k += kBound;
// CHECK:       out[i] = (k >= 0 && k < kBound) ? data[(o * kDim + k) * kInner + c]
// CHECK-LABEL: // ===== gather_grad_1_count.cu =====
// CHECK:       constexpr index_t kBound = 1001;
// CHECK:       if (k < 0 || k >= kBound)
// The loss and its gradient are one classifier group (llmc-fuse-classifier).
// CHECK-LABEL: // ===== cross_entropy_2_rows.cu =====
// CHECK:       constexpr index_t kCols = 1024;  // columns of a row
// CHECK-NEXT:  constexpr index_t kClasses = 1001;  // real classes; the columns after them are padding
// CHECK:       const bool valid = target >= 0 && target < kClasses;
// CHECK:       xs[e] = v * kVec + e < kClasses ? in.v[e] : -INFINITY;
// CHECK:       row_loss[row] = valid ? m + logf(s) - xt : NAN;
// CHECK:       const float p = j >= kClasses ? 0.0f : exp2Diff(in.v[e], m) * inv;
// NVRTC:       compiled {{[0-9]+}} kernels for sm_90
func.func @forward(%wte: tensor<1024x64xf32>, %idx: tensor<32xi64>,
                   %logits: tensor<32x1024xf32>, %t: tensor<32xi64>,
                   %dy: tensor<32x64xf32>, %dl: tensor<f32>)
    -> (tensor<32x64xf32>, tensor<1024x64xf32>, tensor<f32>, tensor<32x1024xf32>) {
  %e = llmc.gather %wte, %idx axis 0 {bound = 1001 : i64} : (tensor<1024x64xf32>, tensor<32xi64>) -> tensor<32x64xf32>
  %g = llmc.gather_grad %dy, %idx axis 0 {bound = 1001 : i64} : (tensor<32x64xf32>, tensor<32xi64>) -> tensor<1024x64xf32>
  %l = llmc.cross_entropy mean %logits, %t {classes = 1001 : i64} : (tensor<32x1024xf32>, tensor<32xi64>) -> tensor<f32>
  %d = llmc.cross_entropy_grad mean %logits, %t, %dl {classes = 1001 : i64} : (tensor<32x1024xf32>, tensor<32xi64>, tensor<f32>) -> tensor<32x1024xf32>
  return %e, %g, %l, %d : tensor<32x64xf32>, tensor<1024x64xf32>, tensor<f32>, tensor<32x1024xf32>
}
