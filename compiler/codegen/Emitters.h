//===- Emitters.h - Emitter table and source helpers ------------*- C++ -*-===//
//
// Internal to compiler/codegen. An emitter lowers one op: it receives the op
// and an EmitContext (options, kernel base name) and fills an OpLowering.
// Each family registers its emitters in one function, keyed by op name, so
// that a new op (autodiff's backward ops) is one emitter and one line.
//
// KernelSource assembles a kernel's translation unit in the shape llm.c's
// kernels have: a header comment naming the source op, its location and
// shapes, and the scheme; the includes the element types need; constexpr
// sizes with static_asserts; the `extern "C" __global__` kernel.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_EMITTERS_H
#define LLMC_COMPILER_CODEGEN_EMITTERS_H

#include "compiler/codegen/Codegen.h"
#include "compiler/codegen/IndexMath.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

namespace mlir::llmc {
class KernelOp;
class CrossEntropyOp;
class CrossEntropyGradOp;
enum class LossReduction : uint32_t; // LlmcEnums.td
} // namespace mlir::llmc

namespace llmc::codegen {

struct EmitContext {
  const CodegenOptions &options;
  std::string name; // kernel base name ("layer_norm_2")
};

using Emitter = std::function<mlir::LogicalResult(
    mlir::Operation *op, const EmitContext &ctx, OpLowering &out)>;
using EmitterTable = llvm::StringMap<Emitter>;

template <typename OpTy, typename Fn>
void addEmitter(EmitterTable &table, Fn fn) {
  table[OpTy::getOperationName()] =
      [fn](mlir::Operation *op, const EmitContext &ctx, OpLowering &out) {
        return fn(llvm::cast<OpTy>(op), ctx, out);
      };
}

void registerElementwiseEmitters(EmitterTable &table);

/// An elementwise op's scalar computation (ElementwiseEmitters.cpp): `expr`
/// computes the result from the operands' compute-typed values named a, b
/// and c, in the compute type, or in the storage type when `isStorage`;
/// `helpers` are device functions it calls. The one-op kernels and the
/// fused ones (FusedEmitters.cpp) both use it.
///
/// In a fused kernel two ops meet in registers, and NVRTC (and ptxas, which
/// reads a plain PTX mul.f32 and add.f32 the same way) contracts a multiply
/// that ends one op with an add of the next into one FMA: one rounding fewer
/// than the one-op kernels, which store and load between them. So the
/// arithmetic ops use the explicitly rounded __fadd_rn / __fsub_rn /
/// __fmul_rn, which are never contracted (in a one-op kernel, between a load
/// and a store, they compute what `a + b` does), and the two fields below say
/// where else an op boundary needs a barrier (docs/fusion.md "Exactness").
struct ScalarExpr {
  std::string scheme; // the header's description ("y = a + b")
  std::string expr;
  bool isStorage = false;
  std::string helpers;
  /// How the value ends. Rounded: an instruction no reader can merge with
  /// (an explicitly rounded multiply or add, a division, a square root, a
  /// conversion, a comparison, a max). PassThrough: an operand's value,
  /// negated or selected, so rounded when the operands are. Open: a library
  /// function, which may end in a plain multiply (expf does).
  enum class End { Rounded, PassThrough, Open };
  End end = End::Rounded;
  /// Whether the expression reads its float operands only with instructions
  /// that cannot absorb a multiply (explicitly rounded arithmetic,
  /// conversions, comparisons, selects). Otherwise an operand that is not
  /// rounded at its end is sealed first (sealedOperand).
  bool sealsOperands = true;
};
/// Null for an op that is not elementwise.
std::optional<ScalarExpr> scalarExpr(mlir::Operation *op);

/// The one kernel of an elementwise group (passes/FusionUtils.h):
/// KernelArg::operand(k) is `inputs[k]` (values the group reads from
/// outside), KernelArg::result(k) the group's result k.
mlir::LogicalResult emitFusedElementwise(mlir::llmc::KernelOp group,
                                         llvm::ArrayRef<mlir::Value> inputs,
                                         const EmitContext &ctx,
                                         OpLowering &out);
/// The one-block-per-row kernel of cross_entropy (loss), its gradient
/// (grad) or both (ClassifierEmitter.cpp): every variant visits a row's
/// elements in the same order, so that the loss and the gradient computed
/// apart or together, from bf16 or f32 logits, round alike.
struct CrossEntropyRows {
  mlir::Operation *op = nullptr; // named in the kernel's header
  std::string name;
  enum class Reduction { Mean, Sum, None } reduction = Reduction::Mean;
  int64_t positions = 0, cols = 0, classes = 0, ignoreIndex = -100;
  mlir::Type lt, tt;          // logits (as loaded) and targets
  bool loss = false;          // write each row's loss ...
  bool lossToScratch = false; // ... as f32 into `row_loss`, else to `out`
  mlir::Type lossType;        // `out`'s element type
  bool grad = false;          // write the gradient
  mlir::Type gt, rt;          // dloss and the gradient (as stored)
  KernelArg logitsArg, targetsArg, dlossArg, countArg, lossArg, gradArg;
};
EmittedKernel crossEntropyRowsKernel(const CrossEntropyRows &rows);
/// The one-block count of a mean cross-entropy gradient's non-ignored
/// positions into the f32 scratch `countScratch` (the normalizer, known
/// before any gradient is written); `what` names the op in the scheme.
EmittedKernel crossEntropyCountKernel(mlir::llmc::CrossEntropyGradOp op,
                                      const std::string &what,
                                      int64_t positions,
                                      const std::string &name,
                                      unsigned countScratch);
/// An llmc.cross_entropy reduction as CrossEntropyRows sees it.
CrossEntropyRows::Reduction reductionOf(mlir::llmc::LossReduction r);

/// The kernels of a classifier group (passes/FusionUtils.h): the loss of
/// `ce` and the gradient of `grad` over the same logits, read as `lt` and
/// stored as `rt` (the casts in the group's loads and stores).
/// KernelArg::operand 0..2 are the logits, targets and dloss; results 0
/// and 1 the loss and the gradient, which may share the logits' buffer.
mlir::LogicalResult emitClassifier(mlir::llmc::CrossEntropyOp ce,
                                   mlir::llmc::CrossEntropyGradOp grad,
                                   mlir::Type lt, mlir::Type rt,
                                   const EmitContext &ctx, OpLowering &out);
/// The statements that compute elementwise `op` for element e into a new
/// variable `var` of its storage type, reading each operand's storage value
/// from `element` (FusedEmitters.cpp; the fused and row-fused kernels).
/// Values in `open` (f32 values a multiply or a library function may end
/// in: an Open op's result, a norm's row result) are sealed before an op
/// that does not seal its operands reads them; the op's own result joins
/// `open` when it is not rounded at its end.
std::string elementwiseOpCode(mlir::Operation *op,
                              const llvm::DenseMap<mlir::Value, std::string>
                                  &element,
                              const std::string &var,
                              const std::string &indent,
                              llvm::DenseSet<mlir::Value> &open);

/// `value` (an f32 expression) through an exact identity that no multiply
/// before it and no add after it can be contracted across: what a store
/// and a load between two one-op kernels do.
std::string sealedOperand(const std::string &value);

/// How a warp row kernel (one warp per row, chunks of 4 elements: the
/// layer_norm forward, the norm gradients) reads its row operands and
/// writes its row result. A one-op kernel loads and stores vectors of the
/// op's operands and results; a RowFused group (passes/FusionUtils.h)
/// computes its prologue in the loads and its epilogue in the stores
/// (RowFusedEmitters.cpp). Code strings run with `row`, `lane`, `i` and `c`
/// (the chunk) in scope.
struct WarpRowIO {
  std::string params; // the row tensors read, before the op's parameters
  std::vector<KernelArg> args;
  // The same row tensors by parameter name and element type (the norm
  // gradient prefetches a later row of each into L2).
  std::vector<std::pair<std::string, mlir::Type>> rowReads;
  std::string outParams; // the row tensors written, after them
  std::vector<KernelArg> outArgs;
  std::vector<KernelArg> operandArgs; // per operand of the op (weight, bias)
  std::vector<KernelArg> resultArgs;  // per result (parameter gradients)
  // Norm gradients: column sums of row values (bias gradients), summed per
  // column next to dweight and dbias. `add` is the f32 value a row adds, an
  // expression in scope after storeElement's code.
  struct ColumnSum {
    std::string name, add;
    mlir::Type type; // of the sum
    KernelArg arg;
  };
  std::vector<ColumnSum> columnSums;
  std::string rowSetup;   // at the start of each row
  std::string load;       // in `if (c < kChunks)`: sets the row operands'
                          // 4 elements (layer_norm: x[i][e]; the gradients:
                          // x[4 * i + e] and dy[4 * i + e])
  std::string storeSetup; // before the loop over chunks that stores
  std::string storeBegin; // in `if (c < kChunks)`, before the element loop
  std::function<std::string(const std::string &y)> storeElement; // y: f32
  std::string storeEnd;   // after the element loop
  std::string helpers;
  std::vector<mlir::Type> types;
  std::string scheme; // a line of the kernel's header, when not empty
};
/// layer_norm (rows of 4k <= kMaxWarpNormRow) and the norm gradients (4k <=
/// kMaxWarpNormGradRow) with their loads and stores given by `io`.
mlir::LogicalResult emitLayerNormWarpRows(mlir::Operation *op,
                                          const EmitContext &ctx,
                                          OpLowering &out, const WarpRowIO &io);
mlir::LogicalResult emitNormGradWarpRows(mlir::Operation *op,
                                         const EmitContext &ctx,
                                         OpLowering &out, const WarpRowIO &io);
/// A RowFused group's kernels: KernelArg::operand(k) is `inputs[k]`,
/// KernelArg::result(k) the group's result k, then `extraResults[j]` (the
/// norm's results the group does not yield) result(numResults + j).
mlir::LogicalResult emitRowFused(mlir::llmc::KernelOp group,
                                 llvm::ArrayRef<mlir::Value> inputs,
                                 llvm::ArrayRef<mlir::Value> extraResults,
                                 const EmitContext &ctx, OpLowering &out);

void registerShapeEmitters(EmitterTable &table);
void registerReduceEmitters(EmitterTable &table);
void registerNormEmitters(EmitterTable &table);
void registerLossEmitters(EmitterTable &table);
void registerAttentionEmitters(EmitterTable &table);
void registerMatmulEmitters(EmitterTable &table);
// The backward and optimizer ops of a training step (LlmcGradOps.td).
void registerNormGradEmitters(EmitterTable &table);
void registerScatterEmitters(EmitterTable &table);
void registerAttentionGradEmitters(EmitterTable &table);
void registerOptimizerEmitters(EmitterTable &table);
// llmc.dropout_mask (DropoutEmitter.cpp).
void registerDropoutEmitters(EmitterTable &table);

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

/// Static shape of a ranked tensor value.
Shape shapeOf(mlir::Value v);
mlir::Type elementTypeOf(mlir::Value v);

/// How an element is stored: "float", "__nv_bfloat16", "__half", "int",
/// "long long", "unsigned char" (i1).
std::string storageType(mlir::Type t);
/// What kernels compute in: "float" for every float type, the integer type
/// for integers, "bool" for i1.
std::string computeType(mlir::Type t);
bool isFloatType(mlir::Type t);
/// `expr` (a storage value) converted to the compute type.
std::string loadAs(mlir::Type t, const std::string &expr);
/// `expr` (a compute value) converted to the storage type.
std::string storeAs(mlir::Type t, const std::string &expr);
/// A float literal that reads back exactly as the f32 nearest to `v`
/// ("0.044715f", "INFINITY", "-INFINITY", "NAN").
std::string floatLiteral(double v);

//===----------------------------------------------------------------------===//
// Kernel sources
//===----------------------------------------------------------------------===//

/// Collects the names (NameLoc: ONNX node names) and the first file
/// position ("file.onnx:3:14", directory stripped) of a location.
void describeLoc(mlir::Location loc, std::vector<std::string> &names,
                 std::string &position);

class KernelSource {
public:
  /// Starts a kernel named `name` for `op`: the header comment names the op,
  /// its location and its operand and result types.
  KernelSource(mlir::Operation *op, const std::string &name);

