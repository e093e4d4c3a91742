// RUN: llmc-opt %models/gpt2-tiny.mlir --llmc-autodiff=keep-forward=false --llmc-append-optimizer="clip-norm=1.0 weight-decay=0.1 decay-min-rank=2" | FileCheck %s

// A whole GPT-2 layer to a full AdamW step: one gradient per parameter, the
// tied embedding's two gradients (lm_head matmul and gather) summed, the
// attention forward switched to attention_lse, and every parameter updated.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {llmc.input = "lr"}
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss"}, tensor<f32> {llmc.output = "grad_norm"}, tensor<512x64xf32> {llmc.next = 0 : i64}
// CHECK: %[[O:.+]], %[[LSE:.+]] = llmc.attention_lse
// CHECK: %[[DLOGITS:.+]] = llmc.cross_entropy_grad mean
// CHECK: %[[HF:.+]] = llmc.reshape %{{.+}} : tensor<2x16x64xf32> -> tensor<32x64xf32>
// CHECK: %[[G:.+]] = llmc.reshape %[[DLOGITS]] : tensor<2x16x512xf32> -> tensor<32x512xf32>
// CHECK: %[[HEAD:.+]] = llmc.matmul %[[G]], %[[HF]] {transpose_lhs} : (tensor<32x512xf32>, tensor<32x64xf32>) -> tensor<512x64xf32>
// CHECK-COUNT-2: llmc.layer_norm_grad
// CHECK: llmc.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %[[O]], %[[LSE]], %{{.+}} {causal}
// CHECK: llmc.layer_norm_grad
// CHECK: %[[EMB:.+]] = llmc.gather_grad %{{.+}}, %arg16 axis 0 : (tensor<2x16x64xf32>, tensor<2x16xi64>) -> tensor<512x64xf32>
// CHECK: %[[DWTE:.+]] = llmc.add %[[HEAD]], %[[EMB]]
// CHECK: %[[NORM:.+]] = llmc.global_norm
// CHECK-COUNT-16: llmc.adamw_update
// CHECK-NOT: llmc.adamw_update
// CHECK: return
