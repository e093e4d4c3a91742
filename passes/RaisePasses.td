//===- RaisePasses.td - llmc raising passes ----------------*- tablegen -*-===//
//
// Part of Passes.td (which includes it); alphabetical within the group.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RAISE_PASSES_TD
#define LLMC_RAISE_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Raising: decomposed exporter output to the composite llmc ops
//===----------------------------------------------------------------------===//

def RaiseAttentionPass : Pass<"llmc-raise-attention", "::mlir::func::FuncOp"> {
  let summary = "Raise decomposed scaled dot-product attention to llmc.attention";
  let description = [{
    Recognizes `softmax(scale * q k^T + mask) v` as exporters write it and
    replaces it with one `llmc.attention` on `[B, H, T, D]` operands:

    - `k^T` is `transpose(k)` (any permutation whose last two dims are k's
      swapped), `reshape(transpose(reshape(k)))` (the dynamo SDPA form:
      `[B*H, S, D]` transposed to `[B*H, D, S]`), or a matmul with
      `transpose_rhs`;
    - the scale is any product of scalar constants on q, on k^T and on the
      scores (`sqrt(scale)` on both, or `scores / sqrt(D)`);
    - an additive mask that evaluates to the constant causal pattern (0 on
      and below the diagonal, -inf or finfo.min above) becomes `causal`;
      any other mask becomes the `mask` operand; `where(isnan(p), 0, p)`
      guards after the softmax are absorbed;
    - grouped-query k/v repeated by HF's repeat_kv
      (`reshape(broadcast_to(reshape(k) : [B, Hkv, 1, S, D] -> [B, Hkv, G, S, D]))`)
      are replaced by the un-repeated `[B, Hkv, S, D]` tensors.

    ```mlir
    %kt = llmc.transpose %k [0, 1, 3, 2] : (tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32>
    %s = llmc.matmul %q, %kt : (...) -> tensor<2x4x16x16xf32>
    %s1 = llmc.mul %s, %c : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
    %s2 = llmc.add %s1, %causal_mask : (tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
    %p = llmc.softmax %s2 {axis = -1 : i64} : tensor<2x4x16x16xf32>
    %o = llmc.matmul %p, %v : (...) -> tensor<2x4x16x8xf32>
    // =>
    %o = llmc.attention %q, %k, %v {causal, scale = ...} : (...) -> tensor<2x4x16x8xf32>
    ```
    The scale attribute is left out when it is 1/sqrt(D).
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def RaiseCrossEntropyPass : Pass<"llmc-raise-cross-entropy",
                                 "::mlir::func::FuncOp"> {
  let summary = "Raise log_softmax/gather/mean losses to llmc.cross_entropy";
  let description = [{
    Recognizes the negative log-likelihood of a `log_softmax` over the last
    dim, picked with `gather_elements` at the targets, as PyTorch decomposes
    `F.cross_entropy`:

    ```mlir
    %lp = llmc.log_softmax %logits {axis = -1 : i64} : tensor<30x512xf32>
    %valid = llmc.compare ne, %t, %ignore : (tensor<30xi64>, tensor<i64>) -> tensor<30xi1>
    %ts = llmc.where %valid, %t, %zero : (...) -> tensor<30xi64>
    %ti = llmc.reshape %ts : tensor<30xi64> -> tensor<30x1xi64>
    %g = llmc.gather_elements %lp, %ti axis 1 : (...) -> tensor<30x1xf32>
    %g1 = llmc.reshape %g : tensor<30x1xf32> -> tensor<30xf32>
    %n = llmc.neg %g1 : tensor<30xf32>
    %l = llmc.where %valid, %n, %zerof : (...) -> tensor<30xf32>
    %sum = llmc.reduce_sum %l axes [0] : (tensor<30xf32>) -> tensor<f32>
    %cnt = llmc.reduce_sum (cast %valid) axes [0] : ... -> tensor<f32>
    %loss = llmc.div %sum, %cnt : (tensor<f32>, tensor<f32>) -> tensor<f32>
    // =>
    %loss = llmc.cross_entropy mean %logits, %t {ignore_index = -100 : i64} : (tensor<30x512xf32>, tensor<30xi64>) -> tensor<f32>
    ```
    Without the ignore mask, `reduce_mean(-picked)` raises to `mean` (a
    target of -100 is out of range for torch.gather, so the default
    ignore_index cannot change a valid result); a full `reduce_sum` of the
    masked or unmasked loss raises to `sum`. The HF causal-LM shift stays as
    the slices that feed the logits and targets.
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def RaiseGeluPass : Pass<"llmc-raise-gelu", "::mlir::func::FuncOp"> {
  let summary = "Raise decomposed GELU (tanh and erf forms) to llmc.gelu";
  let description = [{
    Recognizes the two GELU formulas in any association and operand order of
    their products, with `x^3` as `pow(x, 3)` or `x * x * x` and constants
    within 1e-6 relative:

    ```
    0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  =>  llmc.gelu tanh %x
    0.5 * x * (1 + erf(x / sqrt(2)))                          =>  llmc.gelu erf %x
    ```
    `x * sigmoid(1.702 * x)` is a different function and is left alone.
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def RaiseLayerNormPass : Pass<"llmc-raise-layer-norm", "::mlir::func::FuncOp"> {
  let summary = "Raise decomposed layer normalization to llmc.layer_norm";
  let description = [{
    Over trailing dims `a ..< rank` (reductions with keepdims):

    ```
    d = x - reduce_mean(x);  v = reduce_mean(d^2)        (d^2: pow(d, 2) or d * d)
    d / sqrt(v + eps)  |  d * rsqrt(v + eps)  |  d * reciprocal(sqrt(v + eps))
      =>  llmc.layer_norm %x {axis, epsilon}
    layer_norm(x) * w      =>  layer_norm(x) weight w      (w shaped like the normalized dims)
    layer_norm(x, w?) + b  =>  layer_norm(x, w?) bias b
    ```
    ONNX LayerNormalization is imported directly; this is for the
    TorchScript and pre-opset-17 forms.
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def RaisePass : Pass<"llmc-raise", "::mlir::func::FuncOp"> {
  let summary = "Run every raising pattern with canonicalization and CSE to a fixpoint";
  let description = [{
    The raising stage of the pipeline: applies the patterns of all
    `llmc-raise-*` passes together with the canonicalization patterns and
    folds of the llmc ops, then CSE, and repeats until nothing changes (at
    most `max-iterations` rounds). Later raisings rely on earlier ones
    (cross-entropy on a raised log_softmax, the rms_norm weight on a raised
    rms_norm), and CSE merges the per-layer copies of masks and scales that
    exporters emit, so the order does not matter and one run of this pass
    turns an imported model into composite ops.
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "int64_t", "8",
           "Rounds of patterns + CSE before giving up on a fixpoint">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def RaiseRmsNormPass : Pass<"llmc-raise-rms-norm", "::mlir::func::FuncOp"> {
  let summary = "Raise decomposed RMS normalization to llmc.rms_norm";
  let description = [{
    Over trailing dims `a ..< rank` (reduce_mean with keepdims):

    ```
    ms = reduce_mean(x^2)                                 (pow(x, 2) or x * x)
    x * reciprocal(sqrt(ms + eps)) | x * rsqrt(ms + eps) | x * (1 / sqrt(ms + eps)) | x / sqrt(ms + eps)
      =>  llmc.rms_norm %x {axis, epsilon}
    cast(rms(cast(x0 : T -> f32)) -> T)  =>  llmc.rms_norm %x0   (stats are f32 anyway)
    rms_norm(x) * w  =>  llmc.rms_norm %x weight %w          (w shaped like the normalized dims)
    ```
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def RaiseRotaryPass : Pass<"llmc-raise-rotary", "::mlir::func::FuncOp"> {
  let summary = "Raise rotate-half rotary embeddings to llmc.rotary";
  let description = [{
    ```
    x * cos + rotate_half(x) * sin  =>  llmc.rotary %x, %cos, %sin
    rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2])   (two slices or one split)
    ```
    in any operand order, with `cos`/`sin` kept as they are in the graph
    (`[T, D]`, `[B, 1, T, D]`, ...: they must have one type and broadcast
    to x).
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def RaiseSiluPass : Pass<"llmc-raise-silu", "::mlir::func::FuncOp"> {
  let summary = "Raise x * sigmoid(x) to llmc.silu";
  let description = [{
    ```
    llmc.mul %x, (llmc.sigmoid %x)  =>  llmc.silu %x
    ```
    in either operand order; the sigmoid must have no other use.
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def RaiseSoftmaxPass : Pass<"llmc-raise-softmax", "::mlir::func::FuncOp"> {
  let summary = "Raise decomposed softmax and log-softmax";
  let description = [{
    Along one axis `a` (reductions with keepdims; the max subtraction is
    optional, as the composite ops subtract it anyway):

    ```
    e = exp(x - reduce_max(x));  e / reduce_sum(e) | e * reciprocal(reduce_sum(e))
      =>  llmc.softmax %x {axis}
    z = x - reduce_max(x);  z - log(reduce_sum(exp(z)))
      =>  llmc.log_softmax %x {axis}
    ```
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

#endif // LLMC_RAISE_PASSES_TD
