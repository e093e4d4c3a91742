//===- LlmcGradOps.td - Backward and optimizer ops ---------*- tablegen -*-===//
//
// The ops that `llmc-autodiff` and `llmc-append-optimizer` emit: one fused
// backward op per composite forward op (so that each becomes one kernel, as
// in llm.c), the adjoints of the data-movement ops that have no forward
// counterpart (gather_grad, gather_elements_grad, slice_grad), the forward
// variant of attention that also yields the log-sum-exp its backward needs,
// and the fused AdamW update. docs/training-ir.md describes how they are used.
//
// By convention a backward op's operands are the forward op's inputs (or its
// output, where the gradient is cheaper from it), then the cotangent `grad`
// of the forward result; its results are the cotangents of the forward
// operands, in the forward operand order.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_GRAD_OPS_TD
#define LLMC_GRAD_OPS_TD

include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Llmc_LayerNormGradOp : Llmc_Op<"layer_norm_grad",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "backward of layer_norm: dx, dweight and dbias";
  let description = [{
    Given the forward input `input`, the cotangent `grad` of the forward
    result and the forward `weight` (if any), yields `dx`, then `dweight`
    when `weight` is present, then `dbias` under `bias_grad` (the forward op
    had a bias). `axis` and `epsilon` are the forward op's. The op recomputes
    the mean and reciprocal standard deviation from `input` instead of
    taking them saved from the forward pass: the recomputation is one extra
    read of a row the kernel reads anyway, and it keeps the forward op
    single-result. With `xhat = (x - mean) * rstd` and `g = grad * weight`:
    `dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`,
    `dweight = sum(grad * xhat)`, `dbias = sum(grad)`, means over the
    normalized dims and sums over the leading ones.

    ```mlir
    %dx, %dw, %db = llmc.layer_norm_grad %x, %dy weight %w {bias_grad, epsilon = 1.0e-05 : f64} : (tensor<8x1024x768xf32>, tensor<8x1024x768xf32>, tensor<768xf32>) -> (tensor<8x1024x768xf32>, tensor<768xf32>, tensor<768xf32>)
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$input, Llmc_FloatTensor:$grad,
                       Optional<Llmc_FloatTensor>:$weight,
                       DefaultValuedAttr<Llmc_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon,
                       UnitAttr:$bias_grad);
  let results = (outs Variadic<Llmc_FloatTensor>:$results);
  let assemblyFormat = "$input `,` $grad (`weight` $weight^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let extraClassDeclaration = [{
    ::mlir::Value getDx() { return getResults()[0]; }
    /// Null when the forward op had no weight.
    ::mlir::Value getDweight() { return getWeight() ? getResults()[1] : nullptr; }
    /// Null without `bias_grad`.
    ::mlir::Value getDbias() {
      return getBiasGrad() ? getResults().back() : nullptr;
    }
  }];
}

def Llmc_RmsNormGradOp : Llmc_Op<"rms_norm_grad", [Pure, InferTypeOpAdaptor]> {
  let summary = "backward of rms_norm: dx and dweight";
  let description = [{
    Given the forward `input`, the cotangent `grad` and the forward `weight`
    (if any), yields `dx` and, when `weight` is present, `dweight`. The
    reciprocal root mean square is recomputed from `input` (as for
    layer_norm_grad). With `r = rsqrt(mean(x^2) + epsilon)` and
    `g = grad * weight`: `dx = r * (g - x * r^2 * mean(g * x))`,
    `dweight = sum(grad * x * r)` over the leading dims.

    ```mlir
    %dx, %dw = llmc.rms_norm_grad %x, %dy weight %w {epsilon = 1.0e-06 : f64} : (tensor<8x1024x2048xf32>, tensor<8x1024x2048xf32>, tensor<2048xf32>) -> (tensor<8x1024x2048xf32>, tensor<2048xf32>)
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$input, Llmc_FloatTensor:$grad,
                       Optional<Llmc_FloatTensor>:$weight,
                       DefaultValuedAttr<Llmc_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-6">:$epsilon);
  let results = (outs Variadic<Llmc_FloatTensor>:$results);
  let assemblyFormat = "$input `,` $grad (`weight` $weight^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let extraClassDeclaration = [{
    ::mlir::Value getDx() { return getResults()[0]; }
    /// Null when the forward op had no weight.
    ::mlir::Value getDweight() { return getWeight() ? getResults()[1] : nullptr; }
  }];
}

