//===- BundleTest.cpp - .llmc bundle round trip and damaged files ---------===//
#include "runtime/Bundle.h"
#include "runtime/Hash.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <unistd.h>

using namespace llmc;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + name + std::to_string(::getpid()) + ".llmc";
}

std::vector<uint8_t> readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeAll(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

/// A plan using every feature the format carries.
Plan fullPlan() {
  Plan plan;
  plan.name = "roundtrip";
  plan.arenaBytes = 1 << 16;
  plan.workspaceBytes = 1 << 20;
  plan.vocab = 50257;
  BufferInfo w;
  w.name = "w";
  w.role = BufferRole::Param;
  w.dtype = DType::BF16;
  w.shape = {8, 16};
  w.offset = 0;
  w.bytes = 256;
  for (int i = 0; i < 256; ++i)
    w.init.push_back(static_cast<uint8_t>(i * 7));
  w.realShape = {7, 16}; // a padded parameter (llmc-pad-shapes)
  BufferInfo m = w;
  m.name = "m";
  m.role = BufferRole::OptimizerState;
  m.offset = 256;
  m.init.clear();
  BufferInfo x;
  x.name = "x";
  x.role = BufferRole::Input;
  x.dtype = DType::BF16;
  x.shape = {4, 8};
  x.offset = 512;
  x.bytes = 64;
  x.alignment = 64;
  BufferInfo y = x;
  y.name = "y";
  y.role = BufferRole::Output;
  y.shape = {4, 16};
  y.offset = 1024;
  y.bytes = 128;
  BufferInfo bias = x; // the matmul's epilogue bias: [n] of D's dtype
  bias.name = "bias";
  bias.role = BufferRole::Param;
  bias.shape = {16};
  bias.offset = 2048;
  bias.bytes = 32;
  plan.buffers = {w, m, x, y, bias};
  plan.scalars = {{"lr", DType::F32, 4096, 3e-4},
                  {"step", DType::I64, 4104, 1}};
  KernelInfo k;
  k.name = "adamw";
  k.entry = "adamw_bf16";
  k.source = "extern \"C\" __global__ void adamw_bf16() {}\n// \"quoted\"\n";
  k.arch = "sm_90";
  k.cubin = {0x7f, 'E', 'L', 'F', 1, 2, 3};
  k.origin = "llmc.adamw (fused)";
  k.fastMath = true;
  k.options = {"-DBLOCK=128"};
  plan.kernels = {k};
  LaunchStep launch;
  launch.kernel = 0;
  launch.grid = {3, 2, 1};
  launch.block = {128, 1, 1};
  launch.sharedBytes = 4096;
  launch.args = {KernelArg::buffer("w", 32), KernelArg::scalar("lr"),
                 KernelArg::i32(-5), KernelArg::i64(1ll << 40),
                 KernelArg::f32(0.1f)};
  MatmulStep mm;
  mm.m = 4;
  mm.n = 16;
  mm.k = 8;
  mm.transB = true;
  mm.typeA = mm.typeB = mm.typeC = mm.typeD = DType::BF16;
  mm.alpha = 0.5f;
  mm.beta = 1.0f;
  mm.a = "x";
  mm.b = "w";
  mm.c = "y";
  mm.d = "y";
  mm.bias = "bias";
  mm.strideB = 0;
  plan.steps = {{launch, "adamw", StepPhase::Optimizer},
                {mm, "lm head", StepPhase::Backward, "llmc.matmul \"lm\""},
                {MemsetStep{"m", 0}, ""}};
  return plan;
}

TEST(Bundle, RoundTripsEveryField) {
  std::string path = tempPath("roundtrip");
  Plan plan = fullPlan();
  Status written = writeBundle(path, plan);
  ASSERT_TRUE(written.isOk()) << written.message();
  Plan back;
  Status read = readBundle(path, back);
  ASSERT_TRUE(read.isOk()) << read.message();

  EXPECT_EQ(back.name, plan.name);
  EXPECT_EQ(back.arenaBytes, plan.arenaBytes);
  EXPECT_EQ(back.workspaceBytes, plan.workspaceBytes);
  EXPECT_EQ(back.vocab, 50257);
  ASSERT_EQ(back.buffers.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const BufferInfo &a = plan.buffers[i], &b = back.buffers[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.role, b.role);
    EXPECT_EQ(a.dtype, b.dtype);
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_EQ(a.realShape, b.realShape);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.alignment, b.alignment);
    EXPECT_EQ(a.init, b.init);
  }
  ASSERT_EQ(back.scalars.size(), 2u);
  EXPECT_EQ(back.scalars[1].name, "step");
  EXPECT_EQ(back.scalars[1].dtype, DType::I64);
  EXPECT_EQ(back.scalars[1].offset, 4104u);
  EXPECT_DOUBLE_EQ(back.scalars[0].init, 3e-4);
  ASSERT_EQ(back.kernels.size(), 1u);
  const KernelInfo &k = back.kernels[0];
  EXPECT_EQ(k.entry, "adamw_bf16");
  EXPECT_EQ(k.source, plan.kernels[0].source);
  EXPECT_EQ(k.cubin, plan.kernels[0].cubin);
  EXPECT_EQ(k.arch, "sm_90");
  EXPECT_EQ(k.origin, "llmc.adamw (fused)");
  EXPECT_TRUE(k.fastMath);
  EXPECT_EQ(k.options, std::vector<std::string>{"-DBLOCK=128"});

  ASSERT_EQ(back.steps.size(), 3u);
  const auto &launch = std::get<LaunchStep>(back.steps[0].op);
  EXPECT_EQ(back.steps[0].label, "adamw");
  EXPECT_EQ(back.steps[0].phase, StepPhase::Optimizer);
  EXPECT_EQ(back.steps[1].phase, StepPhase::Backward);
  EXPECT_EQ(back.steps[2].phase, StepPhase::Forward);
  EXPECT_EQ(back.steps[1].origin, "llmc.matmul \"lm\"");
  EXPECT_EQ(launch.grid, (std::array<uint32_t, 3>{3, 2, 1}));
  EXPECT_EQ(launch.block[0], 128u);
  EXPECT_EQ(launch.sharedBytes, 4096u);
  ASSERT_EQ(launch.args.size(), 5u);
  EXPECT_EQ(launch.args[0].kind, KernelArg::Kind::Buffer);
  EXPECT_EQ(launch.args[0].offset, 32u);
  EXPECT_EQ(launch.args[1].kind, KernelArg::Kind::Scalar);
  EXPECT_EQ(launch.args[1].name, "lr");
  EXPECT_EQ(launch.args[2].intValue, -5);
  EXPECT_EQ(launch.args[3].kind, KernelArg::Kind::I64);
  EXPECT_EQ(launch.args[3].intValue, 1ll << 40);
  EXPECT_EQ(launch.args[4].floatValue, 0.1f); // exact: float -> JSON -> float
  const auto &mm = std::get<MatmulStep>(back.steps[1].op);
  EXPECT_EQ(mm.m, 4);
  EXPECT_EQ(mm.n, 16);
  EXPECT_EQ(mm.k, 8);
  EXPECT_FALSE(mm.transA);
  EXPECT_TRUE(mm.transB);
  EXPECT_EQ(mm.typeD, DType::BF16);
  EXPECT_EQ(mm.alpha, 0.5f);
  EXPECT_EQ(mm.beta, 1.0f);
  EXPECT_EQ(mm.c, "y");
  EXPECT_EQ(mm.bias, "bias");
  EXPECT_EQ(mm.strideA, -1);
  EXPECT_EQ(mm.strideB, 0);
  EXPECT_EQ(std::get<MemsetStep>(back.steps[2].op).buffer, "m");
  std::remove(path.c_str());
}

