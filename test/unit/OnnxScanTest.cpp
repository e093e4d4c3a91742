//===- OnnxScanTest.cpp - The compile cache's view of an ONNX file --------===//
#include "frontends/onnx/OnnxScan.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace llmc;

namespace {

std::vector<uint8_t> readModel(const std::string &name) {
  std::ifstream in(std::string(LLMC_TEST_MODELS) + "/" + name,
                   std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

OnnxScan scan(const std::vector<uint8_t> &bytes) {
  return scanOnnx(bytes.data(), bytes.size());
}

TEST(OnnxScan, WeightValuesAreOutsideTheHash) {
  std::vector<uint8_t> bytes = readModel("tiny_gpt_dynamo_loss.onnx");
  ASSERT_FALSE(bytes.empty());
  OnnxScan a = scan(bytes);
  ASSERT_TRUE(a.cacheable) << a.whyNot;
  ASSERT_FALSE(a.weights.empty());
  EXPECT_EQ(a.structureHash.size(), 32u);
  for (const OnnxWeight &w : a.weights) {
    EXPECT_TRUE(w.file.empty()) << w.name;
    EXPECT_LE(w.offset + w.size, bytes.size()) << w.name;
    EXPECT_TRUE(w.dataType == 1 || w.dataType == 10 || w.dataType == 16);
    // Changing every byte of a weight leaves the hash as it was.
    for (uint64_t i = 0; i < w.size; ++i)
      bytes[w.offset + i] ^= 0x5a;
  }
  OnnxScan b = scan(bytes);
  ASSERT_TRUE(b.cacheable) << b.whyNot;
  EXPECT_EQ(a.structureHash, b.structureHash);
}

TEST(OnnxScan, AnyOtherByteChangesTheHash) {
  std::vector<uint8_t> bytes = readModel("tiny_gpt_dynamo_loss.onnx");
  OnnxScan a = scan(bytes);
  ASSERT_TRUE(a.cacheable) << a.whyNot;
  // An op type in a node ("MatMul" -> "MatMun") and the last byte of the
  // file: both outside every weight.
  std::string text(bytes.begin(), bytes.end());
  size_t at = text.find("MatMul");
  ASSERT_NE(at, std::string::npos);
  std::vector<uint8_t> op = bytes;
  op[at + 5] = 'n';
  OnnxScan b = scan(op);
  ASSERT_TRUE(b.cacheable) << b.whyNot;
  EXPECT_NE(a.structureHash, b.structureHash);
  std::vector<uint8_t> last = bytes;
  last.back() ^= 1;
  OnnxScan c = scan(last);
  EXPECT_TRUE(!c.cacheable || c.structureHash != a.structureHash);
}

TEST(OnnxScan, ExternalWeightsAreLocated) {
  std::vector<uint8_t> bytes = readModel("hf_llama_dynamo_loss.onnx");
  ASSERT_FALSE(bytes.empty());
  OnnxScan s = scan(bytes);
  if (!s.cacheable) {
    // Only a non-weight tensor in the data file may stop it, and it says so.
    EXPECT_NE(s.whyNot.find("external data file"), std::string::npos)
        << s.whyNot;
    return;
  }
  size_t external = 0;
  for (const OnnxWeight &w : s.weights)
    external += !w.file.empty();
  EXPECT_GT(external, 0u);
}

// A damaged file is "not cacheable" with a reason, never a crash or a read
// past the end: every prefix of a real model.
TEST(OnnxScan, TruncatedFilesAreNotCacheable) {
  std::vector<uint8_t> bytes = readModel("tiny_gpt_dynamo_loss.onnx");
  OnnxScan whole = scan(bytes);
  ASSERT_TRUE(whole.cacheable);
  size_t step = std::max<size_t>(1, bytes.size() / 997);
  for (size_t n = 0; n < bytes.size(); n += step) {
    OnnxScan s = scanOnnx(bytes.data(), n);
    if (s.cacheable)
      EXPECT_NE(s.structureHash, whole.structureHash) << n;
    else
      EXPECT_FALSE(s.whyNot.empty()) << n;
  }
  EXPECT_FALSE(scanOnnx(nullptr, 0).cacheable);
  const uint8_t group[] = {0x3b}; // field 7, wire type 3 (a group)
  OnnxScan g = scanOnnx(group, sizeof group);
  EXPECT_FALSE(g.cacheable);
  EXPECT_NE(g.whyNot.find("groups"), std::string::npos) << g.whyNot;
}

} // namespace
