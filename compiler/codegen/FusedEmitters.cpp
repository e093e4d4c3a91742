//===- FusedEmitters.cpp - One kernel for a group of elementwise ops ------===//
//
// An Elementwise group (passes/FusionUtils.h, built by
// llmc-fuse-elementwise) lowers to one kernel. Its ops fall into segments
// (chains connected by data flow; several after horizontal fusion), each
// with one iteration space, the shape of its results. A thread takes one
// item of a segment, V consecutive result elements (V = 4 where every
// tensor of the segment allows vector access, else 1), in a grid-stride
// loop over the items of all segments; a balanced tree of comparisons
// against constexpr item offsets finds the segment.
//
// Per item the kernel loads each input once (a vector of V, or one value
// where the input is broadcast along the innermost dim), computes the
// segment's ops element by element in the order of the group, and stores
// each result that is read outside the group as a vector. Values between
// ops stay in registers in their storage type, so every intermediate
// rounding (a bf16 result, a cast) is the one-op kernels' rounding; and no
// multiply of one op is contracted with an add of the next into an FMA
// (Emitters.h: explicitly rounded arithmetic, library values sealed), so
// the fused kernel is bit-exact with them (test/gpu/codegen/FusionGpuTest.cpp).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "passes/FusionUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace llmc::codegen {

