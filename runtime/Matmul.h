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

#include <vector>

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
  /// fits `workspaceBytes` and the actual pointer alignments (its first
  /// answer; fetchCandidates() asks for more, for tune()).
  Status prepare(const cuda::CublasLtApi &api, cublasLtHandle_t handle,
                 const MatmulStep &step, const MatmulPointers &pointers,
                 uint64_t workspaceBytes, const std::string &context);

  /// Times each kept candidate on `stream` (the step's own operands) and
  /// keeps the fastest (runtime/MatmulTune.cpp). `heuristicMs` and `bestMs`
  /// get the first answer's time and the chosen one's; `chosen` its rank.
  Status tune(const cuda::DriverApi &cu, cublasLtHandle_t handle,
              CUstream stream, CUdeviceptr workspace, uint64_t workspaceBytes,
              double &heuristicMs, double &bestMs, int &chosen);
  /// What decides the algorithm (shape, types, transposes, epilogue,
  /// operand alignments): steps with equal keys share one tuning.
  const std::string &key() const { return key_; }
  size_t candidateCount() const { return candidates_.size(); }
  const cublasLtMatmulAlgo_t &algo() const { return algo_; }
  void setAlgo(const cublasLtMatmulAlgo_t &algo) { algo_ = algo; }
  /// Asks the heuristic again for its first `candidates` answers (kept for
  /// tune() and setCandidate()), followed by split-K variants of the first
  /// of them (addSplitKVariants); the algorithm becomes the first answer.
  Status fetchCandidates(cublasLtHandle_t handle, int candidates);
  /// Runs the candidate of rank `i` (< candidateCount()).
  void setCandidate(size_t i) { algo_ = candidates_[i]; }

  /// Enqueues the matmul on `stream`.
  Status run(cublasLtHandle_t handle, CUstream stream, CUdeviceptr workspace,
             uint64_t workspaceBytes) const;

  /// The split-K factor a variant of rank `i` sets (0: the heuristic's own
  /// configuration).
  int candidateSplit(size_t i) const { return splits_[i]; }

private:
  void addSplitKVariants(cublasLtHandle_t handle);

  const cuda::CublasLtApi *api_ = nullptr;
  uint64_t workspaceBytes_ = 0;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layoutA_ = nullptr, layoutB_ = nullptr,
                         layoutC_ = nullptr, layoutD_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::vector<cublasLtMatmulAlgo_t> candidates_; // heuristic order
  std::vector<int> splits_;                       // per candidate
  cublasLtMatmulPreference_t preference_ = nullptr;
  MatmulPointers pointers_;
  float alpha_ = 1, beta_ = 0;
  std::string context_;
  std::string key_;
};

} // namespace llmc

#endif // LLMC_RUNTIME_MATMUL_H
