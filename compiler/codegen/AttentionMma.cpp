//===- AttentionMma.cpp - Tensor-core (3xTF32) attention forward ----------===//
//
// The forward, FlashAttention-2's loop on m16n8k8 TF32 tiles:
//
//   grid (ceil(T / 64), Hq, B), 4 warps; a block owns 64 query rows, a warp
//   16 of them. Per tile of 64 keys (K and V staged in shared memory as
//   f32): S = Q K^T into registers (the C fragments), scale and mask, the
//   online softmax (row max over the 4 lanes sharing a row, running sum kept
//   per lane and added up once at the end), then O += P V with P moved from
//   the C to the A fragment layout by shuffles. Rows padded by 4 elements
//   (f32 for Q, {hi, lo} pairs for the pre-split K and V) so a warp's
//   fragment loads hit distinct banks. Blocks start with the last query tile,
//   which under causal masking has the most keys.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/AttentionMma.h"

#include "dialects/llmc/LlmcOps.h"

#include <functional>

using namespace mlir;

namespace llmc::codegen {

bool attentionMmaEligible(int64_t d, int64_t dv) {
  return d % 8 == 0 && dv % 8 == 0 && d <= 128 && dv <= 128;
}

const char *const kMmaTf32Helpers = R"(#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
// x = hi + lo: hi is x rounded to the nearest TF32 (ties away; an add and a
// mask rather than a cvt: the split runs for every operand element of every
// mma), lo = x - hi (exact), which the tensor core reads truncated to TF32
// (no cvt: the split is ALU work on the mma's critical path). Rounding, not
// truncating, hi matters: truncation gives lo the sign of x, so the dropped
// lo * lo terms all lean one way and add up over a long dot product (1.1e-5
// relative error on GPT-2-sized attention gradients against 1e-6 with
// rounding); lo's own truncation is second order and sign-free.
__device__ __forceinline__ void splitTf32(float x, unsigned &hi, unsigned &lo) {
  hi = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  lo = __float_as_uint(x - __uint_as_float(hi));
}
__device__ __forceinline__ void mmaTf32(float (&d)[4], const unsigned (&a)[4],
                                        const unsigned (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]));
}
// acc[j] (rows 0..15, columns 8j..8j+7) += A[16 x K] B[K x 8 NT], three
// TF32 products each (small terms first). A is row-major f32 in shared
// memory (row stride lda), split here; B was split once when staged
// (stageSplit: {hi, lo} per element, so the warps that share a tile do not
// each redo it), B(k, n) = B[n * ldb + k] when kNMajor (K^T from K rows),
// else B[k * ldb + n]. Fragment layout (PTX ISA, m16n8k8 .tf32): lane =
// 4 g + t holds A (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4), B (t, g),
// (t + 4, g), C (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1).
template <int NT, bool kNMajor>
__device__ __forceinline__ void mmaB(float (&acc)[NT][4],
                                     const unsigned (&ahi)[4],
                                     const unsigned (&alo)[4], const uint2 *B,
                                     int ldb, int k0) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = j * 8 + g;
    const uint2 b0 = kNMajor ? B[n * ldb + k0 + t] : B[(k0 + t) * ldb + n];
    const uint2 b1 =
        kNMajor ? B[n * ldb + k0 + t + 4] : B[(k0 + t + 4) * ldb + n];
    const unsigned bhi[2] = {b0.x, b1.x}, blo[2] = {b0.y, b1.y};
    mmaTf32(acc[j], alo, bhi);
    mmaTf32(acc[j], ahi, blo);
    mmaTf32(acc[j], ahi, bhi);
  }
}
template <int NT, int K, bool kNMajor>
__device__ __forceinline__ void mmaTile(float (&acc)[NT][4],
                                        const float *A, int lda,
                                        const uint2 *B, int ldb) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kk = 0; kk < K; kk += 8) {
    unsigned ahi[4], alo[4];
    splitTf32(A[g * lda + kk + t], ahi[0], alo[0]);
    splitTf32(A[(g + 8) * lda + kk + t], ahi[1], alo[1]);
    splitTf32(A[g * lda + kk + t + 4], ahi[2], alo[2]);
    splitTf32(A[(g + 8) * lda + kk + t + 4], ahi[3], alo[3]);
    mmaB<NT, kNMajor>(acc, ahi, alo, B, ldb, kk);
  }
}
// The C fragment c of a 16 x 8 tile as the A fragment of the same 16 x 8
// slice (lane 4g + t needs columns t and t + 4, which lanes 4g + t/2 and
// 4g + t/2 + 2 hold as element t % 2): a product's result feeds the next
// product without a trip through shared memory.
__device__ __forceinline__ void cToA(const float (&c)[4], float (&a)[4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int src0 = 4 * g + t / 2, src1 = src0 + 2;
  const bool odd = t & 1;
  float x0 = __shfl_sync(0xffffffffu, c[0], src0);
  float x1 = __shfl_sync(0xffffffffu, c[1], src0);
  a[0] = odd ? x1 : x0;
  x0 = __shfl_sync(0xffffffffu, c[2], src0);
  x1 = __shfl_sync(0xffffffffu, c[3], src0);
  a[1] = odd ? x1 : x0;
  x0 = __shfl_sync(0xffffffffu, c[0], src1);
  x1 = __shfl_sync(0xffffffffu, c[1], src1);
  a[2] = odd ? x1 : x0;
  x0 = __shfl_sync(0xffffffffu, c[2], src1);
  x1 = __shfl_sync(0xffffffffu, c[3], src1);
  a[3] = odd ? x1 : x0;
}
// mmaTile with A = a 16 x 8KT tile held in registers as C fragments
// (c[kk] covers columns 8kk..8kk+7).
template <int NT, int KT, bool kNMajor>
__device__ __forceinline__ void mmaRegA(float (&acc)[NT][4],
                                        const float (&c)[KT][4],
                                        const uint2 *B, int ldb) {
#pragma unroll
  for (int kk = 0; kk < KT; ++kk) {
    float a[4];
    cToA(c[kk], a);
    unsigned ahi[4], alo[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      splitTf32(a[i], ahi[i], alo[i]);
    mmaB<NT, kNMajor>(acc, ahi, alo, B, ldb, kk * 8);
  }
}
#else
#error "the 3xTF32 attention kernels need sm_80 or newer"
#endif)";

void attentionShapeConstants(KernelSource &src, const Shape &q, const Shape &k,
                             int64_t dv) {
  src.constant("kB", q[0], "batch");
  src.constant("kHq", q[1], "query heads");
  src.constant("kHkv", k[1], "key/value heads");
  src.constant("kT", q[2], "query positions");
  src.constant("kS", k[2], "key positions");
  src.constant("kD", q[3], "q/k head dim");
  src.constant("kDv", dv, "v head dim");
  src.constant("kGroup", q[1] / k[1], "query heads per kv head (GQA)");
}

Shape AttentionParts::operandShape(unsigned i) const {
  auto logical = mlir::llmc::attentionOperandShape(op, i);
  return Shape(logical.begin(), logical.end());
}

int64_t AttentionParts::rowHeads(unsigned i) const {
  auto logical =
      mlir::llmc::attentionLogicalShape(shapeOf(op->getOperand(i)), seqMajor);
  return logical[1];
}

/// Bytes from a packed [B, T, H, D] buffer's start to head `h`'s first
/// element: h * D elements (0 when the op has no `qkv_heads`).
static uint64_t headBytes(Operation *op, unsigned i) {
  Value v = op->getOperand(i);
  int64_t d = shapeOf(v)[3];
  return static_cast<uint64_t>(mlir::llmc::attentionHeadOffset(op, i) * d *
                               ((elementTypeOf(v).getIntOrFloatBitWidth() +
                                 7) / 8));
}

KernelArg AttentionParts::qkvArg(unsigned i) const {
  return KernelArg::operand(i).at(headBytes(op, i));
}

KernelArg AttentionParts::gradArg(unsigned i) const {
  if (!op->hasAttr("qkv_heads"))
    return KernelArg::result(i);
  return KernelArg::result(0).at(headBytes(op, i));
}

void attentionStrideConstants(KernelSource &src, const AttentionParts &a) {
  // `heads`: per token row of the buffer, the packed count for a window of
  // a packed qkv (its token stride is then (Hq + 2 Hkv) * D).
  auto strides = [&](const std::string &name, int64_t heads, int64_t rows,
                     int64_t dim, const std::string &what) {
    int64_t sB = heads * rows * dim;
    int64_t sH = a.seqMajor ? dim : rows * dim;
    int64_t sT = a.seqMajor ? heads * dim : dim;
    src.constant("k" + name + "sB", sB, what);
    src.constant("k" + name + "sH", sH);
    src.constant("k" + name + "sT", sT);
  };
  Shape q = a.qShape(), k = a.kShape(), v = a.vShape();
  std::string layout = a.seqMajor ? " ([B, T, H, D])" : " ([B, H, T, D])";
  bool packed = a.op->hasAttr("qkv_heads");
  std::string window =
      packed ? ", a head window of the packed qkv [B, T, " +
                   std::to_string(a.rowHeads(0)) + ", D]"
             : "";
  strides("Q", a.rowHeads(0), q[2], q[3],
          "q/dq batch, head, row strides" + layout + window);
  strides("K", a.rowHeads(1), k[2], k[3], "k/dk strides" + window);
  strides("V", a.rowHeads(2), v[2], v[3], "v/dv strides" + window);
  strides("O", q[1], q[2], v[3], "out/dout strides");
}

void maskConstants(KernelSource &src, Value mask, const Shape &scores) {
  Strides ms = broadcastStrides(shapeOf(mask), scores);
  src.constant("kMaskB", ms[0], "mask strides in [B, Hq, T, S]");
  src.constant("kMaskH", ms[1]);
  src.constant("kMaskT", ms[2]);
  src.constant("kMaskS", ms[3]);
}

std::string maskStatements(Type mt, const std::string &row,
                           const std::string &col, const std::string &x,
                           const std::string &indent) {
  std::string at = "mask[b * kMaskB + h * kMaskH + (" + row + ") * kMaskT + (" +
                   col + ") * kMaskS]";
  if (mt.isSignlessInteger(1))
    return indent + "if (" + at + " == 0)\n" + indent + "  " + x +
           " = -INFINITY;\n";
  return indent + x + " += " + loadAs(mt, at) + ";\n";
}

ForwardInterface forwardInterface(KernelSource &src, OpLowering &out,
                                  const AttentionParts &a,
                                  const std::string &maskIndent) {
  Shape q = a.qShape(), k = a.kShape();
  int64_t B = q[0], Hq = q[1], T = q[2], S = k[2];
  ForwardInterface f;
  f.params = inParam(elementTypeOf(a.query), "q") + ", " +
             inParam(elementTypeOf(a.key), "k") + ", " +
             inParam(elementTypeOf(a.value), "v");
  f.args = {a.qkvArg(0), a.qkvArg(1), a.qkvArg(2)};
  if (a.mask) {
    maskConstants(src, a.mask, {B, Hq, T, S});
    f.params += ", " + inParam(elementTypeOf(a.mask), "mask");
    f.args.push_back(KernelArg::operand(3));
    f.mask = maskStatements(elementTypeOf(a.mask), "row", "col", "x",
                            maskIndent);
  }
  f.params += ", " + outParam(elementTypeOf(a.result), "out") +
              ", float *__restrict__ lse";
  f.args.push_back(KernelArg::result(0));
  f.args.push_back(a.lse ? KernelArg::result(1) : KernelArg::scratch(0));
  if (!a.lse)
    out.scratch.push_back({"lse", DType::F32, {B, Hq, T}});
  f.kvEnd =
      a.causal ? "  // Causal: key s is visible to row t when s <= t + S - T.\n"
                 "  const index_t lastRow = min(q0 + kBr, kT) - 1;\n"
                 "  const index_t kvEnd = max((index_t)0, min(kS, lastRow + "
                 "kS - kT + 1));\n"
               : "  const index_t kvEnd = kS;\n";
  f.visible = a.causal ? "row < kT && col < kS && col <= row + kS - kT"
                       : "row < kT && col < kS";
  return f;
}

void tileConstants(KernelSource &src, const AttentionParts &a,
                   int64_t rowTile, int64_t keyTile, unsigned warps,
                   int64_t pad, bool grad) {
  Shape q = a.qShape(), k = a.kShape(), v = a.vShape();
  attentionShapeConstants(src, q, k, v[3]);
  attentionStrideConstants(src, a);
  src.constant("kBr", rowTile,
               grad ? "query rows per tile" : "query rows per block (16 per warp)");
  src.constant("kBc", keyTile, "keys per tile");
  src.constant("kThreadsPerBlock", warps * 32,
               grad ? "16 owned rows per warp" : "16 query rows per warp");
  src.constant("kLdQ", q[3] + pad, "shared row strides (bank-conflict padding)");
  src.constant("kLdK", q[3] + pad);
  src.constant("kLdV", v[3] + pad);
  if (grad)
    src.constant("kLdO", v[3] + pad);
}

std::string substitute(
    std::string text,
    const std::vector<std::pair<std::string, std::string>> &values) {
  for (const auto &[key, value] : values) {
    std::string hole = "@" + key + "@";
    for (size_t at = 0; (at = text.find(hole, at)) != std::string::npos;
         at += value.size())
      text.replace(at, hole.size(), value);
  }
  return text;
}

EmittedKernel attentionLaunch(const KernelSource &src,
                              std::array<unsigned, 3> grid, unsigned warps,
                              unsigned sharedBytes,
                              std::vector<KernelArg> args) {
  EmittedKernel k;
  k.name = src.name();
  k.source = src.str();
  k.grid = grid;
  k.block = {warps * 32, 1, 1};
  k.sharedBytes = sharedBytes;
  k.args = std::move(args);
  return k;
}

namespace {

/// The staging loop of stageTile and stageSplit. The scalar path (other
/// types or odd widths) hands each element to `storeOne(value, index)`. The
/// vector path issues every thread's loads before the first store, so a
/// tile costs one memory latency rather than one per element: 16 bytes of
/// f32 or 8 bytes of bf16 (four elements either way, a bf16 widened exactly:
/// it is the top half of its f32; element by element, bf16 tiles cost the
/// bf16 step twice the f32 attention time, BENCHMARKS.md 2026-11-24). Each
/// four elements reach `storeFour(at, vec)` as the float4 expression `vec`.
using StoreFour =
    std::function<std::string(const std::string &, const std::string &)>;
std::string stageLoop(Type t, const std::string &src,
                      const std::string &srcLd, int64_t rows,
                      int64_t cols, const std::string &valid,
                      const std::string &indent,
                      const std::function<std::string(
                          const std::string &, const std::string &)> &storeOne,
                      const StoreFour &storeFour) {
  std::string r = std::to_string(rows), c = std::to_string(cols);
  bool bf16 = t.isBF16();
  if (!(t.isF32() || bf16) || cols % 4 != 0)
    return indent + "for (index_t e = threadIdx.x; e < " + r + " * " + c +
           "; e += blockDim.x) {\n" + indent + "  const index_t r = e / " + c +
           ", d = e % " + c + ";\n" +
           storeOne("r < " + valid + " ? " +
                        loadAs(t, "(" + src + ")[r * " + srcLd + " + d]") +
                        " : 0.0f",
                    "r * LD + d") +
           indent + "}\n";
  std::string n = std::to_string(rows * cols / 4);
  std::string c4 = std::to_string(cols / 4);
  // f32 loads float4s into buf[]; bf16 loads uint2s into raw[] and widens
  // each into buf_i.
  std::string vec = bf16 ? "uint2" : "float4", arr = bf16 ? "raw" : "buf";
  std::string zero =
      bf16 ? "make_uint2(0u, 0u)" : "make_float4(0.0f, 0.0f, 0.0f, 0.0f)";
  std::string widen =
      bf16 ? indent + "    const float4 buf_i = make_float4(" +
                 "__uint_as_float(raw[i].x << 16), __uint_as_float(raw[i].x & "
                 "0xffff0000u), __uint_as_float(raw[i].y << 16), "
                 "__uint_as_float(raw[i].y & 0xffff0000u));\n"
           : "";
  return indent + "{\n" + indent + "  constexpr int kVecs = " + n +
         ", kPer = (kVecs + kThreadsPerBlock - 1) / kThreadsPerBlock;\n" +
         indent + "  " + vec + " " + arr + "[kPer];\n" + indent +
         "#pragma unroll\n" + indent + "  for (int i = 0; i < kPer; ++i) {\n" +
         indent + "    const int e = threadIdx.x + i * kThreadsPerBlock, r = e / " +
         c4 + ";\n" + indent + "    " + arr + "[i] = e < kVecs && r < " + valid +
         " ? reinterpret_cast<const " + vec + " *>((" + src + ") + r * " +
         srcLd + ")[e % " + c4 + "] : " + zero + ";\n" + indent + "  }\n" + indent + "#pragma unroll\n" + indent +
         "  for (int i = 0; i < kPer; ++i) {\n" + indent +
         "    const int e = threadIdx.x + i * kThreadsPerBlock;\n" + indent +
         "    if (e >= kVecs)\n" + indent + "      continue;\n" + widen +
         storeFour("(e / " + c4 + ") * LD + (e % " + c4 + ") * 4",
                   bf16 ? "buf_i" : "buf[i]") +
         indent + "  }\n" + indent + "}\n";
}

std::string withLd(std::string text, const std::string &ld) {
  for (size_t at; (at = text.find("LD")) != std::string::npos;)
    text.replace(at, 2, ld);
  return text;
}

} // namespace

std::string stageTile(Type t, const std::string &dst, const std::string &ld,
                      const std::string &src, const std::string &srcLd,
                      int64_t rows, int64_t cols, const std::string &valid,
                      const std::string &indent) {
  return stageLoop(
      t, src, srcLd, rows, cols, valid, indent,
      [&](const std::string &value, const std::string &index) {
        return indent + "  " + dst + "[" + withLd(index, ld) + "] = " + value +
               ";\n";
      },
      [&](const std::string &at, const std::string &v) {
        return indent + "    *reinterpret_cast<float4 *>(" + dst + " + " +
               withLd(at, ld) + ") = " + v + ";\n";
      });
}

std::string stageSplit(Type t, const std::string &dst, const std::string &ld,
                       const std::string &src, const std::string &srcLd,
                       int64_t rows, int64_t cols, const std::string &valid,
                       const std::string &indent) {
  return stageLoop(
      t, src, srcLd, rows, cols, valid, indent,
      [&](const std::string &value, const std::string &index) {
        return indent + "  uint2 hl;\n" + indent + "  splitTf32(" + value +
               ", hl.x, hl.y);\n" + indent + "  " + dst + "[" +
               withLd(index, ld) + "] = hl;\n";
      },
      [&](const std::string &at, const std::string &v) {
        // Four elements become two 16-byte {hi, lo, hi, lo} stores.
        return indent + "    uint4 xy, zw;\n" + indent + "    splitTf32(" + v +
               ".x, xy.x, xy.y);\n" + indent + "    splitTf32(" + v +
               ".y, xy.z, xy.w);\n" + indent + "    splitTf32(" + v +
               ".z, zw.x, zw.y);\n" + indent + "    splitTf32(" + v +
               ".w, zw.z, zw.w);\n" + indent +
               "    uint4 *to = reinterpret_cast<uint4 *>(" + dst + " + " +
               withLd(at, ld) + ");\n" + indent + "    to[0] = xy;\n" +
               indent + "    to[1] = zw;\n";
      });
}

namespace {

// 8 warps: each K/V tile staged in shared memory serves 128 query rows, half
// the global-to-shared traffic (and staging waits) per flop of 4 warps.
constexpr unsigned kMaxWarps = 8;
constexpr int64_t kKeyTile = 64;

} // namespace

LogicalResult emitAttentionForwardMma(Operation *op, const EmitContext &ctx,
                                      OpLowering &out,
                                      const AttentionParts &a) {
  Shape q = a.qShape(), v = a.vShape();
  int64_t B = q[0], Hq = q[1], T = q[2], D = q[3], Dv = v[3];
  Type qt = elementTypeOf(a.query), kt = elementTypeOf(a.key),
       vt = elementTypeOf(a.value), rt = elementTypeOf(a.result);
  if (B > 65535 || Hq > 65535)
    return op->emitError("codegen: attention with batch ")
           << B << " and " << Hq
           << " heads exceeds the grid (at most 65535 each)";

  // 8 warps where the shared memory fits (head dims up to 64), else 4.
  auto sharedFor = [&](int64_t rows) {
    return static_cast<unsigned>(4 * rows * (D + 4) +
                                 8 * (kKeyTile * (D + 4) + kKeyTile * (Dv + 4)));
  };
  const unsigned kWarps =
      sharedFor(16 * kMaxWarps) <= 227 * 1024 ? kMaxWarps : 4;
  const int64_t kRowTile = 16 * kWarps; // query rows per block
  KernelSource src(op, ctx.name);
  src.scheme("flash forward on tensor cores (3xTF32 mma.sync m16n8k8): " +
             std::to_string(kWarps) +
             " warps x 16 query rows per block, keys in tiles of 64 through "
             "shared memory, online softmax; never materializes [T, S]");
  src.scheme("writes the row log-sum-exp (f32 [B, Hq, T]) for the backward");
  if (rt.isBF16())
    src.scheme("bf16: P rounded to bf16 before P V, the row sum from the "
               "unrounded P, as flash kernels and the reference evaluator do "
               "(docs/precision.md)");
  if (rt.isF16())
    src.scheme("f16: P rounded to f16 before P V, the row sum from the "
               "unrounded P, as the f16 tensor-core kernel and the reference "
               "evaluator do (docs/precision.md)");
  tileConstants(src, a, kRowTile, kKeyTile, kWarps, 4, /*grad=*/false);
  src.floatConstant("kScale", a.scale, "applied to q.k");
  src.staticAssert("kHq % kHkv == 0", "GQA groups are whole");
  src.staticAssert("kD % 8 == 0 && kDv % 8 == 0", "whole m16n8k8 tiles");
  src.helper(kMmaTf32Helpers);
  ForwardInterface f = forwardInterface(src, out, a, "          ");
  const std::string &params = f.params, &mask = f.mask,
                    &causalEnd = f.kvEnd, &visible = f.visible;
  src.kernel(
      "extern \"C\" __global__ void __launch_bounds__(" +
      std::to_string(kWarps * 32) + ")\n" + ctx.name + "(" + params +
      ") {\n"
      "  extern __shared__ float smem[];\n"
      "  float *Qs = smem;               // [kBr][kLdQ]\n"
      "  // K and V tiles split once into {hi, lo} TF32 pairs.\n"
      "  uint2 *Ks = reinterpret_cast<uint2 *>(Qs + kBr * kLdQ); // [kBc][kLdK]\n"
      "  uint2 *Vs = Ks + kBc * kLdK;    // [kBc][kLdV]\n"

      "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n"
      "  const int g = lane / 4, t = lane % 4;\n"
      "  const index_t b = blockIdx.z, h = blockIdx.y;\n"
      "  // The longest rows (last, under causal) start first.\n"
      "  const index_t q0 = (index_t)(gridDim.x - 1 - blockIdx.x) * kBr;\n"
      "  const index_t kvh = h / kGroup;\n"
      "  const " +
      storageType(qt) +
      " *qp = q + b * kQsB + h * kQsH;\n"
      "  const " +
      storageType(kt) +
      " *kp = k + b * kKsB + kvh * kKsH;\n"
      "  const " +
      storageType(vt) +
      " *vp = v + b * kVsB + kvh * kVsH;\n" +
      stageTile(qt, "Qs", "kLdQ", "qp + q0 * kQsT", "kQsT", kRowTile, D,
                "kT - q0",
                "  ") +
      causalEnd +
      "  float o[kDv / 8][4] = {};\n"
      "  // Rows g and g + 8 of the warp's 16: running max, per-lane sum.\n"
      "  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};\n"
      "  const index_t rowBase = q0 + warp * 16 + g;\n"
      "  for (index_t s0 = 0; s0 < kvEnd; s0 += kBc) {\n"
      "    __syncthreads(); // the previous tile is consumed\n" +
      stageSplit(kt, "Ks", "kLdK", "kp + s0 * kKsT", "kKsT", kKeyTile, D,
                 "kS - s0",
                 "    ") +
      stageSplit(vt, "Vs", "kLdV", "vp + s0 * kVsT", "kVsT", kKeyTile, Dv,
                 "kS - s0",
                 "    ") +
      "    __syncthreads();\n"
      "    float s[kBc / 8][4] = {};\n"
      "    mmaTile<kBc / 8, kD, true>(s, Qs + warp * 16 * kLdQ, kLdQ, Ks, "
      "kLdK);\n"
      "    float mx[2] = {-INFINITY, -INFINITY};\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < kBc / 8; ++j)\n"
      "#pragma unroll\n"
      "      for (int e = 0; e < 4; ++e) {\n"
      "        const index_t row = rowBase + (e / 2) * 8;\n"
      "        const index_t col = s0 + j * 8 + 2 * t + (e % 2);\n"
      "        float x = -INFINITY;\n"
      "        if (" +
      visible +
      ") {\n"
      "          x = s[j][e] * kScale;\n" +
      mask +
      "        }\n"
      "        s[j][e] = x;\n"
      "        mx[e / 2] = fmaxf(mx[e / 2], x);\n"
      "      }\n"
      "    float alpha[2];\n"
      "#pragma unroll\n"
      "    for (int r = 0; r < 2; ++r) {\n"
      "      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));\n"
      "      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));\n"
      "      const float mNew = fmaxf(m[r], mx[r]);\n"
      "      // Nothing visible yet: keep the (zero) state as it is.\n"
      "      alpha[r] = mNew == -INFINITY ? 1.0f : expf(m[r] - mNew);\n"
      "      m[r] = mNew;\n"
      "      l[r] *= alpha[r];\n"
      "    }\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < kBc / 8; ++j)\n"
      "#pragma unroll\n"
      "      for (int e = 0; e < 4; ++e) {\n"
      "        const int r = e / 2;\n"
      "        const float p = m[r] == -INFINITY ? 0.0f : expf(s[j][e] - "
      "m[r]);\n"
      "        l[r] += p;\n"
      "        s[j][e] = " +
      (rt.isBF16() || rt.isF16() ? loadAs(rt, storeAs(rt, "p")) : "p") +
      ";\n"
      "      }\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < kDv / 8; ++j) {\n"
      "      o[j][0] *= alpha[0];\n"
      "      o[j][1] *= alpha[0];\n"
      "      o[j][2] *= alpha[1];\n"
      "      o[j][3] *= alpha[1];\n"
      "    }\n"
      "    mmaRegA<kDv / 8, kBc / 8, false>(o, s, Vs, kLdV);\n"
      "  }\n"
      "  // A row that saw no key: output 0 and lse -inf.\n"
      "#pragma unroll\n"
      "  for (int r = 0; r < 2; ++r) {\n"
      "    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);\n"
      "    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);\n"
      "    const index_t row = rowBase + 8 * r;\n"
      "    if (row >= kT)\n"
      "      continue;\n"
      "    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;\n"
      "    const index_t at = (b * kHq + h) * kT + row;\n"
      "    const index_t o0 = b * kOsB + h * kOsH + row * kOsT;\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < kDv / 8; ++j) {\n"
      "      out[o0 + j * 8 + 2 * t] = " +
      storeAs(rt, "o[j][2 * r] * inv") +
      ";\n"
      "      out[o0 + j * 8 + 2 * t + 1] = " +
      storeAs(rt, "o[j][2 * r + 1] * inv") +
      ";\n"
      "    }\n"
      "    if (t == 0)\n"
      "      lse[at] = l[r] > 0.0f ? m[r] + logf(l[r]) : -INFINITY;\n"
      "  }\n"
      "}\n");

  out.kernels.push_back(attentionLaunch(
      src,
      {static_cast<unsigned>((T + kRowTile - 1) / kRowTile),
       static_cast<unsigned>(Hq), static_cast<unsigned>(B)},
      kWarps, sharedFor(kRowTile), std::move(f.args)));
  out.kind = OpLowering::Kind::Kernels;
  return success();
}

} // namespace llmc::codegen
