// RUN: llmc-opt %s --split-input-file --llmc-append-optimizer | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-append-optimizer="clip-norm=1.0 loss-scale-growth-interval=3 loss-scale-growth=4.0 loss-scale-backoff=0.25" | FileCheck %s --check-prefix=CLIP
// RUN: llmc-opt %s --split-input-file --llmc-append-optimizer="optimizer=sgd" | FileCheck %s --check-prefix=SGD

// Dynamic loss scaling (fp16): llmc-autodiff seeded the backward with the
// state argument amp.scale, so the gradients are those of scale * loss.
// The optimizer unscales them, takes their global norm (inf or NaN exactly
// when a gradient is), keeps every parameter and state value as it was when
// the norm is not finite, and updates the scale and its counters as
// torch.cuda.amp.GradScaler does. The counters are state (checkpointed).

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[SCALE:[^:]+]]: tensor<f32> {llmc.init = dense<6.553600e+04> : tensor<f32>, llmc.state = "amp.scale"}
// CHECK-SAME: %[[LR:[^:]+]]: tensor<f32> {llmc.input = "lr"}
// CHECK-SAME: %[[STEP:[^:]+]]: tensor<i64> {llmc.init_rule = "zeros", llmc.state = "step"}
// CHECK-SAME: %[[TRACK:[^:]+]]: tensor<i64> {llmc.init_rule = "zeros", llmc.state = "amp.growth_tracker"}
// CHECK-SAME: %[[SKIP:[^:]+]]: tensor<i64> {llmc.init_rule = "zeros", llmc.state = "amp.skipped"})
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss"}, tensor<f32> {llmc.output = "grad_norm"}, tensor<4x8xf32> {llmc.next = 0 : i64}
// CHECK-SAME: tensor<f32> {llmc.next = 2 : i64, llmc.state = "amp.scale"}, tensor<i64> {llmc.next = 7 : i64, llmc.state = "amp.growth_tracker"}, tensor<i64> {llmc.next = 8 : i64, llmc.state = "amp.skipped"})
// Unscale, then one norm, then the overflow flag from it.
// CHECK: %[[ONE:.+]] = llmc.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[INV:.+]] = llmc.div %[[ONE]], %[[SCALE]]
// CHECK: %[[G:.+]] = llmc.mul %arg1, %[[INV]]
// CHECK: %[[NORM:.+]] = llmc.global_norm %[[G]] : (tensor<4x8xf32>) -> tensor<f32>
// CHECK: %[[INF:.+]] = llmc.constant dense<0x7F800000> : tensor<f32>
// CHECK: %[[OK:.+]] = llmc.compare lt, %[[NORM]], %[[INF]]
// The update reads the unscaled gradient; its results are kept only when
// the step is clean.
// CHECK: %[[P:.+]], %[[M:.+]], %[[V:.+]] = llmc.adamw_update %arg0, %[[G]],
// CHECK: %[[PN:.+]] = llmc.where %[[OK]], %[[P]], %arg0
// CHECK: %[[SN:.+]] = llmc.where %[[OK]], %{{.+}}, %[[STEP]]
// CHECK: %[[MN:.+]] = llmc.where %[[OK]], %[[M]], %{{.+}}
// CHECK: %[[VN:.+]] = llmc.where %[[OK]], %[[V]], %{{.+}}
// The scaler: tracker + 1 or 0; x2 at the growth interval (2000), x0.5 on
// overflow; the skipped counter counts overflows.
// CHECK: %[[T1:.+]] = llmc.add %[[TRACK]],
// CHECK: %[[CNT:.+]] = llmc.where %[[OK]], %[[T1]], %{{.+}}
// CHECK: %[[INTERVAL:.+]] = llmc.constant dense<2000> : tensor<i64>
// CHECK: %[[GROW:.+]] = llmc.compare ge, %[[CNT]], %[[INTERVAL]]
// CHECK: %[[TWO:.+]] = llmc.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[UP:.+]] = llmc.mul %[[SCALE]], %[[TWO]]
// CHECK: %[[GROWN:.+]] = llmc.where %[[GROW]], %[[UP]], %[[SCALE]]
// CHECK: %[[HALF:.+]] = llmc.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[DOWN:.+]] = llmc.mul %[[SCALE]], %[[HALF]]
// CHECK: %[[NEWSCALE:.+]] = llmc.where %[[OK]], %[[GROWN]], %[[DOWN]]
// CHECK: %[[NEWTRACK:.+]] = llmc.where %[[GROW]], %{{.+}}, %[[CNT]]
// CHECK: %[[S1:.+]] = llmc.add %[[SKIP]],
// CHECK: %[[NEWSKIP:.+]] = llmc.where %[[OK]], %[[SKIP]], %[[S1]]
// CHECK: return %{{.+}}, %[[NORM]], %[[PN]], %[[SN]], %[[MN]], %[[VN]], %[[NEWSCALE]], %[[NEWTRACK]], %[[NEWSKIP]] :

// With clipping the clip reads the same norm (no second one), and the
// options set the interval and the factors.
// CLIP-LABEL: func.func @train_step
// CLIP: %[[NORM:.+]] = llmc.global_norm
// CLIP-NOT: llmc.global_norm
// CLIP: llmc.add %[[NORM]],
// CLIP: llmc.constant dense<3> : tensor<i64>
// CLIP: llmc.constant dense<4.000000e+00> : tensor<f32>
// CLIP: llmc.constant dense<2.500000e-01> : tensor<f32>

// SGD's update is skipped the same way.
// SGD-LABEL: func.func @train_step
// SGD: %[[OK:.+]] = llmc.compare lt,
// SGD: %[[PW:.+]] = llmc.sub %arg0,
// SGD: llmc.where %[[OK]], %[[PW]], %arg0
func.func @train_step(%w: tensor<4x8xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                      %x: tensor<4x8xf32> {llmc.input = "x"},
                      %scale: tensor<f32> {llmc.state = "amp.scale", llmc.init = dense<65536.0> : tensor<f32>})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "w"}) {
  %loss = llmc.reduce_sum %x axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %loss, %x : tensor<f32>, tensor<4x8xf32>
}