//===----------------------------------------------------------------------===//
// Softmax, activations
//===----------------------------------------------------------------------===//

class Llmc_SoftmaxLikeGradOp<string mnemonic, string forward,
                             string formula> :
    Llmc_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "backward of " # forward # " from its output";
  let description = "Given the forward result `output` (`y`) and its "
    # "cotangent `grad` (`dy`), computes the input's cotangent `" # formula
    # "`, the sum along `axis` (the forward op's axis).\n\n```mlir\n%dx = "
    # "llmc." # mnemonic # " %y, %dy {axis = -1 : i64} : "
    # "tensor<8x12x1024x1024xf32>\n```";
  let arguments = (ins Llmc_FloatTensor:$output, Llmc_FloatTensor:$grad,
                       DefaultValuedAttr<Llmc_I64Attr, "-1">:$axis);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Llmc_SoftmaxGradOp : Llmc_SoftmaxLikeGradOp<"softmax_grad", "softmax",
                                                "y * (dy - sum(dy * y))">;
def Llmc_LogSoftmaxGradOp : Llmc_SoftmaxLikeGradOp<"log_softmax_grad",
    "log_softmax", "dy - exp(y) * sum(dy)">;

def Llmc_GeluGradOp : Llmc_Op<"gelu_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "backward of gelu (erf or tanh form)";
  let description = [{
    `grad * gelu'(input)` for the forward op's form. `erf`:
    `gelu'(x) = Phi(x) + x * phi(x)` with the standard normal cdf/pdf;
    `tanh`: the derivative of the tanh approximation itself (not of the exact
    GELU), as PyTorch's `gelu_backward(approximate='tanh')`.

    ```mlir
    %dx = llmc.gelu_grad tanh %x, %dy : tensor<8x1024x3072xf32>
    ```
  }];
  let arguments = (ins Llmc_GeluApproximationAttr:$approximation,
                       Llmc_FloatTensor:$input, Llmc_FloatTensor:$grad);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$approximation $input `,` $grad attr-dict `:` "
                       "type($input)";
}

def Llmc_SiluGradOp : Llmc_Op<"silu_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "backward of silu";
  let description = [{
    `grad * s * (1 + x * (1 - s))` with `s = sigmoid(input)`.

    ```mlir
    %dx = llmc.silu_grad %x, %dy : tensor<8x1024x2048xf32>
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$input, Llmc_FloatTensor:$grad);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Attention row statistics: f32, or f64 in f64 reference runs.
def Llmc_LseTensor : RankedTensorOf<[F32, F64]>;

def Llmc_AttentionLseOp : Llmc_Op<"attention_lse", [Pure, InferTypeOpAdaptor]> {
  let summary = "attention that also yields the softmax log-sum-exp";
  let description = [{
    The forward attention of a training step: `result` is exactly
    `llmc.attention` with the same operands and attributes, and `lse`
    (`[B, Hq, T]`, f32 whatever q's type, f64 for f64 q) is the natural log of each softmax row's
    denominator, `log(sum_s exp(scale * q.k_s + mask_s))` over the key
    positions the row may see. It is what a flash-attention forward kernel
    writes out, and all that attention_grad needs besides q, k, v and the
    output to rebuild the probabilities `exp(score - lse)` blockwise. A row
    that sees no key has `lse = -inf` and output 0. `seq_major` as for
    `llmc.attention` (q, k, v, result `[B, T, H, D]`); `lse` stays `[B, Hq, T]`.
    `qkv_heads` as for `llmc.attention` (q, k, v are head windows of packed
    `[B, T, Hq + 2 Hkv, D]` tensors).

    ```mlir
    %o, %lse = llmc.attention_lse %q, %k, %v {causal} : (tensor<8x12x1024x64xbf16>, tensor<8x12x1024x64xbf16>, tensor<8x12x1024x64xbf16>) -> (tensor<8x12x1024x64xbf16>, tensor<8x12x1024xf32>)
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$query, Llmc_FloatTensor:$key,
                       Llmc_FloatTensor:$value,
                       Optional<Llmc_Tensor>:$mask,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale,
                       UnitAttr:$seq_major,
                       OptionalAttr<DenseI64ArrayAttr>:$qkv_heads);
  let results = (outs Llmc_FloatTensor:$result, Llmc_LseTensor:$lse);
  let assemblyFormat = "$query `,` $key `,` $value (`mask` $mask^)? "
                       "attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The scale applied to q k^T: the attribute, or 1/sqrt(head_dim).
    double getScaleOrDefault();
  }];
}

