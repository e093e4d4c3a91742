//===- CheckedSizeTest.cpp - Checked sizes and strict integers ------------===//
//
// runtime/CheckedSize.h and runtime/ParseInteger.h: products and sums that
// leave int64 stay invalid instead of wrapping, messages never print a
// wrapped number, and integers parse strictly within their range.
//
//===----------------------------------------------------------------------===//
#include "runtime/CheckedSize.h"
#include "runtime/ParseInteger.h"

#include <gtest/gtest.h>

#include <vector>

using namespace llmc;

namespace {

constexpr int64_t k2to32 = int64_t(1) << 32;

TEST(CheckedSize, ProductsThatFit) {
  EXPECT_EQ(elementCount({}).value(), 1);
  EXPECT_EQ(elementCount({2, 3, 4}).value(), 24);
  EXPECT_EQ(elementCount({0, INT64_MAX}).value(), 0);
  EXPECT_TRUE(elementCount({0, INT64_MAX}).valid());
  EXPECT_EQ(elementCount({INT64_MAX}).value(), INT64_MAX);
  EXPECT_EQ(elementCount({int64_t(1) << 31, int64_t(1) << 31}).value(),
            int64_t(1) << 62);
  EXPECT_EQ(byteSize(std::vector<int64_t>{48, 1024, 50304}, 4).value(),
            int64_t(48) * 1024 * 50304 * 4);
}

TEST(CheckedSize, ProductsThatOverflowStayInvalid) {
  // [2^32, 2^32] is 0 modulo 2^64; [5, 3689348814741910324] is 4.
  CheckedSize square = elementCount({k2to32, k2to32});
  EXPECT_FALSE(square.valid());
  EXPECT_EQ(square.value(), 0);
  EXPECT_DOUBLE_EQ(square.approx(), 18446744073709551616.0);
  EXPECT_FALSE(elementCount({5, 3689348814741910324}).valid());
  EXPECT_FALSE(elementCount({int64_t(1) << 31, int64_t(1) << 32}).valid());
  // Invalid stays invalid, even times 0.
  EXPECT_FALSE((square * CheckedSize(0)).valid());
  EXPECT_FALSE(byteSize(std::vector<int64_t>{int64_t(1) << 62}, 2).valid());
  EXPECT_FALSE(square.fitsIn(INT64_MAX));
}

TEST(CheckedSize, SumsThatOverflowStayInvalid) {
  EXPECT_EQ((CheckedSize(INT64_MAX - 1) + CheckedSize(1)).value(), INT64_MAX);
  EXPECT_FALSE((CheckedSize(INT64_MAX) + CheckedSize(1)).valid());
  CheckedSize arena(int64_t(1) << 62);
  arena += CheckedSize(int64_t(1) << 61);
  EXPECT_TRUE(arena.valid());
  arena += CheckedSize(int64_t(1) << 62); // 2^63 + 2^61
  EXPECT_FALSE(arena.valid());
  EXPECT_DOUBLE_EQ(arena.approx(), 2.5 * 4611686018427387904.0);
}

TEST(CheckedSize, NegativeDimsAreInvalid) {
  EXPECT_FALSE(CheckedSize(-1).valid());
  EXPECT_FALSE(elementCount({2, -1}).valid());
  EXPECT_FALSE(elementCount({INT64_MIN}).valid());
}

TEST(CheckedSize, Limits) {
  EXPECT_EQ(kMaxTensorBytes, int64_t(1) << 40);
  // The last tensor that fits and the first that does not.
  std::vector<int64_t> atLimit = {int64_t(1) << 38};
  std::vector<int64_t> pastLimit = {(int64_t(1) << 38) + 1};
  EXPECT_EQ(tensorSizeError(atLimit, 4), "");
  EXPECT_EQ(tensorSizeError(pastLimit, 4),
            "has shape [274877906945] (274877906945 elements, 1.0 TiB), more "
            "than the 1.0 TiB llmc allows for one tensor");
  EXPECT_EQ(tensorSizeError(std::vector<int64_t>{2, 3}, 4, 23, "of a test"),
            "has shape [2, 3] (6 elements, 24 bytes), more than the 23 bytes "
            "of a test");
}

TEST(CheckedSize, MessagesNeverPrintWrappedNumbers) {
  std::vector<int64_t> square = {k2to32, k2to32};
  EXPECT_EQ(tensorSizeError(square, 4),
            "has shape [4294967296, 4294967296] (about 1.8e+19 elements, "
            "64.0 EiB), more elements than a 64-bit count holds");
  std::vector<int64_t> reshaped = {5, 3689348814741910324};
  std::string why = tensorSizeError(reshaped, 4);
  EXPECT_NE(why.find("[5, 3689348814741910324] (about 1.8e+19 elements"),
            std::string::npos)
      << why;
  EXPECT_EQ(tensorSizeError(std::vector<int64_t>{3, -8}, 4),
            "has the negative dim -8 in shape [3, -8]");
  EXPECT_EQ(countText(elementCount({k2to32, k2to32, k2to32})), "about 7.9e+28");
}

TEST(CheckedSize, BytesText) {
  EXPECT_EQ(bytesText(0), "0 bytes");
  EXPECT_EQ(bytesText(1023), "1023 bytes");
  EXPECT_EQ(bytesText(1536), "1.5 KiB");
  EXPECT_EQ(bytesText(4e12), "3.6 TiB");
  EXPECT_EQ(bytesText(double(int64_t(1) << 40)), "1.0 TiB");
  EXPECT_EQ(bytesText(7.4e22), "7.4e+22 bytes");
}

TEST(CheckedSize, PhysicalMemoryIsKnownOnLinux) {
  EXPECT_GT(physicalMemoryBytes(), int64_t(1) << 20);
}

TEST(ParseInteger, AcceptsDecimalIntegersInRange) {
  int64_t v = -7;
  EXPECT_TRUE(parseInteger("0", 0, 10, v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(parseInteger("10", 0, 10, v));
  EXPECT_EQ(v, 10);
  EXPECT_TRUE(parseInteger("-3", -5, 5, v));
  EXPECT_EQ(v, -3);
  EXPECT_TRUE(parseInteger("9223372036854775807", 0, INT64_MAX, v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_TRUE(parseInteger("-9223372036854775808", INT64_MIN, 0, v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_TRUE(parseInteger("007", 0, 10, v));
  EXPECT_EQ(v, 7);
}

TEST(ParseInteger, RejectsEverythingElse) {
  int64_t v = 42;
  for (const char *text :
       {"", "-", "1e19", "1e99", "2^63-1", "1.0", " 5", "5 ", "+5", "0x10",
        "9223372036854775808", "-9223372036854775809", "18446744073709551616",
        "99999999999999999999999", "11", "-1", "abc"})
    EXPECT_FALSE(parseInteger(text, 0, 10, v)) << text;
  EXPECT_EQ(v, 42) << "a rejected value leaves the output alone";
  EXPECT_FALSE(parseInteger("1000000000000", 1, int64_t(1) << 39, v));
}

TEST(ParseInteger, Unsigned64CoversTheWholeRange) {
  uint64_t v = 0;
  EXPECT_TRUE(parseUnsigned64("18446744073709551615", v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_TRUE(parseUnsigned64("0", v));
  EXPECT_EQ(v, 0u);
  for (const char *text : {"18446744073709551616", "184467440737095516150",
                           "-1", "", "1e3", "+1", " 1"})
    EXPECT_FALSE(parseUnsigned64(text, v)) << text;
}

TEST(ParseInteger, RangeText) {
  EXPECT_EQ(integerRangeText(1, 1099511627776),
            "an integer in [1, 1099511627776]");
}

} // namespace
