//===- OptimizerEmitters.cpp - AdamW updates and the global norm ----------===//
//
// adamw_update(p, g, m, v, lr, step) -> (p', m', v'): one thread per element
// in a grid-stride loop, torch.optim.AdamW exactly as the reference
// evaluator computes it (decoupled decay first, then both bias corrections
// with the incremented step t):
//
//   m' = b1 m + (1 - b1) g          v' = b2 v + (1 - b2) g^2
//   p' = p (1 - lr wd) - lr / (1 - b1^t) * m' / (sqrt(v') / sqrt(1 - b2^t) +
//   eps)
//
// lr (f32) and t (i64) are rank-0 tensors read from device memory, so a
// learning-rate schedule changes them between graph replays without a new
// kernel. The bias corrections are computed once per thread in double (pow
// of a rounded beta drifts in f32 over many steps); the per-element math is
// f32 as everywhere else.
//
// multi_adamw_update and global_norm are multi-tensor kernels: every tensor
// is cut into chunks of kChunk elements (its last chunk partial), and a
// block takes chunks c = blockIdx.x, + gridDim.x, ...; the chunk's tensor is
// a binary search in a __constant__ table of first chunks. Tensor sizes and
// weight decays are baked in; the device addresses are not known before the
// memory plan, so the kernel takes the address of its operand #0 (`base`)
// and a scratch table of byte offsets relative to it that the plan builder
// fills once buffers are placed (ScratchBuffer::offsetsOf). The AdamW
// element math is the same source text as adamw_update's, so a multi-tensor
// update is bitwise the per-parameter one.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "dialects/llmc/LlmcOps.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::llmc;

