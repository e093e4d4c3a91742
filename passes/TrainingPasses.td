//===- TrainingPasses.td - llmc training IR passes ---------*- tablegen -*-===//
//
// Part of Passes.td (which includes it); alphabetical within the group.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TRAINING_PASSES_TD
#define LLMC_TRAINING_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def FoldPositionGathersPass : Pass<"llmc-fold-position-gathers",
                                   "::mlir::func::FuncOp"> {
  let summary = "Position embeddings: a window of the table, a sum over the batch";
  let description = [{
    Where the indices of a gather along axis 0 (shape `[..., T]`) are the
    positions 0 .. T-1 for every sequence (a constant, an iota, or either
    broadcast or reshaped: HF GPT-2's `arange(T)`), and T is at most the
    table's rows (and its `bound`):
    ```
    y  = gather(wpe, idx) axis 0      =>  broadcast_to(reshape(slice(wpe, rows [0, T))))
    dw = gather_grad(g, idx) axis 0   =>  slice_grad(reduce_sum(g, batch axes), rows [0, T))
    ```
    The slice, reshape, broadcast and slice_grad are only emitted where
    they change something. The sum runs over the batch in order, the order
    in which the deterministic scatter adds a row's bucket, so the result is
    the scatter's (docs/codegen.md, "scatter"); one launch or none instead
    of six. Gathers of other indices (token ids), along another axis, or of
    positions that do not start at 0 are left as they are.
  }];
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
    and a returned value is sliced back to its real shape. Attention head
    dims that the bf16 tensor-core kernels cannot take (40) are padded at
    the op (q, k, v concatenated with zeros, `scale` pinned to the real
    1/sqrt(D), the result sliced back) where the cost model says so:

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
    Option<"dims", "dims", "std::string", "\"\"",
           "FROM:TO,...: pad every dim of size FROM (parameter dims and "
           "attention head dims) to TO whatever the cost model says, where "
           "the ops allow (tests: intermediate 200:256, head dim 40:48)">,
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

    Candidates are ordered once, greedily, by modelled recompute time per
    byte no longer kept given those before (passes/RecomputeCost.h: GEMM and
    attention FLOPs, the bytes other ops move, launches, with what fusion
    makes of the copies: a GELU behind a recomputed matmul rides in its
    epilogue); earlier in the forward first among equals (their values are
    alive longest); candidates that share a matmul or attention op (q, k, v)
    are taken together. A view of a kept value and a value computed once
    the backward began are not candidates. The order is cut into at most
    `max-levels` prefixes, each cut moved to the end of such a group; with
    a `budget`, the pass takes the shortest prefix whose
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

#endif // LLMC_TRAINING_PASSES_TD
