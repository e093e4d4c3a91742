//===- ClassifierRowMath.h - The cross-entropy row's per-logit code -*- C++ -*-===//
//
// What every cross-entropy row kernel (ClassifierEmitter.cpp: fused or not,
// every row cache, the cluster's too) runs per vector of logits: the online
// max/sum fold and the gradient's stores. One source for all of them keeps
// them bitwise equal to each other. Only ClassifierEmitter.cpp includes this.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_CLASSIFIERROWMATH_H
#define LLMC_COMPILER_CODEGEN_CLASSIFIERROWMATH_H

#include <functional>
#include <string>

namespace llmc::codegen {

/// exp as ex2.approx (the default) or expf (LLMC_CE_EXP=expf).
bool ex2Exp();

/// The device helpers of the ex2 form (exp2Diff, onlineAddEx2,
/// onlineAddVecEx2); after the kernel's constants (they use kVec).
std::string ex2Helpers();

/// Folds vector `in` at index `v` into the running max `m` and sum `s`;
/// `load` reads element `e` of `in` as f32.
std::string rowFold(bool ex2, const std::string &load);

/// Stores the gradient of vector `v` into d[v]: w * (softmax - onehot),
/// with `store` rounding an f32 expression to the gradient's type.
std::string rowGrads(bool ex2, const std::string &load,
                     const std::function<std::string(const std::string &)> &store);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_CLASSIFIERROWMATH_H
