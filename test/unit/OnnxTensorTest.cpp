//===- OnnxTensorTest.cpp - ONNX initializer decoding ---------------------===//
//
// Every storage form of a TensorProto (raw_data, typed fields, external
// files), float16/bfloat16 bit patterns, and the size checks that keep a
// damaged file from becoming a crash.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxTensor.h"
#include "frontends/onnx/onnx.pb.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace llmc::onnximport;

namespace {

onnx::TensorProto tensor(const char *name, int32_t type,
                         std::vector<int64_t> dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims)
    t.add_dims(d);
  return t;
}

std::string errorOf(llvm::Expected<TensorData> r) {
  EXPECT_FALSE(static_cast<bool>(r));
  return r ? std::string() : llvm::toString(r.takeError());
}

TEST(DecodeTensor, RawFloatIsLittleEndian) {
  auto t = tensor("w", 1, {2});
  // 1.0f = 0x3f800000, -2.5f = 0xc0200000, least significant byte first.
  t.set_raw_data(std::string("\x00\x00\x80\x3f\x00\x00\x20\xc0", 8));
  auto r = decodeTensor(t, ".");
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->dtype(), DType::Float);
  EXPECT_EQ(r->shape().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(r->getDouble(0), 1.0);
  EXPECT_EQ(r->getDouble(1), -2.5);
}

TEST(DecodeTensor, RawInt64) {
  auto t = tensor("shape", 7, {2});
  int64_t v[2] = {-1, 1024};
  t.set_raw_data(std::string(reinterpret_cast<char *>(v), sizeof(v)));
  auto r = decodeTensor(t, ".");
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->toInts(), (std::vector<int64_t>{-1, 1024}));
}

TEST(DecodeTensor, RawFloat16AndBFloat16) {
  // 1.5 in float16 is 0x3e00; -2.0 in bfloat16 is 0xc000.
  auto h = tensor("h", 10, {1});
  h.set_raw_data(std::string("\x00\x3e", 2));
  auto hr = decodeTensor(h, ".");
  ASSERT_TRUE(static_cast<bool>(hr));
  EXPECT_EQ(hr->getDouble(0), 1.5);
  auto b = tensor("b", 16, {1});
  b.set_raw_data(std::string("\x00\xc0", 2));
  auto br = decodeTensor(b, ".");
  ASSERT_TRUE(static_cast<bool>(br));
  EXPECT_EQ(br->getDouble(0), -2.0);
}

TEST(DecodeTensor, Float16BitPatternsInInt32Data) {
  // int32_data carries the 16-bit patterns of float16, not the values.
  auto t = tensor("h", 10, {2});
  t.add_int32_data(0x3c00); // 1.0
  t.add_int32_data(0xc400); // -4.0
  auto r = decodeTensor(t, ".");
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->getDouble(0), 1.0);
  EXPECT_EQ(r->getDouble(1), -4.0);
  // The bytes are the bit patterns, ready for a resource blob.
  uint16_t bits;
  std::memcpy(&bits, r->bytes().data() + 2, 2);
  EXPECT_EQ(bits, 0xc400);
}

TEST(DecodeTensor, TypedFields) {
  auto f = tensor("f", 1, {3});
  for (float v : {1.0f, 2.0f, 3.5f})
    f.add_float_data(v);
  auto fr = decodeTensor(f, ".");
  ASSERT_TRUE(static_cast<bool>(fr));
  EXPECT_EQ(fr->getDouble(2), 3.5);

  auto i = tensor("i", 7, {});
  i.add_int64_data(-7);
  auto ir = decodeTensor(i, ".");
  ASSERT_TRUE(static_cast<bool>(ir));
  EXPECT_EQ(ir->rank(), 0);
  EXPECT_EQ(ir->getInt(0), -7);

  auto b = tensor("b", 9, {2});
  b.add_int32_data(1);
  b.add_int32_data(0);
  auto br = decodeTensor(b, ".");
  ASSERT_TRUE(static_cast<bool>(br));
  EXPECT_EQ(br->toInts(), (std::vector<int64_t>{1, 0}));

  auto d = tensor("d", 11, {1});
  d.add_double_data(0.1);
  auto dr = decodeTensor(d, ".");
  ASSERT_TRUE(static_cast<bool>(dr));
  EXPECT_EQ(dr->getDouble(0), 0.1);
}