namespace {

/// A thread's item is 16 bytes of its widest tensor: 4 elements where a
/// segment touches f32, 8 where every tensor is 2 bytes (bf16/f16), so the
/// widest loads and stores are 16-byte vector accesses.
constexpr int64_t kVectorBytes = 16;

struct SegmentPlan {
  llvm::SmallVector<Operation *> ops;
  Shape shape;
  IndexSpace flat;                    // collapsed; strides per input used
  std::vector<unsigned> inputs;       // kernel input indices, in flat order
  std::vector<unsigned> outputs;      // group result indices it writes
  int64_t vector = 1;
  int64_t items = 0, start = 0;
};

/// V = 16 bytes / the widest element when the flat space's innermost dim
/// holds whole vectors and every input is contiguous (stride 1, other
/// strides keep vectors aligned) or constant (stride 0) along it. Buffers
/// start 256-byte aligned (MemoryPlan.h), so a vector's first element
/// offset, a multiple of V elements, is aligned.
int64_t vectorWidth(const IndexSpace &flat, int64_t widestBytes) {
  // At most 8 elements (i1 tensors: 8 bytes), so a thread's registers stay
  // what a bf16 item takes.
  int64_t v = std::min<int64_t>(kVectorBytes / widestBytes, 8);
  if (flat.shape.empty() || flat.shape.back() % v != 0)
    return 1;
  for (const Strides &s : flat.strides) {
    if (s.back() != 0 && s.back() != 1)
      return 1;
    if (s.back() == 1)
      for (size_t d = 0; d + 1 < s.size(); ++d)
        if (s[d] % v != 0)
          return 1;
  }
  return v;
}

int64_t storageBytes(Type t) {
  if (t.isSignlessInteger(1))
    return 1;
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

std::string vecType(Type t, int64_t v) {
  return "Vec<" + storageType(t) + ", " + std::to_string(v) + ">";
}

/// The statements of one segment's item (`local` is its item index).
std::string segmentBody(const SegmentPlan &seg, ArrayRef<Value> inputs,
                        ArrayRef<Value> yielded,
                        const llvm::DenseMap<Operation *, unsigned> &opIndex,
                        const std::string &indent) {
  std::string s;
  int64_t v = seg.vector;
  s += indent + "const index_t i = (item - " + std::to_string(seg.start) +
       ")" + (v > 1 ? " * " + std::to_string(v) : "") + ";\n";
  s += emitCoordinates("i", "i", seg.flat.shape,
                       neededCoordinates(seg.flat.shape, seg.flat.strides),
                       indent);
  // Loads: a vector where the input moves along the innermost dim.
  llvm::DenseMap<Value, std::string> element; // storage expr per element e
  for (auto [k, input] : llvm::enumerate(seg.inputs)) {
    Value val = inputs[input];
    Type t = elementTypeOf(val);
    const Strides &strides = seg.flat.strides[k];
    std::string offset =
        offsetExpression("i", "i", seg.flat.shape, strides);
    std::string name = "x" + std::to_string(input);
    bool moves = v > 1 && !strides.empty() && strides.back() == 1;
    if (moves) {
      s += indent + "const " + vecType(t, v) + " " + name +
           " = *reinterpret_cast<const " + vecType(t, v) + " *>(in" +
           std::to_string(input) + " + " + offset + ");\n";
      element[val] = name + ".v[e]";
    } else {
      s += indent + "const " + storageType(t) + " " + name + " = in" +
           std::to_string(input) + "[" + offset + "];\n";
      element[val] = name;
    }
  }
  for (unsigned r : seg.outputs)
    s += indent + vecType(elementTypeOf(yielded[r]), v) + " y" +
         std::to_string(r) + ";\n";
  std::string in = indent + "  ";
  s += indent + "#pragma unroll\n" + indent + "for (int e = 0; e < " +
       std::to_string(v) + "; ++e) {\n";
  llvm::DenseSet<Value> open; // loaded values are rounded: they were stored
  for (Operation *op : seg.ops) {
    std::string var = "s" + std::to_string(opIndex.lookup(op));
    s += elementwiseOpCode(op, element, var, in, open);
    element[op->getResult(0)] = var;
  }
  for (unsigned r : seg.outputs)
    s += in + "y" + std::to_string(r) + ".v[e] = " +
         element.lookup(yielded[r]) + ";\n";
  s += indent + "}\n";
  for (unsigned r : seg.outputs)
    s += indent + "*reinterpret_cast<" + vecType(elementTypeOf(yielded[r]), v) +
         " *>(out" + std::to_string(r) + " + i) = y" + std::to_string(r) +
         ";\n";
  return s;
}

} // namespace

std::string sealedOperand(const std::string &value) {
  // x * 1 is x for every float (-0, infinities, NaN as NaN); mul.rn.f32 is
  // never contracted, by NVRTC or ptxas, with the multiply before it or the
  // add after it.
  return "__fmul_rn(" + value + ", 1.0f)";
}

std::string elementwiseOpCode(Operation *op,
                              const llvm::DenseMap<Value, std::string> &element,
                              const std::string &var,
                              const std::string &indent,
                              llvm::DenseSet<Value> &open) {
  static const char *names[] = {"a", "b", "c"};
  std::optional<ScalarExpr> e = scalarExpr(op);
  Value result = op->getResult(0);
  Type rt = elementTypeOf(result);
  std::string s = indent + storageType(rt) + " " + var + ";  // " +
                  op->getName().getStringRef().str() + "\n";
  s += indent + "{\n";
  bool readsOpen = false;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    Value operand = op->getOperand(i);
    Type t = elementTypeOf(operand);
    std::string src = element.count(operand) ? element.lookup(operand)
                                             : std::string("?");
    std::string value = loadAs(t, src), note;
    if (open.contains(operand)) {
      readsOpen = true;
      if (!e->sealsOperands) {
        value = sealedOperand(value);
        note = "  // sealed: no FMA across the ops";
      }
    }
    s += indent + "  const " + computeType(t) + " " + names[i] + " = " +
         value + ";" + note + "\n";
  }
  s += indent + "  " + var + " = " +
       (e->isStorage ? e->expr : storeAs(rt, e->expr)) + ";\n";
  s += indent + "}\n";
  bool endsOpen = e->end == ScalarExpr::End::Open ||
                  (e->end == ScalarExpr::End::PassThrough && readsOpen);
  if (rt.isF32() && !e->isStorage && endsOpen)
    open.insert(result);
  return s;
}

namespace {

/// if/else over segments [lo, hi) by their item offsets.
std::string dispatch(ArrayRef<SegmentPlan> segs, size_t lo, size_t hi,
                     const std::function<std::string(size_t, const std::string &)>
                         &body,
                     const std::string &indent) {
  if (hi - lo == 1)
    return body(lo, indent);
  size_t mid = (lo + hi) / 2;
  return indent + "if (item < " + std::to_string(segs[mid].start) + ") {\n" +
         dispatch(segs, lo, mid, body, indent + "  ") + indent + "} else {\n" +
         dispatch(segs, mid, hi, body, indent + "  ") + indent + "}\n";
}

} // namespace

