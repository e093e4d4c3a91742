//===- IndexMath.h - Index arithmetic of kernels ----------------*- C++ -*-===//
//
// Static-shape index arithmetic for the generated kernels, free of MLIR so
// that it is unit-tested on its own. A kernel walks the linear index `i` of
// its output; each operand is read at `sum_d coord_d(i) * stride_d`, with
// stride 0 along broadcast dims. Before emitting that sum, adjacent dims that
// every operand traverses contiguously are merged (collapseDims), so that a
// same-shape operand costs no division at all and a bias add costs one
// modulo.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_INDEXMATH_H
#define LLMC_COMPILER_CODEGEN_INDEXMATH_H

#include <cstdint>
#include <string>
#include <vector>

namespace llmc::codegen {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

/// Row-major strides of `shape`.
Strides rowMajorStrides(const Shape &shape);
int64_t numElements(const Shape &shape);

/// Strides of an operand of `operandShape` read at the coordinates of a
/// numpy-broadcast `resultShape` (shapes align at the right): the operand's
/// own strides, 0 along dims where it has size 1 or that it lacks.
Strides broadcastStrides(const Shape &operandShape, const Shape &resultShape);

/// An iteration space (`shape`) and how each of several tensors is addressed
/// in it (`strides[t][d]`, elements).
struct IndexSpace {
  Shape shape;
  std::vector<Strides> strides;
};

/// Drops size-1 dims and merges dims d, d+1 wherever every tensor has
/// stride[d] == stride[d+1] * shape[d+1]. The linear index of the space is
/// unchanged, and so is every tensor's offset for it.
IndexSpace collapseDims(const IndexSpace &space);

/// C++ statements that declare `const index_t <name>_c<d>` coordinates of the
/// linear index `linear` in `shape` for the dims in `needed` (others are not
/// declared). `indent` prefixes each line.
std::string emitCoordinates(const std::string &name, const std::string &linear,
                            const Shape &shape, const std::vector<bool> &needed,
                            const std::string &indent);

/// The offset expression `<name>_c0 * s0 + ...` of a tensor with `strides` in
/// the coordinates `emitCoordinates(name, ...)` declared; "0" when every
/// stride is 0, and `linear` itself when the tensor is contiguous in `shape`.
std::string offsetExpression(const std::string &name, const std::string &linear,
                             const Shape &shape, const Strides &strides);

/// Which coordinates offsetExpression needs for these tensors.
std::vector<bool> neededCoordinates(const Shape &shape,
                                    const std::vector<Strides> &strides);

/// "[2, 16, 64]".
std::string dimsString(const Shape &shape);

} // namespace llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_INDEXMATH_H
