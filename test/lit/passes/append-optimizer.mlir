// RUN: llmc-opt %s --llmc-append-optimizer | FileCheck %s --check-prefix=ADAMW
// RUN: llmc-opt %s --llmc-append-optimizer="clip-norm=1.0 decay-min-rank=2 beta2=0.95 weight-decay=0.1" | FileCheck %s --check-prefix=CLIP
// RUN: llmc-opt %s --llmc-append-optimizer="optimizer=sgd momentum=0.9 weight-decay=0.1" | FileCheck %s --check-prefix=SGD
// RUN: llmc-opt %s --llmc-append-optimizer="optimizer=sgd" | FileCheck %s --check-prefix=PLAIN

// The input is what llmc-autodiff produces: (loss, grads). The frozen
// parameter gets no state and no update; lr is a runtime input; every
// result that replaces an argument names it with llmc.next.

// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME: %[[LR:[^:]+]]: tensor<f32> {llmc.input = "lr"}
// ADAMW-SAME: %[[STEP:[^:]+]]: tensor<i64> {llmc.init_rule = "zeros", llmc.state = "step"}
// ADAMW-SAME: %[[MW:[^:]+]]: tensor<4x8xf32> {llmc.init_rule = "zeros", llmc.state = "adamw.m", llmc.state_of = "w"}
// ADAMW-SAME: %[[MB:[^:]+]]: tensor<8xbf16> {llmc.init_rule = "zeros", llmc.state = "adamw.m", llmc.state_of = "b"}
// ADAMW-SAME: %[[VW:[^:]+]]: tensor<4x8xf32> {llmc.init_rule = "zeros", llmc.state = "adamw.v", llmc.state_of = "w"}
// ADAMW-SAME: %[[VB:[^:]+]]: tensor<8xbf16> {llmc.init_rule = "zeros", llmc.state = "adamw.v", llmc.state_of = "b"})
// ADAMW-SAME: -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.next = 0 : i64}, tensor<8xbf16> {llmc.next = 1 : i64}, tensor<i64> {llmc.next = 5 : i64, llmc.state = "step"}, tensor<4x8xf32> {llmc.next = 6 : i64, llmc.state = "adamw.m", llmc.state_of = "w"}, tensor<8xbf16> {llmc.next = 7 : i64, llmc.state = "adamw.m", llmc.state_of = "b"}, tensor<4x8xf32> {llmc.next = 8 : i64, llmc.state = "adamw.v", llmc.state_of = "w"}, tensor<8xbf16> {llmc.next = 9 : i64, llmc.state = "adamw.v", llmc.state_of = "b"})
// PyTorch's defaults (betas 0.9/0.999, eps 1e-8, weight decay 0.01) are the
// op's defaults, so no attribute is printed.
// ADAMW: %[[ONE:.+]] = llmc.constant dense<1> : tensor<i64>
// ADAMW: %[[T:.+]] = llmc.add %[[STEP]], %[[ONE]]
// ADAMW: %[[PW:.+]], %[[NMW:.+]], %[[NVW:.+]] = llmc.adamw_update %arg0, %arg3, %[[MW]], %[[VW]], %[[LR]], %[[T]] :
// ADAMW: %[[PB:.+]], %[[NMB:.+]], %[[NVB:.+]] = llmc.adamw_update %arg1, %{{.+}}, %[[MB]], %[[VB]], %[[LR]], %[[T]] :
// ADAMW: return %{{.+}}, %[[PW]], %[[PB]], %[[T]], %[[NMW]], %[[NMB]], %[[NVW]], %[[NVB]] :

