//===- KernelSource.cpp - Types, header comments and shared device code ---===//
//
// The parts every emitter shares: how element types are stored and computed
// (floats in f32, i1 as one byte), how a kernel's translation unit is laid
// out, the launch shape of grid-stride kernels, and the block reductions of
// the row kernels.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Emitters.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace mlir;

namespace llmc::codegen {

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

Shape shapeOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return Shape(t.getShape().begin(), t.getShape().end());
}

Type elementTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

bool isFloatType(Type t) { return t.isF32() || t.isF16() || t.isBF16(); }

std::string storageType(Type t) {
  if (t.isF32())
    return "float";
  if (t.isBF16())
    return "__nv_bfloat16";
  if (t.isF16())
    return "__half";
  if (t.isSignlessInteger(32))
    return "int";
  if (t.isSignlessInteger(64))
    return "long long";
  return "unsigned char"; // i1, one byte per element
}

std::string computeType(Type t) {
  if (isFloatType(t))
    return "float";
  if (t.isSignlessInteger(1))
    return "bool";
  return storageType(t);
}

std::string loadAs(Type t, const std::string &expr) {
  if (t.isBF16())
    return "__bfloat162float(" + expr + ")";
  if (t.isF16())
    return "__half2float(" + expr + ")";
  if (t.isSignlessInteger(1))
    return "(" + expr + " != 0)";
  return expr;
}

std::string storeAs(Type t, const std::string &expr) {
  if (t.isBF16())
    return "__float2bfloat16(" + expr + ")"; // round to nearest even
  if (t.isF16())
    return "__float2half_rn(" + expr + ")";
  if (t.isSignlessInteger(1))
    return "(unsigned char)(" + expr + ")";
  return expr;
}

std::string floatLiteral(double v) {
  if (std::isnan(v))
    return "NAN";
  if (std::isinf(v))
    return v > 0 ? "INFINITY" : "-INFINITY";
  char buf[40];
  // %.9g reads back as the same float; keep a '.' or exponent so that it is
  // a floating literal before the 'f' suffix.
  std::snprintf(buf, sizeof(buf), "%.9g",
                static_cast<double>(static_cast<float>(v)));
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos)
    s += ".0";
  return s + "f";
}

std::string inParam(Type t, const std::string &name) {
  return "const " + storageType(t) + " *__restrict__ " + name;
}

std::string outParam(Type t, const std::string &name) {
  return storageType(t) + " *__restrict__ " + name;
}

//===----------------------------------------------------------------------===//
// Header comment
//===----------------------------------------------------------------------===//

void describeLoc(Location loc, std::vector<std::string> &names,
                 std::string &position) {
  llvm::TypeSwitch<Location>(loc)
      .Case<NameLoc>([&](NameLoc l) {
        names.push_back(l.getName().str());
        describeLoc(l.getChildLoc(), names, position);
      })
      .Case<FusedLoc>([&](FusedLoc l) {
        for (Location inner : l.getLocations())
          describeLoc(inner, names, position);
      })
      .Case<CallSiteLoc>(
          [&](CallSiteLoc l) { describeLoc(l.getCallee(), names, position); })
      .Case<FileLineColLoc>([&](FileLineColLoc l) {
        if (position.empty()) {
          std::string file = l.getFilename().str();
          size_t slash = file.rfind('/');
          if (slash != std::string::npos)
            file = file.substr(slash + 1);
          position = file + ":" + std::to_string(l.getLine()) + ":" +
                     std::to_string(l.getColumn());
        }
      })
      .Default([](Location) {});
}

std::string KernelSource::origin(Operation *op) {
  std::vector<std::string> names;
  std::string position;
  describeLoc(op->getLoc(), names, position);
  std::string s = op->getName().getStringRef().str();
  for (const std::string &n : names)
    s += " \"" + n + "\"";
  if (!position.empty())
    s += " at " + position;
  return s;
}

static std::string typeString(Type type) {
  auto t = cast<RankedTensorType>(type);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t.getElementType();
  return s + dimsString(Shape(t.getShape().begin(), t.getShape().end()));
}

KernelSource::KernelSource(Operation *op, const std::string &name)
    : name_(name) {
  header_ = "// " + name + ": " + origin(op) + "\n//   (";
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    header_ += (i ? ", " : "") + typeString(op->getOperand(i).getType());
    use(elementTypeOf(op->getOperand(i)));
  }
  header_ += ") -> ";
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    header_ += (i ? ", " : "") + typeString(op->getResult(i).getType());
    use(elementTypeOf(op->getResult(i)));
  }
  header_ += "\n";
  int64_t most = 1;
  for (Value v : op->getOperands())
    most = std::max(most, numElements(shapeOf(v)));
  for (Value v : op->getResults())
    most = std::max(most, numElements(shapeOf(v)));
  indexRange(most);
}

