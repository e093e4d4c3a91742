//===- LlmcNNOps.td - Matmul and composite transformer ops -*- tablegen -*-===//
//
// The ops the raising passes produce and the kernels implement as units:
// matmul, gelu, silu, layer_norm, rms_norm, softmax, log_softmax, attention,
// rotary and cross_entropy. Autodiff gives each of them a fused backward op.
// dropout_mask is the random keep mask of training-mode dropout.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_NN_OPS_TD
#define LLMC_NN_OPS_TD

include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Llmc_MatmulOp : Llmc_Op<"matmul", [Pure, InferTypeOpAdaptor,
                                        Llmc_Differentiable,
                                        Llmc_PrecisionPolicy, Llmc_Paddable]> {
  let summary = "batched matrix product with optional transposes";
  let description = [{
    Multiplies the last two dims of `lhs` (`[..., M, K]`, or `[..., K, M]`
    with `transpose_lhs`) by those of `rhs` (`[..., K, N]`, or `[..., N, K]`
    with `transpose_rhs`); the leading batch dims broadcast as numpy does.
    Both operands have rank 2 or more and one element type; accumulation is
    in f32 for every float type.

    ```mlir
    %y = llmc.matmul %x, %w {transpose_rhs} : (tensor<8x1024x768xf32>, tensor<2304x768xf32>) -> tensor<8x1024x2304xf32>
    ```
  }];
  let arguments = (ins Llmc_NumericTensor:$lhs, Llmc_NumericTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Llmc_NumericTensor:$result);
  let assemblyFormat =
    "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Llmc_GeluOp : Llmc_Op<"gelu", [Pure, SameOperandsAndResultType,
                                    Llmc_Differentiable,
                                    Llmc_ReadsElementwise,
                                    Llmc_PrecisionFollows, Llmc_Paddable]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `erf`: `0.5 * x * (1 + erf(x / sqrt(2)))` (torch's default);
    `tanh`: `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`
    (GPT-2's `approximate='tanh'`). The form is part of the op: the two are
    different functions and are never swapped.

    ```mlir
    %y = llmc.gelu tanh %x : tensor<8x1024x3072xf32>
    ```
  }];
  let arguments = (ins Llmc_GeluApproximationAttr:$approximation,
                       Llmc_FloatTensor:$input);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$approximation $input attr-dict `:` type($input)";
}