  /// A line of the header comment that describes the scheme.
  void scheme(const std::string &text);
  /// Registers an element type (adds cuda_bf16.h / cuda_fp16.h as needed).
  void use(mlir::Type t);
  /// Chooses the index type: 64-bit when any extent reaches 2^31.
  void indexRange(int64_t maxElements);
  /// `constexpr index_t <name> = <value>;  // <comment>`.
  void constant(const std::string &name, int64_t value,
                const std::string &comment = "");
  /// `constexpr float <name> = <value>;`.
  void floatConstant(const std::string &name, double value,
                     const std::string &comment = "");
  /// `static_assert(<cond>, "<why>");`.
  void staticAssert(const std::string &cond, const std::string &why);
  /// Device helpers emitted before the kernel.
  void helper(const std::string &code);
  /// The kernel body (signature included).
  void kernel(const std::string &code);

  const std::string &name() const { return name_; }
  std::string str() const;
  /// The op and its location in one line, for EmittedKernel::origin.
  static std::string origin(mlir::Operation *op);

private:
  std::string name_;
  std::string header_;
  std::string scheme_;
  bool bf16_ = false, f16_ = false, wideIndex_ = false;
  std::string constants_;
  std::string helpers_;
  std::string kernel_;
};

/// A kernel with `args` launched over `n` elements, one thread each, as a
/// grid-stride loop: block = options.blockSize, grid capped at maxBlocks.
EmittedKernel elementwiseLaunch(const KernelSource &src, const EmitContext &ctx,
                                int64_t n, std::vector<KernelArg> args);

/// Appends `k` as the only kernel of a Kernels lowering.
mlir::LogicalResult singleKernel(OpLowering &out, EmittedKernel k);

/// `const T *__restrict__ name` / `T *__restrict__ name` parameters.
std::string inParam(mlir::Type t, const std::string &name);
std::string outParam(mlir::Type t, const std::string &name);

/// The row count and row length of an op that works on the trailing dims
/// `axis ..< rank` of a static shape.
struct Rows {
  int64_t rows = 1, cols = 1;
};
Rows rowsOf(const Shape &shape, int64_t axis);

/// Threads per block for a one-block-per-row kernel over `cols` columns:
/// a multiple of 32 between 32 and 1024.
unsigned rowBlockSize(int64_t cols);

/// Device functions for block-wide reductions: each warp reduces with
/// shuffles, warp leaders meet in shared memory, every thread gets the
/// result. The order is fixed by thread indices, so results are
/// deterministic.
enum BlockReduce : unsigned {
  kBlockSum = 1,     // float blockSum(float)
  kBlockMax = 2,     // float blockMax(float), NaN-propagating
  kBlockWelford = 4, // void blockWelford(float &n, float &mean, float &m2)
  kBlockOnline = 8,  // void blockOnline(float &max, float &sumExp), and
                     // onlineAdd(m, s, x) folding x into a thread's pair
};
std::string blockReduceHelpers(unsigned which);
/// The warp-per-row kernels' helpers: an aligned vector type `Vec<T, N>`
/// and `warpAllSum`, a butterfly sum that gives every lane the same bits.
std::string warpRowHelpers();
/// `prefetchL2(p, bytes, lane)`: the lanes of a warp ask L2 for the 128-byte
/// lines of [p, p + bytes) (prefetch.L2), for a row the warp reads later.
std::string warpRowPrefetchHelper();

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_EMITTERS_H
