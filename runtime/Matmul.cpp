//===- Matmul.cpp - One plan matmul step prepared for cuBLASLt ------------===//
#include "runtime/Matmul.h"

#include <algorithm>

namespace llmc {
namespace {

cudaDataType_t cudaType(DType type) {
  switch (type) {
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F8E4M3:
    return CUDA_R_8F_E4M3;
  case DType::F8E5M2:
    return CUDA_R_8F_E5M2;
  default:
    return CUDA_R_32F;
  }
}

/// The largest power of two (at most 256) dividing every batch's address.
uint32_t alignmentOf(CUdeviceptr pointer, int64_t batch, int64_t stride,
                     DType type) {
  uint64_t bits = pointer;
  if (batch > 1 && stride > 0)
    bits |= static_cast<uint64_t>(stride) * dtypeSize(type);
  uint32_t alignment = 256;
  while (alignment > 1 && bits % alignment != 0)
    alignment /= 2;
  return alignment;
}

/// The cuBLASLt epilogue of `mm` (validatePlan checked the combination).
cublasLtEpilogue_t epilogueOf(const MatmulStep &mm,
                              const MatmulPointers &pointers) {
  switch (mm.epilogue) {
  case MatmulEpilogue::None:
    return pointers.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  case MatmulEpilogue::Gelu:
    if (pointers.bias)
      return pointers.aux ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                          : CUBLASLT_EPILOGUE_GELU_BIAS;
    return pointers.aux ? CUBLASLT_EPILOGUE_GELU_AUX : CUBLASLT_EPILOGUE_GELU;
  case MatmulEpilogue::GeluGrad:
    return pointers.biasGrad ? CUBLASLT_EPILOGUE_DGELU_BGRAD
                             : CUBLASLT_EPILOGUE_DGELU;
  case MatmulEpilogue::BiasGradA:
    return CUBLASLT_EPILOGUE_BGRADB; // our A is cuBLASLt's B
  case MatmulEpilogue::BiasGradB:
    return CUBLASLT_EPILOGUE_BGRADA; // our B is cuBLASLt's A
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

} // namespace

PreparedMatmul::~PreparedMatmul() {
  if (!api_)
    return;
  for (cublasLtMatrixLayout_t layout : {layoutA_, layoutB_, layoutC_, layoutD_})
    if (layout)
      api_->cublasLtMatrixLayoutDestroy(layout);
  if (desc_)
    api_->cublasLtMatmulDescDestroy(desc_);
  if (preference_)
    api_->cublasLtMatmulPreferenceDestroy(preference_);
}

Status PreparedMatmul::prepare(const cuda::CublasLtApi &api,
                               cublasLtHandle_t handle, const MatmulStep &mm,
                               const MatmulPointers &pointers,
                               uint64_t workspaceBytes,
                               const std::string &context) {
  api_ = &api;
  workspaceBytes_ = workspaceBytes;
  pointers_ = pointers;
  alpha_ = mm.alpha;
  beta_ = mm.beta;
  context_ = context;

  // Column-major view (see the file comment): cuBLASLt's A is our B.
  const uint64_t M = mm.n, N = mm.m, K = mm.k;
  cublasOperation_t opA = mm.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = mm.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  LLMC_CUBLASLT(
      api.cublasLtMatmulDescCreate(&desc_,
                                   mm.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                           : CUBLAS_COMPUTE_32F,
                                   CUDA_R_32F),
      context);
  LLMC_CUBLASLT(api.cublasLtMatmulDescSetAttribute(
                    desc_, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)),
                context);
  LLMC_CUBLASLT(api.cublasLtMatmulDescSetAttribute(
                    desc_, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)),
                context);
  cublasLtEpilogue_t epilogue = epilogueOf(mm, pointers);
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    LLMC_CUBLASLT(
        api.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &epilogue, sizeof(epilogue)),
        context);
  // One pointer attribute for the bias read and the bias gradient written.
  if (CUdeviceptr vector = pointers.bias ? pointers.bias : pointers.biasGrad) {
    void *p = reinterpret_cast<void *>(vector);
    LLMC_CUBLASLT(api.cublasLtMatmulDescSetAttribute(
                      desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof(p)),
                  context);
  }
  if (pointers.aux) {
    void *p = reinterpret_cast<void *>(pointers.aux);
    int64_t ld = mm.n; // column-major rows of D
    LLMC_CUBLASLT(
        api.cublasLtMatmulDescSetAttribute(
            desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &p, sizeof(p)),
        context);
    LLMC_CUBLASLT(
        api.cublasLtMatmulDescSetAttribute(
            desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)),
        context);
  }

  // Stored shapes, column-major: our B is [k,n] row-major = [n,k] col-major.
  auto makeLayout = [&](cublasLtMatrixLayout_t &layout, DType type,
                        uint64_t rows, uint64_t cols,
                        int64_t stride) -> Status {
    LLMC_CUBLASLT(api.cublasLtMatrixLayoutCreate(&layout, cudaType(type), rows,
                                                 cols, rows),
                  context);
    if (mm.batch > 1) {
      int32_t count = static_cast<int32_t>(mm.batch);
      LLMC_CUBLASLT(api.cublasLtMatrixLayoutSetAttribute(
                        layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                        sizeof(count)),
                    context);
      LLMC_CUBLASLT(api.cublasLtMatrixLayoutSetAttribute(
                        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                        &stride, sizeof(stride)),
                    context);
    }
    return Status::ok();
  };
  LLMC_RETURN_IF_ERROR(makeLayout(layoutA_, mm.typeB, mm.transB ? K : M,
                                  mm.transB ? M : K, mm.effectiveStrideB()));
  LLMC_RETURN_IF_ERROR(makeLayout(layoutB_, mm.typeA, mm.transA ? N : K,
                                  mm.transA ? K : N, mm.effectiveStrideA()));
  int64_t strideC =
      mm.c.empty() ? mm.effectiveStrideD() : mm.effectiveStrideC();
  LLMC_RETURN_IF_ERROR(makeLayout(layoutC_, mm.typeC, M, N, strideC));
  LLMC_RETURN_IF_ERROR(
      makeLayout(layoutD_, mm.typeD, M, N, mm.effectiveStrideD()));

  // Kept for fetchCandidates(); destroyed with the matmul.
  LLMC_CUBLASLT(api.cublasLtMatmulPreferenceCreate(&preference_), context);
  cublasLtMatmulPreference_t preference = preference_;
  LLMC_CUBLASLT(api.cublasLtMatmulPreferenceSetAttribute(
                    preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    &workspaceBytes, sizeof(workspaceBytes)),
                context);
  const struct {
    cublasLtMatmulPreferenceAttributes_t attribute;
    uint32_t alignment;
  } alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
       alignmentOf(pointers.b, mm.batch, mm.effectiveStrideB(), mm.typeB)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
       alignmentOf(pointers.a, mm.batch, mm.effectiveStrideA(), mm.typeA)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
       alignmentOf(pointers.c ? pointers.c : pointers.d, mm.batch, strideC,
                   mm.typeC)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
       alignmentOf(pointers.d, mm.batch, mm.effectiveStrideD(), mm.typeD)},
  };
  key_ = std::to_string(mm.m) + "x" + std::to_string(mm.n) + "x" +
         std::to_string(mm.k) + "x" + std::to_string(mm.batch) +
         (mm.transA ? "T" : "N") + (mm.transB ? "T" : "N") + " " +
         dtypeName(mm.typeA) + dtypeName(mm.typeB) + dtypeName(mm.typeC) +
         dtypeName(mm.typeD) + " e" + std::to_string(epilogue) +
         (mm.tf32 ? " tf32" : "") + (mm.c.empty() ? "" : " c") +
         " b" + std::to_string(mm.beta) + " s" +
         std::to_string(mm.effectiveStrideA()) + "," +
         std::to_string(mm.effectiveStrideB()) + "," +
         std::to_string(strideC) + " a";
  for (const auto &entry : alignments)
    key_ += std::to_string(entry.alignment) + ",";
  for (const auto &entry : alignments)
    LLMC_CUBLASLT(api.cublasLtMatmulPreferenceSetAttribute(
                      preference, entry.attribute, &entry.alignment,
                      sizeof(entry.alignment)),
                  context);

  return fetchCandidates(handle, 1);
}