void KernelSource::scheme(const std::string &text) {
  scheme_ += "//   " + text + "\n";
}

void KernelSource::use(Type t) {
  bf16_ |= t.isBF16();
  f16_ |= t.isF16();
}

void KernelSource::indexRange(int64_t maxElements) {
  // Grid-stride loops add up to blockDim * gridDim past the end: keep room.
  wideIndex_ |= maxElements >= (int64_t(1) << 31) - (int64_t(1) << 24);
}

void KernelSource::constant(const std::string &name, int64_t value,
                            const std::string &comment) {
  constants_ += "constexpr index_t " + name + " = " + std::to_string(value) +
                ";" + (comment.empty() ? "" : "  // " + comment) + "\n";
}

void KernelSource::floatConstant(const std::string &name, double value,
                                 const std::string &comment) {
  constants_ += "constexpr float " + name + " = " + floatLiteral(value) + ";" +
                (comment.empty() ? "" : "  // " + comment) + "\n";
}

void KernelSource::staticAssert(const std::string &cond,
                                const std::string &why) {
  constants_ += "static_assert(" + cond + ", \"" + why + "\");\n";
}

void KernelSource::helper(const std::string &code) { helpers_ += code + "\n"; }

void KernelSource::kernel(const std::string &code) { kernel_ += code; }

std::string KernelSource::str() const {
  std::string s = header_ + scheme_;
  s +=
      "// Generated by llmc; launch metadata (grid, block, arguments) is kept\n"
      "// beside this source, in the plan.\n\n";
  if (bf16_)
    s += "#include <cuda_bf16.h>\n";
  if (f16_)
    s += "#include <cuda_fp16.h>\n";
  if (bf16_ || f16_)
    s += "\n";
  // NVRTC has no <math.h>: the two macros kernels use, unless a header
  // brought them.
  s += "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
       "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n\n";
  s += std::string("typedef ") + (wideIndex_ ? "long long" : "int") +
       " index_t;\n";
  s += constants_ + "\n";
  if (!helpers_.empty())
    s += helpers_ + "\n";
  s += kernel_;
  return s;
}

//===----------------------------------------------------------------------===//
// Launch shapes
//===----------------------------------------------------------------------===//

EmittedKernel elementwiseLaunch(const KernelSource &src, const EmitContext &ctx,
                                int64_t n, std::vector<KernelArg> args) {
  EmittedKernel k;
  k.name = src.name();
  k.source = src.str();
  int64_t block = ctx.options.blockSize;
  int64_t blocks = std::max<int64_t>(1, (n + block - 1) / block);
  k.grid = {
      static_cast<unsigned>(std::min<int64_t>(blocks, ctx.options.maxBlocks)),
      1, 1};
  k.block = {static_cast<unsigned>(block), 1, 1};
  k.args = std::move(args);
  return k;
}

LogicalResult singleKernel(OpLowering &out, EmittedKernel k) {
  out.kind = OpLowering::Kind::Kernels;
  out.kernels.push_back(std::move(k));
  return success();
}

Rows rowsOf(const Shape &shape, int64_t axis) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0)
    axis += rank;
  Rows r;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? r.rows : r.cols) *= shape[d];
  return r;
}

unsigned rowBlockSize(int64_t cols) {
  // Enough threads that each handles a few columns, rounded to warps.
  int64_t threads = std::min<int64_t>(1024, std::max<int64_t>(32, cols / 4));
  return static_cast<unsigned>((threads + 31) / 32 * 32);
}

//===----------------------------------------------------------------------===//
// Block reductions
//===----------------------------------------------------------------------===//

static const char *kWarpSum =
    R"(__device__ __forceinline__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// Sum over the block; every thread gets it. Call from all threads.
__device__ float blockSum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warpSum(v);
  __syncthreads(); // `partial` may still be read by a previous call
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  return warpSum(lane < (int)(blockDim.x / 32) ? partial[lane] : 0.0f);
}
)";

static const char *kWarpMax =
    R"(// NaN-propagating max (torch.maximum): fmaxf alone would drop NaNs.
__device__ __forceinline__ float nanMax(float a, float b) {
  return (a != a || b != b) ? NAN : fmaxf(a, b);
}
__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = nanMax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float blockMax(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  return warpMax(lane < (int)(blockDim.x / 32) ? partial[lane] : -INFINITY);
}
)";

