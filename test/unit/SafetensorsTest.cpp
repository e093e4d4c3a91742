//===- SafetensorsTest.cpp - The .safetensors reader and writer -----------===//
#include "runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace llmc;

namespace {

std::string tempPath(const char *name) {
  return ::testing::TempDir() + name + std::to_string(::getpid());
}

/// Writes a file byte by byte: 8-byte length, header text, data.
void writeRaw(const std::string &path, const std::string &header,
              const std::vector<uint8_t> &data) {
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header;
  out.write(reinterpret_cast<const char *>(data.data()), data.size());
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  std::string path = tempPath("hand.safetensors");
  // a: i64[2] = {7, -1} at [0, 16); b: f32[1] = {1.5} at [16, 20).
  std::vector<uint8_t> data = {7,    0,    0,    0,    0,    0,    0,
                               0,    0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                               0xff, 0xff, 0x00, 0x00, 0xC0, 0x3F};
  writeRaw(path,
           R"({"__metadata__":{"format":"pt"},)"
           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[16,20]},)"
           R"("a":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})",
           data);
  std::vector<SafeTensor> tensors;
  Status s = readSafetensors(path, tensors);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].name, "a"); // ordered by data offset
  EXPECT_EQ(tensors[0].dtype, "I64");
  EXPECT_EQ(tensors[0].shape, std::vector<int64_t>{2});
  int64_t second;
  std::memcpy(&second, tensors[0].data.data() + 8, 8);
  EXPECT_EQ(second, -1);
  float b;
  std::memcpy(&b, tensors[1].data.data(), 4);
  EXPECT_EQ(b, 1.5f);
  std::remove(path.c_str());
}

TEST(Safetensors, RoundTrips) {
  std::string path = tempPath("rt.safetensors");
  std::vector<SafeTensor> in = {{"x", "BF16", {2, 1}, {0x80, 0x3F, 0, 0xC0}},
                                {"m", "BOOL", {3}, {1, 0, 1}}};
  ASSERT_TRUE(writeSafetensors(path, in).isOk());
  std::vector<SafeTensor> out;
  Status s = readSafetensors(path, out);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_EQ(out.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(out[i].name, in[i].name);
    EXPECT_EQ(out[i].dtype, in[i].dtype);
    EXPECT_EQ(out[i].shape, in[i].shape);
    EXPECT_EQ(out[i].data, in[i].data);
  }
  // The header is padded so that the data starts 8-byte aligned.
  std::ifstream f(path, std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char *>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  std::remove(path.c_str());
}

TEST(Safetensors, RejectsBadFiles) {
  std::string path = tempPath("bad.safetensors");
  std::vector<SafeTensor> tensors;
  auto expectError = [&](const std::string &header,
                         const std::vector<uint8_t> &data,
                         const std::string &fragment) {
    writeRaw(path, header, data);
    Status s = readSafetensors(path, tensors);
    ASSERT_FALSE(s.isOk()) << header;
    EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  };
  expectError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
              {0, 0, 0, 0}, "exceed the 4 data bytes");
  expectError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",
              {0, 0, 0, 0}, "needs 8");
  expectError(R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})", {0},
              "unknown dtype");
  expectError(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", {},
              "negative");
  expectError("not json", {}, "not a JSON object");
  // Header length larger than the file.
  {
    std::ofstream out(path, std::ios::binary);
    uint64_t n = 1000;
    out.write(reinterpret_cast<const char *>(&n), 8);
  }
  Status s = readSafetensors(path, tensors);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("exceeds the file size"), std::string::npos);
  s = readSafetensors("/nonexistent/x.safetensors", tensors);
  EXPECT_NE(s.message().find("cannot open"), std::string::npos);
  std::remove(path.c_str());
}

} // namespace
