//===- NvrtcTest.cpp - NVRTC compile, its errors and the kernel cache -----===//
//
// NVRTC needs no GPU, so these run on CI machines. They skip (visibly) only
// when libnvrtc itself cannot be loaded.
//
//===----------------------------------------------------------------------===//
#include "runtime/Nvrtc.h"
#include "runtime/CudaApi.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>

using namespace llmc;

namespace {

const char *kAddSource = R"(
extern "C" __global__ void add(const float *x, const float *y, float *out,
                               int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = x[i] + y[i];
}
)";

class Nvrtc : public ::testing::Test {
protected:
  void SetUp() override {
    const cuda::NvrtcApi *api = nullptr;
    Status status = cuda::loadNvrtc(api);
    if (!status)
      GTEST_SKIP() << "libnvrtc is not installed, NVRTC tests skipped: "
                   << status.message();
    cacheDir = ::testing::TempDir() + "llmc-cache-" +
               std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(cacheDir);
  }
  void TearDown() override {
    if (!cacheDir.empty())
      std::filesystem::remove_all(cacheDir);
  }
  std::string cacheDir;
};

bool isElf(const std::vector<uint8_t> &bytes) {
  return bytes.size() > 4 && std::memcmp(bytes.data(),
                                         "\x7f"
                                         "ELF",
                                         4) == 0;
}

TEST_F(Nvrtc, CompilesToCubin) {
  CompileRequest request{"add", kAddSource, {}};
  std::vector<uint8_t> cubin;
  Status status = compileToCubin(request, cubin);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_TRUE(isElf(cubin));
  // The entry symbol is in the cubin's symbol table, unmangled.
  std::string text(cubin.begin(), cubin.end());
  EXPECT_NE(text.find("add"), std::string::npos);
}

TEST_F(Nvrtc, CompilesBf16WithToolkitHeaders) {
  CompileRequest request{"bf16",
                         R"(
#include <cuda_bf16.h>
extern "C" __global__ void cast(const float *x, __nv_bfloat16 *y) {
  y[threadIdx.x] = __float2bfloat16(x[threadIdx.x]);
})",
                         {}};
  std::vector<uint8_t> cubin;
  Status status = compileToCubin(request, cubin);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_TRUE(isElf(cubin));
}

TEST_F(Nvrtc, ErrorCarriesTheLog) {
  CompileRequest request{"broken",
                         R"(
extern "C" __global__ void broken(float *x) {
  x[0] = undefined_name;
})",
                         {}};
  std::vector<uint8_t> cubin;
  Status status = compileToCubin(request, cubin);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("NVRTC failed to compile kernel 'broken' "
                                  "for sm_90"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("broken.cu(3): error: identifier "
                                  "\"undefined_name\" is undefined"),
            std::string::npos)
      << status.message();
}

TEST_F(Nvrtc, VirtualArchIsRejectedWithAHint) {
  CompileRequest request{"add", kAddSource, {}};
  request.options.arch = "compute_90";
  std::vector<uint8_t> cubin;
  Status status = compileToCubin(request, cubin);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("must be a real architecture"),
            std::string::npos)
      << status.message();
}

TEST_F(Nvrtc, OptionsFollowTheRequest) {
  CompileOptions options;
  options.toolkitIncludes = false;
  EXPECT_EQ(nvrtcOptions(options),
            (std::vector<std::string>{"-arch=sm_90", "-std=c++17",
                                      "-default-device"}));
  options.arch = "sm_80";
  options.fastMath = true;
  options.lineInfo = true;
  options.extra = {"-DN=4"};
  EXPECT_EQ(
      nvrtcOptions(options),
      (std::vector<std::string>{"-arch=sm_80", "-std=c++17", "-default-device",
                                "--use_fast_math", "-lineinfo", "-DN=4"}));
}

TEST_F(Nvrtc, SecondCompileHitsTheCache) {
  KernelCache cache(cacheDir);
  CompileRequest request{"add", kAddSource, {}};
  std::vector<uint8_t> first, second;
  bool hit = true;
  ASSERT_TRUE(compileToCubin(request, first, &cache, &hit).isOk());
  EXPECT_FALSE(hit);
  size_t files = std::distance(std::filesystem::directory_iterator(cacheDir),
                               std::filesystem::directory_iterator());
  EXPECT_EQ(files, 1u);
  ASSERT_TRUE(compileToCubin(request, second, &cache, &hit).isOk());
  EXPECT_TRUE(hit);
  EXPECT_EQ(first, second);

  // A different arch or option is a different entry.
  request.options.arch = "sm_80";
  ASSERT_TRUE(compileToCubin(request, second, &cache, &hit).isOk());
  EXPECT_FALSE(hit);
  request.options.fastMath = true;
  ASSERT_TRUE(compileToCubin(request, second, &cache, &hit).isOk());
  EXPECT_FALSE(hit);
}