LogicalResult emitFusedElementwise(mlir::llmc::KernelOp group,
                                   ArrayRef<Value> inputs,
                                   const EmitContext &ctx, OpLowering &out) {
  Operation *yield = group.getYield();
  SmallVector<Value> yielded(yield->getOperands());
  llvm::DenseMap<Value, unsigned> inputIndex, resultIndex;
  for (auto [k, v] : llvm::enumerate(inputs))
    inputIndex[v] = k;
  for (auto [k, v] : llvm::enumerate(yielded))
    if (!resultIndex.count(v))
      resultIndex[v] = k;
  llvm::DenseMap<Operation *, unsigned> opIndex;
  for (Operation &op : group.getGroupOps())
    opIndex[&op] = opIndex.size();

  KernelSource src(group, ctx.name);
  std::vector<SegmentPlan> segs;
  int64_t items = 0;
  for (auto &ops : mlir::llmc::fusion::segments(group)) {
    SegmentPlan seg;
    seg.ops.assign(ops.begin(), ops.end());
    seg.shape = shapeOf(ops.front()->getResult(0));
    IndexSpace space;
    space.shape = seg.shape;
    llvm::SetVector<unsigned> used;
    for (Operation *op : ops) {
      if (!scalarExpr(op))
        return op->emitError("codegen: '")
               << op->getName() << "' in a fused elementwise group has no "
               << "elementwise expression";
      for (Value v : op->getOperands())
        if (inputIndex.count(v))
          used.insert(inputIndex.lookup(v));
      for (Value r : op->getResults())
        if (resultIndex.count(r))
          seg.outputs.push_back(resultIndex.lookup(r));
    }
    seg.inputs.assign(used.begin(), used.end());
    for (unsigned k : seg.inputs)
      space.strides.push_back(broadcastStrides(shapeOf(inputs[k]), seg.shape));
    seg.flat = collapseDims(space);
    int64_t widest = 1;
    for (unsigned k : seg.inputs)
      widest = std::max(widest, storageBytes(elementTypeOf(inputs[k])));
    for (unsigned r : seg.outputs)
      widest = std::max(widest, storageBytes(elementTypeOf(yielded[r])));
    seg.vector = vectorWidth(seg.flat, widest);
    int64_t n = numElements(seg.shape);
    seg.items = n / seg.vector;
    seg.start = items;
    items += seg.items;
    src.indexRange(n);
    segs.push_back(std::move(seg));
  }

  src.scheme("fused elementwise group (llmc-fuse-elementwise): " +
             std::to_string(segs.size()) + " segment(s), one item of V "
             "consecutive elements per thread, grid-stride loop");
  for (const SegmentPlan &seg : segs) {
    std::string members;
    for (Operation *op : seg.ops)
      members += " " + KernelSource::origin(op) + ";";
    src.scheme("segment " + dimsString(seg.shape) + " V=" +
               std::to_string(seg.vector) + ":" + members);
  }
  src.constant("kItems", items, "items of all segments");
  std::string helpers;
  for (Operation &op : group.getGroupOps()) {
    // An intermediate's type needs its header even when no operand or
    // result of the kernel has it (an f32 -> bf16 -> f32 rounding inside).
    for (Value r : op.getResults())
      src.use(elementTypeOf(r));
    std::string h = scalarExpr(&op)->helpers;
    if (!h.empty() && helpers.find(h) == std::string::npos)
      helpers += h + "\n";
  }
  src.helper("template <typename T, int N> struct alignas(sizeof(T) * N) Vec "
             "{ T v[N]; };\n" + helpers);

  std::string params;
  std::vector<KernelArg> args;
  for (auto [k, v] : llvm::enumerate(inputs)) {
    src.use(elementTypeOf(v));
    src.indexRange(numElements(shapeOf(v)));
    params += (k ? ", " : "") + inParam(elementTypeOf(v), "in" + std::to_string(k));
    args.push_back(KernelArg::operand(k));
  }
  for (auto [k, v] : llvm::enumerate(yielded)) {
    params += (params.empty() ? "" : ", ") +
              outParam(elementTypeOf(v), "out" + std::to_string(k));
    args.push_back(KernelArg::result(k));
  }
  std::string body = dispatch(
      segs, 0, segs.size(),
      [&](size_t k, const std::string &indent) {
        return segmentBody(segs[k], inputs, yielded, opIndex, indent);
      },
      "    ");
  src.kernel("extern \"C\" __global__ void __launch_bounds__(" +
             std::to_string(ctx.options.blockSize) + ")\n" + ctx.name + "(" +
             params + ") {\n" +
             "  for (index_t item = (index_t)blockIdx.x * blockDim.x + "
             "threadIdx.x; item < kItems;\n"
             "       item += (index_t)gridDim.x * blockDim.x) {\n" +
             body + "  }\n}\n");
  EmittedKernel k = elementwiseLaunch(src, ctx, items, std::move(args));
  k.origin = KernelSource::origin(group);
  return singleKernel(out, std::move(k));
}

} // namespace llmc::codegen
