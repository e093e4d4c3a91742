//===- TensorConvert.h - API tensors to and from the backends ---*- C++ -*-===//
//
// The API's tensors are typed host or device memory (TensorView); the
// reference evaluator holds RefTensors (doubles and int64s) and the runtime
// plan's buffers have llmc::DType. These helpers convert between them; the
// caller has already checked that dtypes and shapes agree.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_JIT_TENSORCONVERT_H
#define LLMC_COMPILER_JIT_TENSORCONVERT_H

#include "llmc/Step.h"

#include "compiler/eval/RefTensor.h"
#include "runtime/Plan.h"

#include <optional>

namespace llmc::jit {

int64_t elementCount(const std::vector<int64_t> &shape);
std::string typeText(DType dtype, const std::vector<int64_t> &shape); // "i64[2, 16]"

/// The API type of an evaluator element kind / a plan dtype, if it has one.
std::optional<DType> dtypeOfKind(ElementKind kind);
std::optional<DType> dtypeOfPlan(llmc::DType dtype);
llmc::DType planDType(DType dtype);

/// Host `view` (of dst's shape) into `dst`, rounded to dst's kind.
Status hostToRef(const TensorView &view, RefTensor &dst);
/// A float RefTensor as f32 bytes.
void refToF32(const RefTensor &src, std::vector<uint8_t> &f32);

} // namespace llmc::jit

#endif // LLMC_COMPILER_JIT_TENSORCONVERT_H