// CLIP-LABEL: func.func @train_step
// CLIP-SAME: -> (tensor<f32> {llmc.output = "loss"}, tensor<f32> {llmc.output = "grad_norm"}, tensor<4x8xf32> {llmc.next = 0 : i64}
// One global_norm over all gradients, whatever their types, in f32.
// CLIP: %[[GB:.+]] = llmc.cast %arg2 : tensor<8xf32> -> tensor<8xbf16>
// CLIP: %[[NORM:.+]] = llmc.global_norm %arg3, %[[GB]] : (tensor<4x8xf32>, tensor<8xbf16>) -> tensor<f32>
// CLIP: %[[EPS:.+]] = llmc.constant dense<9.99999997E-7> : tensor<f32>
// CLIP: %[[DEN:.+]] = llmc.add %[[NORM]], %[[EPS]]
// CLIP: %[[RATIO:.+]] = llmc.div %{{.+}}, %[[DEN]]
// CLIP: %[[COEF:.+]] = llmc.min %[[RATIO]], %{{.+}}
// CLIP: %[[GW:.+]] = llmc.mul %arg3, %[[COEF]]
// CLIP: %[[CB:.+]] = llmc.cast %[[COEF]] : tensor<f32> -> tensor<bf16>
// CLIP: llmc.mul %[[GB]], %[[CB]]
// Rank-1 parameters are not decayed with decay-min-rank=2.
// CLIP: llmc.adamw_update %arg0, %[[GW]], {{.+}} {beta2 = 0.94999999999999996 : f64, weight_decay = 1.000000e-01 : f64}
// CLIP: llmc.adamw_update %arg1, {{.+}} {beta2 = 0.94999999999999996 : f64, weight_decay = 0.000000e+00 : f64}
// CLIP: return %{{.+}}, %[[NORM]],

// SGD-LABEL: func.func @train_step
// SGD-SAME: %[[LR:[^:]+]]: tensor<f32> {llmc.input = "lr"}
// SGD-SAME: %[[BW:[^:]+]]: tensor<4x8xf32> {llmc.init_rule = "zeros", llmc.state = "sgd.momentum", llmc.state_of = "w"}
// SGD-SAME: -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.next = 0 : i64}, tensor<8xbf16> {llmc.next = 1 : i64}, tensor<4x8xf32> {llmc.next = 5 : i64, llmc.state = "sgd.momentum", llmc.state_of = "w"}, tensor<8xbf16> {llmc.next = 6 : i64, llmc.state = "sgd.momentum", llmc.state_of = "b"})
// SGD: %[[WD:.+]] = llmc.mul %arg0, %{{.+}}
// SGD: %[[G:.+]] = llmc.add %arg3, %[[WD]]
// SGD: %[[MOM:.+]] = llmc.mul %[[BW]], %{{.+}}
// SGD: %[[BUF:.+]] = llmc.add %[[MOM]], %[[G]]
// SGD: %[[STEP:.+]] = llmc.mul %[[BUF]], %[[LR]]
// SGD: %[[PW:.+]] = llmc.sub %arg0, %[[STEP]]
// bf16 parameters get lr in their own type.
// SGD: llmc.cast %[[LR]] : tensor<f32> -> tensor<bf16>
// SGD: return %{{.+}}, %[[PW]], %{{.+}}, %[[BUF]], %{{.+}} :

// PLAIN-LABEL: func.func @train_step
// PLAIN-SAME: %{{[^:]+}}: tensor<f32> {llmc.input = "lr"})
// PLAIN-NOT: llmc.state
// PLAIN: %[[STEP:.+]] = llmc.mul %arg3, %arg4
// PLAIN: %[[PW:.+]] = llmc.sub %arg0, %[[STEP]]
// PLAIN: return %{{.+}}, %[[PW]], %{{.+}} :

func.func @train_step(%w: tensor<4x8xf32> {llmc.param = "w", llmc.init_rule = "zeros"},
                      %b: tensor<8xbf16> {llmc.param = "b", llmc.init_rule = "zeros"},
                      %f: tensor<8xf32> {llmc.param = "f", llmc.frozen, llmc.init_rule = "zeros"},
                      %x: tensor<4x8xf32> {llmc.input = "x"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<4x8xf32> {llmc.grad_of = "w"}, tensor<8xbf16> {llmc.grad_of = "b"}) {
  %loss = llmc.reduce_sum %x axes [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %gb = llmc.cast %f : tensor<8xf32> -> tensor<8xbf16>
  return %loss, %x, %gb : tensor<f32>, tensor<4x8xf32>, tensor<8xbf16>
}