def Llmc_SiluOp : Llmc_Op<"silu", [Pure, SameOperandsAndResultType,
                                    Llmc_Differentiable,
                                    Llmc_ReadsElementwise,
                                    Llmc_PrecisionFollows, Llmc_Paddable]> {
  let summary = "x * sigmoid(x)";
  let description = [{
    The SiLU (swish) activation. A SwiGLU MLP is `silu(x W1) * (x W3)`,
    which stays a `silu` and a `mul` so that fusion can merge them.

    ```mlir
    %y = llmc.silu %x : tensor<8x1024x2048xf32>
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$input);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Llmc_LayerNormOp : Llmc_Op<"layer_norm", [Pure, InferTypeOpAdaptor,
    AttrSizedOperandSegments, Llmc_Differentiable, Llmc_PrecisionPolicy, Llmc_Paddable]> {
  let summary = "layer normalization over the trailing dims";
  let description = [{
    Normalizes over dims `axis ..< rank` (ONNX LayerNormalization):
    `(x - mean) / sqrt(var + epsilon) * weight + bias`, with the biased
    variance. `weight` and `bias` are optional and, when present, have the
    shape of the normalized dims. Statistics are computed in f32.

    ```mlir
    %y = llmc.layer_norm %x weight %w bias %b {epsilon = 1.0e-05 : f64} : (tensor<8x1024x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$input,
                       Optional<Llmc_FloatTensor>:$weight,
                       Optional<Llmc_FloatTensor>:$bias,
                       DefaultValuedAttr<Llmc_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$input (`weight` $weight^)? (`bias` $bias^)? "
                       "attr-dict `:` functional-type(operands, results)";
}

def Llmc_RmsNormOp : Llmc_Op<"rms_norm", [Pure, InferTypeOpAdaptor,
                                           Llmc_Differentiable,
                                           Llmc_PrecisionPolicy, Llmc_Paddable]> {
  let summary = "root-mean-square normalization over the trailing dims";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * weight` over dims `axis ..< rank`
    (Llama, Qwen, Mistral). `weight` is optional and has the shape of the
    normalized dims. Statistics are computed in f32.

    ```mlir
    %y = llmc.rms_norm %x weight %w {epsilon = 1.0e-06 : f64} : (tensor<8x1024x2048xf32>, tensor<2048xf32>) -> tensor<8x1024x2048xf32>
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$input,
                       Optional<Llmc_FloatTensor>:$weight,
                       DefaultValuedAttr<Llmc_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-6">:$epsilon);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$input (`weight` $weight^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

class Llmc_SoftmaxLikeOp<string mnemonic, string formula> :
    Llmc_Op<mnemonic, [Pure, SameOperandsAndResultType, Llmc_Differentiable,
                       Llmc_PrecisionPolicy, Llmc_Paddable]> {
  let summary = formula # " along one axis";
  let description = "Computes `" # formula # "` along `axis` (negative "
    # "counts from the end; default -1), with the maximum subtracted first "
    # "so that large logits do not overflow.\n\n```mlir\n%p = llmc."
    # mnemonic # " %x {axis = -1 : i64} : tensor<8x12x1024x1024xf32>\n```";
  let arguments = (ins Llmc_FloatTensor:$input,
                       DefaultValuedAttr<Llmc_I64Attr, "-1">:$axis);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Llmc_SoftmaxOp : Llmc_SoftmaxLikeOp<"softmax",
                                        "exp(x) / sum(exp(x))">;
def Llmc_LogSoftmaxOp : Llmc_SoftmaxLikeOp<"log_softmax",
                                           "x - log(sum(exp(x)))">;

def Llmc_AttentionOp : Llmc_Op<"attention", [Pure, InferTypeOpAdaptor,
    Llmc_Differentiable,
    Llmc_PrecisionPolicy]> {
  let summary = "scaled dot-product attention, causal and grouped-query";
  let description = [{
    `softmax(scale * q k^T + mask) v` per batch and head, with layout
    `[batch, heads, seq, head_dim]` for every operand. `query` is
    `[B, Hq, T, D]`, `key` `[B, Hkv, S, D]`, `value` `[B, Hkv, S, Dv]` and the
    result `[B, Hq, T, Dv]`. Grouped-query attention: `Hq` is a multiple of
    `Hkv`, and query head `h` reads key/value head `h / (Hq / Hkv)`.
    `causal` masks key positions after the query's (`s > t + S - T`).
    `mask` is optional, broadcastable to `[B, Hq, T, S]`: a float mask is
    added to the scores, an `i1` mask keeps the positions where it is true.
    `scale` defaults to `1 / sqrt(D)`.
    `seq_major` (set by `llmc-fold-attention-transposes`, docs/fusion.md):
    q, k, v and the result are `[batch, seq, heads, head_dim]` instead,
    the layout the projections produce, so no transpose is needed around
    the op; the values computed are the same.
    `qkv_heads = array<i64: Hq, Hkv>` (with `seq_major`, set by
    `llmc-fold-qkv-slices`, docs/fusion.md): q, k and v are each a
    `[B, T, Hq + 2 Hkv, D]` tensor, the packed output of one qkv projection
    viewed per head, and the op reads heads `[0, Hq)` of `query`,
    `[Hq, Hq + Hkv)` of `key` and `[Hq + Hkv, Hq + 2 Hkv)` of `value`, so no
    split copies them apart.

    ```mlir
    %o = llmc.attention %q, %k, %v {causal} : (tensor<8x12x1024x64xf32>, tensor<8x12x1024x64xf32>, tensor<8x12x1024x64xf32>) -> tensor<8x12x1024x64xf32>
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$query, Llmc_FloatTensor:$key,
                       Llmc_FloatTensor:$value,
                       Optional<Llmc_Tensor>:$mask,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale,
                       UnitAttr:$seq_major,
                       OptionalAttr<DenseI64ArrayAttr>:$qkv_heads);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$query `,` $key `,` $value (`mask` $mask^)? "
                       "attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The scale applied to q k^T: the attribute, or 1/sqrt(head_dim).
    double getScaleOrDefault();
  }];
}

def Llmc_RotaryOp : Llmc_Op<"rotary", [Pure, InferTypeOpAdaptor,
                                        Llmc_Differentiable,
                                        Llmc_PrecisionFollows]> {
  let summary = "rotary position embedding";
  let description = [{
    Rotates pairs of features of `input` (`[..., T, D]`) by position-
    dependent angles given as `cos` and `sin` tables of shape `[..., T, R]`
    that broadcast against the input's leading dims. The first `R` features
    rotate (`R` even, `R <= D`; partial rotary leaves the rest unchanged).
    Default pairing is the "rotate half" form of Llama/HF:
    `y[:R] = x[:R] * cos + rotate_half(x[:R]) * sin`, where
    `rotate_half(x) = concat(-x[R/2:], x[:R/2])`; with `interleaved`, pairs
    are adjacent features (GPT-J).

    ```mlir
    %y = llmc.rotary %q, %cos, %sin : (tensor<8x32x1024x64xf32>, tensor<1024x64xf32>, tensor<1024x64xf32>) -> tensor<8x32x1024x64xf32>
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$input, Llmc_FloatTensor:$cos,
                       Llmc_FloatTensor:$sin, UnitAttr:$interleaved);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$input `,` $cos `,` $sin attr-dict `:` "
                       "functional-type(operands, results)";
}

def Llmc_CrossEntropyOp : Llmc_Op<"cross_entropy",
    [Pure, InferTypeOpAdaptor, Llmc_Differentiable, Llmc_PrecisionPolicy, Llmc_PaddableMasked]> {
  let summary = "softmax cross-entropy with integer targets";
  let description = [{
    `-log_softmax(logits)[target]` for each position, with classes in the
    last dim: `logits` is `[..., C]` and `targets` (`i32`/`i64`) has the
    leading shape `[...]`. Positions whose target equals `ignore_index`
    (default -100) contribute nothing; `mean` divides by the number of
    positions that are not ignored (torch.nn.functional.cross_entropy).
    `mean` and `sum` yield a rank-0 tensor, `none` one loss per position.

    `classes` (set by `llmc-pad-shapes` on padded logits): only the first
    `classes` columns are classes; the padding columns after them do not
    enter the softmax (its max and sum of exp), and a target at or past
    `classes` is out of range.

    ```mlir
    %loss = llmc.cross_entropy mean %logits, %targets : (tensor<8x1024x50257xf32>, tensor<8x1024xi64>) -> tensor<f32>
    %padded = llmc.cross_entropy mean %logits_p, %targets {classes = 50257 : i64} : (tensor<8x1024x50304xf32>, tensor<8x1024xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Llmc_LossReductionAttr:$reduction,
                       Llmc_FloatTensor:$logits, Llmc_IndexTensor:$targets,
                       DefaultValuedAttr<Llmc_I64Attr, "-100">:$ignore_index,
                       OptionalAttr<Llmc_I64Attr>:$classes);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "$reduction $logits `,` $targets attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The real classes: `classes`, or the logits' last dim.
    int64_t getClassCount();
  }];
}

def Llmc_DropoutMaskOp : Llmc_Op<"dropout_mask", [Pure,
                                                  Llmc_PrecisionFollows]> {
  let summary = "training-mode dropout's scaled keep mask, counter-based";
  let description = [{
    Each element is `1 / (1 - ratio)` (kept) or 0 (dropped), so that dropout
    is `x * dropout_mask`. Element `i` is decided by Philox4x32-10 with key
    `(seed, seed >> 32)` and counter `(i, offset, step, step >> 32)`: its
    first output word `w` keeps the element when `w >> 8 >=
    ceil(ratio * 2^24)`. The mask is a function of (seed, offset, step, i)
    only, so a replay, a recomputation (rematerialization, the backward
    pass) and a resumed run draw the same mask for the same step. `offset`
    tells the dropout sites of one model apart; `step` is the training step
    (rank-0 i64; absent = 0, as in @forward before the optimizer is
    appended: llmc-append-optimizer wires its step counter in).

    ```mlir
    %m = llmc.dropout_mask %step {ratio = 1.000000e-01 : f64, seed = 0 : i64, offset = 3 : i64} : (tensor<i64>) -> tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins Optional<0DTensorOf<[I64]>>:$step, F64Attr:$ratio,
                       Llmc_I64Attr:$seed, Llmc_I64Attr:$offset);
  let results = (outs Llmc_FloatTensor:$result);
  let assemblyFormat = "($step^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // LLMC_NN_OPS_TD