static const char *kWelford =
    R"(// Welford's running (count, mean, M2): combining two partial states is
// exact up to rounding, so no second pass over the row is needed.
__device__ __forceinline__ void welfordMerge(float &n, float &mean, float &m2,
                                             float nb, float meanb, float m2b) {
  const float total = n + nb;
  if (total == 0.0f)
    return;
  const float delta = meanb - mean;
  const float wb = nb / total;
  mean += delta * wb;
  m2 += m2b + delta * delta * n * wb;
  n = total;
}
__device__ __forceinline__ void warpWelford(float &n, float &mean, float &m2) {
  for (int o = 16; o > 0; o >>= 1) {
    float nb = __shfl_xor_sync(0xffffffffu, n, o);
    float meanb = __shfl_xor_sync(0xffffffffu, mean, o);
    float m2b = __shfl_xor_sync(0xffffffffu, m2, o);
    welfordMerge(n, mean, m2, nb, meanb, m2b);
  }
}
__device__ void blockWelford(float &n, float &mean, float &m2) {
  __shared__ float partial[3][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  warpWelford(n, mean, m2);
  __syncthreads();
  if (lane == 0) {
    partial[0][warp] = n;
    partial[1][warp] = mean;
    partial[2][warp] = m2;
  }
  __syncthreads();
  const bool has = lane < (int)(blockDim.x / 32);
  n = has ? partial[0][lane] : 0.0f;
  mean = has ? partial[1][lane] : 0.0f;
  m2 = has ? partial[2][lane] : 0.0f;
  warpWelford(n, mean, m2);
}
)";

static const char *kOnline =
    R"(// Online softmax statistics: a running max `m` and the sum `s` of
// exp(x - m). A -inf element adds nothing; a NaN makes `s` NaN.
__device__ __forceinline__ void onlineAdd(float &m, float &s, float x) {
  if (x > m) {
    s = s * expf(m - x) + 1.0f;
    m = x;
  } else if (x != -INFINITY) {
    s += expf(x - m);
  }
}
__device__ __forceinline__ void onlineMerge(float &m, float &s, float mb,
                                            float sb) {
  const float mn = fmaxf(m, mb);
  s = (s == 0.0f ? 0.0f : s * expf(m - mn)) +
      (sb == 0.0f ? 0.0f : sb * expf(mb - mn));
  m = mn;
}
__device__ __forceinline__ void warpOnline(float &m, float &s) {
  for (int o = 16; o > 0; o >>= 1) {
    float mb = __shfl_xor_sync(0xffffffffu, m, o);
    float sb = __shfl_xor_sync(0xffffffffu, s, o);
    onlineMerge(m, s, mb, sb);
  }
}
__device__ void blockOnline(float &m, float &s) {
  __shared__ float partial[2][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  warpOnline(m, s);
  __syncthreads();
  if (lane == 0) {
    partial[0][warp] = m;
    partial[1][warp] = s;
  }
  __syncthreads();
  const bool has = lane < (int)(blockDim.x / 32);
  m = has ? partial[0][lane] : -INFINITY;
  s = has ? partial[1][lane] : 0.0f;
  warpOnline(m, s);
}
)";

std::string warpRowHelpers() {
  return "template <typename T, int N> struct alignas(sizeof(T) * N) Vec "
         "{\n  T v[N];\n};\n"
         "// Butterfly sum: every lane adds the same pairs (a + b == b + "
         "a), so every lane gets the same bits.\n"
         "__device__ __forceinline__ float warpAllSum(float v) {\n"
         "  for (int o = 16; o > 0; o >>= 1)\n"
         "    v += __shfl_xor_sync(0xffffffffu, v, o);\n"
         "  return v;\n"
         "}\n";
}

std::string warpRowPrefetchHelper() {
  return "__device__ __forceinline__ void prefetchL2(const void *p, int "
         "bytes, int lane) {\n"
         "  const char *end = (const char *)p + bytes;\n"
         "  for (const char *a = (const char *)((unsigned long long)p & "
         "~127ull) + 128 * lane; a < end; a += 32 * 128)\n"
         "    asm volatile(\"prefetch.L2 [%0];\" : : \"l\"(a));\n"
         "}\n";
}

std::string blockReduceHelpers(unsigned which) {
  std::string s;
  if (which & kBlockSum)
    s += kWarpSum;
  if (which & kBlockMax)
    s += kWarpMax;
  if (which & kBlockWelford)
    s += kWelford;
  if (which & kBlockOnline)
    s += kOnline;
  return s;
}

} // namespace llmc::codegen