Status PreparedMatmul::fetchCandidates(cublasLtHandle_t handle,
                                       int candidates) {
  std::vector<cublasLtMatmulHeuristicResult_t> results(
      static_cast<size_t>(std::max(candidates, 1)));
  int found = 0;
  LLMC_CUBLASLT(api_->cublasLtMatmulAlgoGetHeuristic(
                    handle, desc_, layoutA_, layoutB_, layoutC_, layoutD_,
                    preference_, static_cast<int>(results.size()),
                    results.data(), &found),
                context_);
  if (found == 0)
    return Status::error("cuBLASLt has no algorithm for this matmul (" +
                         key_ + ") [" + context_ + "]");
  algo_ = results[0].algo;
  candidates_.clear();
  splits_.clear();
  for (int i = 0; i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS) {
      candidates_.push_back(results[i].algo);
      splits_.push_back(0); // the heuristic's own configuration
    }
  if (candidates > 1)
    addSplitKVariants(handle);
  return Status::ok();
}

// A weight gradient [768, 3072] over K = 16384 tokens is 72 output tiles of
// 128 x 256 on 132 SMs: the heuristic's kernels leave SMs idle for the
// whole K loop (GPT-2 124M's four weight-gradient shapes ran at 440-500
// TFLOP/s on the H100 against ~780 for a square GEMM; BENCHMARKS.md session
// 8). Splitting K fills them. Only the COMPUTE_TYPE reduction is offered:
// the slices' f32 partials go to the workspace and one reduction adds them
// in a fixed order, so the result is the same bits every run; the in-place
// scheme accumulates into the output and is not deterministic. Variants of
// the heuristic's first answers only, in a fixed order, so that a cached
// rank names the same algorithm in the next process.
void PreparedMatmul::addSplitKVariants(cublasLtHandle_t handle) {
  constexpr size_t kBases = 4;
  const size_t heuristic = candidates_.size();
  for (size_t i = 0; i < std::min(heuristic, kBases); ++i) {
    const cublasLtMatmulAlgo_t base = candidates_[i];
    int32_t support = 0;
    uint32_t schemes = 0;
    size_t written = 0;
    if (api_->cublasLtMatmulAlgoCapGetAttribute(
            &base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &support,
            sizeof(support), &written) != CUBLAS_STATUS_SUCCESS ||
        !support ||
        api_->cublasLtMatmulAlgoCapGetAttribute(
            &base, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes,
            sizeof(schemes), &written) != CUBLAS_STATUS_SUCCESS ||
        !(schemes & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE))
      continue;
    for (int32_t split : {2, 3, 4}) {
      cublasLtMatmulAlgo_t algo = base;
      const uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      cublasLtMatmulHeuristicResult_t check{};
      if (api_->cublasLtMatmulAlgoConfigSetAttribute(
              &algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
              sizeof(split)) != CUBLAS_STATUS_SUCCESS ||
          api_->cublasLtMatmulAlgoConfigSetAttribute(
              &algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
              sizeof(scheme)) != CUBLAS_STATUS_SUCCESS ||
          api_->cublasLtMatmulAlgoCheck(handle, desc_, layoutA_, layoutB_,
                                        layoutC_, layoutD_, &algo,
                                        &check) != CUBLAS_STATUS_SUCCESS ||
          check.workspaceSize > workspaceBytes_)
        continue;
      candidates_.push_back(algo);
      splits_.push_back(split);
    }
  }
}


Status PreparedMatmul::run(cublasLtHandle_t handle, CUstream stream,
                           CUdeviceptr workspace,
                           uint64_t workspaceBytes) const {
  auto ptr = [](CUdeviceptr p) { return reinterpret_cast<void *>(p); };
  void *c = pointers_.c ? ptr(pointers_.c) : ptr(pointers_.d);
  LLMC_CUBLASLT(api_->cublasLtMatmul(handle, desc_, &alpha_, ptr(pointers_.b),
                                     layoutA_, ptr(pointers_.a), layoutB_,
                                     &beta_, c, layoutC_, ptr(pointers_.d),
                                     layoutD_, &algo_, ptr(workspace),
                                     workspaceBytes, stream),
                context_);
  return Status::ok();
}

} // namespace llmc
