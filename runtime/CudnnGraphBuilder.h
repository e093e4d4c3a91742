//===- CudnnGraphBuilder.h - cuDNN backend descriptors, checked -*- C++ -*-===//
//
// The descriptor-making half of CudnnAttention.cpp (its only includer):
// tensors, the pointwise, reduction, matmul and reshape operations, each
// created, set and finalized with every cuDNN call checked, recorded for
// destruction, and named in the Status of a failure. Deprecated attribute
// names (the handle of a graph or plan) are passed by value so that the
// build stays warning-free against newer headers.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDNNGRAPHBUILDER_H
#define LLMC_RUNTIME_CUDNNGRAPHBUILDER_H

#include "runtime/CudnnAttention.h"

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace llmc::cudnn_graph {

using cuda::CudnnApi;
using Desc = cudnnBackendDescriptor_t;

/// Virtual tensors' unique ids count from here (the bound ones are below).
constexpr int64_t kFirstVirtual = 100;

constexpr auto kOperationGraphHandle = static_cast<cudnnBackendAttributeName_t>(800);
constexpr auto kExecutionPlanHandle = static_cast<cudnnBackendAttributeName_t>(400);

/// A virtual tensor's type, sizes and strides.
struct Layout {
  cudnnDataType_t type;
  Strides4 dims, strides;
};

/// Makes descriptors, records them for destruction, and names the step
/// that failed in every Status.
class GraphBuilder {
public:
  GraphBuilder(const CudnnApi &api, std::vector<Desc> &owned,
               std::string context)
      : api_(api), owned_(owned), context_(std::move(context)) {}

  Status make(cudnnBackendDescriptorType_t type, Desc &out) {
    out = nullptr;
    LLMC_CUDNN(api_.cudnnBackendCreateDescriptor(type, &out), context_);
    owned_.push_back(out);
    return Status::ok();
  }
  template <typename T>
  Status set(Desc d, cudnnBackendAttributeName_t name,
             cudnnBackendAttributeType_t type, int64_t count, const T *v) {
    LLMC_CUDNN(api_.cudnnBackendSetAttribute(d, name, type, count, v),
               context_ + ", attribute " + std::to_string(name));
    return Status::ok();
  }
  Status finalize(Desc d, const char *what) {
    LLMC_CUDNN(api_.cudnnBackendFinalize(d), context_ + ", " + what);
    return Status::ok();
  }

  Status tensor(int64_t uid, cudnnDataType_t type, const Strides4 &dims,
                const Strides4 &strides, bool isVirtual, Desc &out,
                bool byValue = false) {
    LLMC_RETURN_IF_ERROR(make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, out));
    int64_t alignment = 16;
    LLMC_RETURN_IF_ERROR(
        set(out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
    LLMC_RETURN_IF_ERROR(set(out, CUDNN_ATTR_TENSOR_DIMENSIONS,
                             CUDNN_TYPE_INT64, 4, dims.data()));
    LLMC_RETURN_IF_ERROR(set(out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64,
                             4, strides.data()));
    LLMC_RETURN_IF_ERROR(
        set(out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    LLMC_RETURN_IF_ERROR(set(out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                             CUDNN_TYPE_INT64, 1, &alignment));
    bool v = isVirtual;
    LLMC_RETURN_IF_ERROR(
        set(out, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v));
    if (byValue) {
      bool t = true;
      LLMC_RETURN_IF_ERROR(
          set(out, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &t));
    }
    return finalize(out, "tensor");
  }
  /// A virtual tensor with the next free id.
  Status temp(cudnnDataType_t type, const Strides4 &dims,
              const Strides4 &strides, Desc &out) {
    return tensor(nextVirtual_++, type, dims, strides, true, out);
  }
  /// A by-value f32 scalar.
  Status scalar(int64_t uid, Desc &out) {
    return tensor(uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, out,
                  true);
  }

  /// An operation whose attributes are the descriptors it reads and
  /// writes (null ones left unset), finalized and appended to `ops`.
  Status operation(
      cudnnBackendDescriptorType_t type, const char *what,
      std::initializer_list<std::pair<cudnnBackendAttributeName_t, Desc>>
          operands,
      std::vector<Desc> &ops) {
    Desc op;
    LLMC_RETURN_IF_ERROR(make(type, op));
    for (auto [name, operand] : operands)
      if (operand)
        LLMC_RETURN_IF_ERROR(
            set(op, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &operand));
    LLMC_RETURN_IF_ERROR(finalize(op, what));
    ops.push_back(op);
    return Status::ok();
  }
  /// The math descriptor an operation points at: `type` with its compute
  /// precision (attribute `precision`) and one enum-valued setting, if any.
  template <typename T>
  Status math(cudnnBackendDescriptorType_t type,
              cudnnBackendAttributeName_t precision, cudnnDataType_t prec,
              cudnnBackendAttributeName_t setting,
              cudnnBackendAttributeType_t settingType, const T *value,
              Desc &out) {
    LLMC_RETURN_IF_ERROR(make(type, out));
    if (value)
      LLMC_RETURN_IF_ERROR(set(out, setting, settingType, 1, value));
    LLMC_RETURN_IF_ERROR(set(out, precision, CUDNN_TYPE_DATA_TYPE, 1, &prec));
    return Status::ok(); // the caller finalizes (after any other setting)
  }

  /// y = mode(x[, b[, t]]), computed in `prec`; `axis` for GEN_INDEX.
  Status pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc t, Desc y,
                   std::vector<Desc> &ops,
                   cudnnDataType_t prec = CUDNN_DATA_FLOAT, int64_t axis = -1) {
    Desc pw;
    LLMC_RETURN_IF_ERROR(math(CUDNN_BACKEND_POINTWISE_DESCRIPTOR,
                              CUDNN_ATTR_POINTWISE_MATH_PREC, prec,
                              CUDNN_ATTR_POINTWISE_MODE,
                              CUDNN_TYPE_POINTWISE_MODE, &mode, pw));
    if (axis >= 0)
      LLMC_RETURN_IF_ERROR(
          set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis));
    LLMC_RETURN_IF_ERROR(finalize(pw, "pointwise"));
    return operation(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                     "pointwise operation",
                     {{CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw},
                      {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x},
                      {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b},
                      {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t},
                      {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y}},
                     ops);
  }

  Status reduction(cudnnReduceTensorOp_t mode, Desc x, Desc y,
                   std::vector<Desc> &ops) {
    Desc r;
    LLMC_RETURN_IF_ERROR(math(CUDNN_BACKEND_REDUCTION_DESCRIPTOR,
                              CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT,
                              CUDNN_ATTR_REDUCTION_OPERATOR,
                              CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &mode, r));
    LLMC_RETURN_IF_ERROR(finalize(r, "reduction"));
    return operation(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
                     "reduction operation",
                     {{CUDNN_ATTR_OPERATION_REDUCTION_DESC, r},
                      {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x},
                      {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y}},
                     ops);
  }

  Status matmul(Desc a, Desc b, Desc c, std::vector<Desc> &ops) {
    Desc m;
    LLMC_RETURN_IF_ERROR(math<int>(CUDNN_BACKEND_MATMUL_DESCRIPTOR,
                                   CUDNN_ATTR_MATMUL_COMP_TYPE,
                                   CUDNN_DATA_FLOAT, {}, {}, nullptr, m));
    LLMC_RETURN_IF_ERROR(finalize(m, "matmul"));
    return operation(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
                     "matmul operation",
                     {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, a},
                      {CUDNN_ATTR_OPERATION_MATMUL_BDESC, b},
                      {CUDNN_ATTR_OPERATION_MATMUL_CDESC, c},
                      {CUDNN_ATTR_OPERATION_MATMUL_DESC, m}},
                     ops);
  }

  Status reshape(Desc x, Desc y, std::vector<Desc> &ops) {
    return operation(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
                     "reshape operation",
                     {{CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x},
                      {CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y}},
                     ops);
  }

  /// y = mode(x[, b]) into a new virtual tensor laid out as `l`.
  Status apply(cudnnPointwiseMode_t mode, Desc x, Desc b, const Layout &l,
               Desc &y, std::vector<Desc> &ops) {
    LLMC_RETURN_IF_ERROR(temp(l.type, l.dims, l.strides, y));
    return pointwise(mode, x, b, nullptr, y, ops);
  }
  /// y = mode-reduction of x into a new virtual tensor laid out as `l`.
  Status reduce(cudnnReduceTensorOp_t mode, Desc x, const Layout &l, Desc &y,
                std::vector<Desc> &ops) {
    LLMC_RETURN_IF_ERROR(temp(l.type, l.dims, l.strides, y));
    return reduction(mode, x, y, ops);
  }
  /// c = a b into a new virtual tensor laid out as `l`.
  Status product(Desc a, Desc b, const Layout &l, Desc &c,
                 std::vector<Desc> &ops) {
    LLMC_RETURN_IF_ERROR(temp(l.type, l.dims, l.strides, c));
    return matmul(a, b, c, ops);
  }
  /// x viewed as a new virtual tensor laid out as `l`.
  Status reshaped(Desc x, const Layout &l, Desc &y, std::vector<Desc> &ops) {
    LLMC_RETURN_IF_ERROR(temp(l.type, l.dims, l.strides, y));
    return reshape(x, y, ops);
  }

  const std::string &context() const { return context_; }

private:
  const CudnnApi &api_;
  std::vector<Desc> &owned_;
  std::string context_;
  int64_t nextVirtual_ = kFirstVirtual;
};

} // namespace llmc::cudnn_graph

#endif // LLMC_RUNTIME_CUDNNGRAPHBUILDER_H
