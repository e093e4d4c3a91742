// RUN: llmc-opt %models/gpt2-tiny.mlir --llmc-pipeline -o %t.multi.mlir
// RUN: llmc codegen %t.multi.mlir | FileCheck %s
// RUN: llmc codegen %t.multi.mlir | grep -c " launch " | FileCheck %s --check-prefix=MULTI
// RUN: llmc-opt %models/gpt2-tiny.mlir --llmc-pipeline=multi-tensor=false -o %t.per.mlir
// RUN: llmc codegen %t.per.mlir | grep -c " launch " | FileCheck %s --check-prefix=PER
// RUN: llmc codegen %t.per.mlir | grep -c " launch adamw_update_" | FileCheck %s --check-prefix=PER-ADAMW

// The kernel count of the GPT-2 fixture's whole step (16 parameters), so
// that the multi-tensor optimizer cannot silently regress: clipping is two
// global_norm kernels plus three rank-0 ops for the coefficient, the update
// of all 16 parameters one kernel that applies the coefficient itself.
// Before the multi-tensor optimizer the step took 135 kernels (a mul and a
// reduce_sum per gradient for the norm, a mul per gradient for the clip, an
// adamw_update per parameter); with multi-tensor=false (one adamw_update per
// parameter and a scaling mul each) it takes 85. Both counts are 4 lower
// since the four forward bias adds ride in their matmuls' bias epilogues.
// Elementwise fusion took 54 to 52 (the clip coefficient's three rank-0 ops
// are one kernel) and 85 to 68 (the per-parameter clip muls are one
// horizontal kernel, and so is the coefficient). The norm epilogues (the
// two residual-gradient adds in their norm gradients) took 39 to 37 and
// 55 to 53. The norm gradients' parameter sums in their row kernel (one
// launch each, not two: 3 layer norms) and the two bias gradients they
// compute as column sums (f32: no cuBLASLt epilogue took them) took 37 to
// 32 and 53 to 48. The embedding gradient's scan in its count kernel
// (no zeroing or scan launch) took 32 to 30 and 48 to 46. The step
// counter in the coefficient's horizontal kernel took 30 to 29 and 46 to 45.

// CHECK:      buffer global_norm_[[N:[0-9]+]].offsets scratch i64[16]
// CHECK:      buffer multi_adamw_update_[[U:[0-9]+]].offsets scratch i64[112]
// CHECK:      launch global_norm_[[N]]_partials grid [31, 1, 1]
// CHECK-NEXT: launch global_norm_[[N]]_combine grid [1, 1, 1]
// The coefficient's add, div and min are one fused kernel named after its
// first op (llmc-fuse-elementwise); the step counter's add, written in
// place, joins it as a horizontal segment (the coefficient does not read
// the counter): one launch, not two.
// CHECK-NEXT: launch add_[[CLIP:[0-9]+]] grid [1, 1, 1] block [256, 1, 1] smem 0 args (global_norm_[[N]].out0, {{.*}}, arg19, {{.*}}, add_[[CLIP]].out0, add_[[CLIP]].out1)
// CHECK-NEXT: launch multi_adamw_update_[[U]] grid [31, 1, 1] block [256, 1, 1] smem 0 args (arg0:wte, multi_adamw_update_[[U]].offsets, arg18:lr, add_[[CLIP]].out1, add_[[CLIP]].out0)
// CHECK-NOT:  launch

// MULTI: {{^}}29{{$}}
// PER: {{^}}45{{$}}
// PER-ADAMW: {{^}}16{{$}}
