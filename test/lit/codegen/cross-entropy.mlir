// RUN: env LLMC_DEBUG=4 llmc codegen %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: llmc codegen %s --split-input-file --compile | FileCheck %s --check-prefix=NVRTC

// mean and sum: a row kernel writes per-position losses to scratch, one
// block reduces them in a fixed order (deterministic, no atomics).

// CHECK-LABEL: // ===== cross_entropy_0_rows.cu =====
// CHECK:       // cross_entropy_0_rows: llmc.cross_entropy "/loss/SoftmaxCrossEntropyLoss"
// CHECK:       //   per-position losses go to the f32 scratch buffer `row_loss`; cross_entropy_0_reduce sums them
// CHECK:       constexpr index_t kRows = 2048;  // positions
// CHECK-NEXT:  constexpr index_t kCols = 50257;  // classes
// CHECK:       constexpr index_t kIgnore = -100;  // ignore_index
// CHECK:       if (target != kIgnore)
// CHECK-NEXT:    loss = (target >= 0 && target < kCols)
// CHECK-NEXT:               ? m + logf(s) - x[target]
// CHECK-NEXT:               : NAN;
// CHECK-NEXT:  row_loss[row] = loss;
// CHECK-LABEL: // ===== cross_entropy_0_reduce.cu =====
// CHECK:       static_assert(kRows < (1 << 24), "the count is exact in f32");
// CHECK:       const float counted = blockSum(count);
// CHECK:       out[0] = total / counted;
// NVRTC:      buffer cross_entropy_0.row_loss scratch f32[2048]
// NVRTC:      step 0 launch cross_entropy_0_rows grid [2048, 1, 1] block [1024, 1, 1] smem 0 args (arg0, arg1, cross_entropy_0.row_loss)
// NVRTC-NEXT: step 1 launch cross_entropy_0_reduce grid [1, 1, 1] block [1024, 1, 1] smem 0 args (cross_entropy_0.row_loss, arg1, cross_entropy_0.out0)
// NVRTC:      compiled 2 kernels for sm_90
func.func @forward(%logits: tensor<2x1024x50257xf32>, %t: tensor<2x1024xi64>) -> tensor<f32> {
  %0 = llmc.cross_entropy mean %logits, %t : (tensor<2x1024x50257xf32>, tensor<2x1024xi64>) -> tensor<f32> loc("/loss/SoftmaxCrossEntropyLoss")
  return %0 : tensor<f32>
}

// -----

// none: one kernel writes the losses; sum: no count.
// CHECK-LABEL: // ===== cross_entropy_0.cu =====
// CHECK:       out[row] = __float2bfloat16(loss);
// CHECK-LABEL: // ===== cross_entropy_1_reduce.cu =====
// CHECK-NOT:   counted
// CHECK:       out[0] = __float2bfloat16(total);
// NVRTC: compiled 3 kernels for sm_90
func.func @forward(%logits: tensor<4x7xbf16>, %t: tensor<4xi32>) -> (tensor<4xbf16>, tensor<bf16>) {
  %0 = llmc.cross_entropy none %logits, %t {ignore_index = 0 : i64} : (tensor<4x7xbf16>, tensor<4xi32>) -> tensor<4xbf16>
  %1 = llmc.cross_entropy sum %logits, %t : (tensor<4x7xbf16>, tensor<4xi32>) -> tensor<bf16>
  return %0, %1 : tensor<4xbf16>, tensor<bf16>
}
