//===- CudaApi.h - CUDA libraries loaded at run time ------------*- C++ -*-===//
//
// The runtime never links libcuda, libnvrtc or libcublasLt. It opens them with
// dlopen on first use and resolves the functions it calls into tables, so that
// `llmc` and the runtime start on machines without a GPU or a driver and say
// "no CUDA driver found: ..." as a Status instead of failing to load
// (docs/runtime.md, "Why dlopen"). The CUDA headers are used for types only.
//
// Function names go through the headers' macros, so `cuMemAlloc` resolves the
// symbol `cuMemAlloc_v2` exactly as a program linked against libcuda would.
//
// Every call into one of these libraries is checked with LLMC_CU, LLMC_NVRTC or
// LLMC_CUBLASLT, which return a Status naming the call, the error's name and
// text, the file:line of the call and a context (kernel, step, bundle).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDAAPI_H
#define LLMC_RUNTIME_CUDAAPI_H

#include "runtime/Status.h"

#include <cublasLt.h>
#include <cuda.h>
#include <nvrtc.h>

#include <string>

namespace llmc::cuda {

//===----------------------------------------------------------------------===//
// Function tables
//===----------------------------------------------------------------------===//

#define LLMC_DRIVER_FUNCTIONS(X)                                               \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuCtxGetLimit)                                                             \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemGetInfo)                                                              \
  X(cuMemHostAlloc)                                                            \
  X(cuMemHostGetDevicePointer)                                                 \
  X(cuMemFreeHost)                                                             \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemcpyDtoDAsync)                                                         \
  X(cuMemsetD8Async)                                                           \
  X(cuModuleLoadData)                                                          \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuFuncGetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuGraphInstantiate)                                                        \
  X(cuGraphLaunch)                                                             \
  X(cuGraphDestroy)                                                            \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphGetNodes)                                                           \
  X(cuGraphNodeGetType)                                                        \
  X(cuGraphMemcpyNodeGetParams)                                                \
  X(cuGraphExecMemcpyNodeSetParams)                                            \
  X(cuGraphNodeSetEnabled)                                                     \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventRecordWithFlags)                                                    \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuEventDestroy)

#define LLMC_NVRTC_FUNCTIONS(X)                                                \
  X(nvrtcVersion)                                                              \
  X(nvrtcGetErrorString)                                                       \
  X(nvrtcCreateProgram)                                                        \
  X(nvrtcDestroyProgram)                                                       \
  X(nvrtcCompileProgram)                                                       \
  X(nvrtcGetProgramLogSize)                                                    \
  X(nvrtcGetProgramLog)                                                        \
  X(nvrtcGetCUBINSize)                                                         \
  X(nvrtcGetCUBIN)                                                             \
  X(nvrtcGetNumSupportedArchs)                                                 \
  X(nvrtcGetSupportedArchs)

#define LLMC_CUBLASLT_FUNCTIONS(X)                                             \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtGetVersion)                                                        \
  X(cublasLtGetStatusName)                                                     \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)                                          \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmulAlgoCapGetAttribute)                                         \
  X(cublasLtMatmulAlgoConfigSetAttribute)                                      \
  X(cublasLtMatmulAlgoCheck)                                                   \
  X(cublasLtMatmul)

// One member per function, typed from the header's declaration. The argument
// is macro-expanded first, so versioned names (cuMemAlloc_v2) are used.
#define LLMC_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;

struct DriverApi {
  LLMC_DRIVER_FUNCTIONS(LLMC_DECLARE_MEMBER)
};
struct NvrtcApi {
  LLMC_NVRTC_FUNCTIONS(LLMC_DECLARE_MEMBER)
};
struct CublasLtApi {
  LLMC_CUBLASLT_FUNCTIONS(LLMC_DECLARE_MEMBER)
};

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

/// The process-wide tables, loaded once on first use. On failure `api` is
/// null and the Status says which library is missing and how to get it:
///   "no CUDA driver found: libcuda.so.1: cannot open shared object file ..."
/// The search can be overridden by LLMC_LIBCUDA, LLMC_LIBNVRTC and
/// LLMC_LIBCUBLASLT (a path to the library); a set variable whose path does
/// not load is an error naming it, never a fallback to the default search.
Status loadDriver(const DriverApi *&api);
Status loadNvrtc(const NvrtcApi *&api);
Status loadCublasLt(const CublasLtApi *&api);

/// Loads every library whose LLMC_LIB* variable is set. The CLI calls it
/// first, so that a bad override is an error even in a command that would
/// otherwise only probe for a GPU and quietly carry on without one.
Status checkLibraryOverrides();

/// Opens `path` and resolves every driver function into `api`, bypassing the
/// process-wide table (tests use it with the toolkit's stub libcuda). The
/// library stays open for the life of the process.
Status loadDriverFrom(const std::string &path, DriverApi &api);

//===----------------------------------------------------------------------===//
// Error checking
//===----------------------------------------------------------------------===//

/// Builds the error of a failed call: "<call> failed: <NAME> (<text>) at
/// <file>:<line> [<context>]". `expr` is the call as written in the source;
/// the message names just the function.
Status driverError(CUresult result, const char *expr, const char *file,
                   int line, const std::string &context);
Status nvrtcError(nvrtcResult result, const char *expr, const char *file,
                  int line, const std::string &context);
Status cublasLtError(cublasStatus_t result, const char *expr, const char *file,
                     int line, const std::string &context);

/// The function name inside a call expression: "cu->cuMemAlloc(&p, n)" gives
/// "cuMemAlloc".
std::string calleeName(const char *expr);

} // namespace llmc::cuda

/// Returns a Status from the enclosing function when a driver call fails.
#define LLMC_CU(expr, context)                                                 \
  do {                                                                         \
    CUresult llmcResult_ = (expr);                                             \
    if (llmcResult_ != CUDA_SUCCESS)                                           \
      return ::llmc::cuda::driverError(llmcResult_, #expr, __FILE__, __LINE__, \
                                       (context));                             \
  } while (0)

#define LLMC_NVRTC(expr, context)                                              \
  do {                                                                         \
    nvrtcResult llmcResult_ = (expr);                                          \
    if (llmcResult_ != NVRTC_SUCCESS)                                          \
      return ::llmc::cuda::nvrtcError(llmcResult_, #expr, __FILE__, __LINE__,  \
                                      (context));                              \
  } while (0)

#define LLMC_CUBLASLT(expr, context)                                           \
  do {                                                                         \
    cublasStatus_t llmcResult_ = (expr);                                       \
    if (llmcResult_ != CUBLAS_STATUS_SUCCESS)                                  \
      return ::llmc::cuda::cublasLtError(llmcResult_, #expr, __FILE__,         \
                                         __LINE__, (context));                 \
  } while (0)

#endif // LLMC_RUNTIME_CUDAAPI_H
