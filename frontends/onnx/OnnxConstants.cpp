//===- OnnxConstants.cpp - Evaluate ONNX ops on import-time constants -----===//
//
// Element loops over row-major TensorData. Floats compute in double and round
// to the element type on store; integers compute in int64 and wrap to the
// element type on store.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxConstants.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>

namespace llmc::onnximport {

static llvm::Error evalError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Strides of `shape` seen from a broadcast result of rank `rank`: 0 along
/// broadcast dims, so that out index . strides is the input element.
static std::vector<int64_t> broadcastStrides(llvm::ArrayRef<int64_t> shape,
                                             size_t rank) {
  std::vector<int64_t> own = stridesOf(shape);
  std::vector<int64_t> out(rank, 0);
  size_t offset = rank - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    out[offset + i] = shape[i] == 1 ? 0 : own[i];
  return out;
}

/// Calls fn(outIndex, inputOffsets...) for every element of `shape`.
template <size_t N, typename Fn>
static void forEachBroadcast(llvm::ArrayRef<int64_t> shape,
                             const std::array<std::vector<int64_t>, N> &strides,
                             Fn fn) {
  int64_t count = shapeElementCount(shape);
  std::vector<int64_t> index(shape.size(), 0);
  std::array<int64_t, N> offsets{};
  for (int64_t e = 0; e < count; ++e) {
    fn(e, offsets);
    // Increment the multi-index and the input offsets with it.
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      ++index[d];
      for (size_t k = 0; k < N; ++k)
        offsets[k] += strides[k][d];
      if (index[d] < shape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * index[d];
      index[d] = 0;
    }
  }
}

std::optional<std::vector<int64_t>> broadcastStatic(llvm::ArrayRef<int64_t> a,
                                                    llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1)
      return std::nullopt;
    out[rank - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

bool isBoolResult(BinaryKind kind) { return kind >= BinaryKind::Equal; }

static double applyFloat(BinaryKind kind, double x, double y) {
  switch (kind) {
  case BinaryKind::Add: return x + y;
  case BinaryKind::Sub: return x - y;
  case BinaryKind::Mul: return x * y;
  case BinaryKind::Div: return x / y;
  case BinaryKind::Pow: return std::pow(x, y);
  case BinaryKind::Max: return std::max(x, y);
  case BinaryKind::Min: return std::min(x, y);
  case BinaryKind::Mod: return std::fmod(x, y);
  case BinaryKind::Equal: return x == y;
  case BinaryKind::Less: return x < y;
  case BinaryKind::LessOrEqual: return x <= y;
  case BinaryKind::Greater: return x > y;
  case BinaryKind::GreaterOrEqual: return x >= y;
  case BinaryKind::And: return (x != 0) && (y != 0);
  case BinaryKind::Or: return (x != 0) || (y != 0);
  case BinaryKind::Xor: return (x != 0) != (y != 0);
  }
  return 0;
}

static int64_t applyInt(BinaryKind kind, int64_t x, int64_t y) {
  // Wrapping arithmetic, as the run-time integer ops have.
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
  switch (kind) {
  case BinaryKind::Add: return wrap(uint64_t(x) + uint64_t(y));
  case BinaryKind::Sub: return wrap(uint64_t(x) - uint64_t(y));
  case BinaryKind::Mul: return wrap(uint64_t(x) * uint64_t(y));
  case BinaryKind::Div: return x / y; // y != 0 checked by the caller
  case BinaryKind::Mod: {
    // ONNX Mod with fmod=0 takes the divisor's sign, as Python's %.
    int64_t r = x % y;
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
  }
  case BinaryKind::Pow: {
    int64_t r = 1;
    for (int64_t i = 0; i < y; ++i)
      r = wrap(uint64_t(r) * uint64_t(x));
    return r;
  }
  default: return static_cast<int64_t>(applyFloat(kind, double(x), double(y)));
  }
}

llvm::Expected<TensorData> evalBinary(BinaryKind kind, const TensorData &a,
                                      const TensorData &b) {
  auto shape = broadcastStatic(a.shape(), b.shape());
  if (!shape)
    return evalError("operand shapes are not broadcast-compatible");
  DType resultType = isBoolResult(kind) ? DType::Bool : a.dtype();
  TensorData out(resultType, *shape);
  bool integer = isIntegerType(a.dtype()) || a.dtype() == DType::Bool;
  std::array<std::vector<int64_t>, 2> strides = {
      broadcastStrides(a.shape(), shape->size()),
      broadcastStrides(b.shape(), shape->size())};
  bool divByZero = false;
  forEachBroadcast<2>(*shape, strides, [&](int64_t e, auto &off) {
    if (integer) {
      int64_t x = a.getInt(off[0]), y = b.getInt(off[1]);
      if ((kind == BinaryKind::Div || kind == BinaryKind::Mod) && y == 0) {
        divByZero = true;
        return;
      }
      out.setInt(e, applyInt(kind, x, y));
    } else {
      out.setDouble(e, applyFloat(kind, a.getDouble(off[0]),
                                  b.getDouble(off[1])));
    }
  });
  if (divByZero)
    return evalError("divides an integer by zero");
  return out;
}

static double applyUnary(UnaryKind kind, double x) {
  switch (kind) {
  case UnaryKind::Neg: return -x;
  case UnaryKind::Abs: return std::fabs(x);
  case UnaryKind::Exp: return std::exp(x);
  case UnaryKind::Log: return std::log(x);
  case UnaryKind::Sqrt: return std::sqrt(x);
  case UnaryKind::Reciprocal: return 1.0 / x;
  case UnaryKind::Tanh: return std::tanh(x);
  case UnaryKind::Erf: return std::erf(x);
  case UnaryKind::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
  case UnaryKind::Relu: return x > 0 ? x : 0;
  case UnaryKind::Cos: return std::cos(x);
  case UnaryKind::Sin: return std::sin(x);
  case UnaryKind::Floor: return std::floor(x);
  case UnaryKind::Ceil: return std::ceil(x);
  case UnaryKind::Not: return x == 0;
  case UnaryKind::IsNaN: return std::isnan(x);
  }
  return 0;
}

TensorData evalUnary(UnaryKind kind, const TensorData &a) {
  DType resultType = kind == UnaryKind::IsNaN ? DType::Bool : a.dtype();
  std::vector<int64_t> shape(a.shape().begin(), a.shape().end());
  TensorData out(resultType, shape);
  bool integer = isIntegerType(a.dtype());
  for (int64_t i = 0, e = a.numElements(); i < e; ++i) {
    if (integer && (kind == UnaryKind::Neg || kind == UnaryKind::Abs)) {
      int64_t v = a.getInt(i);
      out.setInt(i, kind == UnaryKind::Neg ? -v : (v < 0 ? -v : v));
    } else {
      out.setDouble(i, applyUnary(kind, a.getDouble(i)));
    }
  }
  return out;
}

TensorData evalCast(const TensorData &a, DType to) {
  std::vector<int64_t> shape(a.shape().begin(), a.shape().end());
  TensorData out(to, shape);
  bool fromInt = isIntegerType(a.dtype()) || a.dtype() == DType::Bool;
  for (int64_t i = 0, e = a.numElements(); i < e; ++i) {
    if (fromInt)
      out.setInt(i, a.getInt(i));
    else
      out.setDouble(i, a.getDouble(i));
  }
  return out;
}

llvm::Expected<TensorData> evalWhere(const TensorData &cond,
                                     const TensorData &x,
                                     const TensorData &y) {
  auto xy = broadcastStatic(x.shape(), y.shape());
  auto shape = xy ? broadcastStatic(cond.shape(), *xy) : std::nullopt;
  if (!shape)
    return evalError("operand shapes are not broadcast-compatible");
  TensorData out(x.dtype(), *shape);
  size_t rank = shape->size();
  std::array<std::vector<int64_t>, 3> strides = {
      broadcastStrides(cond.shape(), rank), broadcastStrides(x.shape(), rank),
      broadcastStrides(y.shape(), rank)};
  size_t width = dtypeSize(x.dtype());
  forEachBroadcast<3>(*shape, strides, [&](int64_t e, auto &off) {
    const TensorData &src = cond.getInt(off[0]) ? x : y;
    int64_t at = cond.getInt(off[0]) ? off[1] : off[2];
    std::copy_n(src.bytes().data() + at * width, width,
                out.mutableBytes().data() + e * width);
  });
  return out;
}

TensorData evalBroadcastTo(const TensorData &a,
                           llvm::ArrayRef<int64_t> shape) {
  TensorData out(a.dtype(), shape.vec());
  std::array<std::vector<int64_t>, 1> strides = {
      broadcastStrides(a.shape(), shape.size())};
  size_t width = dtypeSize(a.dtype());
  forEachBroadcast<1>(shape, strides, [&](int64_t e, auto &off) {
    std::copy_n(a.bytes().data() + off[0] * width, width,
                out.mutableBytes().data() + e * width);
  });
  return out;
}

TensorData evalTranspose(const TensorData &a, llvm::ArrayRef<int64_t> perm) {
  std::vector<int64_t> shape, inStrides = stridesOf(a.shape());
  std::array<std::vector<int64_t>, 1> strides;
  for (int64_t p : perm) {
    shape.push_back(a.shape()[p]);
    strides[0].push_back(inStrides[p]);
  }
  TensorData out(a.dtype(), shape);
  size_t width = dtypeSize(a.dtype());
  forEachBroadcast<1>(shape, strides, [&](int64_t e, auto &off) {
    std::copy_n(a.bytes().data() + off[0] * width, width,
                out.mutableBytes().data() + e * width);
  });
  return out;
}

llvm::Expected<TensorData> evalGather(const TensorData &data,
                                      const TensorData &indices,
                                      int64_t axis) {
  llvm::ArrayRef<int64_t> ds = data.shape();
  int64_t outer = shapeElementCount(ds.take_front(axis));
  int64_t inner = shapeElementCount(ds.drop_front(axis + 1));
  int64_t dim = ds[axis];
  std::vector<int64_t> shape(ds.begin(), ds.begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), ds.begin() + axis + 1, ds.end());
  TensorData out(data.dtype(), shape);
  size_t width = dtypeSize(data.dtype());
  int64_t n = indices.numElements();
  for (int64_t i = 0; i < n; ++i) {
    int64_t idx = indices.getInt(i);
    if (idx < -dim || idx >= dim)
      return evalError("index " + llvm::Twine(idx) +
                       " is out of range for a dim of size " +
                       llvm::Twine(dim));
    if (idx < 0)
      idx += dim;
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(data.bytes().data() + ((o * dim + idx) * inner) * width,
                  inner * width,
                  out.mutableBytes().data() + ((o * n + i) * inner) * width);
  }
  return out;
}

llvm::Expected<TensorData> evalGatherElements(const TensorData &data,
                                              const TensorData &indices,
                                              int64_t axis) {
  if (indices.rank() != data.rank())
    return evalError("indices and data differ in rank");
  std::vector<int64_t> shape(indices.shape().begin(), indices.shape().end());
  std::vector<int64_t> dataStrides = stridesOf(data.shape());
  TensorData out(data.dtype(), shape);
  size_t width = dtypeSize(data.dtype());
  int64_t dim = data.shape()[axis];
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t e = 0, n = indices.numElements(); e < n; ++e) {
    int64_t idx = indices.getInt(e);
    if (idx < -dim || idx >= dim)
      return evalError("index " + llvm::Twine(idx) +
                       " is out of range for a dim of size " +
                       llvm::Twine(dim));
    int64_t offset = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t i = int64_t(d) == axis ? (idx < 0 ? idx + dim : idx) : index[d];
      if (i >= data.shape()[d])
        return evalError("indices do not fit the data's shape");
      offset += i * dataStrides[d];
    }
    std::copy_n(data.bytes().data() + offset * width, width,
                out.mutableBytes().data() + e * width);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

TensorData evalConcat(llvm::ArrayRef<const TensorData *> parts,
                      int64_t axis) {
  std::vector<int64_t> shape(parts[0]->shape().begin(),
                             parts[0]->shape().end());
  shape[axis] = 0;
  for (const TensorData *p : parts)
    shape[axis] += p->shape()[axis];
  TensorData out(parts[0]->dtype(), shape);
  size_t width = dtypeSize(out.dtype());
  int64_t outer = shapeElementCount(llvm::ArrayRef(shape).take_front(axis));
  char *dst = out.mutableBytes().data();
  for (int64_t o = 0; o < outer; ++o) {
    for (const TensorData *p : parts) {
      int64_t chunk =
          shapeElementCount(p->shape().drop_front(axis)) * width;
      std::copy_n(p->bytes().data() + o * chunk, chunk, dst);
      dst += chunk;
    }
  }
  return out;
}

SliceBounds sliceBounds(int64_t start, int64_t end, int64_t step,
                        int64_t dim) {
  // ONNX Slice: negative bounds count from the end; then start and end clamp
  // to [0, dim] for positive steps and to [0, dim - 1] / [-1, dim - 1] for
  // negative ones. INT64_MAX/INT64_MIN stand for "to the end".
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  int64_t count;
  if (dim == 0) {
    start = 0;
    count = 0;
  } else if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    count = start > end ? (start - end - step - 1) / -step : 0;
  }
  return {start, step, count};
}

