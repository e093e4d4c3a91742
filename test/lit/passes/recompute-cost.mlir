// RUN: llmc-opt %s --split-input-file --llmc-rematerialize="levels=1 max-levels=3" | FileCheck %s --check-prefix=ONE
// RUN: llmc-opt %s --split-input-file --llmc-rematerialize="levels=2 max-levels=3" | FileCheck %s --check-prefix=TWO
// RUN: llmc-opt %s --split-input-file --llmc-rematerialize="levels=3 max-levels=3" | FileCheck %s --check-prefix=ALL

// The order is the modelled recompute time per byte no longer kept, given
// what comes before (docs/memory.md, "The order"), not the op's class. An
// MLP block in bf16, 2048 x 768 -> 3072, as GPT-2's: the GELU from the
// kept pre-activation reads and writes 12 MiB, 11.0 us, and comes first;
// then the pre-activation (matmul + bias add, 12 MiB): its GEMM costs
// 15.8 us, but the GELU copy then rides in that GEMM's epilogue (cuBLASLt
// GELU_AUX) instead of a kernel of its own, so it adds only 4.8 us; the
// layer norm (3 MiB for 4.2 us) is the dearest per byte and comes last,
// although class then position (the old order) took it first and the
// matmul last. The copies are what the model priced: the GELU copy reads
// the add copy.

// ONE: values = [{bytes = 12582912 : i64, class = 0 : i64, modelled_ns = 10988 : i64, op = "llmc.gelu", ops = 1 : i64, position = 4 : i64}]
// ONE-LABEL: func.func @mlp_bf16
// ONE: llmc.reduce_sum
// ONE-NOT: llmc.recomputed
// ONE: %[[G:.+]] = llmc.gelu tanh %[[P:[^ ]+]] {llmc.recomputed}
// ONE-NEXT: llmc.matmul %[[G]], %{{.+}} {transpose_lhs}
// ONE: llmc.gelu_grad tanh %[[P]]
// ONE-NOT: llmc.recomputed

// TWO: modelled_ns = 15805 : i64, values = [{{.*}}op = "llmc.gelu"{{.*}}}, {bytes = 12582912 : i64, class = 2 : i64, modelled_ns = 4817 : i64, op = "llmc.add", ops = 2 : i64, position = 3 : i64}]
// TWO-LABEL: func.func @mlp_bf16
// TWO-SAME: (%[[X:[^:]+]]: tensor<2048x768xbf16> {llmc.input = "x"}, %[[W1:[^:]+]]: tensor<768x3072xbf16> {llmc.param = "w1"}, %[[B1:[^:]+]]: tensor<3072xbf16>
// TWO: %[[N:.+]] = llmc.layer_norm %[[X]]
// TWO: llmc.reduce_sum
// TWO-NOT: llmc.layer_norm
// TWO: %[[H:.+]] = llmc.matmul %[[N]], %[[W1]] {llmc.recomputed}
// TWO-NEXT: %[[P:.+]] = llmc.add %[[H]], %[[B1]] {llmc.recomputed}
// TWO-NEXT: %[[G:.+]] = llmc.gelu tanh %[[P]] {llmc.recomputed}
// TWO-NEXT: llmc.matmul %[[G]], %{{.+}} {transpose_lhs}
// TWO: llmc.gelu_grad tanh %[[P]]