TEST(Bundle, LayoutIsTheDocumentedOne) {
  std::string path = tempPath("layout");
  ASSERT_TRUE(writeBundle(path, fullPlan()).isOk());
  std::vector<uint8_t> bytes = readAll(path);
  ASSERT_GE(bytes.size(), 64u);
  EXPECT_EQ(std::memcmp(bytes.data(), "LLMCBNDL", 8), 0);
  uint32_t version;
  uint64_t headerBytes, blobBytes;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&headerBytes, bytes.data() + 16, 8);
  std::memcpy(&blobBytes, bytes.data() + 24, 8);
  EXPECT_EQ(version, kBundleVersion);
  uint64_t blobBase = (64 + headerBytes + 255) / 256 * 256;
  EXPECT_EQ(bytes.size(), blobBase + blobBytes);
  EXPECT_EQ(bytes[64], '{'); // the JSON header
  // Blob 0 is the kernel's cubin (kernels come first), at the section start.
  EXPECT_EQ(std::memcmp(bytes.data() + blobBase,
                        "\x7f"
                        "ELF",
                        4),
            0);
  std::remove(path.c_str());
}

// Initial data held elsewhere (a compile cache hit's view into the mapped
// model) is written as if it were the buffer's own: the same file.
TEST(Bundle, InitViewWritesLikeInit) {
  Plan plan = fullPlan();
  std::string a = tempPath("init"), b = tempPath("view");
  ASSERT_TRUE(writeBundle(a, plan).isOk());
  auto held = std::make_shared<std::vector<uint8_t>>(plan.buffers[0].init);
  plan.buffers[0].initView =
      std::shared_ptr<const uint8_t>(held, held->data());
  plan.buffers[0].initViewBytes = held->size();
  plan.buffers[0].init.clear();
  ASSERT_TRUE(writeBundle(b, plan).isOk());
  EXPECT_EQ(readAll(a), readAll(b));
  Plan back;
  ASSERT_TRUE(readBundle(b, back).isOk());
  EXPECT_EQ(back.buffers[0].init, *held);
  // Both at once, or a view of the wrong size, is refused.
  plan.buffers[0].init = *held;
  Status both = validatePlan(plan);
  EXPECT_NE(both.message().find("initial data is given twice"),
            std::string::npos)
      << both.message();
  plan.buffers[0].init.clear();
  plan.buffers[0].initViewBytes = 3;
  Status size = validatePlan(plan);
  EXPECT_NE(size.message().find("initial data has 3 bytes"), std::string::npos)
      << size.message();
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(Bundle, RefusesInvalidPlanOnWrite) {
  Plan plan = fullPlan();
  plan.buffers[0].offset = 1 << 20;
  Status status = writeBundle(tempPath("invalid"), plan);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("lie outside the arena"), std::string::npos)
      << status.message();
}