TensorData evalSlice(const TensorData &a, llvm::ArrayRef<int64_t> starts,
                     llvm::ArrayRef<int64_t> steps,
                     llvm::ArrayRef<int64_t> counts) {
  std::vector<int64_t> inStrides = stridesOf(a.shape());
  std::array<std::vector<int64_t>, 1> strides;
  int64_t base = 0;
  for (size_t d = 0; d < counts.size(); ++d) {
    base += starts[d] * inStrides[d];
    strides[0].push_back(steps[d] * inStrides[d]);
  }
  TensorData out(a.dtype(), counts.vec());
  size_t width = dtypeSize(a.dtype());
  forEachBroadcast<1>(counts, strides, [&](int64_t e, auto &off) {
    std::copy_n(a.bytes().data() + (base + off[0]) * width, width,
                out.mutableBytes().data() + e * width);
  });
  return out;
}

TensorData evalTrilu(const TensorData &a, int64_t k, bool upper) {
  TensorData out = a;
  int64_t rows = a.shape()[a.rank() - 2], cols = a.shape()[a.rank() - 1];
  int64_t n = a.numElements();
  std::vector<char> zero(dtypeSize(a.dtype()), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t j = e % cols, i = (e / cols) % rows;
    bool keep = upper ? j - i >= k : j - i <= k;
    if (!keep)
      std::copy(zero.begin(), zero.end(),
                out.mutableBytes().data() + e * zero.size());
  }
  return out;
}

