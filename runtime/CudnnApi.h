//===- CudnnApi.h - cuDNN's backend API loaded at run time ------*- C++ -*-===//
//
// cuDNN is the second attention backend (docs/codegen.md, "cuDNN
// attention"): opened with dlopen like the CUDA libraries (CudaApi.h), so a
// machine without it builds and runs llmc and simply uses the generated
// attention kernels. Only the backend (graph) API is used; cudnn-frontend is
// a header library on top of it that llmc does not need.
//
// Kept apart from CudaApi.h so that the many files that include that header
// do not parse cuDNN's.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDNNAPI_H
#define LLMC_RUNTIME_CUDNNAPI_H

#include "runtime/Status.h"

#include <cudnn_graph.h>

#include <string>

namespace llmc::cuda {

#define LLMC_CUDNN_FUNCTIONS(X)                                                \
  X(cudnnGetVersion)                                                           \
  X(cudnnGetErrorString)                                                       \
  X(cudnnGetLastErrorString)                                                   \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnBackendCreateDescriptor)                                              \
  X(cudnnBackendDestroyDescriptor)                                             \
  X(cudnnBackendSetAttribute)                                                  \
  X(cudnnBackendGetAttribute)                                                  \
  X(cudnnBackendFinalize)                                                      \
  X(cudnnBackendExecute)

#define LLMC_DECLARE_CUDNN_MEMBER(name) decltype(&::name) name = nullptr;

struct CudnnApi {
  LLMC_CUDNN_FUNCTIONS(LLMC_DECLARE_CUDNN_MEMBER)
};

/// The process-wide table, loaded once. On failure `api` is null and the
/// Status says so: "cuDNN not found: libcudnn.so.9: cannot open shared
/// object file ... (install cuDNN 9, or set LLMC_LIBCUDNN ...)". A set
/// LLMC_LIBCUDNN whose path does not load is an error naming it.
Status loadCudnn(const CudnnApi *&api);

/// "cudnnBackendFinalize failed: CUDNN_STATUS_NOT_SUPPORTED (<cuDNN's last
/// error message>) at runtime/File.cpp:12 [context]".
Status cudnnError(cudnnStatus_t result, const char *expr, const char *file,
                  int line, const std::string &context);

} // namespace llmc::cuda

#define LLMC_CUDNN(expr, context)                                              \
  do {                                                                         \
    cudnnStatus_t llmcResult_ = (expr);                                        \
    if (llmcResult_ != CUDNN_STATUS_SUCCESS)                                   \
      return ::llmc::cuda::cudnnError(llmcResult_, #expr, __FILE__, __LINE__,  \
                                      (context));                              \
  } while (0)

#endif // LLMC_RUNTIME_CUDNNAPI_H