namespace llmc::codegen {

namespace {

/// The per-element AdamW statements, shared by both kernels so that their
/// f32 math is the same text: reads the f32 values `p`, `m`, `v` (by default
/// `param[i]`, `m[i]`, `v[i]` widened) and the gradient expression `g`,
/// uses `decay`, `stepSize`, `rootBc2`, stores at index `i`.
std::string adamwElement(Type pt, Type mt, Type vt, const std::string &g,
                         std::string p = "", std::string m = "",
                         std::string v = "") {
  if (p.empty())
    p = loadAs(pt, "param[i]"), m = loadAs(mt, "m[i]"), v = loadAs(vt, "v[i]");
  return "    const float g = " + g +
         ";\n"
         "    const float mi = kBeta1 * " +
         m +
         " + kOneMinusBeta1 * g;\n"
         "    const float vi = kBeta2 * " +
         v +
         " + kOneMinusBeta2 * g * g;\n"
         "    const float denom = sqrtf(vi) / rootBc2 + kEps;\n"
         "    new_param[i] = " +
         storeAs(pt, p + " * decay - stepSize * mi / denom") +
         ";\n"
         "    new_m[i] = " +
         storeAs(mt, "mi") +
         ";\n"
         "    new_v[i] = " +
         storeAs(vt, "vi") + ";\n";
}

/// The constants both AdamW kernels use.
void adamwConstants(KernelSource &src, double b1, double b2, double eps) {
  src.floatConstant("kBeta1", b1, "beta1");
  src.floatConstant("kOneMinusBeta1", 1.0 - b1, "1 - beta1");
  src.floatConstant("kBeta2", b2, "beta2");
  src.floatConstant("kOneMinusBeta2", 1.0 - b2, "1 - beta2");
  src.floatConstant("kEps", eps, "epsilon");
  // The betas as doubles for the bias corrections.
  char betas[160];
  std::snprintf(betas, sizeof(betas),
                "constexpr double kBeta1d = %.17g, kBeta2d = %.17g;", b1, b2);
  src.helper(betas);
}

/// Bias corrections and step size, once per thread.
const char *kAdamWPrologue =
    "  const float lr = lr_ptr[0];\n"
    "  const double t = (double)step_ptr[0];\n"
    "  const float bc1 = (float)(1.0 - pow(kBeta1d, t));\n"
    "  const float rootBc2 = (float)sqrt(1.0 - pow(kBeta2d, t));\n"
    "  const float stepSize = lr / bc1;\n";

LogicalResult emitAdamW(AdamWUpdateOp op, const EmitContext &ctx,
                        OpLowering &out) {
  Shape shape = shapeOf(op.getParam());
  int64_t n = numElements(shape);
  Type pt = elementTypeOf(op.getParam()), gt = elementTypeOf(op.getGrad()),
       mt = elementTypeOf(op.getM()), vt = elementTypeOf(op.getV());
  double b1 = op.getBeta1().convertToDouble();
  double b2 = op.getBeta2().convertToDouble();
  KernelSource src(op, ctx.name);
  src.scheme("AdamW (torch.optim.AdamW): one thread per element, grid-stride "
             "loop; lr and step read from device memory");
  src.constant("kN", n, "elements of the parameter " + dimsString(shape));
  adamwConstants(src, b1, b2, op.getEpsilon().convertToDouble());
  src.floatConstant("kWeightDecay", op.getWeightDecay().convertToDouble(),
                    "weight_decay");
  src.kernel(
      "extern \"C\" __global__ void __launch_bounds__(" +
      std::to_string(ctx.options.blockSize) + ")\n" + ctx.name + "(" +
      inParam(pt, "param") + ", " + inParam(gt, "grad") + ", " +
      inParam(mt, "m") + ", " + inParam(vt, "v") +
      ", const float *__restrict__ lr_ptr, const long long *__restrict__ "
      "step_ptr, " +
      outParam(pt, "new_param") + ", " + outParam(mt, "new_m") + ", " +
      outParam(vt, "new_v") + ") {\n" + kAdamWPrologue +
      "  const float decay = 1.0f - lr * kWeightDecay;\n"
      "  for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i "
      "< kN;\n"
      "       i += (index_t)gridDim.x * blockDim.x) {\n" +
      adamwElement(pt, mt, vt, loadAs(gt, "grad[i]")) + "  }\n}\n");
  return singleKernel(
      out,
      elementwiseLaunch(
          src, ctx, n,
          {KernelArg::operand(0), KernelArg::operand(1), KernelArg::operand(2),
           KernelArg::operand(3), KernelArg::operand(4), KernelArg::operand(5),
           KernelArg::result(0), KernelArg::result(1), KernelArg::result(2)}));
}

//===----------------------------------------------------------------------===//
// Multi-tensor kernels
//===----------------------------------------------------------------------===//

/// Elements per chunk: 16 per thread of a block.
int64_t chunkElements(const EmitContext &ctx) {
  return 16 * static_cast<int64_t>(ctx.options.blockSize);
}

/// `__constant__ T name[] = {a, b, ...};`
template <typename T, typename Fn>
std::string constantArray(const std::string &type, const std::string &name,
                          const std::vector<T> &values, Fn format) {
  std::string s = "__constant__ " + type + " " + name + "[" +
                  std::to_string(values.size()) + "] = {";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? (i % 8 ? ", " : ",\n    ") : "") + format(values[i]);
  return s + "};";
}

/// The chunk table of `tensors` (their element counts) in `src`: kTensors,
/// kChunk, kChunks, kSize[k], kChunkBegin[k] (first chunk of tensor k; an
/// empty tensor owns none) and `tensorOfChunk(c)`. Returns kChunks.
int64_t chunkTable(KernelSource &src, const EmitContext &ctx,
                   const std::vector<int64_t> &sizes) {
  int64_t chunk = chunkElements(ctx);
  std::vector<int64_t> begin = {0};
  int64_t most = 1;
  for (int64_t n : sizes) {
    begin.push_back(begin.back() + (n + chunk - 1) / chunk);
    most = std::max(most, n);
  }
  int64_t chunks = begin.back();
  begin.pop_back();
  src.indexRange(most);
  src.constant("kTensors", static_cast<int64_t>(sizes.size()), "tensors");
  src.constant("kChunk", chunk, "elements per chunk (16 per thread)");
  src.constant("kChunks", chunks, "chunks of all tensors");
  src.staticAssert("kChunks < (1ll << 31)", "chunk indices are int");
  auto integer = [](int64_t v) { return std::to_string(v); };
  src.helper(constantArray("index_t", "kSize", sizes, integer));
  src.helper(constantArray("int", "kChunkBegin", begin, integer));
  src.helper(
      "// The tensor that owns chunk c: the last k with kChunkBegin[k] <= c.\n"
      "__device__ __forceinline__ int tensorOfChunk(int c) {\n"
      "  int lo = 0, hi = (int)kTensors - 1;\n"
      "  while (lo < hi) {\n"
      "    const int mid = (lo + hi + 1) / 2;\n"
      "    if (kChunkBegin[mid] <= c)\n"
      "      lo = mid;\n"
      "    else\n"
      "      hi = mid - 1;\n"
      "  }\n"
      "  return lo;\n"
      "}");
  return chunks;
}

/// The chunk loop's head: tensor k, its chunk's [begin, end).
const char *kChunkLoop =
    "  for (int c = blockIdx.x; c < (int)kChunks; c += gridDim.x) {\n"
    "    const int k = tensorOfChunk(c);\n"
    "    const index_t begin = (index_t)(c - kChunkBegin[k]) * kChunk;\n"
    "    const index_t end = min(begin + kChunk, kSize[k]);\n";

/// `code` with every line indented by two more spaces.
std::string indented(const std::string &code) {
  std::string out;
  for (size_t at = 0; at < code.size();) {
    size_t end = code.find('\n', at);
    end = end == std::string::npos ? code.size() : end + 1;
    out += "  " + code.substr(at, end - at);
    at = end;
  }
  return out;
}

/// `const T *name = (const T *)(base + o[j]);` for a table row `o`.
std::string tablePointer(Type t, const std::string &name, unsigned j,
                         bool write) {
  std::string type = (write ? "" : "const ") + storageType(t) + " *";
  return "    " + type + name + " = (" + type + ")(base + o[" +
         std::to_string(j) + "]);\n";
}

/// Multi-tensor operands of which some are read narrow: the one narrow type
/// and a per-tensor flag table, so one kernel loads each tensor as it is
/// stored (a chunk's tensor is uniform across its block: no divergence).
struct NarrowReads {
  LogicalResult status = success();
  Type narrow;
  std::vector<double> flags; // 1: the tensor is stored as `narrow`
  bool any() const { return static_cast<bool>(narrow); }
  void declare(KernelSource &src, const std::string &table) const {
    src.use(narrow);
    src.helper(constantArray("bool", table, flags, [](double f) {
      return std::string(f != 0 ? "true" : "false");
    }));
  }
  /// `x` and `xn` (its narrow view) of tensor k at table entry `at`.
  std::string pointers(const std::string &x, const std::string &table,
                       const std::string &at, Type wide) const {
    std::string w = storageType(wide), n = storageType(narrow);
    return "    const " + w + " *" + x + " = (const " + w + " *)(base + " +
           at + ");\n    const " + n + " *" + x + "n = (const " + n +
           " *)(base + " + at + ");\n    const bool " + x + "Narrow = " +
           table + "[k];\n";
  }
  std::string load(const std::string &x, const std::string &i, Type wide) const {
    return "(" + x + "Narrow ? " + loadAs(narrow, x + "n[" + i + "]") + " : " +
           loadAs(wide, x + "[" + i + "]") + ")";
  }
};

NarrowReads narrowReads(ValueRange values, Type wide) {
  NarrowReads out;
  for (Value v : values) {
    Type e = elementTypeOf(v);
    bool isNarrow = e != wide;
    if (isNarrow && out.narrow && out.narrow != e)
      out.status = failure();
    if (isNarrow)
      out.narrow = e;
    out.flags.push_back(isNarrow ? 1.0 : 0.0);
  }
  return out;
}

LogicalResult emitMultiAdamW(MultiAdamWUpdateOp op, const EmitContext &ctx,
                             OpLowering &out) {
  unsigned n = op.getNumTensors();
  Type t = elementTypeOf(op.getParams()[0]);
  double b1 = op.getBeta1().convertToDouble();
  double b2 = op.getBeta2().convertToDouble();
  KernelSource src(op, ctx.name);
  src.scheme("AdamW (torch.optim.AdamW) over " + std::to_string(n) +
             " tensors: a block per chunk of kChunk elements (grid-stride "
             "over chunks), one thread per element; addresses from the "
             "offset table; lr, step" +
             std::string(op.getScale() ? " and the gradient scale" : "") +
             " read from device memory");
  std::vector<int64_t> sizes;
  for (Value p : op.getParams())
    sizes.push_back(numElements(shapeOf(p)));
  int64_t chunks = chunkTable(src, ctx, sizes);
  adamwConstants(src, b1, b2, op.getEpsilon().convertToDouble());
  src.constant("kIlp", 4, "elements a thread loads before it stores");
  src.helper(constantArray("float", "kWeightDecay",
                           std::vector<double>(op.getWeightDecays().begin(),
                                               op.getWeightDecays().end()),
                           floatLiteral));
  // Gradients read narrow (bf16/f16 of an f32 param, llmc-batch-adamw):
  // widened exactly on load, so the update is the one of the widened copy.
  NarrowReads narrow = narrowReads(op.getGrads(), t);
  if (failed(narrow.status))
    return op.emitError("codegen: multi_adamw_update reads gradients of "
                        "more than one narrow type");
  std::string g = narrow.any() ? narrow.load("grad", "i", t)
                               : loadAs(t, "grad[i]");
  if (op.getScale())
    // grad * scale rounded to the param's type, as llmc.mul stores it.
    g = loadAs(t, storeAs(t, g + " * scale"));
  if (narrow.any())
    narrow.declare(src, "kGradNarrow");
  std::string kernel =
      "extern \"C\" __global__ void __launch_bounds__(" +
      std::to_string(ctx.options.blockSize) + ")\n" + ctx.name +
      "(char *base, const long long *__restrict__ offsets,\n"
      "    const float *__restrict__ lr_ptr, const long long *__restrict__ "
      "step_ptr" +
      (op.getScale() ? ", " + inParam(t, "scale_ptr") : "") + ") {\n" +
      kAdamWPrologue;
  if (op.getScale())
    kernel += "  const float scale = " + loadAs(t, "scale_ptr[0]") + ";\n";
  kernel +=
      std::string(kChunkLoop) +
      "    // param, grad, m, v, new param, new m, new v of tensor k\n"
      "    // (new ones may be the old ones: updates in place).\n"
      "    const long long *o = offsets + 7 * k;\n" +
      tablePointer(t, "param", 0, false) +
      (narrow.any() ? narrow.pointers("grad", "kGradNarrow", "o[1]", t)
                    : tablePointer(t, "grad", 1, false)) +
      tablePointer(t, "m", 2, false) + tablePointer(t, "v", 3, false) +
      tablePointer(t, "new_param", 4, true) +
      tablePointer(t, "new_m", 5, true) + tablePointer(t, "new_v", 6, true) +
      "    const float decay = 1.0f - lr * kWeightDecay[k];\n"
      // kIlp elements a thread: every load issued before the first store.
      // The compiler may not hoist them itself (an in-place update's
      // stores alias its loads), and one element's four loads in flight a
      // thread left the kernel at 81% of copy (GPT-2 124M, H100). Each
      // element's math is adamwElement's text: bitwise the same update.
      "    for (index_t i0 = begin + threadIdx.x; i0 < end; i0 += kIlp * "
      "blockDim.x) {\n"
      "      float p_[kIlp], g_[kIlp], m_[kIlp], v_[kIlp];\n"
      "#pragma unroll\n"
      "      for (int u = 0; u < kIlp; ++u) {\n"
      "        const index_t i = i0 + u * (index_t)blockDim.x;\n"
      "        if (i < end) {\n"
      "          p_[u] = " + loadAs(t, "param[i]") + ";\n"
      "          g_[u] = " + g + ";\n"
      "          m_[u] = " + loadAs(t, "m[i]") + ";\n"
      "          v_[u] = " + loadAs(t, "v[i]") + ";\n"
      "        }\n      }\n"
      "#pragma unroll\n"
      "      for (int u = 0; u < kIlp; ++u) {\n"
      "        const index_t i = i0 + u * (index_t)blockDim.x;\n"
      "        if (i >= end)\n          break;\n" +
      indented(indented(indented(
          adamwElement(t, t, t, "g_[u]", "p_[u]", "m_[u]", "v_[u]")))) +
      "      }\n    }\n  }\n}\n";
  src.kernel(kernel);

  EmittedKernel k;
  k.name = ctx.name;
  k.source = src.str();
  k.grid = {static_cast<unsigned>(std::max<int64_t>(
                1, std::min<int64_t>(chunks, ctx.options.maxBlocks))),
            1, 1};
  k.block = {ctx.options.blockSize, 1, 1};
  k.args = {KernelArg::operand(0), KernelArg::scratch(0),
            KernelArg::operand(4 * n), KernelArg::operand(4 * n + 1)};
  if (op.getScale())
    k.args.push_back(KernelArg::operand(4 * n + 2));
  ScratchBuffer table;
  table.name = "offsets";
  table.dtype = DType::I64;
  table.offsetBase = KernelArg::operand(0);
  for (unsigned j = 0; j < n; ++j) {
    for (unsigned group = 0; group < 4; ++group)
      table.offsetsOf.push_back(KernelArg::operand(group * n + j));
    for (unsigned group = 0; group < 3; ++group)
      table.offsetsOf.push_back(KernelArg::result(group * n + j));
  }
  table.shape = {static_cast<int64_t>(table.offsetsOf.size())};
  out.scratch.push_back(std::move(table));
  return singleKernel(out, std::move(k));
}

/// global_norm: `<name>_partials` (kBlocks blocks, each sums the squares of
/// its chunks c = blockIdx.x + j kBlocks, in order, then a block sum) and
/// `<name>_combine` (one block adds the partials, thread-strided then a
/// block sum, and takes the square root). Fixed orders, no atomics.
LogicalResult emitGlobalNorm(GlobalNormOp op, const EmitContext &ctx,
                             OpLowering &out) {
  unsigned n = op.getInputs().size();
  // The widest input type is read as it is; one narrower float type may be
  // read too (gradients read narrow, llmc-batch-adamw), widened exactly.
  Type t = elementTypeOf(op.getInputs()[0]);
  for (Value v : op.getInputs())
    if (elementTypeOf(v).getIntOrFloatBitWidth() > t.getIntOrFloatBitWidth())
      t = elementTypeOf(v);
  NarrowReads narrow = narrowReads(op.getInputs(), t);
  if (failed(narrow.status))
    return op.emitError("codegen: global_norm over more than two element "
                        "types (the widest and one narrower)");
  unsigned block = ctx.options.blockSize;
  std::vector<int64_t> sizes;
  for (Value v : op.getInputs())
    sizes.push_back(numElements(shapeOf(v)));

  KernelSource parts(op, ctx.name + "_partials");
  parts.scheme("global L2 norm, pass 1 of 2: each block sums x^2 over its "
               "chunks (grid-stride over chunks, in order) and writes one "
               "partial; addresses from the offset table");
  int64_t chunks = chunkTable(parts, ctx, sizes);
  if (narrow.any())
    narrow.declare(parts, "kNarrow");
  int64_t blocks =
      std::max<int64_t>(1, std::min<int64_t>(chunks, ctx.options.maxBlocks));
  parts.constant("kBlocks", blocks, "blocks = partial sums");
  parts.constant("kBlock", block, "threads per block");
  parts.staticAssert("kBlock % 32 == 0 && kBlock <= 1024", "whole warps");
  parts.helper(blockReduceHelpers(kBlockSum));
  parts.kernel(
      "extern \"C\" __global__ void __launch_bounds__(" +
      std::to_string(block) + ")\n" + ctx.name +
      "_partials(char *base, const long long *__restrict__ offsets, float "
      "*__restrict__ partials) {\n"
      "  float acc = 0.0f;\n" +
      std::string(kChunkLoop) +
      (narrow.any() ? narrow.pointers("x", "kNarrow", "offsets[k]", t)
                    : "    const " + storageType(t) + " *x = (const " +
                          storageType(t) + " *)(base + offsets[k]);\n") +
      "    for (index_t i = begin + threadIdx.x; i < end; i += kBlock) {\n"
      "      const float xi = " +
      (narrow.any() ? narrow.load("x", "i", t) : loadAs(t, "x[i]")) +
      ";\n"
      "      acc += xi * xi;\n"
      "    }\n"
      "  }\n"
      "  const float total = blockSum(acc);\n"
      "  if (threadIdx.x == 0)\n"
      "    partials[blockIdx.x] = total;\n"
      "}\n");
  EmittedKernel k1;
  k1.name = ctx.name + "_partials";
  k1.source = parts.str();
  k1.grid = {static_cast<unsigned>(blocks), 1, 1};
  k1.block = {block, 1, 1};
  k1.args = {KernelArg::operand(0), KernelArg::scratch(0),
             KernelArg::scratch(1)};

  KernelSource combine(op, ctx.name + "_combine");
  combine.scheme("global L2 norm, pass 2 of 2: one block adds the partials "
                 "(thread-strided, then a block sum) and takes the root");
  combine.constant("kBlocks", blocks, "partial sums");
  combine.constant("kBlock", block, "threads");
  combine.staticAssert("kBlock % 32 == 0 && kBlock <= 1024", "whole warps");
  combine.helper(blockReduceHelpers(kBlockSum));
  combine.kernel("extern \"C\" __global__ void __launch_bounds__(" +
                 std::to_string(block) + ")\n" + ctx.name +
                 "_combine(const float *__restrict__ partials, float "
                 "*__restrict__ norm) {\n"
                 "  float acc = 0.0f;\n"
                 "  for (index_t i = threadIdx.x; i < kBlocks; i += kBlock)\n"
                 "    acc += partials[i];\n"
                 "  const float total = blockSum(acc);\n"
                 "  if (threadIdx.x == 0)\n"
                 "    norm[0] = sqrtf(total);\n"
                 "}\n");
  EmittedKernel k2;
  k2.name = ctx.name + "_combine";
  k2.source = combine.str();
  k2.grid = {1, 1, 1};
  k2.block = {block, 1, 1};
  k2.args = {KernelArg::scratch(1), KernelArg::result(0)};

  ScratchBuffer table;
  table.name = "offsets";
  table.dtype = DType::I64;
  table.shape = {static_cast<int64_t>(n)};
  table.offsetBase = KernelArg::operand(0);
  for (unsigned j = 0; j < n; ++j)
    table.offsetsOf.push_back(KernelArg::operand(j));
  out.scratch.push_back(std::move(table));
  out.scratch.push_back({"partials", DType::F32, {blocks}, {}, {}});
  out.kind = OpLowering::Kind::Kernels;
  out.kernels.push_back(std::move(k1));
  out.kernels.push_back(std::move(k2));
  return success();
}

} // namespace

void registerOptimizerEmitters(EmitterTable &t) {
  addEmitter<AdamWUpdateOp>(t, emitAdamW);
  addEmitter<MultiAdamWUpdateOp>(t, emitMultiAdamW);
  addEmitter<GlobalNormOp>(t, emitGlobalNorm);
}

} // namespace llmc::codegen
