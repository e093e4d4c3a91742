//===- AttentionBackend.h - generated or cuDNN attention --------*- C++ -*-===//
//
// `--attention-backend auto|generated|cudnn` (docs/codegen.md "cuDNN
// attention"): which attention ops of the step become cuDNN steps. `auto`
// times both backends on this machine's GPU for each distinct attention
// shape (forward and backward together, the best of a few CUDA-graph
// replays) and marks the ops where cuDNN is faster; without a GPU or
// without cuDNN it keeps the generated kernels. The report lines say what
// was chosen and the times.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_ATTENTIONBACKEND_H
#define LLMC_COMPILER_ATTENTIONBACKEND_H

#include "compiler/codegen/Codegen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace llmc {

/// The attribute on the attention_lse and attention_grad ops that run on
/// cuDNN (every op it takes under `cudnn`, the faster ones under `auto`);
/// codegen lowers those to cuDNN steps. Unit: a deterministic backward;
/// "atomic": dQ accumulated with atomics (`--attention-backward atomic`).
/// Set before any memory plan is judged, so that the planned peak of the
/// classifier's chunks, the budget and `--batch auto` holds cuDNN's
/// workspace (docs/memory.md).
constexpr const char *kCudnnAttentionAttr = "llmc.cudnn_attention";

/// Sets `options` and marks ops (cudnn: every op cuDNN takes; auto: the
/// ones measured faster) and appends the report's lines. Never fails: a
/// measurement that cannot run keeps the generated kernels and says why.
void chooseAttentionBackend(mlir::func::FuncOp func, const std::string &backend,
                            codegen::CodegenOptions &options,
                            std::vector<std::string> &lines);

} // namespace llmc

#endif // LLMC_COMPILER_ATTENTIONBACKEND_H
