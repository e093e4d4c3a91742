//===- FunctionLowering.h - Lower a function, plan it -----------*- C++ -*-===//
//
// lowerFunction lowers every op of a func.func in program order and names
// the ops `<mnemonic>_<n>`, n counting the function's ops, so that kernel
// and buffer names are unique and read in program order. It then fuses
// `add(matmul(x, w), b)` into the matmul's bias epilogue where it can
// (EpilogueFusion.h), so both plan builders see one decision.
//
// buildUnplannedPlan turns that into a runtime Plan without a memory plan:
// every value gets its own buffer, stacked 256-byte aligned (reshape results
// alias their operand's; constants carry their data). It is what `llmc
// codegen` and the GPU tests run until the memory planner (docs/codegen.md,
// step 2) replaces the layout; the launch sequence stays the same.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_FUNCTIONLOWERING_H
#define LLMC_COMPILER_CODEGEN_FUNCTIONLOWERING_H

#include "compiler/codegen/Codegen.h"
#include "compiler/eval/RefTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace llmc::codegen {

struct LoweredOp {
  mlir::Operation *op = nullptr;
  std::string name; // base name of its kernels ("add_3")
  OpLowering lowering;
  /// Matmul: the [n] row vector its bias epilogue adds (MatmulStep::bias),
  /// taken from a fused add; null when there is none.
  mlir::Value bias;
};

struct LoweredFunction {
  std::vector<LoweredOp> ops; // program order; the return op excluded
  size_t kernelCount() const;
};

mlir::FailureOr<LoweredFunction> lowerFunction(mlir::func::FuncOp func,
                                               const CodegenOptions &options);

/// Buffer names of the unplanned plan: "arg3:h.0.ln_1.weight" for arguments
/// (named by llmc.param / llmc.input when present), "<kernel base>.out<j>" for
/// op results, "<kernel base>.<scratch>" for scratch buffers.
struct UnplannedPlan {
  Plan plan;
  std::vector<std::string> argumentBuffers; // per function argument
  std::vector<std::string> resultBuffers;   // per function result
};

mlir::FailureOr<UnplannedPlan>
buildUnplannedPlan(mlir::func::FuncOp func, const LoweredFunction &lowered);

/// A tensor's bytes as the device stores it (f32, bf16 and f16 bits, i32,
/// i64, i1 as one byte) and back.
std::vector<uint8_t> toDeviceBytes(const RefTensor &t);

/// The initial bytes of the offset table `table` of `op` (Codegen.h,
/// ScratchBuffer), given the arena offset of each value's buffer. Both plan
/// builders fill their tables with it once buffers are placed.
std::vector<uint8_t>
offsetTableBytes(mlir::Operation *op, const ScratchBuffer &table,
                 llvm::function_ref<int64_t(mlir::Value)> offsetOf);
RefTensor fromDeviceBytes(const std::vector<uint8_t> &bytes, ElementKind kind,
                          std::vector<int64_t> shape);

/// A human-readable launch table of a plan: its buffers, then one line per
/// step with grid, block, shared memory and arguments by buffer name (for
/// `llmc codegen` and the CUDA dump).
std::string launchTable(const Plan &plan);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_FUNCTIONLOWERING_H
