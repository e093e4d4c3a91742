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
// Training IR: loss, autodiff, optimizer (docs/training-ir.md)
//===----------------------------------------------------------------------===//

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
    rank 2 or more).
  }];
  let options = [
    Option<"logits", "logits", "std::string", "\"\"",
           "llmc.output name of the logits result (default: the only float "
           "result of rank >= 2)">,
    Option<"ignoreIndex", "ignore-index", "int64_t", "-100",
           "target value that contributes no loss (padding)">,
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
    (torch.nn.utils.clip_grad_norm_), and the norm is returned as
    `grad_norm`. Each result that replaces an argument carries
    `llmc.next = <argument index>`.
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
  ];
  let dependentDialects = ["::mlir::llmc::LlmcDialect"];
}

#endif // LLMC_PASSES_TD
