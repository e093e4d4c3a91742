//===- KernelPasses.td - llmc kernel formation passes ------*- tablegen -*-===//
//
// Part of Passes.td (which includes it); alphabetical within the group.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_KERNEL_PASSES_TD
#define LLMC_KERNEL_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Kernel formation: llmc.kernel groups for the CUDA backend (docs/kernel-ir.md)
//===----------------------------------------------------------------------===//

def FoldAttentionTransposesPass
    : Pass<"llmc-fold-attention-transposes", "::mlir::func::FuncOp"> {
  let summary = "Attention reads and writes [B, T, H, D]: no transposes around it";
  let description = [{
    Runs before `llmc-form-kernels`. Attention ops whose q, k, v (and, for
    `attention_grad`, output and grad) are `[0, 2, 1, 3]` transposes of
    `[B, T, H, D]` values and whose results are only transposed back become
    `seq_major`: they read the values before the transposes and their
    results are the transposes' results (docs/fusion.md):
    ```mlir
    %q = llmc.transpose %x [0, 2, 1, 3] : (tensor<2x8x4x16xbf16>) -> tensor<2x4x8x16xbf16>
    ... same for %k, %v
    %o, %lse = llmc.attention_lse %q, %k, %v {causal} : ...
    %y = llmc.transpose %o [0, 2, 1, 3] : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
    // =>
    %y, %lse = llmc.attention_lse %x, %xk, %xv {causal, seq_major} : (tensor<2x8x4x16xbf16>, ...) -> (tensor<2x8x4x16xbf16>, tensor<2x4x8xf32>)
    ```
    Ops that share a value (attention_lse and the attention_grad that
    reads its q, k, v and output) switch together or not at all. A
    transpose with another reader, another permutation, or an op between
    the transpose and the attention (RoPE on q and k) keeps the op and its
    transposes as they are. Numerics are unchanged: only the addressing
    differs.
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def FoldMatmulTransposesPass
    : Pass<"llmc-fold-matmul-transposes", "::mlir::func::FuncOp"> {
  let summary = "A transpose of a matmul operand's last two dims becomes its flag";
  let description = [{
    Runs right after raising (attention raising matches the explicit
    transpose of k). `matmul(x, transpose(w))` with a transpose that swaps
    the last two dims and keeps the others becomes `matmul(x, w)
    {transpose_rhs}` (toggling a flag already set; the same for the lhs),
    and the transpose goes when nothing else reads it: no copy of the
    weight forward, and the matmul's VJP writes the weight gradient in the
    weight's layout, so none backward either.
  }];
}

def SinkRotaryTransposesPass
    : Pass<"llmc-sink-rotary-transposes", "::mlir::func::FuncOp"> {
  let summary = "RoPE in the projection's layout, its transpose moved after it";
  let description = [{
    Runs right after raising. `rotary(transpose(x, p), cos, sin)` with a
    transpose that keeps the feature dim last becomes
    `transpose(rotary(x, view(cos), view(sin)), p)` when the tables reach
    x's layout by a view (only size-1 dims move): the transpose then feeds
    attention directly and `llmc-fold-attention-transposes` can remove it
    (Llama-style exports). Tables that would need a real transpose keep the
    op as it is.
  }];
}

def FoldQkvSlicesPass : Pass<"llmc-fold-qkv-slices", "::mlir::func::FuncOp"> {
  let summary = "Attention reads q, k, v as head windows of the packed qkv: no split, no concat";
  let description = [{
    Runs after `llmc-fold-attention-transposes`, before `llmc-form-kernels`.
    When the three pieces of a split of `[B, T, X]` along X are viewed
    `[B, T, H, D]` and read only as q, k, v of `seq_major` attention ops,
    and every attention_grad among them has dq, dk, dv viewed back and
    concatenated in the same order, the ops read the split's input viewed
    `[B, T, Hq + 2 Hkv, D]` with `qkv_heads = [Hq, Hkv]`, attention_grad
    writes one packed gradient, and the split and the concat disappear
    (docs/fusion.md):
    ```mlir
    %q, %k, %v = llmc.split %qkv axis 2 sizes [64, 64, 64] : ...
    %q4 = llmc.reshape %q : tensor<2x8x64xbf16> -> tensor<2x8x4x16xbf16>
    ... same for %k4, %v4
    %o, %lse = llmc.attention_lse %q4, %k4, %v4 {causal, seq_major} : ...
    %dq, %dk, %dv = llmc.attention_grad %q4, %k4, %v4, %o, %lse, %dy {causal, seq_major} : ...
    ... views of %dq, %dk, %dv back to [2, 8, 64]
    %dqkv = llmc.concat %dq3, %dk3, %dv3 axis 2 : ... -> tensor<2x8x192xbf16>
    // =>
    %p = llmc.reshape %qkv : tensor<2x8x192xbf16> -> tensor<2x8x12x16xbf16>
    %o, %lse = llmc.attention_lse %p, %p, %p {causal, qkv_heads = array<i64: 4, 4>, seq_major} : ...
    %g = llmc.attention_grad %p, %p, %p, %o, %lse, %dy {causal, qkv_heads = array<i64: 4, 4>, seq_major} : ... -> tensor<2x8x12x16xbf16>
    %dqkv = llmc.reshape %g : tensor<2x8x12x16xbf16> -> tensor<2x8x192xbf16>
    ```
    A piece with another reader, an op between the split and attention
    (RoPE), or gradients that are not concatenated back leave the split,
    the concat and the ops as they are. Numerics are unchanged: only the
    addressing differs.
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def FormKernelsPass : Pass<"llmc-form-kernels", "::mlir::func::FuncOp"> {
  let summary = "Put every compute op in an llmc.kernel group of its own";
  let description = [{
    Wraps each op of the function body that launches something (a generated
    kernel or a library call) in a one-op `llmc.kernel` whose results are
    the op's, so that what the CUDA backend did implicitly (one launch per
    op) is IR that later passes merge:
    ```mlir
    %1 = llmc.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    // =>
    %1 = llmc.kernel -> (tensor<8xf32>) {
      %2 = llmc.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      llmc.yield %2 : tensor<8xf32>
    }
    ```
    `llmc.reshape` (its result is its operand's buffer) and `llmc.constant`
    (a buffer with initial data) launch nothing and stay outside groups, as
    do terminators and ops already in a group: the pass is idempotent. Ops
    of other dialects are grouped too; the backend rejects those it cannot
    lower, naming the op. A matmul whose batch dims broadcast partially
    (`[2, 4]` against `[2, 1]`) has no single batch stride for cuBLASLt:
    the broadcasting operand gets an `llmc.broadcast_to` (a group of its
    own) first.

    A bf16/f16 linear layer is one group, placed at its add, since the IR
    means one rounding after the bias (docs/precision.md), which a bf16
    product between two launches cannot give:
    `add(matmul(x, w), b) => kernel { matmul; add }` when the product's only
    reader is the add, b is a row vector of its type and one cuBLASLt GEMM
    computes it (the conditions of llmc-fuse-epilogues).
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def FuseElementwisePass : Pass<"llmc-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Merge elementwise and cast groups into fewer kernels";
  let description = [{
    Runs after `llmc-fuse-epilogues`, on one-op and already fused groups
    (docs/fusion.md has the cost model and every rule):

    - **vertical**: an elementwise group (unary, binary, compare, where,
      cast, gelu/silu and their grads) whose operand is the result of
      another elementwise group of the same shape takes that group's ops:
      one kernel reads the chain's inputs and writes only what is used
      outside it. A result that other groups read as well is still
      written (materialized, never recomputed). Siblings: a later
      elementwise group that reads a tensor an earlier one reads, both
      element for element, joins it at its place when all its inputs
      exist there (SwiGLU's backward: `dy * silu(gate)` and
      `silu_grad(gate, dy * up)` load dy once).
    ```mlir
    %c = llmc.kernel -> (tensor<4x8xf32>) {
      %0 = llmc.cast %m : tensor<4x8xbf16> to tensor<4x8xf32>
      llmc.yield %0 : tensor<4x8xf32>
    }
    %y = llmc.kernel -> (tensor<4x8xf32>) {
      %1 = llmc.add %r, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
      llmc.yield %1 : tensor<4x8xf32>
    }
    // =>
    %y = llmc.kernel -> (tensor<4x8xf32>) {
      %0 = llmc.cast %m : tensor<4x8xbf16> to tensor<4x8xf32>
      %1 = llmc.add %r, %0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
      llmc.yield %1 : tensor<4x8xf32>
    }
    ```
    - **reductions**: a float cast that changes no value rides in a row
      reduction's load or store: a widening cast (bf16/f16 to f32) whose
      every reader is a layer/rms norm (input), a norm gradient (input,
      grad), a cross-entropy or its gradient (logits) is copied into each
      reader's group; a narrowing cast (f32 to bf16/f16) that is the only
      reader of a norm's, norm gradient's dx or cross-entropy gradient's
      result joins the producer's group. `rotary` takes both on its input
      and result (RoPE in f32 between bf16 matmuls and attention). Both
      are bit-exact.
    - **norm prologues / epilogues**: a layer norm or norm gradient whose
      rows a warp row kernel takes (4k elements, at most 2048 / 1024)
      takes the elementwise group that computes its row operand
      (`layer_norm(add(res, cast(mm)))`) and the elementwise group that
      reads its row result (`cast(add(dres, layer_norm_grad(..)#0))`):
      one kernel that keeps the row in registers; values others read are
      still written. Bit-exact: each value is rounded to its storage type
      where the one-op kernels store it.
    - **column sums**: a `reduce_sum` over every axis before a norm
      gradient's of its row value (dx, or the residual gradient of its
      epilogue: a bias gradient) joins the norm group, in its own group or
      taken out of a weight gradient's cuBLASLt bias-gradient epilogue
      (`bias_grad_lhs`/`_rhs`, which cuBLASLt runs as a separate kernel):
      `reduce_sum(layer_norm_grad(..)#0) axes [0, .., a-1]` is summed per
      column next to dweight and dbias, in f32, in a fixed order.
    - **horizontal**: consecutive elementwise groups that do not read one
      another (a model's weight casts, the gradient casts before the
      optimizer) become one group, one launch with a segment per group.
  }];
  let options = [
    Option<"vertical", "vertical", "bool", "true",
           "merge producer/consumer chains of elementwise groups">,
    Option<"horizontal", "horizontal", "bool", "true",
           "merge consecutive independent elementwise groups">,
    Option<"reductions", "reductions", "bool", "true",
           "fold exact casts into row reductions' loads and stores">,
    Option<"normPrologue", "norm-prologue", "bool", "true",
           "the elementwise group computing a warp-kernel norm's row "
           "operand joins the norm's group">,
    Option<"normEpilogue", "norm-epilogue", "bool", "true",
           "an elementwise group reading a warp-kernel norm's row result "
           "joins the norm's group">,
    Option<"colSums", "col-sums", "bool", "true",
           "a bias gradient (a column sum) of a norm gradient's row value "
           "joins the norm's group, also out of a matmul's cuBLASLt "
           "bias-gradient epilogue">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def FuseEpiloguesPass : Pass<"llmc-fuse-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Fuse bias adds into their matmul's group (cuBLASLt epilogue)";
  let description = [{
    `add(matmul(x, w), b)` with `b` a row vector becomes one group, one
    cuBLASLt call whose BIAS epilogue adds `b` to every row of the product:
    ```mlir
    %m = llmc.kernel -> (tensor<32x96xf32>) {
      %0 = llmc.matmul %x, %w : (...) -> tensor<32x96xf32>
      llmc.yield %0 : tensor<32x96xf32>
    }
    %y = llmc.kernel -> (tensor<32x96xf32>) {
      %1 = llmc.add %m, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
      llmc.yield %1 : tensor<32x96xf32>
    }
    // =>
    %y = llmc.kernel -> (tensor<32x96xf32>) {
      %0 = llmc.matmul %x, %w : (...) -> tensor<32x96xf32>
      %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
      llmc.yield %1 : tensor<32x96xf32>
    }
    ```
    Only when all of these hold (anything else stays two groups): both
    groups hold one op; one operand of the add is the matmul's result and
    nothing else reads it (not the other operand, not the return); the
    add's type is the matmul's; `b` is `[n]` or `[1, ..., 1, n]` with n the
    matmul's N, of the product's element type, which is f32, bf16 or f16;
    `b` is defined before the matmul's group (the epilogue reads it there);
    the matmul is one GEMM (its lhs batch folds into the rows: the rhs has
    no batch and the lhs is not transposed, or there is no batch at all),
    because a per-batch bias would need a bias batch stride. The group
    takes the matmul's place.

    Then (passes/MatmulEpilogues.cpp) four rewrites name a cuBLASLt
    epilogue in the group's `llmc.epilogue` attribute; all need a bf16 or
    f16 product, static, rank >= 2, its last dim a multiple of 8 (the aux
    matrix's ld), a one-GEMM matmul group without an epilogue yet:
    - `gelu`: `gelu tanh` of a matmul or matmul + bias group's only result
      joins it (GELU[_AUX][_BIAS]); the group also yields the
      pre-activation when anything else reads it (the aux output). An erf
      gelu stays (cuBLASLt's GELU is the tanh form).
    - `gelu_grad`: `gelu_grad tanh %pre, %dh` with `%dh` a matmul's only
      reader and `%pre` defined before the matmul joins it (DGELU, `%pre`
      the aux input); with `gelu-grad-bias`, also a `reduce_sum` of its
      result over every axis but the last, of its type (DGELU_BGRAD).
      Without it the sum is left for `bias_grad_lhs`/`bias_grad_rhs`.
    - `bias_grad_lhs`: `reduce_sum %c` over every axis but the last joins
      the weight-gradient matmul `matmul(%c or its [rows, n] reshape, %x)
      {transpose_lhs}` (no transpose_rhs, of %c's type) when everything that
      reads the sum comes after that matmul (cuBLASLt BGRADB).
    - `bias_grad_rhs`: the same with %c the rhs, `matmul(%x, %c or its
      [rows, n] reshape) {transpose_lhs}`: the weight gradient of an
      [in, out] weight (HF GPT-2's Conv1D), dW = x^T c (cuBLASLt BGRADA).
  }];
  let options = [
    Option<"gelu", "gelu", "bool", "true",
           "the forward GELU epilogue (GELU[_AUX][_BIAS])">,
    Option<"geluGrad", "gelu-grad", "bool", "true",
           "the GELU-gradient epilogue (DGELU); the pipeline's default is "
           "FusionConfig::geluGradEpilogue (docs/codegen.md)">,
    Option<"geluGradBias", "gelu-grad-bias", "bool", "false",
           "with gelu-grad: the gelu_grad's row sum joins it (DGELU_BGRAD, "
           "0.16 ms a layer slower at GPT-2's MLP); off, the sum is left "
           "for the weight-gradient matmul (BGRADA/BGRADB)">,
    Option<"biasGrad", "bias-grad", "bool", "true",
           "bias-gradient epilogues (DGELU_BGRAD's, BGRADB, BGRADA)">,
    Option<"biasGradRhs", "bias-grad-rhs", "bool", "true",
           "with bias-grad: also BGRADA, the cotangent as the wgrad GEMM's "
           "rhs (the default stands until EpilogueGpuBenchmark.Gpt2Shapes "
           "shows whether BGRADA slows the GEMM at the HF shapes)">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def FuseClassifierPass : Pass<"llmc-fuse-classifier", "::mlir::func::FuncOp"> {
  let summary = "Fuse cross_entropy and its gradient into one group, in place";
  let description = [{
    Runs after `llmc-fuse-elementwise`. A `cross_entropy` group and a
    `cross_entropy_grad` group over the same logits (each read through the
    same widening cast, or both directly), with the same targets,
    reduction (`mean` or `sum`), `ignore_index` and `classes`, become one
    group that yields (loss, gradient); the gradient's narrowing cast comes
    along. The CUDA backend runs it as one pass over each row (max and
    sum-exp, the row's loss, the gradient), between a tiny count of the
    valid targets (`mean`: the normalizer before the gradients) and a
    fixed-order sum of the row losses (compiler/codegen/ClassifierEmitter.cpp).
    ```mlir
    %l = llmc.kernel -> (tensor<f32>) {
      %0 = llmc.cast %x : tensor<4x16xbf16> -> tensor<4x16xf32>
      %1 = llmc.cross_entropy mean %0, %t : (...) -> tensor<f32>
      llmc.yield %1 : tensor<f32>
    }
    %g = llmc.kernel -> (tensor<4x16xbf16>) {
      %0 = llmc.cast %x : tensor<4x16xbf16> -> tensor<4x16xf32>
      %1 = llmc.cross_entropy_grad mean %0, %t, %d : (...) -> tensor<4x16xf32>
      %2 = llmc.cast %1 : tensor<4x16xf32> -> tensor<4x16xbf16>
      llmc.yield %2 : tensor<4x16xbf16>
    }
    // =>
    %lg:2 = llmc.kernel -> (tensor<f32>, tensor<4x16xbf16>) attributes {llmc.overwrites = array<i64: -1, 0>} {
      %0 = llmc.cast %x : tensor<4x16xbf16> -> tensor<4x16xf32>
      %1 = llmc.cross_entropy mean %0, %t : (...) -> tensor<f32>
      %2 = llmc.cross_entropy_grad mean %0, %t, %d : (...) -> tensor<4x16xf32>
      %3 = llmc.cast %2 : tensor<4x16xf32> -> tensor<4x16xbf16>
      llmc.yield %1, %3 : tensor<f32>, tensor<4x16xbf16>
    }
    ```
    The group goes to the later group's place when nothing reads the
    earlier one's result in between, else to the earlier one's when the
    later one's inputs are all defined there; otherwise, or when the
    gradient's cotangent is computed from the loss, nothing changes.
    `llmc.overwrites` (one entry per result: a group input whose buffer the
    result is written over, or -1; passes/FusionUtils.h) is set for the gradient when the logits
    are a group's result of the gradient's type and nothing but the fused
    group reads them, directly or through a reshape (the return included):
    each row is read before it is overwritten, by the block that owns it.
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def MarkInPlacePass : Pass<"llmc-mark-in-place", "::mlir::func::FuncOp"> {
  let summary = "Mark the llmc.next results that are written in place";
  let description = [{
    A function result marked `llmc.next = i` replaces argument `i` (an
    updated parameter or optimizer state). When the group that computes it
    may write it straight into argument i's buffer, this pass records that
    on the group (`in_place`, one entry per result: the argument index or
    -1), and the backend's plan writes it there; every other `llmc.next`
    result is copied into the argument's buffer at the end of the step.

    In place when all of these hold: the result is a group's result,
    returned once, of the argument's type, and the argument is paired with
    no other result; no group after this one reads the argument (or a
    reshape of it), and the return does not; and every op of the group that
    reads the argument (or a reshape of it) has the result's type there and
    reads elementwise (the `ReadsElementwise` trait), or is a
    `multi_adamw_update` reading only the result's own tensor through it.
    So the thread that writes element k has read element k, and nothing
    reads the old value afterwards.
    ```mlir
    %p1 = llmc.kernel -> (tensor<8xf32>) {
      %0 = llmc.sub %p, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      llmc.yield %0 : tensor<8xf32>
    }
    return %p1 : tensor<8xf32>      // {llmc.next = 0}
    // => llmc.kernel -> (tensor<8xf32>) attributes {in_place = array<i64: 0>} {
    ```
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def MarkScalarSlotsPass : Pass<"llmc-mark-scalar-slots",
                               "::mlir::func::FuncOp"> {
  let summary = "Mark lr, step and loss as device scalar slots";
  let description = [{
    The learning rate (the f32 rank-0 input `lr`), the step count (the i64
    rank-0 state `step`) and the loss (the f32 rank-0 output `loss`, a
    group's result) live in named scalar slots of the plan, which the host
    sets and reads between steps without knowing buffer names. This pass
    records the choice as `llmc.slot = "lr" | "step" | "loss"` on the
    argument or result; the CUDA backend's plan makes slots of exactly
    those. A value that a cuBLASLt call (a group holding a matmul) reads or
    writes, itself or through a reshape, stays a buffer: cuBLASLt takes
    buffers. Each name is given once.
    ```mlir
    func.func @train_step(..., %lr: tensor<f32> {llmc.input = "lr"}, ...)
    // => %lr: tensor<f32> {llmc.input = "lr", llmc.slot = "lr"}
    ```
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

#endif // LLMC_KERNEL_PASSES_TD