class DamagedBundle : public ::testing::Test {
protected:
  void SetUp() override {
    path = tempPath("damaged");
    ASSERT_TRUE(writeBundle(path, fullPlan()).isOk());
    bytes = readAll(path);
  }
  void TearDown() override { std::remove(path.c_str()); }

  /// Writes `damaged` and expects readBundle to fail with `needle`.
  void expectError(const std::vector<uint8_t> &damaged,
                   const std::string &needle) {
    writeAll(path, damaged);
    Plan plan;
    Status status = readBundle(path, plan);
    ASSERT_FALSE(status.isOk()) << "expected: " << needle;
    EXPECT_NE(status.message().find("reading bundle " + path + ": "),
              std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find(needle), std::string::npos)
        << status.message();
  }

  uint64_t headerBytes() const {
    uint64_t h;
    std::memcpy(&h, bytes.data() + 16, 8);
    return h;
  }

  std::string path;
  std::vector<uint8_t> bytes;
};

TEST_F(DamagedBundle, MissingFile) {
  Plan plan;
  Status status = readBundle(path + ".nope", plan);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("cannot open"), std::string::npos)
      << status.message();
}

TEST_F(DamagedBundle, TooShortForThePrefix) {
  expectError({bytes.begin(), bytes.begin() + 10},
              "truncated: the file has 10 bytes, less than the 64-byte");
}

TEST_F(DamagedBundle, NotABundle) {
  std::vector<uint8_t> damaged = bytes;
  damaged[0] = 'X';
  expectError(damaged, "not an llmc bundle");
}

TEST_F(DamagedBundle, OtherVersion) {
  std::vector<uint8_t> damaged = bytes;
  damaged[8] = 7;
  expectError(damaged, "bundle format version 7, but this runtime reads "
                       "version 2: rebuild the bundle with a matching llmc");
}

TEST_F(DamagedBundle, TruncatedBlobs) {
  expectError({bytes.begin(), bytes.end() - 100}, "truncated or padded");
}

TEST_F(DamagedBundle, TruncatedHeader) {
  expectError({bytes.begin(), bytes.begin() + 64 + headerBytes() / 2},
              "truncated: the header of");
}

TEST_F(DamagedBundle, FlippedHeaderByte) {
  std::vector<uint8_t> damaged = bytes;
  damaged[64 + headerBytes() / 2] ^= 0x20;
  expectError(damaged, "corrupt: the JSON header does not match its checksum");
}

TEST_F(DamagedBundle, FlippedWeightByte) {
  std::vector<uint8_t> damaged = bytes;
  damaged[damaged.size() - 200] ^= 1; // inside w's initial data, the last blob
  expectError(damaged, "buffers[0]: blob 1 is corrupt: its checksum does not "
                       "match");
}

/// A bundle whose header is `json`, with a valid checksum and no blobs: what
/// a buggy writer would produce.
std::vector<uint8_t> bundleWithHeader(const std::string &json) {
  std::vector<uint8_t> file((64 + json.size() + 255) / 256 * 256, 0);
  std::memcpy(file.data(), "LLMCBNDL", 8);
  uint32_t version = kBundleVersion;
  std::memcpy(file.data() + 8, &version, 4);
  uint64_t size = json.size();
  std::memcpy(file.data() + 16, &size, 8);
  uint64_t sum = checksum64(json.data(), json.size());
  std::memcpy(file.data() + 32, &sum, 8);
  std::memcpy(file.data() + 64, json.data(), json.size());
  return file;
}

