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
#include <fstream>
#include <iterator>
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

/// The only entry file in `dir`.
std::filesystem::path onlyEntry(const std::string &dir) {
  std::vector<std::filesystem::path> files;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    files.push_back(entry.path());
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? std::filesystem::path() : files.front();
}

std::vector<uint8_t> readAll(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

void writeAll(const std::filesystem::path &path,
              const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// A damaged entry (a flipped byte deep in the cubin, a truncated file) must
// never be loaded or sealed into a bundle: it is detected, recompiled and
// replaced with a one-line warning, and the next compile hits the new entry.
TEST_F(Nvrtc, CorruptCacheEntryIsRecompiledAndReplaced) {
  KernelCache cache(cacheDir);
  CompileRequest request{"add", kAddSource, {}};
  std::vector<uint8_t> cubin;
  ASSERT_TRUE(compileToCubin(request, cubin, &cache).isOk());
  std::filesystem::path entry = onlyEntry(cacheDir);
  const std::vector<uint8_t> good = readAll(entry);

  struct Damage {
    const char *what;
    std::vector<uint8_t> bytes;
    const char *problem;
  };
  std::vector<uint8_t> flipped = good;
  flipped[good.size() / 2] ^= 0x40;
  std::vector<uint8_t> truncated(good.begin(), good.begin() + good.size() / 2);
  std::vector<uint8_t> headerOnly(good.begin(), good.begin() + 10);
  for (const Damage &damage :
       {Damage{"flipped", flipped, "does not match its checksum"},
        Damage{"truncated", truncated, "truncated: "},
        Damage{"header only", headerOnly, "less than the 64-byte entry"}}) {
    SCOPED_TRACE(damage.what);
    writeAll(entry, damage.bytes);
    bool hit = true;
    std::string warning;
    std::vector<uint8_t> again;
    ASSERT_TRUE(compileToCubin(request, again, &cache, &hit, &warning).isOk());
    EXPECT_FALSE(hit);
    EXPECT_EQ(again, cubin);
    EXPECT_NE(warning.find("kernel cache entry " + entry.string() +
                           " of kernel 'add' is corrupt ("),
              std::string::npos)
        << warning;
    EXPECT_NE(warning.find(damage.problem), std::string::npos) << warning;
    EXPECT_NE(warning.find("): recompiled and replaced"), std::string::npos);
    EXPECT_EQ(warning.find('\n'), std::string::npos) << "one line";
    // Replaced: the file is sound again and the next compile hits it.
    EXPECT_EQ(readAll(entry), good);
    warning.clear();
    ASSERT_TRUE(compileToCubin(request, again, &cache, &hit, &warning).isOk());
    EXPECT_TRUE(hit);
    EXPECT_TRUE(warning.empty()) << warning;
    EXPECT_EQ(again, cubin);
  }
}

// compileAll reports the warning on the kernel's result.
TEST_F(Nvrtc, CompileAllCarriesTheCorruptionWarning) {
  KernelCache cache(cacheDir);
  std::vector<CompileRequest> requests = {{"add", kAddSource, {}}};
  std::vector<CompileResult> first = compileAll(requests, &cache, 1);
  ASSERT_TRUE(first[0].status.isOk()) << first[0].status.message();
  std::filesystem::path entry = onlyEntry(cacheDir);
  std::vector<uint8_t> bytes = readAll(entry);
  bytes.back() ^= 1;
  writeAll(entry, bytes);
  std::vector<CompileResult> again = compileAll(requests, &cache, 1);
  ASSERT_TRUE(again[0].status.isOk());
  EXPECT_FALSE(again[0].cacheHit);
  EXPECT_NE(again[0].warning.find("is corrupt"), std::string::npos);
  EXPECT_EQ(again[0].cubin, first[0].cubin);
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

// The same source twice compiles once: the duplicate gets the first's cubin
// and only one cache entry is written.
TEST_F(Nvrtc, IdenticalRequestsCompileOnce) {
  KernelCache cache(cacheDir);
  std::string source = "extern \"C\" __global__ void twice(float *x) { "
                       "x[threadIdx.x] += 1.0f; }";
  std::vector<CompileRequest> requests = {
      {"twice", source, {}}, {"other", kAddSource, {}}, {"twice", source, {}}};
  std::vector<CompileResult> results = compileAll(requests, &cache, 3);
  ASSERT_EQ(results.size(), 3u);
  for (const CompileResult &r : results)
    ASSERT_TRUE(r.status.isOk()) << r.status.message();
  EXPECT_EQ(results[0].cubin, results[2].cubin);
  EXPECT_NE(results[0].cubin, results[1].cubin);
  size_t entries = 0;
  for (const auto &e : std::filesystem::directory_iterator(cacheDir))
    entries += e.path().extension() == ".kce";
  EXPECT_EQ(entries, 2u);
}

// The entry checks themselves need no NVRTC: any ELF-looking bytes will do.
class KernelCacheEntry : public ::testing::Test {
protected:
  void SetUp() override {
    dir = ::testing::TempDir() + "llmc-kce-" + std::to_string(::getpid()) +
          "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir);
    cubin = {0x7f, 'E', 'L', 'F'};
    for (int i = 0; i < 200; ++i)
      cubin.push_back(static_cast<uint8_t>(i * 7));
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  KernelCache::Entry lookup(const KernelCache &cache, const std::string &key) {
    problem.clear();
    got.clear();
    return cache.lookup(key, got, problem);
  }
  std::string dir, problem;
  std::vector<uint8_t> cubin, got;
};

TEST_F(KernelCacheEntry, RoundTripsAndDetectsEveryDamage) {
  KernelCache cache(dir);
  std::string key = KernelCache::key("src", "sm_90", {}, "13.0");
  EXPECT_EQ(lookup(cache, key), KernelCache::Entry::Missing);
  ASSERT_TRUE(cache.store(key, cubin).isOk());
  ASSERT_EQ(lookup(cache, key), KernelCache::Entry::Valid) << problem;
  EXPECT_EQ(got, cubin);
  std::filesystem::path path = cache.pathFor(key);
  const std::vector<uint8_t> good = readAll(path);
  ASSERT_EQ(good.size(), 64 + cubin.size());

  auto expectCorrupt = [&](std::vector<uint8_t> bytes, const char *why) {
    SCOPED_TRACE(why);
    writeAll(path, bytes);
    EXPECT_EQ(lookup(cache, key), KernelCache::Entry::Corrupt);
    EXPECT_NE(problem.find(why), std::string::npos) << problem;
    EXPECT_TRUE(got.empty());
  };
  // Every single-bit flip anywhere in the content or header is caught.
  for (size_t at : {size_t(0), size_t(9), size_t(17), size_t(30), size_t(64),
                    size_t(100), good.size() - 1}) {
    std::vector<uint8_t> bytes = good;
    bytes[at] ^= 0x01;
    writeAll(path, bytes);
    EXPECT_EQ(lookup(cache, key), KernelCache::Entry::Corrupt) << "byte " << at;
  }
  std::vector<uint8_t> bytes = good;
  bytes[120] ^= 0x80;
  expectCorrupt(bytes, "does not match its checksum");
  expectCorrupt({good.begin(), good.end() - 1}, "truncated: 203 of 204");
  bytes = good;
  bytes.push_back(0);
  expectCorrupt(bytes, "padded: 205 of 204");
  expectCorrupt({}, "truncated: 0 bytes");
  // An old-style bare cubin under the entry's name is not an entry.
  expectCorrupt(cubin, "bad magic");
  // A sound entry of another key copied under this key's name.
  std::string other = KernelCache::key("src", "sm_80", {}, "13.0");
  ASSERT_TRUE(cache.store(other, cubin).isOk());
  expectCorrupt(readAll(cache.pathFor(other)), "holds the entry of key");

  // Storing again replaces the damaged entry.
  ASSERT_TRUE(cache.store(key, cubin).isOk());
  EXPECT_EQ(lookup(cache, key), KernelCache::Entry::Valid) << problem;
  EXPECT_EQ(readAll(path), good);
}

TEST_F(KernelCacheEntry, ContentMustBeACubin) {
  KernelCache cache(dir);
  std::string key = KernelCache::key("src", "sm_90", {}, "13.0");
  ASSERT_TRUE(cache.store(key, {1, 2, 3, 4, 5}).isOk());
  EXPECT_EQ(lookup(cache, key), KernelCache::Entry::Corrupt);
  EXPECT_NE(problem.find("not an ELF cubin"), std::string::npos) << problem;
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
