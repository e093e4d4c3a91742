//===- IndexMath.cpp - Index arithmetic baked into emitted kernels --------===//
//
// See IndexMath.h. Coordinates of the linear index are emitted innermost
// first as `i % n` and `i / m % n`; with the sizes as literals the CUDA
// compiler turns them into multiply-shift sequences.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/IndexMath.h"

namespace llmc::codegen {

Strides rowMajorStrides(const Shape &shape) {
  Strides strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Strides broadcastStrides(const Shape &operandShape, const Shape &resultShape) {
  Strides own = rowMajorStrides(operandShape);
  Strides out(resultShape.size(), 0);
  size_t lead = resultShape.size() - operandShape.size();
  for (size_t d = 0; d < operandShape.size(); ++d)
    out[lead + d] = operandShape[d] == 1 ? 0 : own[d];
  return out;
}

IndexSpace collapseDims(const IndexSpace &space) {
  IndexSpace out;
  out.strides.resize(space.strides.size());
  for (size_t d = 0; d < space.shape.size(); ++d) {
    if (space.shape[d] == 1)
      continue;
    bool merge = !out.shape.empty();
    for (size_t t = 0; merge && t < space.strides.size(); ++t)
      merge = out.strides[t].back() == space.strides[t][d] * space.shape[d];
    if (merge) {
      out.shape.back() *= space.shape[d];
      for (size_t t = 0; t < space.strides.size(); ++t)
        out.strides[t].back() = space.strides[t][d];
      continue;
    }
    out.shape.push_back(space.shape[d]);
    for (size_t t = 0; t < space.strides.size(); ++t)
      out.strides[t].push_back(space.strides[t][d]);
  }
  return out;
}

static bool isContiguous(const Shape &shape, const Strides &strides) {
  return strides == rowMajorStrides(shape);
}

std::vector<bool> neededCoordinates(const Shape &shape,
                                    const std::vector<Strides> &strides) {
  std::vector<bool> needed(shape.size(), false);
  for (const Strides &s : strides) {
    if (isContiguous(shape, s))
      continue;
    for (size_t d = 0; d < shape.size(); ++d)
      if (s[d] != 0)
        needed[d] = true;
  }
  return needed;
}

std::string emitCoordinates(const std::string &name, const std::string &linear,
                            const Shape &shape, const std::vector<bool> &needed,
                            const std::string &indent) {
  std::string out;
  int64_t inner = 1; // product of the sizes of dims after d
  for (size_t d = shape.size(); d-- > 0;) {
    if (needed[d]) {
      std::string expr = linear;
      if (inner != 1)
        expr = "(" + expr + " / " + std::to_string(inner) + ")";
      if (d != 0)
        expr += " % " + std::to_string(shape[d]);
      out += indent + "const index_t " + name + "_c" + std::to_string(d) +
             " = " + expr + ";\n";
    }
    inner *= shape[d];
  }
  return out;
}

std::string offsetExpression(const std::string &name, const std::string &linear,
                             const Shape &shape, const Strides &strides) {
  if (isContiguous(shape, strides))
    return linear;
  std::string expr;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (strides[d] == 0)
      continue;
    if (!expr.empty())
      expr += " + ";
    expr += name + "_c" + std::to_string(d);
    if (strides[d] != 1)
      expr += " * " + std::to_string(strides[d]);
  }
  return expr.empty() ? "0" : expr;
}

std::string dimsString(const Shape &shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

} // namespace llmc::codegen
