//===- MatmulEpilogues.h - Which cuBLASLt epilogue a group carries -*- C++ -*-===//
//
// `llmc-fuse-epilogues` puts GELU, GELU-gradient and bias-gradient ops into
// a matmul's group and names the cuBLASLt epilogue that computes them in
// the group's `llmc.epilogue` attribute; codegen
// (compiler/codegen/EpilogueLowering.cpp) lowers such a group to one
// MatmulStep and checks that the ops are what the name says. A plain
// matmul + bias add group carries no attribute (the BIAS epilogue is told
// by its shape, as before). docs/codegen.md "GELU and bias-gradient
// epilogues".
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_MATMULEPILOGUES_H
#define LLMC_PASSES_MATMULEPILOGUES_H

#include "dialects/llmc/LlmcOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace mlir::llmc::epilogue {

/// The attribute on an llmc.kernel group that names its epilogue.
inline constexpr llvm::StringLiteral kAttr = "llmc.epilogue";

enum class Kind {
  Gelu,        // matmul [+ bias] -> gelu tanh, yields (gelu) or (gelu, pre)
  GeluGrad,    // matmul -> gelu_grad tanh pre, dh [-> reduce_sum rows]
  BiasGradLhs, // matmul(c^T, x) and reduce_sum(c) over its rows
  BiasGradRhs, // matmul(x^T, c) and reduce_sum(c) over its rows
};

llvm::StringRef name(Kind kind);
std::optional<Kind> parse(llvm::StringRef name);

/// The epilogue `group` carries, if any (an unknown name is nullopt too;
/// codegen reports it).
std::optional<Kind> of(KernelOp group);

/// The rewrites, in this order (a gelu_grad's bias gradient goes to its
/// matmul before a weight-gradient matmul could take it).
void fuseGelu(func::FuncOp func);
void fuseGeluGrad(func::FuncOp func, bool withBiasGrad);
/// `withRhs`: also the [in, out] layout's dW = x^T c (BGRADA).
void fuseBiasGrad(func::FuncOp func, bool withRhs);

} // namespace mlir::llmc::epilogue

#endif // LLMC_PASSES_MATMULEPILOGUES_H