TEST_F(DamagedBundle, HeaderThatIsNotJson) {
  expectError(bundleWithHeader("{not json"),
              "corrupt: the header is not valid JSON");
}

TEST_F(DamagedBundle, SchemaErrorsNameTheField) {
  const std::string base = R"("arenaBytes": 1024, "blobs": [], "scalars": [],
                               "kernels": [], "steps": [], )";
  expectError(bundleWithHeader(R"({"arenaBytes": 1, "blobs": []})"),
              "plan: expected an array 'buffers'");
  expectError(bundleWithHeader("{" + base + R"("buffers": [{"name": "x",
      "role": "weights", "dtype": "f32", "shape": [1], "offset": 0,
      "bytes": 4}]})"),
              "buffers[0]: unknown role 'weights'");
  expectError(bundleWithHeader(R"({"arenaBytes": 1024, "blobs": [],
      "scalars": [], "kernels": [], "buffers": [{"name": "x", "role": "param",
      "dtype": "f32", "shape": [1], "offset": 0, "bytes": 4}], "steps": [
      {"kind": "memset", "buffer": "x", "value": 0, "phase": "backwards"}]})"),
              "steps[0]: unknown phase 'backwards' (forward, backward or "
              "optimizer)");
  expectError(bundleWithHeader("{" + base + R"("buffers": [{"name": "x",
      "role": "param", "dtype": "f32", "shape": [1], "offset": -4,
      "bytes": 4}]})"),
              "buffers[0]: 'offset' must be an integer in [0, ");
  expectError(bundleWithHeader("{" + base + R"("buffers": [{"name": "x",
      "role": "param", "dtype": "f32", "shape": [1], "offset": 0,
      "bytes": 4, "init": 3}]})"),
              "buffers[0]: blob 3 is not in the blob table (0 blobs)");
  expectError(
      bundleWithHeader(R"({"arenaBytes": 1024, "blobs": [], "scalars": [],
        "buffers": [], "kernels": [{"name": "k", "entry": "k", "source": "x"}],
        "steps": [{"kind": "launch", "kernel": 0, "grid": [1, 1, 1],
                   "block": [1, 1, 1], "args": [{"f64": 1.0}]}]})"),
      "steps[0].args[0]: an argument needs one of buffer, scalar, i32, i64, "
      "f32");
  expectError(bundleWithHeader(R"({"arenaBytes": 1024, "blobs": [],
        "scalars": [], "buffers": [], "kernels": [],
        "steps": [{"kind": "conv"}]})"),
              "steps[0]: unknown step kind 'conv'");
  expectError(bundleWithHeader(R"({"arenaBytes": 1024, "blobs": [],
        "scalars": [], "buffers": [], "kernels": [],
        "steps": [{"kind": "memset", "buffer": "x", "value": 300}]})"),
              "steps[0]: 'value' must be an integer in [0, 255]");
  expectError(bundleWithHeader("{" + base + R"("buffers": [], "vocab": -3})"),
              "plan: vocab must not be negative, got -3");
}

// Sizes that wrap in plain 64-bit arithmetic: a buffer of [2^32, 2^32]
// (0 elements modulo 2^64) and an arena of 2^64 - 1 bytes.
TEST_F(DamagedBundle, SizesThatOverflow) {
  const std::string base = R"("blobs": [], "scalars": [], "kernels": [],
                               "steps": [], )";
  expectError(bundleWithHeader("{" + base + R"("arenaBytes": 1024,
      "buffers": [{"name": "x", "role": "param", "dtype": "f32",
      "shape": [4294967296, 4294967296], "offset": 0, "bytes": 256}]})"),
              "buffer 'x': shape [4294967296, 4294967296] has about 1.8e+19 "
              "elements, more than a 64-bit count holds");
  expectError(bundleWithHeader("{" + base + R"("arenaBytes":
      18446744073709551615, "buffers": []})"),
              "the arena of 18446744073709551615 bytes (16.0 EiB) is more than "
              "the 1.0 TiB llmc allows");
  expectError(bundleWithHeader("{" + base + R"("arenaBytes": 1099511627776,
      "workspaceBytes": 33554432, "buffers": []})"),
              "the arena with its cuBLASLt workspace of 1099545182208 bytes");
}

TEST_F(DamagedBundle, ValidJsonButInvalidPlan) {
  expectError(bundleWithHeader(R"({"arenaBytes": 1024, "blobs": [],
        "scalars": [], "buffers": [], "kernels": [],
        "steps": [{"kind": "memset", "buffer": "x"}]})"),
              "step 0 (memset): memset names unknown buffer 'x'");
}

} // namespace
