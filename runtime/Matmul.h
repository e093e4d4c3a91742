//===- Matmul.h - One plan matmul step prepared for cuBLASLt ----*- C++ -*-===//
//
// A MatmulStep is row-major (Plan.h); cuBLASLt is column-major. A row-major
// [m,n] matrix is the column-major [n,m] matrix of its transpose, so
//
//   D = op(A) @ op(B)   (row-major)   <=>   D^T = op(B)^T @ op(A)^T (col-major)
//
// and the step runs as a column-major matmul with M = n, N = m, K = k, the
// operands swapped (cuBLASLt's A is our B) and each keeping its transpose
// flag. The bias, a length-n vector added to every row of D, is then a
// per-row bias of D^T: exactly CUBLASLT_EPILOGUE_BIAS. Likewise GELU's aux
// matrix is D's shape (column-major ld n), DGELU_BGRAD's bias gradient sums
// D^T's columns (our rows), and our A's sum over k is cuBLASLt's B's:
// MatmulEpilogue::BiasGradA is CUBLASLT_EPILOGUE_BGRADB, and BiasGradB (our
// B's sum over k, the [n] rows of D^T) is CUBLASLT_EPILOGUE_BGRADA.
//
// Descriptors, layouts and the algorithm (from the heuristic) are made once at
// load; run() only enqueues cublasLtMatmul, which is what a captured CUDA
// graph then replays. The workspace is a region of the arena, so capture never
// allocates.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MATMUL_H
#define LLMC_RUNTIME_MATMUL_H

#include "runtime/CudaApi.h"
#include "runtime/Plan.h"

namespace llmc {

struct MatmulPointers {
  CUdeviceptr a = 0, b = 0, c = 0, d = 0, bias = 0, aux = 0, biasGrad = 0;
};

class PreparedMatmul {
public:
  PreparedMatmul() = default;
  PreparedMatmul(const PreparedMatmul &) = delete;
  PreparedMatmul &operator=(const PreparedMatmul &) = delete;
  ~PreparedMatmul();

  /// Creates the descriptors and asks the heuristic for an algorithm that
  /// fits `workspaceBytes` and the actual pointer alignments.
  Status prepare(const cuda::CublasLtApi &api, cublasLtHandle_t handle,
                 const MatmulStep &step, const MatmulPointers &pointers,
                 uint64_t workspaceBytes, const std::string &context);

  /// Enqueues the matmul on `stream`.
  Status run(cublasLtHandle_t handle, CUstream stream, CUdeviceptr workspace,
             uint64_t workspaceBytes) const;

private:
  const cuda::CublasLtApi *api_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layoutA_ = nullptr, layoutB_ = nullptr,
                         layoutC_ = nullptr, layoutD_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  MatmulPointers pointers_;
  float alpha_ = 1, beta_ = 0;
  std::string context_;
};

} // namespace llmc

#endif // LLMC_RUNTIME_MATMUL_H
