//===- FunctionLowering.h - Lower a function, plan it -----------*- C++ -*-===//
//
// lowerFunction lowers a func.func group by group in program order
// (docs/kernel-ir.md): an llmc.kernel through lowerKernel, an op outside
// groups (reshape, constant; any op of a function no pass grouped) as a
// group of its own. Ops are named `<mnemonic>_<n>`, n counting the ops of
// the function, those inside groups included, so that kernel and buffer
// names are unique and read in program order.
//
// PlanBuilder.h turns that into a runtime Plan, memory-planned for `llmc
// compile`, or unplanned (every value its own buffer) for `llmc codegen` and
// the GPU tests; the launch sequence is the same.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_FUNCTIONLOWERING_H
#define LLMC_COMPILER_CODEGEN_FUNCTIONLOWERING_H

#include "compiler/codegen/Codegen.h"
#include "dialects/llmc/LlmcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace llmc::codegen {

/// One group, lowered: the op whose emitter ran and what it lowered to.
struct LoweredOp {
  mlir::Operation *op = nullptr; // the emitted op (a fused group's matmul,
                                 // reduction, or its first elementwise op)
  std::string name;              // base name of its kernels ("add_3")
  OpLowering lowering;
  /// What `op`'s results are known by outside: the group's results (a fused
  /// group's result is the matmul's, through its epilogue), or the op's own
  /// results outside groups. Operands are `op`'s: a group is not isolated.
  std::vector<mlir::Value> results;
  /// What KernelArg::operand(i) reads: `op`'s operands, except for fused
  /// groups: the values a fused elementwise group reads from outside, or a
  /// reduction's operands with the casts in its loads looked through.
  std::vector<mlir::Value> operands;
  /// Matmul: the [n] row vector its bias epilogue adds (MatmulStep::bias),
  /// the bias add's other operand in a fused group; null when there is none.
  mlir::Value bias;
  /// Matmul with a GELU-gradient epilogue: the GELU input it reads as
  /// cuBLASLt's aux matrix (MatmulStep::aux); null otherwise.
  mlir::Value auxIn;
};

struct LoweredFunction {
  std::vector<LoweredOp> ops; // program order; the return op excluded
  size_t kernelCount() const;
};

mlir::FailureOr<LoweredFunction> lowerFunction(mlir::func::FuncOp func,
                                               const CodegenOptions &options);

/// Lowers one llmc.kernel group; `index` numbers its ops (it advances by the
/// group's op count). By its kind (passes/FusionUtils.h): one op is that
/// op's lowering; a matmul with its bias add (llmc-fuse-epilogues) is the
/// matmul's MatmulStep with a bias; elementwise ops are one fused kernel
/// (FusedEmitters.cpp); a reduction with casts is the reduction's emitter
/// run on a copy of it that reads and writes the casts' types. Any other
/// group is an error at the group: no fusion forms one.
/// A group carrying `llmc.epilogue` (passes/MatmulEpilogues.h): its
/// matmul's MatmulStep with that epilogue; the group's results are D and
/// the aux output or bias gradient (EpilogueLowering.cpp).
mlir::FailureOr<LoweredOp> lowerEpilogueGroup(mlir::llmc::KernelOp group,
                                              const CodegenOptions &options,
                                              unsigned &index);

mlir::FailureOr<LoweredOp> lowerKernel(mlir::llmc::KernelOp group,
                                       const CodegenOptions &options,
                                       unsigned &index);

/// The initial bytes of the offset table `table` of `op` (Codegen.h,
/// ScratchBuffer), given the arena offset of each value's buffer. Both plan
/// builders fill their tables with it once buffers are placed.
std::vector<uint8_t>
offsetTableBytes(const LoweredOp &op, const ScratchBuffer &table,
                 llvm::function_ref<int64_t(mlir::Value)> offsetOf);

/// A human-readable launch table of a plan: its buffers, then one line per
/// step with grid, block, shared memory and arguments by buffer name (for
/// `llmc codegen` and the CUDA dump).
std::string launchTable(const Plan &plan);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_FUNCTIONLOWERING_H
