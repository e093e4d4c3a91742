//===- NormGradParts.h - What the norm-gradient emitters share -*- C++ -*-===//
//
// Private to NormGradEmitters.cpp (the block kernel, the op emitters) and
// NormGradWarpKernel.cpp (the one-launch warp kernel of rows of 4k <= 1024).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_NORMGRADPARTS_H
#define LLMC_COMPILER_CODEGEN_NORMGRADPARTS_H

#include "compiler/codegen/Emitters.h"

#include <string>
#include <vector>

namespace llmc::codegen {

/// A layer_norm_grad or rms_norm_grad, op-independent.
struct NormGradParts {
  mlir::Value input, grad, weight, dx, dweight, dbias;
  int64_t axis;
  double epsilon;
  bool center; // layer_norm subtracts the mean; rms_norm does not
};

NormGradParts normGradParts(mlir::Operation *op);

/// A per-column sum of the row pass: its name, what a row adds per column
/// (an expression of the kernel), its type and where it goes.
struct ParamGrad {
  std::string name, add;
  mlir::Type type;
  KernelArg arg;
};

/// The per-column sums of the row pass: the parameter gradients and, in a
/// RowFused group, the column sums of its row values (`io`; null for the
/// block kernel).
std::vector<ParamGrad> paramGrads(const NormGradParts &p,
                                  const WarpRowIO *io = nullptr);

/// The plain loads and stores of a one-op norm-gradient warp kernel.
WarpRowIO plainNormGradIO(mlir::Operation *op, const NormGradParts &p);

/// The warp kernel (rows of 4k <= fusion::kMaxWarpNormGradRow) with its
/// loads and stores given by `io`, and its scratch.
mlir::LogicalResult warpNormGrad(mlir::Operation *op, const EmitContext &ctx,
                                 OpLowering &out, const NormGradParts &p,
                                 const WarpRowIO &io);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_NORMGRADPARTS_H
