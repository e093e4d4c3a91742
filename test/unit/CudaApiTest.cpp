//===- CudaApiTest.cpp - dlopen'ed CUDA tables and error messages ---------===//
#include "runtime/CudaApi.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace llmc;

namespace {

TEST(CudaApi, CalleeNameIsTheFunction) {
  EXPECT_EQ(cuda::calleeName("cu_->cuMemAlloc(&arena_, bytes)"), "cuMemAlloc");
  EXPECT_EQ(cuda::calleeName("api.nvrtcCompileProgram(p, 1, o)"),
            "nvrtcCompileProgram");
  EXPECT_EQ(cuda::calleeName("::cuInit(0)"), "cuInit");
  EXPECT_EQ(cuda::calleeName("result"), "result");
}

TEST(CudaApi, DriverErrorNamesCallPlaceAndContext) {
  int line = __LINE__;
  Status status =
      cuda::driverError(CUDA_ERROR_OUT_OF_MEMORY, "cu->cuMemAlloc(&p, n)",
                        __FILE__, line, "kernel 'add' in bundle 'x.llmc'");
  ASSERT_FALSE(status.isOk());
  const std::string &m = status.message();
  EXPECT_EQ(m.rfind("cuMemAlloc failed: ", 0), 0u) << m;
  EXPECT_NE(m.find("CudaApiTest.cpp:" + std::to_string(line)),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("[kernel 'add' in bundle 'x.llmc']"), std::string::npos)
      << m;
}

TEST(CudaApi, NvrtcErrorUsesNvrtcNames) {
  const cuda::NvrtcApi *api = nullptr;
  if (!cuda::loadNvrtc(api))
    GTEST_SKIP() << "libnvrtc is not installed";
  Status status =
      cuda::nvrtcError(NVRTC_ERROR_COMPILATION, "api.nvrtcCompileProgram(p)",
                       "runtime/X.cpp", 7, "");
  EXPECT_EQ(status.message(),
            "nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION at "
            "runtime/X.cpp:7");
}

TEST(CudaApi, MacroReturnsStatusFromTheFunction) {
  auto failing = []() -> Status {
    LLMC_NVRTC(NVRTC_ERROR_INVALID_INPUT, "ctx");
    return Status::ok();
  };
  Status status = failing();
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find(" failed: "), std::string::npos);
  EXPECT_NE(status.message().find("[ctx]"), std::string::npos);
  auto passing = []() -> Status {
    LLMC_CU(CUDA_SUCCESS, "ctx");
    return Status::ok();
  };
  EXPECT_TRUE(passing().isOk());
}

TEST(CudaApi, MissingDriverIsAStatus) {
  cuda::DriverApi api;
  Status status = cuda::loadDriverFrom("/nonexistent/libcuda.so.1", api);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message().rfind("no CUDA driver found: ", 0), 0u)
      << status.message();
}

/// The toolkit's stub libcuda exports every driver symbol: resolving the
/// table against it proves the versioned names (cuMemAlloc_v2, ...) exist.
TEST(CudaApi, EveryDriverFunctionResolvesAgainstTheStub) {
  std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub))
    GTEST_SKIP() << "no CUDA toolkit stub libcuda at " << stub;
  cuda::DriverApi api;
  Status status = cuda::loadDriverFrom(stub, api);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_NE(api.cuMemAlloc, nullptr);
  EXPECT_NE(api.cuGraphInstantiate, nullptr);
  // The stub refuses to work; that is a CUresult, not a crash.
  EXPECT_NE(api.cuInit(0), CUDA_SUCCESS);
}

TEST(CudaApi, CublasLtTableResolves) {
  const cuda::CublasLtApi *api = nullptr;
  Status status = cuda::loadCublasLt(api);
  if (!status)
    GTEST_SKIP() << "cuBLASLt is not installed: " << status.message();
  EXPECT_GE(api->cublasLtGetVersion(), 120000u);
  EXPECT_STREQ(api->cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED),
               "CUBLAS_STATUS_NOT_SUPPORTED");
}

TEST(CudaApi, GpuAvailabilityExplainsItself) {
  std::string why;
  if (gpuAvailable(why))
    GTEST_SKIP() << "a GPU is present; this checks the message without one";
  EXPECT_FALSE(why.empty());
  bool known = why.rfind("no CUDA driver found: ", 0) == 0 ||
               why.find("cuInit failed") != std::string::npos ||
               why == "the CUDA driver reports no GPU";
  EXPECT_TRUE(known) << why;
}

} // namespace
