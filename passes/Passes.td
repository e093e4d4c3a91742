//===- Passes.td - llmc pass declarations ------------------*- tablegen -*-===//
//
// Every llmc pass is declared here, grouped under banners and alphabetical
// within each group. Each one lives in passes/<DefNameWithoutPass>.cpp and is
// tested by test/lit/passes/<argument-without-llmc->.mlir.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_TD
#define LLMC_PASSES_TD

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

//===----------------------------------------------------------------------===//
// Training IR: loss, autodiff, optimizer (docs/training-ir.md)
//===----------------------------------------------------------------------===//

def AccumulateGradientsPass : Pass<"llmc-accumulate-gradients",
                                   "::mlir::ModuleOp"> {
  let summary = "Split @train_step into an accumulate step and an apply step";
  let description = [{
    Gradient accumulation (docs/memory.md). After llmc-autodiff, before
    llmc-append-optimizer; the loss must be a mean `llmc.cross_entropy`,
    which becomes `sum` (with its `cross_entropy_grad`s):
    ```
    @train_step(params, inputs) -> (loss, grads)
      => @accumulate_step(params, inputs, acc_g..., acc_loss, acc_count)
           -> (acc_g + dsum/dp..., acc_loss + sum, acc_count + n)
         @train_step(params, acc_g..., acc_loss, acc_count)
           -> (acc_loss / acc_count, acc_g / acc_count...)
    ```
    `n` counts the targets that are not `ignore_index`, so the window's loss
    is its summed loss over the tokens of the whole window. The
    accumulators are state of @accumulate_step (`accum.grad` of each
    parameter, `accum.loss`, `accum.count`, zero at the start of a window)
    and inputs of @train_step (`accum.grad:<param>`, `accum.loss`,
    `accum.count`).
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect",
                           "::mlir::func::FuncDialect"];
}

def AppendLossPass : Pass<"llmc-append-loss", "::mlir::ModuleOp"> {
  let summary = "Append a cross-entropy loss to a graph that outputs logits";
  let description = [{
    For a `@forward` whose outputs are logits (an exported model without its
    loss), appends a `targets` input (`i64`, the logits' shape without the
    class dim) and a mean cross-entropy over it, returned as an extra result
    named `loss`:
    ```
    @forward(params, inputs) -> (logits)
      => @forward(params, inputs, targets {llmc.input = "targets"})
           -> (logits, cross_entropy mean(logits, targets) {llmc.output = "loss"})
    ```
    `--logits` names the result to use (default: the only float result of
    rank 2 or more). With `--if-no-loss` a `@forward` that already returns a
    rank-0 float result is left as it is.
  }];
  let options = [
    Option<"logits", "logits", "std::string", "\"\"",
           "llmc.output name of the logits result (default: the only float "
           "result of rank >= 2)">,
    Option<"ignoreIndex", "ignore-index", "int64_t", "-100",
           "target value that contributes no loss (padding)">,
    Option<"ifNoLoss", "if-no-loss", "bool", "false",
           "leave @forward unchanged when it already returns a rank-0 float "
           "result (a loss); for pipelines that take either kind of model">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def AppendOptimizerPass : Pass<"llmc-append-optimizer", "::mlir::ModuleOp"> {
  let summary = "Extend @train_step with the optimizer update into a full step";
  let description = [{
    Turns the gradients of `@train_step` (from llmc-autodiff) into updated
    parameters. The learning rate becomes a runtime input and the optimizer
    state threads through as arguments and results marked `llmc.state`:
    ```
    @train_step(params, inputs) -> (loss, grads)
      => @train_step(params, inputs, lr, step, m..., v...)
           -> (loss, params', step', m'..., v'...)
    ```
    AdamW (`llmc.adamw_update` per parameter, PyTorch's torch.optim.AdamW)
    or SGD with momentum (`buf' = momentum * buf + g + wd * p`,
    `p' = p - lr * buf'`, as torch.optim.SGD; elementwise ops). With
    `clip-norm > 0` every gradient is first scaled by
    `min(1, clip / (||g||_2 + 1e-6))` over all gradients together
    (torch.nn.utils.clip_grad_norm_; the norm is one `llmc.global_norm`),
    and the norm is returned as `grad_norm`. Each result that replaces an argument carries
    `llmc.next = <argument index>`.

    Dynamic loss scaling, when llmc-autodiff seeded the backward with the
    state `amp.scale` (torch.cuda.amp.GradScaler inside the step):
    ```
    g_i = g_i * (1 / scale);  n = global_norm(g...);  ok = n < inf
    p'  = where(ok, update(p), p)          (every param and state value)
    t   = where(ok, tracker + 1, 0);  grow = t >= growth-interval
    scale' = where(ok, where(grow, scale * growth, scale), scale * backoff)
    tracker' = where(grow, 0, t);  skipped' = where(ok, skipped, skipped + 1)
    ```
    `grad_norm` (the unscaled gradients' norm) is always returned then.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "adamw or sgd">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW first-moment decay">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW second-moment decay">,
    Option<"epsilon", "epsilon", "double", "1e-8", "AdamW denominator term">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "decoupled weight decay (AdamW) or L2 term (SGD); default: "
           "PyTorch's, 0.01 for adamw and 0 for sgd">,
    Option<"decayMinRank", "decay-min-rank", "int64_t", "0",
           "decay only parameters of at least this rank (2: matrices and "
           "embeddings, not biases and norms, as nanoGPT/llm.c)">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"clipNorm", "clip-norm", "double", "0.0",
           "clip gradients to this global L2 norm (0: no clipping)">,
    Option<"stateType", "state-type", "std::string", "\"\"",
           "test only: bf16 stores the AdamW moments in bf16, the mutation "
           "test's planted mistake (docs/precision.md); default: the "
           "parameter's type">,
    Option<"lossScaleGrowthInterval", "loss-scale-growth-interval",
           "int64_t", "2000",
           "dynamic loss scaling (when @train_step has the state amp.scale): "
           "clean steps in a row before the scale grows (GradScaler's "
           "growth_interval)">,
    Option<"lossScaleGrowth", "loss-scale-growth", "double", "2.0",
           "the scale's factor after growth-interval clean steps">,
    Option<"lossScaleBackoff", "loss-scale-backoff", "double", "0.5",
           "the scale's factor after a step with an inf or NaN gradient">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def AutodiffPass : Pass<"llmc-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: @forward => @train_step (loss, grads)";
  let description = [{
    Adds `@train_step`, the forward pass followed by its reverse pass:
    ```
    @forward(params, inputs) -> (..., loss, ...)
      => @train_step(params, inputs)
           -> (loss, d loss / d p {llmc.grad_of = "p"} for each trainable p)
    ```
    Trainable parameters are the arguments with `llmc.param` and without
    `llmc.frozen`. The reverse pass walks the ops backwards from the loss
    (seeded with 1) and asks each op on the way for its vector-Jacobian
    product through DifferentiableOpInterface; cotangents of values used
    several times (tied embeddings) are summed. Integer values, frozen
    parameters and inputs get no gradient. An op on the path from a
    parameter to the loss without a rule is an error naming it. Needs
    static shapes.
  }];
  let options = [
    Option<"loss", "loss", "std::string", "\"\"",
           "llmc.output name of the result to differentiate (default: the "
           "only rank-0 float result)">,
    Option<"keepForward", "keep-forward", "bool", "true",
           "keep @forward next to @train_step">,
    Option<"lossScale", "loss-scale", "double", "0.0",
           "dynamic loss scaling (fp16): seed the backward with a rank-0 f32 "
           "state argument (llmc.state amp.scale) starting at this "
           "value, so the gradients returned are those of scale * loss "
           "(0: seed with 1)">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def BatchAdamWPass : Pass<"llmc-batch-adamw", "::mlir::func::FuncOp"> {
  let summary = "Group per-parameter AdamW updates into multi-tensor updates";
  let description = [{
    Replaces the `llmc.adamw_update` ops of a function by one
    `llmc.multi_adamw_update` per group of updates that share `lr`, `step`,
    `beta1`, `beta2`, `epsilon`, the element type and the gradient scale
    (one group for an f32 model), so that the CUDA backend launches one
    kernel for all parameters instead of one per parameter. Weight decay
    stays per tensor. A gradient that is `llmc.mul(g, s)` with a rank-0 `s`
    (the clip coefficient of llmc-append-optimizer) and no other use is
    read as `g` with `scale(s)`, so clipping costs no kernel per parameter:
    ```
    %g1 = llmc.mul %g, %c
    %p1, %m1, %v1 = llmc.adamw_update %p, %g1, %m, %v, %lr, %t {wd = 0.1}
    %q1, %n1, %w1 = llmc.adamw_update %q, %h, %n, %w, %lr, %t {wd = 0.0}
      => %r:6 = llmc.multi_adamw_update params(%p) grads(%g) m(%m) v(%v)
                  lr(%lr) step(%t) scale(%c) {weight_decays = [0.1]}
         %s:3 = llmc.multi_adamw_update params(%q) grads(%h) ... {[0.0]}
    ```
    The math is the per-parameter op's, element for element, so results are
    bitwise those of the per-parameter kernels. The group is built where its
    last update was.
  }];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def ChunkClassifierPass : Pass<"llmc-chunk-classifier", "::mlir::func::FuncOp"> {
  let summary = "Compute the classifier's logits and their gradient a chunk of tokens at a time";
  let description = [{
    The logits of the last matmul, `[N, V]`, are the largest buffer of a
    language model's step (GPT-2 124M at B 16: 1.65 GB in bf16). With
    `chunks=k` (k > 1, dividing N) the pass computes them, the loss, their
    gradient and the two products that read it one chunk of N/k tokens at a
    time, so only one chunk's logits are alive (docs/memory.md, "The
    chunked classifier"):
    ```
    x = cast?(reshape?(matmul(h, W)))         // [N, V]
    l = cross_entropy mean x, t
    g = cross_entropy_grad mean x, t, dl
    dh = matmul(reshape?(cast?(g)), W {transpose_rhs})
    dW = matmul(a, cast?(g) {transpose_lhs})
    // =>
    n = #(t != ignore_index);  s = dl / n
    for c in 0..k:  x_c = cast?(matmul(h[c], W));  l_c = cross_entropy sum x_c, t[c]
                    g_c = cast?(cross_entropy_grad sum x_c, t[c], s)
                    dh_c = matmul(g_c, W {transpose_rhs});  dW_c = matmul(a[c], g_c {transpose_lhs})
    l = (l_0 + ... + l_k-1) / n;  dh = concat(dh_c);  dW = dW_0 + ... (in f32)
    ```
    The loss still divides by the tokens of the whole batch. The partial
    weight gradients are summed in f32 and rounded once to their type. The
    chunks are emitted in order at the last reader of the gradient, so one
    chunk's logits die (the fused classifier writes the gradient over them)
    before the next chunk's exist. Anything else reading the logits or the
    gradient leaves the function as it is; `chunks=1` changes nothing.
  }];
  let options = [
    Option<"chunks", "chunks", "int64_t", "1",
           "chunks of tokens (1: leave the classifier whole)">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def InjectNanPass : Pass<"llmc-inject-nan", "::mlir::ModuleOp"> {
  let summary = "Test only: gate one op's output of @forward by a NaN input";
  let description = [{
    For tests of the trainer's NaN policies (docs/trainer.md): multiplies the
    first result of the op named `op` in `@forward` by a new rank-0 f32 input
    `nan_gate`, which the trainer sets to 1 (an exact identity: `x * 1 == x`
    bit for bit) on every step but the chosen one, where it is NaN. It runs on
    the forward graph, before autodiff and kernel formation, so the backward
    pass sees the NaN too and the gate survives fusion:
    ```
    %y = llmc.gelu tanh %x                      // named "gelu_1"
      => %y0 = llmc.gelu tanh %x
         %y = llmc.mul %y0, %nan_gate           // %nan_gate {llmc.input = "nan_gate"}
    ```
    `op` is the op's location name (the ONNX node name, the JSON node
    path), or `<op mnemonic>#<n>` for the n-th op of that kind (from 0), e.g.
    `llmc.gelu#0`, for IR without names.
  }];
  let options = [
    Option<"op", "op", "std::string", "\"\"",
           "the op whose output gets the NaN gate">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def LowerPrecisionPass : Pass<"llmc-lower-precision", "::mlir::ModuleOp"> {
  let summary = "Mixed precision as PyTorch autocast: explicit casts in @forward";
  let description = [{
    Rewrites `@forward` (before autodiff, so that the backward inherits the
    casts as autograd does under autocast) by each op's
    PrecisionPolicyOpInterface class (docs/precision.md):
    ```
    %wt = llmc.transpose %w [1, 0]                      (f32 master weight)
    %y  = llmc.matmul %x, %wt : (f32, f32) -> f32
    %z  = llmc.add %y, %b
    %n  = llmc.layer_norm %z ...
      => %wb = llmc.cast %w : f32 -> bf16               (once, after the param)
         %wt = llmc.transpose %wb [1, 0] : bf16
         %xb = llmc.cast %x : f32 -> bf16
         %y  = llmc.matmul %xb, %wt : (bf16, bf16) -> bf16
         %bb = llmc.cast %b : f32 -> bf16               (the linear's bias)
         %z  = llmc.add %y, %bb : bf16
         %zf = llmc.cast %z : bf16 -> f32
         %n  = llmc.layer_norm %zf ... : f32
    ```
    Each value is cast at most once per type, right after its definition (a
    weight's cast right after the parameter, above the transposes and
    reshapes between it and its matmul), so every use shares it. Results
    keep @forward's declared types (a cast back before the return).
    `precision=fp32` leaves the module untouched. `precision=fp16` is the
    same policy with f16 as the low type (the loss scaling it needs is
    llmc-autodiff's `loss-scale` and llmc-append-optimizer's scaler).
    `precision=tf32` adds no cast: every tensor stays f32 and the module
    gets `llmc.precision = "tf32"`, which makes every f32 matmul a TF32
    tensor-core GEMM (operands rounded to 10 mantissa bits, f32
    accumulation) in the evaluator and in cuBLASLt, as torch's
    `allow_tf32` does for forward and backward alike.

    With `explain`, the module gets `llmc.precision_explain`: one entry per
    op of the lowered @forward, in program order (`op`, `loc`, `class`,
    `type` it computes in, `why`: the interface's reason and what the pass
    decided on top of it: a table, a cast it inserted, a planted mistake).
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"fp32\"",
           "fp32 (no change), bf16 or fp16 (autocast), tf32 (f32 tensors, "
           "TF32 matmuls)">,
    Option<"mutation", "mutation", "std::string", "\"\"",
           "test only: plant a known mistake in the policy (softmax-bf16, "
           "layer-norm-bf16, loss-bf16, gemm-bf16-accumulate, "
           "weight-cast-per-use; docs/precision.md)">,
    Option<"explain", "explain", "bool", "false",
           "record every op's precision and why as the module attribute "
           "llmc.precision_explain (what `llmc compile --explain` prints)">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def PadShapesPass : Pass<"llmc-pad-shapes", "::mlir::ModuleOp"> {
  let summary = "Pad parameter dims to nice numbers without changing results";
  let description = [{
    On `@forward` (after the loss is appended, before precision lowering and
    autodiff; docs/padding.md): every dim of every parameter is followed
    through the graph by each op's PaddableOpInterface rule, which ties it
    to the same dim of other values or says why it cannot be padded. A cost
    model (GEMM tile quantization, 16-byte alignment for the tensor cores,
    a per-architecture table) picks the size; a dim is left alone when
    padding costs more than it saves, when an op cannot pad it, or when an
    input fixes it (token positions, sequence length). The padded
    parameter starts with zero rows, the loss masks the padding columns,
    and a returned value is sliced back to its real shape:

    ```mlir
    func.func @forward(%w: tensor<50257x768xf32> {llmc.param = "wte"}, %x: ..., %t: ...)
      %e = llmc.gather %w, %ids axis 0 : ...
      %wt = llmc.transpose %w [1, 0] : (tensor<50257x768xf32>) -> tensor<768x50257xf32>
      %l = llmc.matmul %h, %wt : (...) -> tensor<32x50257xf32>
      %loss = llmc.cross_entropy mean %l, %t : ...
      // =>
    func.func @forward(%w: tensor<50304x768xf32> {llmc.param = "wte", llmc.real_shape = array<i64: 50257, 768>}, ...)
      %e = llmc.gather %w, %ids axis 0 {bound = 50257 : i64} : ...
      %wt = llmc.transpose %w [1, 0] : (tensor<50304x768xf32>) -> tensor<768x50304xf32>
      %l = llmc.matmul %h, %wt : (...) -> tensor<32x50304xf32>
      %loss = llmc.cross_entropy mean %l, %t {classes = 50257 : i64} : ...
    ```
    Every decision (padded or not, and why) is listed in the module's
    `llmc.padding` attribute, which `llmc compile` prints.
  }];
  let options = [
    Option<"arch", "arch", "std::string", "\"sm_90\"",
           "the GPU whose cost table decides (sm_90, sm_80)">,
    Option<"precision", "precision", "std::string", "\"fp32\"",
           "the element type GEMMs will run in (fp32 or bf16): 16-byte "
           "alignment is 4 or 8 elements">,
    Option<"always", "always", "bool", "false",
           "pad every dim the ops allow to the model's best size, even where "
           "the cost model says it does not pay (tests)">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

def RematerializePass : Pass<"llmc-rematerialize", "::mlir::ModuleOp"> {
  let summary = "Recompute forward values in the backward to fit a memory budget";
  let description = [{
    Activation checkpointing (docs/memory.md, "Rematerialization"). In every
    function that returns a `loss` (`llmc.output`) and computes more than
    it (the backward pass), a forward op is one whose result the loss
    depends on; a candidate is a forward op a later op reads (a saved
    activation). Recomputing it clones it, and the forward ops it reads that
    nothing after the forward reads (its closure), right before its first
    reader after the forward, and those readers read the clone; the clone
    carries `llmc.recomputed`, and the original is freed after its last
    forward use:

    ```mlir
    %h = llmc.layer_norm %x weight %w bias %b : ...
    %y = llmc.matmul %h, %w1 : ...                 // forward
    ...
    %g = llmc.matmul %h2, %dy {transpose_lhs} : ... // backward reads %h
    // =>
    %h = llmc.layer_norm %x weight %w bias %b : ...
    %y = llmc.matmul %h, %w1 : ...
    ...
    %r = llmc.layer_norm %x weight %w bias %b {llmc.recomputed} : ...
    %g = llmc.matmul %r2, %dy {transpose_lhs} : ...
    ```

    Candidates are ordered once, cheapest recompute first: closures of
    elementwise ops and norms, then those that hold attention, then those
    that hold a matmul; earlier in the forward first within a class (their
    values are alive longest). The order is cut into at most `max-levels`
    prefixes; with a `budget`, the pass takes the shortest prefix whose
    planned device peak (kernel formation, fusion and memory planning of a
    copy of the module, by the planner the compiler gives it) fits, so a
    smaller budget never gives a larger peak. A budget below the smallest
    peak of any prefix is an error that names that peak. `levels` forces a
    prefix without a planner (tests, `llmc verify --recompute`). It must run
    after canonicalize/CSE: every llmc op is Pure, and CSE would merge the
    clones back into the forward. A clone of `llmc.dropout_mask` has the
    same seed, offset and step, so it draws the same mask.
    The decisions go into the module's `llmc.recompute` attribute.
  }];
  let options = [
    Option<"budget", "budget", "uint64_t", "0",
           "the device memory the step may plan, in bytes (0: no budget)">,
    Option<"levels", "levels", "int64_t", "-1",
           "recompute the first N levels of candidates without planning "
           "(-1: as the budget needs; a large N: every candidate)">,
    Option<"maxLevels", "max-levels", "int64_t", "12",
           "how many prefixes of the candidate order the budget search "
           "plans at most (compile time)">,
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

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
      written (materialized, never recomputed).
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
      result joins the producer's group. Both are bit-exact.
    - **norm prologues / epilogues**: a layer norm or norm gradient whose
      rows a warp row kernel takes (4k elements, at most 2048 / 1024)
      takes the elementwise group that computes its row operand
      (`layer_norm(add(res, cast(mm)))`) and the elementwise group that
      reads its row result (`cast(add(dres, layer_norm_grad(..)#0))`):
      one kernel that keeps the row in registers; values others read are
      still written. Bit-exact: each value is rounded to its storage type
      where the one-op kernels store it.
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
      the aux input), and with it a `reduce_sum` of its result over every
      axis but the last, of its type (DGELU_BGRAD).
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
           "GELU and GELU-gradient epilogues">,
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

#endif // LLMC_PASSES_TD