TEST(DecodeTensor, SizeMismatchesAreErrors) {
  auto raw = tensor("w", 1, {2, 3});
  raw.set_raw_data(std::string(8, '\0'));
  EXPECT_EQ(errorOf(decodeTensor(raw, ".", "initializer")),
            "initializer 'w' has 8 bytes of raw_data, but its shape and type "
            "need 24");
  auto typed = tensor("w", 1, {2});
  typed.add_float_data(1);
  EXPECT_EQ(errorOf(decodeTensor(typed, ".")),
            "tensor 'w' has 1 values in float_data, but its shape needs 2");
  auto negative = tensor("w", 1, {-2});
  EXPECT_EQ(errorOf(decodeTensor(negative, ".")),
            "tensor 'w' has negative dim -2");
  auto huge = tensor("w", 1, {1 << 30, 1 << 30});
  EXPECT_EQ(errorOf(decodeTensor(huge, ".")),
            "tensor 'w' has shape [1073741824, 1073741824] "
            "(1152921504606846976 elements, 4.0 EiB), more than the 1.0 TiB "
            "llmc allows for one tensor");
  // 2^32 x 2^32 wraps to 0 elements in int64 arithmetic.
  auto wrapped = tensor("w", 1, {int64_t(1) << 32, int64_t(1) << 32});
  EXPECT_EQ(errorOf(decodeTensor(wrapped, ".")),
            "tensor 'w' has shape [4294967296, 4294967296] (about 1.8e+19 "
            "elements, 64.0 EiB), more elements than a 64-bit count holds");
  auto str = tensor("s", 8, {1});
  EXPECT_EQ(errorOf(decodeTensor(str, ".")),
            "tensor 's' has element type string, which llmc cannot import");
}

class ExternalData : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("llmc-onnx", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }
  void write(const char *name, const std::string &bytes) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << bytes;
  }
  onnx::TensorProto external(std::vector<std::pair<const char *, const char *>>
                                 entries) {
    auto t = tensor("w", 1, {2});
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [k, v] : entries) {
      auto *e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    return t;
  }
  llvm::SmallString<128> dir;
};

TEST_F(ExternalData, ReadsLocationOffsetLength) {
  // Four bytes of padding, then 1.0f and 2.0f.
  write("w.bin", std::string("\xff\xff\xff\xff\x00\x00\x80\x3f\x00\x00\x00\x40",
                             12));
  auto r = decodeTensor(
      external({{"location", "w.bin"}, {"offset", "4"}, {"length", "8"}}),
      dir);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->getDouble(0), 1.0);
  EXPECT_EQ(r->getDouble(1), 2.0);
}

TEST_F(ExternalData, LengthDefaultsToTheRestOfTheFile) {
  write("w.bin", std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8));
  auto r = decodeTensor(external({{"location", "w.bin"}}), dir);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->getDouble(1), 2.0);
}

TEST_F(ExternalData, Errors) {
  EXPECT_NE(errorOf(decodeTensor(external({{"location", "nope.bin"}}), dir))
                .find("which cannot be read"),
            std::string::npos);
  write("short.bin", std::string(6, '\0'));
  EXPECT_NE(errorOf(decodeTensor(external({{"location", "short.bin"}}), dir))
                .find("has 6 bytes of external data, but its shape and type "
                      "need 8"),
            std::string::npos);
  EXPECT_NE(errorOf(decodeTensor(external({{"location", "short.bin"},
                                           {"offset", "4"},
                                           {"length", "8"}}),
                                 dir))
                .find("reads bytes [4, 12)"),
            std::string::npos);
  EXPECT_NE(errorOf(decodeTensor(external({{"location", "../x.bin"}}), dir))
                .find("not inside the model's directory"),
            std::string::npos);
  EXPECT_NE(errorOf(decodeTensor(external({{"location", "/etc/passwd"}}), dir))
                .find("not inside the model's directory"),
            std::string::npos);
  EXPECT_NE(errorOf(decodeTensor(external({{"offset", "0"}}), dir))
                .find("has no 'location'"),
            std::string::npos);
  EXPECT_NE(errorOf(decodeTensor(external({{"location", "short.bin"},
                                           {"offset", "x"}}),
                                 dir))
                .find("which is not a number"),
            std::string::npos);
}

TEST(TensorData, StoresRoundToTheElementType) {
  TensorData bf(DType::BFloat16, {1});
  bf.setDouble(0, 1.0 + 1.0 / 256); // not representable in bf16's 8 bits
  EXPECT_EQ(bf.getDouble(0), 1.0);
  TensorData f(DType::Float, {1});
  f.setDouble(0, 0.1);
  EXPECT_EQ(f.getDouble(0), static_cast<double>(0.1f));
  TensorData i(DType::Int32, {1});
  i.setDouble(0, -2.7);
  EXPECT_EQ(i.getInt(0), -2);
  TensorData b(DType::Bool, {1});
  b.setInt(0, 5);
  EXPECT_EQ(b.getInt(0), 1);
}

} // namespace