// ALL: modelled_ns = 20052 : i64, values = [{{.*}}op = "llmc.gelu"{{.*}}op = "llmc.add"{{.*}}{bytes = 3145728 : i64, class = 0 : i64, modelled_ns = 4247 : i64, op = "llmc.layer_norm", ops = 1 : i64, position = 1 : i64}]
// ALL-LABEL: func.func @mlp_bf16
// ALL: llmc.reduce_sum
// ALL: %[[N:.+]] = llmc.layer_norm %{{.+}} {llmc.recomputed}
// ALL: llmc.matmul %[[N]], %{{.+}} {llmc.recomputed}
func.func @mlp_bf16(%x: tensor<2048x768xbf16> {llmc.input = "x"},
               %w1: tensor<768x3072xbf16> {llmc.param = "w1"},
               %b1: tensor<3072xbf16> {llmc.param = "b1"},
               %w2: tensor<3072x768xbf16> {llmc.param = "w2"})
    -> (tensor<bf16> {llmc.output = "loss"}, tensor<2048x768xbf16> {llmc.grad_of = "x"},
        tensor<768x3072xbf16> {llmc.grad_of = "w1"}, tensor<3072x768xbf16> {llmc.grad_of = "w2"}) {
  %dy = llmc.constant dense<1.0> : tensor<2048x768xbf16>
  %n = llmc.layer_norm %x : (tensor<2048x768xbf16>) -> tensor<2048x768xbf16>
  %h = llmc.matmul %n, %w1 : (tensor<2048x768xbf16>, tensor<768x3072xbf16>) -> tensor<2048x3072xbf16>
  %p = llmc.add %h, %b1 : (tensor<2048x3072xbf16>, tensor<3072xbf16>) -> tensor<2048x3072xbf16>
  %g = llmc.gelu tanh %p : tensor<2048x3072xbf16>
  %y = llmc.matmul %g, %w2 : (tensor<2048x3072xbf16>, tensor<3072x768xbf16>) -> tensor<2048x768xbf16>
  %loss = llmc.reduce_sum %y axes [0, 1] : (tensor<2048x768xbf16>) -> tensor<bf16>
  %dn = llmc.mul %n, %dy : (tensor<2048x768xbf16>, tensor<2048x768xbf16>) -> tensor<2048x768xbf16>
  %dw2 = llmc.matmul %g, %dy {transpose_lhs} : (tensor<2048x3072xbf16>, tensor<2048x768xbf16>) -> tensor<3072x768xbf16>
  %dg = llmc.matmul %dy, %w2 {transpose_rhs} : (tensor<2048x768xbf16>, tensor<3072x768xbf16>) -> tensor<2048x3072xbf16>
  %dp = llmc.gelu_grad tanh %p, %dg : tensor<2048x3072xbf16>
  %dw1 = llmc.matmul %n, %dp {transpose_lhs} : (tensor<2048x768xbf16>, tensor<2048x3072xbf16>) -> tensor<768x3072xbf16>
  return %loss, %dn, %dw1, %dw2 : tensor<bf16>, tensor<2048x768xbf16>, tensor<768x3072xbf16>, tensor<3072x768xbf16>
}


// -----

// The same block in f32: cuBLASLt's GELU epilogue takes bf16 and f16
// products only, so the GELU stays a kernel of its own whatever precedes
// it (20.0 us). The pre-activation's GEMM (16.6 us, bytes-bound in f32)
// is now the cheapest per byte and comes first, the GELU second at its
// full price, the layer norm last.

// ONE: values = [{bytes = 25165824 : i64, class = 2 : i64, modelled_ns = 16605 : i64, op = "llmc.add", ops = 2 : i64, position = 3 : i64}]
// ONE-LABEL: func.func @mlp_f32
// ONE: llmc.reduce_sum
// ONE-NOT: llmc.layer_norm
// ONE: %[[H:.+]] = llmc.matmul %{{.+}}, %{{.+}} {llmc.recomputed}
// ONE-NEXT: %[[P:.+]] = llmc.add %[[H]], %{{.+}} {llmc.recomputed}
// ONE-NEXT: llmc.gelu_grad tanh %[[P]]
// ONE-NOT: llmc.recomputed

// TWO: modelled_ns = 36581 : i64, values = [{{.*}}op = "llmc.add"{{.*}}}, {bytes = 25165824 : i64, class = 0 : i64, modelled_ns = 19976 : i64, op = "llmc.gelu", ops = 1 : i64, position = 4 : i64}]
// TWO-LABEL: func.func @mlp_f32
// TWO-SAME: (%[[X:[^:]+]]: tensor<2048x768xf32> {llmc.input = "x"}, %[[W1:[^:]+]]: tensor<768x3072xf32> {llmc.param = "w1"}, %[[B1:[^:]+]]: tensor<3072xf32>
// TWO: %[[N:.+]] = llmc.layer_norm %[[X]]
// TWO: llmc.reduce_sum
// TWO-NOT: llmc.layer_norm
// TWO: %[[H:.+]] = llmc.matmul %[[N]], %[[W1]] {llmc.recomputed}
// TWO-NEXT: %[[P:.+]] = llmc.add %[[H]], %[[B1]] {llmc.recomputed}
// TWO-NEXT: %[[G:.+]] = llmc.gelu tanh %[[P]] {llmc.recomputed}
// TWO-NEXT: llmc.matmul %[[G]], %{{.+}} {transpose_lhs}
// TWO: llmc.gelu_grad tanh %[[P]]

