// The norm prologues and epilogues are off here: fuse-norm-rows.mlir tests
// them on top of these rewrites.
// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues --llmc-fuse-elementwise="norm-prologue=false norm-epilogue=false" --split-input-file | FileCheck %s
// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-elementwise="vertical=false reductions=false horizontal=false" --split-input-file | FileCheck %s --check-prefix=OFF

// A chain cast -> add -> gelu is one group that yields only the gelu: the
// cast's and the add's results are never written.
// CHECK-LABEL: func.func @chain
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %arg0
// CHECK-NEXT:    %[[A:.+]] = llmc.add %arg1, %[[C]]
// CHECK-NEXT:    %[[G:.+]] = llmc.gelu tanh %[[A]]
// CHECK-NEXT:    llmc.yield %[[G]] : tensor<4x8xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  return %[[K]]
// OFF-LABEL:   func.func @chain
// OFF-COUNT-3: llmc.kernel
func.func @chain(%m: tensor<4x8xbf16>, %r: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = llmc.cast %m : tensor<4x8xbf16> -> tensor<4x8xf32>
  %1 = llmc.add %r, %0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = llmc.gelu tanh %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// The add's result is read by the mul and, later, by a reduction: it is
// materialized (a second result of the group), not recomputed.
// CHECK-LABEL: func.func @materialized
// CHECK:       %[[K:.+]]:2 = llmc.kernel -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT:    %[[A:.+]] = llmc.add %arg0, %arg1
// CHECK-NEXT:    %[[M:.+]] = llmc.mul %[[A]], %arg1
// CHECK-NEXT:    llmc.yield %[[A]], %[[M]]
// CHECK:       llmc.reduce_sum %[[K]]#0
func.func @materialized(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %0 = llmc.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = llmc.mul %0, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = llmc.reduce_sum %0 axes [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  return %1, %2 : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// Negative: the add reads the neg's [8] result broadcast over [4, 8];
// fusing would compute the neg 4 times per element. Two groups.
// CHECK-LABEL: func.func @broadcast
// CHECK:       %[[N:.+]] = llmc.kernel -> (tensor<8xf32>) {
// CHECK-NEXT:    llmc.neg %arg0
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.add %arg1, %[[N]]
func.func @broadcast(%b: tensor<8xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = llmc.neg %b : tensor<8xf32>
  %1 = llmc.add %x, %0 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Negative: a reduction between the two reads the exp's result, so the exp
// cannot move down to the mul (and the reduction is no elementwise op).
// CHECK-LABEL: func.func @read_between
// CHECK:       %[[E:.+]] = llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.exp %arg0
// CHECK-NEXT:    llmc.yield
// CHECK:       %[[S:.+]] = llmc.kernel -> (tensor<8xf32>) {
// CHECK-NEXT:    llmc.reduce_sum %[[E]]
// CHECK:       llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.mul %[[E]], %[[S]]
func.func @read_between(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = llmc.exp %x : tensor<4x8xf32>
  %1 = llmc.reduce_sum %0 axes [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %2 = llmc.mul %0, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// Negative: a matmul (a cuBLASLt call) takes no elementwise consumer; the
// cast after it stays a group of its own.
// CHECK-LABEL: func.func @after_matmul
// CHECK:       %[[M:.+]] = llmc.kernel -> (tensor<4x8xbf16>) {
// CHECK-NEXT:    llmc.matmul
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.cast %[[M]]
// CHECK-NEXT:    llmc.yield
func.func @after_matmul(%x: tensor<4x16xbf16>, %w: tensor<16x8xbf16>) -> tensor<4x8xf32> {
  %0 = llmc.matmul %x, %w : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %1 = llmc.cast %0 : tensor<4x8xbf16> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A widening cast read only by reductions that load it (cross_entropy and
// its gradient, on the logits): a copy rides in each reader's group, and
// the f32 logits are never written. The gradient's narrowing cast joins its
// producer's store.
// CHECK-LABEL: func.func @classifier
// CHECK:       llmc.kernel -> (tensor<f32>) {
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %arg0 : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK-NEXT:    %[[L:.+]] = llmc.cross_entropy mean %[[C]], %arg1
// CHECK-NEXT:    llmc.yield %[[L]]
// CHECK:       llmc.kernel -> (tensor<4x16xbf16>) {
// CHECK-NEXT:    %[[C2:.+]] = llmc.cast %arg0 : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK-NEXT:    %[[G:.+]] = llmc.cross_entropy_grad mean %[[C2]], %arg1, %arg2
// CHECK-NEXT:    %[[N:.+]] = llmc.cast %[[G]] : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK-NEXT:    llmc.yield %[[N]]
// CHECK-NOT:   llmc.cast
// OFF-LABEL:   func.func @classifier
// OFF-COUNT-4: llmc.kernel
func.func @classifier(%logits: tensor<4x16xbf16>, %t: tensor<4xi64>, %d: tensor<f32>) -> (tensor<f32>, tensor<4x16xbf16>) {
  %0 = llmc.cast %logits : tensor<4x16xbf16> -> tensor<4x16xf32>
  %1 = llmc.cross_entropy mean %0, %t : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  %2 = llmc.cross_entropy_grad mean %0, %t, %d : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x16xf32>
  %3 = llmc.cast %2 : tensor<4x16xf32> -> tensor<4x16xbf16>
  return %1, %3 : tensor<f32>, tensor<4x16xbf16>
}

// -----

// Negative: the widened value is also read by a reduce_sum, which loads no
// other type: the cast is written once, and the layer norm reads it.
// Negative too: the layer norm's f32 result is read twice, so its cast
// stays out of its store.
// CHECK-LABEL: func.func @shared_cast
// CHECK:       %[[C:.+]] = llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.cast %arg0
// CHECK-NEXT:    llmc.yield
// CHECK:       %[[N:.+]] = llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.layer_norm %[[C]]
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<4x8xbf16>) {
// CHECK-NEXT:    llmc.cast %[[N]]
// CHECK-NEXT:    llmc.yield
func.func @shared_cast(%x: tensor<4x8xbf16>) -> (tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>) {
  %0 = llmc.cast %x : tensor<4x8xbf16> -> tensor<4x8xf32>
  %1 = llmc.layer_norm %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = llmc.reduce_sum %0 axes [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %3 = llmc.cast %1 : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %2, %1, %3 : tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>
}

// -----

// A layer norm gradient loads its bf16 cotangent through the cast; its dx
// is stored as bf16 through the narrowing cast; the weight sums stay f32.
// CHECK-LABEL: func.func @norm_grad
// CHECK:       llmc.kernel -> (tensor<8xf32>, tensor<4x8xbf16>) {
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %arg1 : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[G:.+]]:2 = llmc.layer_norm_grad %arg0, %[[C]] weight %arg2
// CHECK-NEXT:    %[[N:.+]] = llmc.cast %[[G]]#0 : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT:    llmc.yield %[[G]]#1, %[[N]]
func.func @norm_grad(%x: tensor<4x8xf32>, %dy: tensor<4x8xbf16>, %w: tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<8xf32>) {
  %0 = llmc.cast %dy : tensor<4x8xbf16> -> tensor<4x8xf32>
  %1:2 = llmc.layer_norm_grad %x, %0 weight %w : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  %2 = llmc.cast %1#0 : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %2, %1#1 : tensor<4x8xbf16>, tensor<8xf32>
}

// -----

// Negative: a widening cast into the weight of a layer norm (not loaded
// through the value's type) and a narrowing cast after a reduce_sum (its
// emitter's store is not the cast's rounding) stay groups of their own.
// CHECK-LABEL: func.func @not_absorbed
// CHECK:       llmc.kernel -> (tensor<8xf32>) {
// CHECK-NEXT:    llmc.cast %arg1
// CHECK:       llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.layer_norm
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<8xf32>) {
// CHECK-NEXT:    llmc.reduce_sum
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<8xbf16>) {
// CHECK-NEXT:    llmc.cast
func.func @not_absorbed(%x: tensor<4x8xf32>, %w: tensor<8xbf16>) -> (tensor<4x8xf32>, tensor<8xbf16>) {
  %0 = llmc.cast %w : tensor<8xbf16> -> tensor<8xf32>
  %1 = llmc.layer_norm %x weight %0 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = llmc.reduce_sum %x axes [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %3 = llmc.cast %2 : tensor<8xf32> -> tensor<8xbf16>
  return %1, %3 : tensor<4x8xf32>, tensor<8xbf16>
}

// -----

// Horizontal: three independent casts of parameters are one group (three
// segments) in the place of the last; the matmul ends the run, so the cast
// after it is a group of its own.
// CHECK-LABEL: func.func @horizontal
// CHECK:       %[[H:.+]]:3 = llmc.kernel -> (tensor<16x8xbf16>, tensor<8xbf16>, tensor<4x16xbf16>) {
// CHECK-NEXT:    llmc.cast %arg0
// CHECK-NEXT:    llmc.cast %arg1
// CHECK-NEXT:    llmc.cast %arg2
// CHECK-NEXT:    llmc.yield
// CHECK:       %[[M:.+]] = llmc.kernel -> (tensor<4x8xbf16>) {
// CHECK-NEXT:    llmc.matmul %[[H]]#2, %[[H]]#0
// CHECK-NEXT:    llmc.add %{{.+}}, %[[H]]#1
// CHECK:       llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.cast %[[M]]
// CHECK-NEXT:    llmc.yield
func.func @horizontal(%w: tensor<16x8xf32>, %b: tensor<8xf32>, %x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  %0 = llmc.cast %w : tensor<16x8xf32> -> tensor<16x8xbf16>
  %1 = llmc.cast %b : tensor<8xf32> -> tensor<8xbf16>
  %2 = llmc.cast %x : tensor<4x16xf32> -> tensor<4x16xbf16>
  %3 = llmc.matmul %2, %0 : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %4 = llmc.add %3, %1 : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %5 = llmc.cast %4 : tensor<4x8xbf16> -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}

// -----

// Negative: the sub is the next value of %p (llmc.next) and may be written
// into %p's buffer, which the scale's segment would still read from other
// threads: it stays out of the horizontal group. The mul and the sub are
// one vertical chain, which reads %p only where it writes.
// CHECK-LABEL: func.func @next_value
// CHECK:       llmc.kernel -> (tensor<8xf32>) {
// CHECK-NEXT:    llmc.mul %arg0, %arg2
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<8xf32>) {
// CHECK-NEXT:    llmc.mul %arg1, %arg2
// CHECK-NEXT:    llmc.sub %arg0
// CHECK-NEXT:    llmc.yield
func.func @next_value(%p: tensor<8xf32>, %g: tensor<8xf32>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32> {llmc.next = 0 : i64}) {
  %0 = llmc.mul %p, %lr : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = llmc.mul %g, %lr : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %2 = llmc.sub %p, %1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0, %2 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Positive: the add is the next value of %step (llmc.next, the optimizer's
// step counter) and may be written into its buffer, but the div's segment
// does not read %step: the two are one horizontal group (the clip
// coefficient and the step counter of GPT-2's optimizer: one launch).
// CHECK-LABEL: func.func @next_value_disjoint
// CHECK:       llmc.kernel -> (tensor<f32>, tensor<f32>) {
// CHECK-DAG:     llmc.div %arg1, %arg2
// CHECK-DAG:     llmc.add %arg0, %arg3
// CHECK:         llmc.yield
// CHECK-NOT:   llmc.kernel
// OFF-LABEL:   func.func @next_value_disjoint
// OFF-COUNT-2: llmc.kernel
func.func @next_value_disjoint(%step: tensor<f32>, %a: tensor<f32>, %norm: tensor<f32>, %one: tensor<f32>) -> (tensor<f32>, tensor<f32> {llmc.next = 0 : i64}) {
  %0 = llmc.div %a, %norm : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %1 = llmc.add %step, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}

// -----

// The widened cotangent reaches the norm gradient through a reshape (the
// ONNX view after a dgrad matmul): the cast moves behind the reshape and
// rides in the gradient's load; the reshape then reads the bf16 value.
// CHECK-LABEL: func.func @widen_through_reshape
// CHECK:       %[[R:.+]] = llmc.reshape %arg1 : tensor<8x8xbf16> -> tensor<2x4x8xbf16>
// CHECK-NEXT:  llmc.kernel -> (tensor<2x4x8xf32>, tensor<8xf32>) {
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %[[R]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK-NEXT:    llmc.layer_norm_grad %arg0, %[[C]]
// CHECK-NOT:   llmc.cast
// OFF-LABEL:   func.func @widen_through_reshape
// OFF:         llmc.cast %arg1 : tensor<8x8xbf16> -> tensor<8x8xf32>
func.func @widen_through_reshape(%x: tensor<2x4x8xf32>, %dy: tensor<8x8xbf16>, %w: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>) {
  %0 = llmc.cast %dy : tensor<8x8xbf16> -> tensor<8x8xf32>
  %1 = llmc.reshape %0 : tensor<8x8xf32> -> tensor<2x4x8xf32>
  %2:2 = llmc.layer_norm_grad %x, %1 weight %w : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  return %2#0, %2#1 : tensor<2x4x8xf32>, tensor<8xf32>
}

// -----

// Negative: the reshaped widened value is also read by a reduce_sum (it
// loads no other type): the cast stays a group of its own, before the
// reshape.
// CHECK-LABEL: func.func @widen_through_shared_reshape
// CHECK:       llmc.kernel -> (tensor<8x8xf32>) {
// CHECK-NEXT:    llmc.cast %arg1 : tensor<8x8xbf16> -> tensor<8x8xf32>
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.reshape %{{.+}} : tensor<8x8xf32> -> tensor<2x4x8xf32>
func.func @widen_through_shared_reshape(%x: tensor<2x4x8xf32>, %dy: tensor<8x8xbf16>, %w: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = llmc.cast %dy : tensor<8x8xbf16> -> tensor<8x8xf32>
  %1 = llmc.reshape %0 : tensor<8x8xf32> -> tensor<2x4x8xf32>
  %2:2 = llmc.layer_norm_grad %x, %1 weight %w : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  %3 = llmc.reduce_sum %1 axes [0, 1] : (tensor<2x4x8xf32>) -> tensor<8xf32>
  return %2#0, %2#1, %3 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// RoPE under autocast (Llama): the bf16 projection is widened for the f32
// rotary and its result rounded back for attention. Both casts ride in
// the rotary kernel's load and store: one group, bf16 in and out.
// CHECK-LABEL: func.func @rotary_casts
// CHECK:       %[[K:.+]] = llmc.kernel -> (tensor<2x5x4x8xbf16>) {
// CHECK-NEXT:    %[[W:.+]] = llmc.cast %arg0 : tensor<2x5x4x8xbf16> -> tensor<2x5x4x8xf32>
// CHECK-NEXT:    %[[R:.+]] = llmc.rotary %[[W]], %arg1, %arg2
// CHECK-NEXT:    %[[N:.+]] = llmc.cast %[[R]] : tensor<2x5x4x8xf32> -> tensor<2x5x4x8xbf16>
// CHECK-NEXT:    llmc.yield %[[N]]
// CHECK-NEXT:  }
// CHECK-NEXT:  return %[[K]]
// OFF-LABEL:   func.func @rotary_casts
// OFF-COUNT-3: llmc.kernel
func.func @rotary_casts(%q: tensor<2x5x4x8xbf16>, %c: tensor<5x1x8xf32>, %s: tensor<5x1x8xf32>) -> tensor<2x5x4x8xbf16> {
  %0 = llmc.cast %q : tensor<2x5x4x8xbf16> -> tensor<2x5x4x8xf32>
  %1 = llmc.rotary %0, %c, %s : (tensor<2x5x4x8xf32>, tensor<5x1x8xf32>, tensor<5x1x8xf32>) -> tensor<2x5x4x8xf32>
  %2 = llmc.cast %1 : tensor<2x5x4x8xf32> -> tensor<2x5x4x8xbf16>
  return %2 : tensor<2x5x4x8xbf16>
}

// -----

// Negative: the widened input is also returned (it is written once, and
// the rotary reads it), and the rotary's f32 result is too (its cast
// cannot replace the store): three groups.
// CHECK-LABEL: func.func @rotary_casts_shared
// CHECK:       %[[W:.+]] = llmc.kernel -> (tensor<2x5x8xf32>) {
// CHECK-NEXT:    llmc.cast %arg0
// CHECK-NEXT:    llmc.yield
// CHECK:       %[[R:.+]] = llmc.kernel -> (tensor<2x5x8xf32>) {
// CHECK-NEXT:    llmc.rotary %[[W]], %arg1, %arg2
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<2x5x8xbf16>) {
// CHECK-NEXT:    llmc.cast %[[R]]
// CHECK-NEXT:    llmc.yield
func.func @rotary_casts_shared(%q: tensor<2x5x8xbf16>, %c: tensor<5x8xf32>, %s: tensor<5x8xf32>) -> (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xbf16>) {
  %0 = llmc.cast %q : tensor<2x5x8xbf16> -> tensor<2x5x8xf32>
  %1 = llmc.rotary %0, %c, %s : (tensor<2x5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf32>
  %2 = llmc.cast %1 : tensor<2x5x8xf32> -> tensor<2x5x8xbf16>
  return %0, %1, %2 : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xbf16>
}

// -----

// Negative: widened tables are not loaded through their type by the
// rotary kernel (only its input is): the cast stays a group of its own.
// CHECK-LABEL: func.func @rotary_table_cast
// CHECK:       %[[T:.+]] = llmc.kernel -> (tensor<5x8xf32>) {
// CHECK-NEXT:    llmc.cast %arg1
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<2x5x8xf32>) {
// CHECK-NEXT:    llmc.rotary %arg0, %[[T]], %[[T]]
// CHECK-NEXT:    llmc.yield
func.func @rotary_table_cast(%q: tensor<2x5x8xf32>, %t: tensor<5x8xbf16>) -> tensor<2x5x8xf32> {
  %0 = llmc.cast %t : tensor<5x8xbf16> -> tensor<5x8xf32>
  %1 = llmc.rotary %q, %0, %0 : (tensor<2x5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf32>
  return %1 : tensor<2x5x8xf32>
}

// -----

// Siblings: SwiGLU's backward. d_up = dy * silu(gate) is read by the up
// projection's gradient GEMM; d_gate = silu_grad(gate, dy * up) comes
// after it. Both read dy element for element, so the later group joins
// the earlier one at its place (every input exists there): one kernel
// that loads dy once and writes both gradients. d_gate is then live from
// there on, but dy (the product, read by nothing else) dies there
// instead: no more bytes live in between.
// CHECK-LABEL: func.func @swiglu_backward
// CHECK:       %[[D:.+]] = llmc.kernel -> (tensor<4x16xbf16>) {
// CHECK-NEXT:    llmc.matmul %arg0, %arg5
// CHECK:       %[[K:.+]]:2 = llmc.kernel -> (tensor<4x16xbf16>, tensor<4x16xbf16>) {
// CHECK-NEXT:    %[[U:.+]] = llmc.mul %[[D]], %arg3
// CHECK-NEXT:    %[[M:.+]] = llmc.mul %[[D]], %arg2
// CHECK-NEXT:    %[[G:.+]] = llmc.silu_grad %arg1, %[[M]]
// CHECK-NEXT:    llmc.yield %[[U]], %[[G]]
// CHECK:       llmc.matmul %[[K]]#0, %arg4
// OFF-LABEL:   func.func @swiglu_backward
// OFF-COUNT-5: llmc.kernel
func.func @swiglu_backward(%h: tensor<4x8xbf16>, %gate: tensor<4x16xbf16>, %up: tensor<4x16xbf16>, %s: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %wd: tensor<8x16xbf16>) -> (tensor<4x8xbf16>, tensor<4x16xbf16>) {
  %dy = llmc.matmul %h, %wd : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %0 = llmc.mul %dy, %s : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %1 = llmc.matmul %0, %w : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %2 = llmc.mul %dy, %up : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %3 = llmc.silu_grad %gate, %2 : tensor<4x16xbf16>
  return %1, %3 : tensor<4x8xbf16>, tensor<4x16xbf16>
}

// -----

// Negative siblings: the later group reads a value computed after the
// earlier group (the matmul's product): it stays where it is.
// CHECK-LABEL: func.func @sibling_input_later
// CHECK:       llmc.kernel -> (tensor<4x16xf32>) {
// CHECK-NEXT:    llmc.mul %arg0, %arg1
// CHECK-NEXT:    llmc.yield
// CHECK:       %[[P:.+]] = llmc.kernel -> (tensor<4x16xf32>) {
// CHECK-NEXT:    llmc.matmul
// CHECK:       llmc.kernel -> (tensor<4x16xf32>) {
// CHECK-NEXT:    llmc.add %arg0, %[[P]]
// CHECK-NEXT:    llmc.yield
func.func @sibling_input_later(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>, %w: tensor<16x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = llmc.mul %x, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = llmc.matmul %0, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %2 = llmc.add %x, %1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0, %2 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Negative siblings: the later group broadcasts the shared value (its
// iteration space is not the value's), so loading it once per item of one
// segment is not possible: it stays where it is.
// CHECK-LABEL: func.func @sibling_broadcast
// CHECK:       llmc.kernel -> (tensor<4x16xf32>) {
// CHECK-NEXT:    llmc.mul %arg0, %arg1
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.matmul
// CHECK:       llmc.kernel -> (tensor<2x4x16xf32>) {
// CHECK-NEXT:    llmc.sub %arg3, %arg0
// CHECK-NEXT:    llmc.yield
func.func @sibling_broadcast(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>, %w: tensor<16x16xf32>, %z: tensor<2x4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>) {
  %0 = llmc.mul %x, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = llmc.matmul %0, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %2 = llmc.sub %z, %x : (tensor<2x4x16xf32>, tensor<4x16xf32>) -> tensor<2x4x16xf32>
  return %0, %1, %2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>
}

// -----

// Negative siblings: here dy is an argument, whose buffer no move frees,
// so joining would only make d_gate live earlier (more bytes across the
// GEMM): the groups stay apart.
// CHECK-LABEL: func.func @sibling_grows_live_bytes
// CHECK:       llmc.kernel -> (tensor<4x16xbf16>) {
// CHECK-NEXT:    llmc.mul %arg0, %arg3
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.matmul
// CHECK:       llmc.kernel -> (tensor<4x16xbf16>) {
// CHECK-NEXT:    llmc.mul %arg0, %arg2
// CHECK-NEXT:    llmc.silu_grad
func.func @sibling_grows_live_bytes(%dy: tensor<4x16xbf16>, %gate: tensor<4x16xbf16>, %up: tensor<4x16xbf16>, %s: tensor<4x16xbf16>, %w: tensor<16x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x16xbf16>) {
  %0 = llmc.mul %dy, %s : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %1 = llmc.matmul %0, %w : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %2 = llmc.mul %dy, %up : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %3 = llmc.silu_grad %gate, %2 : tensor<4x16xbf16>
  return %1, %3 : tensor<4x8xbf16>, tensor<4x16xbf16>
}

// -----

// Recomputation: SwiGLU's forward keeps silu(gate) only for the backward's
// d_up = dy * silu(gate); the backward group reads gate anyway (for
// silu_grad), so it computes silu(gate) itself and the forward group no
// longer yields it (nothing written, nothing read back).
// CHECK-LABEL: func.func @recompute_silu
// CHECK:       llmc.kernel -> (tensor<4x16xbf16>) {
// CHECK-NEXT:    %[[S:.+]] = llmc.silu %arg0
// CHECK-NEXT:    %[[H:.+]] = llmc.mul %[[S]], %arg1
// CHECK-NEXT:    llmc.yield %[[H]]
// CHECK:       llmc.matmul
// CHECK:       llmc.kernel -> (tensor<4x16xbf16>, tensor<4x16xbf16>) {
// CHECK-NEXT:    %[[R:.+]] = llmc.silu %arg0
// CHECK-NEXT:    llmc.mul %[[DY:[0-9]+]], %[[R]]
// CHECK-NEXT:    llmc.mul %[[DY]], %arg1
// CHECK-NEXT:    llmc.silu_grad %arg0
// CHECK-NEXT:    llmc.yield
func.func @recompute_silu(%gate: tensor<4x16xbf16>, %up: tensor<4x16xbf16>, %w: tensor<16x16xbf16>, %v: tensor<16x16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>) {
  %s = llmc.silu %gate : tensor<4x16xbf16>
  %h = llmc.mul %s, %up : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %dy = llmc.matmul %h, %w : (tensor<4x16xbf16>, tensor<16x16xbf16>) -> tensor<4x16xbf16>
  %0 = llmc.mul %dy, %s : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %2 = llmc.mul %dy, %up : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %3 = llmc.silu_grad %gate, %2 : tensor<4x16xbf16>
  return %0, %3 : tensor<4x16xbf16>, tensor<4x16xbf16>
}

// -----

// Negative recomputation: the later group does not read x, which exp(x)
// needs (recomputing would load x instead of exp(x): no bytes saved); and
// exp's other operand chain (the add, computed inside the first group) is
// no tensor the later group reads either. The first group keeps yielding
// both values.
// CHECK-LABEL: func.func @recompute_needs_new_input
// CHECK:       llmc.kernel -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
// CHECK-NEXT:    llmc.exp %arg0
// CHECK-NEXT:    llmc.add
// CHECK-NEXT:    llmc.exp
// CHECK:       llmc.matmul
// CHECK:       llmc.kernel -> (tensor<4x16xf32>) {
// CHECK-NEXT:    llmc.mul
// CHECK-NEXT:    llmc.mul
// CHECK-NEXT:    llmc.yield
func.func @recompute_needs_new_input(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>, %w: tensor<16x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %e = llmc.exp %x : tensor<4x16xf32>
  %a = llmc.add %e, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %f = llmc.exp %a : tensor<4x16xf32>
  %m = llmc.matmul %f, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %0 = llmc.mul %m, %e : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = llmc.mul %0, %a : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1, %m : tensor<4x16xf32>, tensor<4x16xf32>
}