def Llmc_AttentionGradOp : Llmc_Op<"attention_grad",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "backward of attention: dq, dk, dv";
  let description = [{
    Given the forward operands (`query`, `key`, `value`, `mask`, and the
    `causal`/`scale` attributes), the forward `output`, the row log-sum-exp
    `lse` from attention_lse and the cotangent `grad` of the output, yields
    the cotangents of q, k and v (FlashAttention-2's backward):
    `P = exp(scale * q k^T + mask - lse)`, `dv = P^T dO`,
    `dP = dO v^T`, `D = rowsum(dO * O)`, `dS = P * (dP - D)`,
    `dq = scale * dS k`, `dk = scale * dS^T q`. With grouped-query
    attention, `dk` and `dv` are summed over the query heads that share a
    key/value head, so they have the shapes of `key` and `value`. The mask
    receives no gradient. With `seq_major`, q, k, v, output, grad and the
    three results are `[B, T, H, D]` (`lse` stays `[B, Hq, T]`). With
    `qkv_heads = array<i64: Hq, Hkv>` (set by `llmc-fold-qkv-slices`), q, k
    and v are head windows of packed `[B, T, Hq + 2 Hkv, D]` tensors as for
    `llmc.attention`, and the op has one result, the packed gradient
    `[B, T, Hq + 2 Hkv, D]`: dq in heads `[0, Hq)`, dk in `[Hq, Hq + Hkv)`,
    dv in `[Hq + Hkv, Hq + 2 Hkv)`, what a concat of the three would be.

    ```mlir
    %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %lse, %do {causal} : (tensor<2x8x64x32xf32>, tensor<2x2x64x32xf32>, tensor<2x2x64x32xf32>, tensor<2x8x64x32xf32>, tensor<2x8x64xf32>, tensor<2x8x64x32xf32>) -> (tensor<2x8x64x32xf32>, tensor<2x2x64x32xf32>, tensor<2x2x64x32xf32>)
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$query, Llmc_FloatTensor:$key,
                       Llmc_FloatTensor:$value, Llmc_FloatTensor:$output,
                       Llmc_LseTensor:$lse, Llmc_FloatTensor:$grad,
                       Optional<Llmc_Tensor>:$mask,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale,
                       UnitAttr:$seq_major,
                       OptionalAttr<DenseI64ArrayAttr>:$qkv_heads);
  // dq, dk, dv; or the one packed gradient with `qkv_heads`.
  let results = (outs Variadic<Llmc_FloatTensor>:$grads);
  let assemblyFormat = "$query `,` $key `,` $value `,` $output `,` $lse `,` "
                       "$grad (`mask` $mask^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The scale applied to q k^T: the attribute, or 1/sqrt(head_dim).
    double getScaleOrDefault();
    /// dq, dk, dv; null without them (`qkv_heads`: one packed gradient).
    Value getDquery() { return getQkvHeads() ? Value() : getResult(0); }
    Value getDkey() { return getQkvHeads() ? Value() : getResult(1); }
    Value getDvalue() { return getQkvHeads() ? Value() : getResult(2); }
  }];
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def Llmc_CrossEntropyGradOp : Llmc_Op<"cross_entropy_grad",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "backward of cross_entropy: dlogits";
  let description = [{
    Given the forward `logits` `[..., C]`, `targets` `[...]`, `reduction`
    and `ignore_index`, and the cotangent `grad` of the forward result
    (rank 0 for `mean`/`sum`, `[...]` for `none`), yields
    `dlogits = (softmax(logits) - onehot(target)) * w` per position, where
    `w` is `grad` (`sum`), `grad[pos]` (`none`) or `grad / n` (`mean`, `n` =
    number of positions whose target is not `ignore_index`). Ignored
    positions get a zero row; with `mean` and no position left, every row is
    zero (the forward loss is then NaN, as in PyTorch). With `classes` (a
    padded vocabulary) the softmax is over the first `classes` columns and
    the padding columns of `dlogits` are zero.

    ```mlir
    %dl = llmc.cross_entropy_grad mean %logits, %targets, %dloss : (tensor<8x1024x50257xf32>, tensor<8x1024xi64>, tensor<f32>) -> tensor<8x1024x50257xf32>
    ```
  }];
  let arguments = (ins Llmc_LossReductionAttr:$reduction,
                       Llmc_FloatTensor:$logits, Llmc_IndexTensor:$targets,
                       Llmc_FloatTensor:$grad,
                       DefaultValuedAttr<Llmc_I64Attr, "-100">:$ignore_index,
                       OptionalAttr<Llmc_I64Attr>:$classes);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$reduction $logits `,` $targets `,` $grad attr-dict "
                       "`:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The real classes: `classes`, or the logits' last dim.
    int64_t getClassCount();
  }];
}

