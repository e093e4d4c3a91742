// GPT-2-tiny's kernel groups after the whole pipeline (docs/kernel-ir.md):
// every op that launches something is in an llmc.kernel; the four bias adds
// ride in their matmuls' groups; the multi-tensor update and the step
// counter write in place; lr, step and loss are scalar slots.
// RUN: llmc-opt %models/gpt2-tiny.mlir --llmc-pipeline -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: grep -c "= llmc.kernel" %t.mlir | FileCheck %s --check-prefix=GROUPS
// RUN: awk '/^    %%[^ ]+ = [l]lmc\./ && !/[l]lmc\.(kernel|reshape|constant)/ {n++} END {print "outside", n+0}' %t.mlir | FileCheck %s --check-prefix=OUTSIDE
// RUN: llmc codegen %t.mlir | grep -c "^step " | FileCheck %s --check-prefix=LAUNCHES
// RUN: llmc-opt %t.mlir --llmc-form-kernels --llmc-fuse-epilogues --llmc-fuse-elementwise --llmc-fuse-classifier --llmc-mark-in-place | diff %t.mlir -
// RUN: llmc-opt %models/gpt2-tiny.mlir --llmc-pipeline=precision=bf16 -o %t.bf16.mlir
// RUN: llmc-opt %t.bf16.mlir --llmc-form-kernels --llmc-fuse-epilogues --llmc-fuse-elementwise --llmc-fuse-classifier --llmc-mark-in-place | diff %t.bf16.mlir -
// RUN: grep -c "= llmc.kernel" %t.bf16.mlir | FileCheck %s --check-prefix=BF16-GROUPS
// RUN: llmc codegen %t.bf16.mlir | grep -c "^step " | FileCheck %s --check-prefix=BF16-LAUNCHES

// 36 groups launch 44 steps (29 kernels, 15 cuBLASLt calls; 37 and 45
// before the step counter joined the clip coefficient's kernel; 47 and 32
// before gather_grad scanned in its count kernel): cross_entropy,
// global_norm, the attention gradients and gather_grad launch several
// kernels per group (the norm gradients one since their parameter sums
// take tickets in the row kernel; the two f32 bias gradients of their
// residual gradients are column sums there: 39 groups, 52 launches before). No op but reshape and constant is outside a
// group, and running the kernel passes again changes nothing (the diff
// RUNs). Without llmc-fuse-elementwise the step had 56 groups and 69
// launches: the clip coefficient's add, div and min are one group now;
// the residual adds ride in the layer norms and their gradients (norm
// prologues and epilogues: 45 groups, 58 launches without; 41 and 54 with
// the prologues only).
// GROUPS: 36
// OUTSIDE: outside 0
// LAUNCHES: 44
// In bf16 (docs/fusion.md): 86 groups and 99 launches without fusion; the
// casts fuse into their neighbours, the weight casts and the gradient casts
// are a horizontal group each, and attention reads and writes [B, T, H, D]
// (no transposes); the residual adds ride in the norms' loads, and the
// residual-gradient adds with their casts, and the last norm gradient's
// cast, in the norm gradients' stores (43 groups and 56 launches with the
// prologues only). The weights are stored [in, out], so the four bias
// gradients ride in their weight gradients as BGRADA (`bias_grad_rhs`), and
// the MLP's gelu in its fc matmul (GELU_AUX_BIAS; 36 groups and 49 launches
// without it). Two of the bias gradients (the projections', the norm
// gradients' residual gradients) moved from BGRADA to the norm kernels'
// column sums (same groups), and the three norm gradients take one launch
// each: 48 -> 45 launches; gather_grad in four launches: 43; the MLP's
// gelu_grad in its c_proj input-gradient matmul (DGELU, on by default since
// session 9): 34 groups, 42 launches; the step counter in the clip
// coefficient's kernel (session 10): 33 and 41.
// BF16-GROUPS: 33
// BF16-LAUNCHES: 41

// The attention block's c_attn, c_proj and the MLP's c_fc, c_proj: a matmul
// and its bias add per group, the group yielding the add.
// CHECK-LABEL: func.func @train_step
// lr, step and loss are the plan's scalar slots (llmc-mark-scalar-slots).
// CHECK-SAME: {llmc.input = "lr", llmc.slot = "lr"}
// CHECK-SAME: {llmc.init_rule = "zeros", llmc.slot = "step", llmc.state = "step"}
// CHECK-SAME: -> (tensor<f32> {llmc.output = "loss", llmc.slot = "loss"}
// CHECK:      llmc.kernel -> (tensor<2x16x192xf32>) {
// CHECK-NEXT:   %[[M:.+]] = llmc.matmul %{{.+}}, %arg4
// CHECK-NEXT:   %[[A:.+]] = llmc.add %[[M]], %arg5
// CHECK-NEXT:   llmc.yield %[[A]]
// CHECK:      llmc.kernel -> (tensor<2x16x64xf32>) {
// CHECK-NEXT:   llmc.matmul %{{.+}}, %arg6
// CHECK-NEXT:   llmc.add %{{.+}}, %arg7
// CHECK:      llmc.kernel -> (tensor<2x16x256xf32>) {
// CHECK-NEXT:   llmc.matmul %{{.+}}, %arg10
// CHECK-NEXT:   llmc.add %{{.+}}, %arg11
// CHECK:      llmc.kernel -> (tensor<2x16x64xf32>) {
// CHECK-NEXT:   llmc.matmul %{{.+}}, %arg12
// CHECK-NEXT:   llmc.add %{{.+}}, %arg13
// The tied logits matmul has no bias: a group of its own.
// CHECK:      llmc.kernel -> (tensor<2x16x512xf32>) {
// CHECK-NEXT:   llmc.matmul %{{.+}}, %arg0 {transpose_rhs}
// CHECK-NEXT:   llmc.yield
// The step counter and every parameter, m and v are updated in place; the
// counter rides in the clip coefficient's kernel (a horizontal segment that
// does not read it).
// CHECK:      llmc.kernel -> (tensor<f32>, tensor<i64>) attributes {in_place = array<i64: -1, 19>} {
// CHECK:        llmc.add %arg19
// CHECK:      llmc.kernel -> ({{.*}}) attributes {in_place = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, {{.*}}>} {
// CHECK-NEXT:   llmc.multi_adamw_update
// CHECK:      return
