//===- LlmcPrecisionPolicies.cpp - Each op's mixed-precision class --------===//
//
// The answers of PrecisionPolicyOpInterface (LlmcInterfaces.td) for the ops
// that do not simply follow their operands, in one place, as the gradient
// rules are in Llmc*Vjps.cpp. The classes are PyTorch autocast's
// (torch/csrc/autograd/autocast_mode: the "lower_precision_fp" and "fp32"
// lists for CUDA); docs/precision.md has the table and the reasons.
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcOps.h"
#include "dialects/llmc/PrecisionPolicyText.h"

namespace mlir::llmc {

//===----------------------------------------------------------------------===//
// The classes: names and reasons (`llmc compile --explain`)
//===----------------------------------------------------------------------===//

const char *precisionPolicyName(PrecisionPolicy p) {
  switch (p) {
  case PrecisionPolicy::Follow:
    return "Follow";
  case PrecisionPolicy::LowerOperands:
    return "LowerOperands";
  case PrecisionPolicy::Fp32Norm:
    return "Fp32Norm";
  case PrecisionPolicy::Fp32Softmax:
    return "Fp32Softmax";
  case PrecisionPolicy::Fp32Loss:
    return "Fp32Loss";
  case PrecisionPolicy::Fp32Reduction:
    return "Fp32Reduction";
  case PrecisionPolicy::Fp32Math:
    return "Fp32Math";
  case PrecisionPolicy::Explicit:
    return "Explicit";
  }
  return "?";
}

const char *precisionPolicyReason(PrecisionPolicy p) {
  switch (p) {
  case PrecisionPolicy::Follow:
    return "on no autocast list: runs in the widest type of its dimensioned "
           "float operands (torch's type promotion)";
  case PrecisionPolicy::LowerOperands:
    return "autocast's lower-precision list (matmul, attention, and the "
           "bias add of a linear layer, which autocast's addmm rounds with "
           "the product): operands in the low type, f32 accumulation, the "
           "result rounded once";
  case PrecisionPolicy::Fp32Norm:
    return "autocast's fp32 list: the mean and variance of a row lose too "
           "much in 8 or 11 mantissa bits";
  case PrecisionPolicy::Fp32Softmax:
    return "autocast's fp32 list: exp and the row sum need f32's range and "
           "mantissa";
  case PrecisionPolicy::Fp32Loss:
    return "autocast's fp32 list: the loss and its log-sum-exp in f32";
  case PrecisionPolicy::Fp32Reduction:
    return "autocast's fp32 list: long sums accumulate in f32";
  case PrecisionPolicy::Fp32Math:
    return "autocast's fp32 list: exp/log/pow/rsqrt/reciprocal overflow or "
           "lose precision in 16 bits";
  case PrecisionPolicy::Explicit:
    return "a cast: its result type is the point";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Compute-bound ops: operands in the low type, result in the low type
//===----------------------------------------------------------------------===//

PrecisionPolicy MatmulOp::getPrecisionPolicy() {
  return PrecisionPolicy::LowerOperands;
}

PrecisionPolicy AttentionOp::getPrecisionPolicy() {
  return PrecisionPolicy::LowerOperands;
}

AddOp linearBiasAdd(MatmulOp matmul) {
  Value product = matmul.getResult();
  if (!product.hasOneUse())
    return nullptr;
  auto add = dyn_cast<AddOp>(*product.getUsers().begin());
  if (!add || add.getLhs() == add.getRhs())
    return nullptr;
  Value bias = add.getLhs() == product ? add.getRhs() : add.getLhs();
  auto productType = cast<RankedTensorType>(product.getType());
  auto biasType = cast<RankedTensorType>(bias.getType());
  if (biasType.getRank() == 0 ||
      biasType.getShape().back() != productType.getShape().back() ||
      !llvm::all_of(biasType.getShape().drop_back(),
                    [](int64_t d) { return d == 1; }))
    return nullptr;
  return add;
}

/// autocast lowers F.linear (addmm) with its bias: b is cast to the low type
/// and the sum is rounded once, so the add takes the matmul's type instead
/// of promoting to f32 as a plain bf16 + f32 add would.
PrecisionPolicy AddOp::getPrecisionPolicy() {
  for (Value v : getOperands())
    if (auto mm = v.getDefiningOp<MatmulOp>(); mm && linearBiasAdd(mm) == *this)
      return PrecisionPolicy::LowerOperands;
  return PrecisionPolicy::Follow;
}

//===----------------------------------------------------------------------===//
// f32 ops: f32 operands, f32 result
//===----------------------------------------------------------------------===//

PrecisionPolicy LayerNormOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Norm;
}
PrecisionPolicy RmsNormOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Norm;
}
PrecisionPolicy SoftmaxOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Softmax;
}
PrecisionPolicy LogSoftmaxOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Softmax;
}
PrecisionPolicy CrossEntropyOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Loss;
}
PrecisionPolicy ReduceSumOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Reduction;
}
PrecisionPolicy ReduceMeanOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Reduction;
}
PrecisionPolicy ExpOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Math;
}
PrecisionPolicy LogOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Math;
}
PrecisionPolicy RsqrtOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Math;
}
PrecisionPolicy ReciprocalOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Math;
}
PrecisionPolicy PowOp::getPrecisionPolicy() {
  return PrecisionPolicy::Fp32Math;
}

//===----------------------------------------------------------------------===//
// Explicit types and data movement
//===----------------------------------------------------------------------===//

PrecisionPolicy CastOp::getPrecisionPolicy() {
  return PrecisionPolicy::Explicit;
}

bool ReshapeOp::commutesWithCast() { return true; }
bool TransposeOp::commutesWithCast() { return true; }
bool BroadcastToOp::commutesWithCast() { return true; }
bool SliceOp::commutesWithCast() { return true; }

} // namespace mlir::llmc