//===----------------------------------------------------------------------===//
// Adjoints of data movement
//===----------------------------------------------------------------------===//

def Llmc_GatherGradOp : Llmc_Op<"gather_grad", [Pure]> {
  let summary = "adjoint of gather: scatter-add into zeros (embedding grad)";
  let description = [{
    The result (whose type gives the forward `data` shape, e.g. the
    `[vocab, d]` embedding table) starts at zero, and every slice of `grad`
    is added at the index that `indices` names along `axis`, so repeated
    indices (the same token twice in a batch) sum. `grad` has the forward
    gather's result shape, `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`.

    ```mlir
    %dwte = llmc.gather_grad %dy, %idx axis 0 : (tensor<8x1024x768xf32>, tensor<8x1024xi64>) -> tensor<50257x768xf32>
    ```
    `bound`: the forward gather's (a padded table's real size); negative
    indices count back from it and indices at or past it add nothing.
  }];
  let arguments = (ins Llmc_FloatTensor:$grad, Llmc_IndexTensor:$indices,
                       Llmc_I64Attr:$axis, OptionalAttr<Llmc_I64Attr>:$bound);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $indices `axis` $axis attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Llmc_GatherElementsGradOp : Llmc_Op<"gather_elements_grad", [Pure]> {
  let summary = "adjoint of gather_elements: elementwise scatter-add";
  let description = [{
    The result (of the forward `data` type) starts at zero and
    `grad[i][j]` is added at `[i][indices[i][j]]` for `axis = 1`
    (torch.scatter_add). `grad` and `indices` have one shape, of the
    result's rank.

    ```mlir
    %dlogp = llmc.gather_elements_grad %dt, %tgt axis 1 : (tensor<16x1xf32>, tensor<16x1xi64>) -> tensor<16x512xf32>
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$grad, Llmc_IndexTensor:$indices,
                       Llmc_I64Attr:$axis);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $indices `axis` $axis attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Llmc_SliceGradOp : Llmc_Op<"slice_grad", [Pure]> {
  let summary = "adjoint of slice: place a window into zeros";
  let description = [{
    The result (of the forward operand's type) is zero except at the
    positions the forward `slice` with the same `starts`, `limits` and
    `strides` read, which hold `grad`.

    ```mlir
    %dx = llmc.slice_grad %dq starts [0, 0, 0] limits [2, 8, 64] strides [1, 1, 1] : (tensor<2x8x64xf32>) -> tensor<2x8x192xf32>
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$grad, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$grad `starts` $starts `limits` $limits `strides` "
                       "$strides attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def Llmc_AdamWUpdateOp : Llmc_Op<"adamw_update", [Pure, InferTypeOpAdaptor,
    Llmc_ReadsElementwise]> {
  let summary = "one AdamW step of one parameter (PyTorch semantics)";
  let description = [{
    With `t = step` (the step number, already incremented: 1 on the first
    step) and the runtime learning rate `lr` (rank 0, f32):
    ```
    m' = beta1 * m + (1 - beta1) * g
    v' = beta2 * v + (1 - beta2) * g^2
    p' = p * (1 - lr * weight_decay)
         - lr / (1 - beta1^t) * m' / (sqrt(v') / sqrt(1 - beta2^t) + epsilon)
    ```
    which is `torch.optim.AdamW` (decoupled weight decay applied first,
    bias correction of both moments). `param`, `grad`, `m` and `v` share
    one type; the results are the new param, m and v. `llmc-append-optimizer`
    emits one op per parameter; `llmc-batch-adamw` groups them into
    `llmc.multi_adamw_update` (one kernel for all parameters).

    ```mlir
    %p1, %m1, %v1 = llmc.adamw_update %p, %g, %m, %v, %lr, %t {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<768xf32>, tensor<768xf32>, tensor<768xf32>, tensor<768xf32>, tensor<f32>, tensor<i64>) -> (tensor<768xf32>, tensor<768xf32>, tensor<768xf32>)
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$param, Llmc_FloatTensor:$grad,
                       Llmc_FloatTensor:$m, Llmc_FloatTensor:$v,
                       0DTensorOf<[F32]>:$lr, 0DTensorOf<[I64]>:$step,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1e-8">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay);
  let results = (outs Llmc_FloatTensor:$new_param, Llmc_FloatTensor:$new_m,
                      Llmc_FloatTensor:$new_v);
  let assemblyFormat = "$param `,` $grad `,` $m `,` $v `,` $lr `,` $step "
                       "attr-dict `:` functional-type(operands, results)";
}

def Llmc_MultiAdamWUpdateOp : Llmc_Op<"multi_adamw_update",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "AdamW steps of several parameters (one multi-tensor kernel)";
  let description = [{
    `N` `llmc.adamw_update`s that share `lr`, `step`, `beta1`, `beta2` and
    `epsilon`, as one op: tensor `k` is `(params[k], grads[k], ms[k],
    vs[k])` with weight decay `weight_decays[k]`, and is updated exactly as
    `adamw_update` would update it. All tensors share one element type. With `scale` (a rank-0 tensor of the
    gradients' element type, the clip coefficient) the update reads
    `grads[k] * scale`, rounded to the gradients' type as `llmc.mul` rounds
    it. The `3 N` results are the new params, then the new m, then the new
    v, each group in tensor order. `llmc-batch-adamw` builds it; the CUDA
    backend lowers it to one kernel that walks a chunk table of all
    tensors.

    ```mlir
    %r:6 = llmc.multi_adamw_update params(%w, %b) grads(%gw, %gb) m(%mw, %mb) v(%vw, %vb) lr(%lr) step(%t) scale(%c) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decays = array<f64: 0.1, 0.0>} : (tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Variadic<Llmc_FloatTensor>:$params,
                       Variadic<Llmc_FloatTensor>:$grads,
                       Variadic<Llmc_FloatTensor>:$ms,
                       Variadic<Llmc_FloatTensor>:$vs,
                       0DTensorOf<[F32]>:$lr, 0DTensorOf<[I64]>:$step,
                       Optional<Llmc_FloatScalar>:$scale,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1e-8">:$epsilon,
                       DenseF64ArrayAttr:$weight_decays);
  let results = (outs Variadic<Llmc_FloatTensor>:$results);
  let assemblyFormat = "`params` `(` $params `)` `grads` `(` $grads `)` "
                       "`m` `(` $ms `)` `v` `(` $vs `)` `lr` `(` $lr `)` "
                       "`step` `(` $step `)` (`scale` `(` $scale^ `)`)? "
                       "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of tensors updated.
    unsigned getNumTensors() { return getParams().size(); }
    Value getNewParam(unsigned k) { return getResult(k); }
    Value getNewM(unsigned k) { return getResult(getNumTensors() + k); }
    Value getNewV(unsigned k) { return getResult(2 * getNumTensors() + k); }
    /// The tensor an operand or result belongs to; -1 for lr, step, scale.
    int64_t tensorOfOperand(unsigned i);
    int64_t tensorOfResult(unsigned r) { return r % getNumTensors(); }
  }];
}

//===----------------------------------------------------------------------===//
// Gradient clipping
//===----------------------------------------------------------------------===//

def Llmc_GlobalNormOp : Llmc_Op<"global_norm", [Pure]> {
  let summary = "the L2 norm of several tensors taken together";
  let description = [{
    `sqrt(sum_k sum_i inputs[k][i]^2)`, the norm that
    `torch.nn.utils.clip_grad_norm_` clips by. The sum accumulates in the
    result's type: f32, or f64 when an input is f64 (reference runs).
    `llmc-append-optimizer` emits it for `--clip-norm`; the CUDA backend
    lowers it to one multi-tensor kernel writing per-block partial sums and
    one block that adds them in a fixed order (deterministic, no atomics).

    ```mlir
    %norm = llmc.global_norm %gw, %gb : (tensor<64x64xf32>, tensor<64xbf16>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Llmc_FloatTensor>:$inputs);
  let results = (outs 0DTensorOf<[F32, F64]>:$norm);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $norm)";
  let hasVerifier = 1;
}

#endif // LLMC_GRAD_OPS_TD