TensorData evalReduce(ReduceKind kind, const TensorData &a,
                      llvm::ArrayRef<int64_t> axes, bool keepdims) {
  std::vector<int64_t> keptShape, outShape;
  std::vector<bool> reduced(a.rank(), false);
  for (int64_t ax : axes)
    reduced[ax] = true;
  for (int64_t d = 0; d < a.rank(); ++d) {
    keptShape.push_back(reduced[d] ? 1 : a.shape()[d]);
    if (!reduced[d] || keepdims)
      outShape.push_back(keptShape.back());
  }
  int64_t outCount = shapeElementCount(keptShape);
  std::vector<double> acc(outCount, kind == ReduceKind::Prod ? 1.0 : 0.0);
  std::vector<bool> seen(outCount, false);
  // The input walks in row-major order; its offset into the output is the
  // index with the reduced dims dropped.
  std::array<std::vector<int64_t>, 1> strides = {
      broadcastStrides(keptShape, keptShape.size())};
  forEachBroadcast<1>(a.shape(), strides, [&](int64_t e, auto &off) {
    double v = a.getDouble(e);
    double &r = acc[off[0]];
    switch (kind) {
    case ReduceKind::Sum: case ReduceKind::Mean: r += v; break;
    case ReduceKind::Prod: r *= v; break;
    case ReduceKind::Max: r = seen[off[0]] ? std::max(r, v) : v; break;
    case ReduceKind::Min: r = seen[off[0]] ? std::min(r, v) : v; break;
    }
    seen[off[0]] = true;
  });
  int64_t group = outCount ? a.numElements() / outCount : 0;
  TensorData out(a.dtype(), outShape);
  for (int64_t i = 0; i < outCount; ++i)
    out.setDouble(i, kind == ReduceKind::Mean && group ? acc[i] / group
                                                       : acc[i]);
  return out;
}

llvm::Expected<TensorData> evalRange(const TensorData &start,
                                     const TensorData &limit,
                                     const TensorData &delta) {
  double s = start.getDouble(0), l = limit.getDouble(0),
         d = delta.getDouble(0);
  if (d == 0)
    return evalError("has delta 0");
  double n = std::ceil((l - s) / d);
  int64_t count = n > 0 ? static_cast<int64_t>(n) : 0;
  if (count > (int64_t(1) << 32))
    return evalError("would have " + llvm::Twine(count) + " elements");
  TensorData out(start.dtype(), {count});
  bool integer = isIntegerType(start.dtype());
  for (int64_t i = 0; i < count; ++i) {
    if (integer)
      out.setInt(i, start.getInt(0) + i * delta.getInt(0));
    else
      out.setDouble(i, s + static_cast<double>(i) * d);
  }
  return out;
}

} // namespace llmc::onnximport