TEST_F(Nvrtc, CorruptCacheEntryIsAMiss) {
  KernelCache cache(cacheDir);
  CompileRequest request{"add", kAddSource, {}};
  std::vector<uint8_t> cubin;
  ASSERT_TRUE(compileToCubin(request, cubin, &cache).isOk());
  for (const auto &entry : std::filesystem::directory_iterator(cacheDir))
    std::filesystem::resize_file(entry.path(), 10);
  bool hit = true;
  std::vector<uint8_t> again;
  ASSERT_TRUE(compileToCubin(request, again, &cache, &hit).isOk());
  EXPECT_FALSE(hit);
  EXPECT_EQ(again, cubin);
}

TEST_F(Nvrtc, CompileAllInParallel) {
  KernelCache cache(cacheDir);
  std::vector<CompileRequest> requests;
  for (int i = 0; i < 6; ++i) {
    std::string name = "k" + std::to_string(i);
    requests.push_back({name,
                        "extern \"C\" __global__ void " + name +
                            "(float *x) { x[threadIdx.x] *= " +
                            std::to_string(i + 1) + ".0f; }",
                        {}});
  }
  requests.push_back({"bad", "this is not CUDA", {}});
  std::vector<CompileResult> results = compileAll(requests, &cache, 3);
  ASSERT_EQ(results.size(), requests.size());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(results[i].status.isOk()) << results[i].status.message();
    EXPECT_TRUE(isElf(results[i].cubin));
    // Result i belongs to request i: its cubin names kernel k<i>.
    std::string text(results[i].cubin.begin(), results[i].cubin.end());
    EXPECT_NE(text.find("k" + std::to_string(i)), std::string::npos);
  }
  EXPECT_FALSE(results[6].status.isOk());
  EXPECT_NE(results[6].status.message().find("kernel 'bad'"),
            std::string::npos);

  std::vector<CompileResult> again = compileAll(requests, &cache, 3);
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(again[i].cacheHit) << i;
    EXPECT_EQ(again[i].cubin, results[i].cubin);
  }
}

TEST(KernelCacheKey, DependsOnEveryInput) {
  std::string base = KernelCache::key("src", "sm_90", {"-a"}, "13.0");
  EXPECT_EQ(base.size(), 32u);
  EXPECT_EQ(base, KernelCache::key("src", "sm_90", {"-a"}, "13.0"));
  EXPECT_NE(base, KernelCache::key("src2", "sm_90", {"-a"}, "13.0"));
  EXPECT_NE(base, KernelCache::key("src", "sm_80", {"-a"}, "13.0"));
  EXPECT_NE(base, KernelCache::key("src", "sm_90", {"-b"}, "13.0"));
  EXPECT_NE(base, KernelCache::key("src", "sm_90", {"-a"}, "12.8"));
  // Moving text between fields changes the key.
  EXPECT_NE(KernelCache::key("ab", "c", {}, "v"),
            KernelCache::key("a", "bc", {}, "v"));
}

TEST(KernelCacheDir, FollowsTheEnvironment) {
  // Save and restore the variables so later tests in this process see the
  // environment they started with.
  const char *names[] = {"LLMC_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  std::vector<std::pair<bool, std::string>> saved;
  for (const char *name : names) {
    const char *value = std::getenv(name);
    saved.push_back({value != nullptr, value ? value : ""});
  }
  ::setenv("LLMC_CACHE_DIR", "/tmp/explicit", 1);
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(KernelCache::defaultDir(), "/tmp/explicit");
  ::unsetenv("LLMC_CACHE_DIR");
  EXPECT_EQ(KernelCache::defaultDir(), "/tmp/xdg/llmc");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(KernelCache::defaultDir(), "/home/someone/.cache/llmc");
  for (size_t i = 0; i < saved.size(); ++i) {
    if (saved[i].first)
      ::setenv(names[i], saved[i].second.c_str(), 1);
    else
      ::unsetenv(names[i]);
  }
}

} // namespace