// ALL: modelled_ns = 43075 : i64, values = [{{.*}}op = "llmc.add"{{.*}}op = "llmc.gelu"{{.*}}{bytes = 6291456 : i64, class = 0 : i64, modelled_ns = 6494 : i64, op = "llmc.layer_norm", ops = 1 : i64, position = 1 : i64}]
// ALL-LABEL: func.func @mlp_f32
// ALL: llmc.reduce_sum
// ALL: %[[N:.+]] = llmc.layer_norm %{{.+}} {llmc.recomputed}
// ALL: llmc.matmul %[[N]], %{{.+}} {llmc.recomputed}
func.func @mlp_f32(%x: tensor<2048x768xf32> {llmc.input = "x"},
               %w1: tensor<768x3072xf32> {llmc.param = "w1"},
               %b1: tensor<3072xf32> {llmc.param = "b1"},
               %w2: tensor<3072x768xf32> {llmc.param = "w2"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<2048x768xf32> {llmc.grad_of = "x"},
        tensor<768x3072xf32> {llmc.grad_of = "w1"}, tensor<3072x768xf32> {llmc.grad_of = "w2"}) {
  %dy = llmc.constant dense<1.0> : tensor<2048x768xf32>
  %n = llmc.layer_norm %x : (tensor<2048x768xf32>) -> tensor<2048x768xf32>
  %h = llmc.matmul %n, %w1 : (tensor<2048x768xf32>, tensor<768x3072xf32>) -> tensor<2048x3072xf32>
  %p = llmc.add %h, %b1 : (tensor<2048x3072xf32>, tensor<3072xf32>) -> tensor<2048x3072xf32>
  %g = llmc.gelu tanh %p : tensor<2048x3072xf32>
  %y = llmc.matmul %g, %w2 : (tensor<2048x3072xf32>, tensor<3072x768xf32>) -> tensor<2048x768xf32>
  %loss = llmc.reduce_sum %y axes [0, 1] : (tensor<2048x768xf32>) -> tensor<f32>
  %dn = llmc.mul %n, %dy : (tensor<2048x768xf32>, tensor<2048x768xf32>) -> tensor<2048x768xf32>
  %dw2 = llmc.matmul %g, %dy {transpose_lhs} : (tensor<2048x3072xf32>, tensor<2048x768xf32>) -> tensor<3072x768xf32>
  %dg = llmc.matmul %dy, %w2 {transpose_rhs} : (tensor<2048x768xf32>, tensor<3072x768xf32>) -> tensor<2048x3072xf32>
  %dp = llmc.gelu_grad tanh %p, %dg : tensor<2048x3072xf32>
  %dw1 = llmc.matmul %n, %dp {transpose_lhs} : (tensor<2048x768xf32>, tensor<2048x3072xf32>) -> tensor<768x3072xf32>
  return %loss, %dn, %dw1, %dw2 : tensor<f32>, tensor<2048x768xf32>, tensor<768x3072xf32>, tensor<3072x768xf32>
}

// -----

// Candidates whose closures share a matmul are one unit (q, k and v of one
// projection): alone, each would pay the whole product. The two halves of
// %m are priced and taken together (13.5 us for 4 MiB, after the exp's
// 3.5 us for 2 MiB), and a level's even cut moves to the end of the unit
// it falls in: level 1 of 3 recomputes the exp, level 2 (the cut 2 falls
// between the halves) all three, with one copy of the matmul.

// ONE-LABEL: func.func @unit
// ONE: llmc.reduce_sum
// ONE: llmc.exp %{{.+}} {llmc.recomputed}
// ONE-NOT: llmc.recomputed
// TWO: {candidates = 3 : i64, func = "unit", level = 2 : i64, levels = 3 : i64, modelled_ns = {{[0-9]+}} : i64, values = [{{.*}}op = "llmc.exp"{{.*}}op = "llmc.slice"{{.*}}op = "llmc.slice"
// TWO-LABEL: func.func @unit
// TWO: llmc.reduce_sum
// TWO: llmc.exp %{{.+}} {llmc.recomputed}
// TWO: %[[M:.+]] = llmc.matmul %{{.+}}, %{{.+}} {llmc.recomputed}
// TWO: llmc.slice %[[M]] {{.*}}llmc.recomputed
// TWO: llmc.slice %[[M]] {{.*}}llmc.recomputed
// TWO-NOT: llmc.matmul
// ALL-LABEL: func.func @unit
func.func @unit(%x: tensor<1024x512xf32> {llmc.input = "x"},
                %w: tensor<512x1024xf32> {llmc.param = "w"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<1024x512xf32> {llmc.grad_of = "x"},
        tensor<1024x512xf32> {llmc.grad_of = "w"}) {
  %e = llmc.exp %x : tensor<1024x512xf32>
  %m = llmc.matmul %x, %w : (tensor<1024x512xf32>, tensor<512x1024xf32>) -> tensor<1024x1024xf32>
  %a = llmc.slice %m starts [0, 0] limits [1024, 512] strides [1, 1] : (tensor<1024x1024xf32>) -> tensor<1024x512xf32>
  %b = llmc.slice %m starts [0, 512] limits [1024, 1024] strides [1, 1] : (tensor<1024x1024xf32>) -> tensor<1024x512xf32>
  %ab = llmc.mul %a, %b : (tensor<1024x512xf32>, tensor<1024x512xf32>) -> tensor<1024x512xf32>
  %s = llmc.add %ab, %e : (tensor<1024x512xf32>, tensor<1024x512xf32>) -> tensor<1024x512xf32>
  %loss = llmc.reduce_sum %s axes [0, 1] : (tensor<1024x512xf32>) -> tensor<f32>
  %de = llmc.mul %e, %e : (tensor<1024x512xf32>, tensor<1024x512xf32>) -> tensor<1024x512xf32>
  %da = llmc.mul %b, %de : (tensor<1024x512xf32>, tensor<1024x512xf32>) -> tensor<1024x512xf32>
  %t = llmc.mul %a, %da : (tensor<1024x512xf32>, tensor<1024x512xf32>) -> tensor<1024x512xf32>
  %db = llmc.add %t, %e : (tensor<1024x512xf32>, tensor<1024x512xf32>) -> tensor<1024x512xf32>
  return %loss, %da, %db : tensor<f32>, tensor<1024x512xf32>, tensor<1024x512xf32>
}

// -----

// Not candidates (ONE forces every level): a view of a kept value (its copy
// keeps the value alive: nothing is saved), and a value computed once the
// backward began (the chunked classifier's later chunks; alive over none
// of it). The exp before the backward is recomputed.

// ONE-LABEL: func.func @not_candidates
// ONE: llmc.reduce_sum
// ONE: llmc.exp %{{.+}} {llmc.recomputed}
// ONE-NOT: llmc.recomputed
// TWO-LABEL: func.func @not_candidates
// ALL-LABEL: func.func @not_candidates
func.func @not_candidates(%x: tensor<64x64xf32> {llmc.input = "x"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<64x64xf32> {llmc.grad_of = "x"},
        tensor<4096xf32> {llmc.output = "flat"}) {
  %a = llmc.exp %x : tensor<64x64xf32>
  %r = llmc.reshape %a : tensor<64x64xf32> -> tensor<4096xf32>
  %s1 = llmc.reduce_sum %r axes [0] : (tensor<4096xf32>) -> tensor<f32>
  %d1 = llmc.mul %a, %x : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = llmc.sin %x : tensor<64x64xf32>
  %s2 = llmc.reduce_sum %b axes [0, 1] : (tensor<64x64xf32>) -> tensor<f32>
  %loss = llmc.add %s1, %s2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %d2 = llmc.mul %b, %d1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %d3 = llmc.mul %a, %d2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %f = llmc.mul %r, %r : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
  return %loss, %d3, %f : tensor<f32>, tensor<64x64xf32>, tensor<4096xf32>
}
