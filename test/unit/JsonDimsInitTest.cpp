//===- JsonDimsInitTest.cpp - Dim binding and init rules of JSON graphs ---===//
//
// The non-IR rules of the JSON frontend: --shape parsing, how defaults and
// overrides bind symbolic dims, and the init rule grammar and its canonical
// spelling (which ends up in llmc.init_rule).
//
//===----------------------------------------------------------------------===//
#include "frontends/json/DimBindings.h"
#include "frontends/json/InitRule.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace llmc::json;

TEST(DimOverride, ParsesNameEqualsPositiveInteger) {
  std::string error;
  auto o = parseDimOverride("seq=128", error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->name, "seq");
  EXPECT_EQ(o->value, 128);
  auto u = parseDimOverride("n_ctx_2=1", error);
  ASSERT_TRUE(u) << error;
  EXPECT_EQ(u->name, "n_ctx_2");
}

TEST(DimOverride, RejectsMalformedSpecs) {
  const char *bad[] = {
      "seq",    "seq=", "=8",    "seq=0",   "seq=-4",
      "seq=4x", "2d=4", "s-q=4", "seq=1.5", "seq=99999999999999999999",
      "seq= 8", "seq=+8", "seq=1e3", "seq=1099511627777"};
  for (const char *spec : bad) {
    std::string error;
    EXPECT_FALSE(parseDimOverride(spec, error)) << spec;
    EXPECT_FALSE(error.empty()) << spec;
  }
}

TEST(DimBindings, OverrideWinsOverDefault) {
  DimBindings dims;
  std::string error;
  ASSERT_TRUE(dims.addDefault("batch", 8, error));
  ASSERT_TRUE(dims.addDefault("seq", 1024, error));
  dims.addOverride({"seq", 64});
  dims.addOverride({"seq", 32}); // the last --shape of a name wins
  EXPECT_EQ(dims.resolve("batch"), 8);
  EXPECT_EQ(dims.resolve("seq"), 32);
  EXPECT_FALSE(dims.resolve("heads"));
  auto used = dims.usedValues();
  EXPECT_EQ(used.size(), 2u); // heads was used but has no value
  EXPECT_EQ(used["seq"], 32);
}

TEST(DimBindings, OverrideWithoutDefaultBindsAnUndeclaredDim) {
  DimBindings dims;
  dims.addOverride({"batch", 2});
  EXPECT_EQ(dims.resolve("batch"), 2);
  EXPECT_TRUE(dims.unusedOverrides().empty());
}

TEST(DimBindings, ReportsOverridesThatNameNoDim) {
  DimBindings dims;
  std::string error;
  ASSERT_TRUE(dims.addDefault("batch", 8, error));
  dims.addOverride({"bacth", 2});
  dims.addOverride({"batch", 4});
  dims.resolve("batch");
  EXPECT_EQ(dims.unusedOverrides(), std::vector<std::string>{"bacth"});
  // A declared dim that no shape uses is not a typo.
  DimBindings declared;
  ASSERT_TRUE(declared.addDefault("seq", 8, error));
  declared.addOverride({"seq", 4});
  EXPECT_TRUE(declared.unusedOverrides().empty());
}

TEST(DimBindings, RejectsBadDefaults) {
  DimBindings dims;
  std::string error;
  EXPECT_FALSE(dims.addDefault("seq", 0, error));
  EXPECT_NE(error.find("positive"), std::string::npos);
  EXPECT_FALSE(dims.addDefault("9lives", 3, error));
  EXPECT_EQ(dims.knownNames(), std::vector<std::string>{});
}

TEST(InitRule, ParsesTheThreeRules) {
  std::string error;
  auto z = parseInitRule("zeros", error);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->kind, InitRule::Kind::Zeros);
  auto o = parseInitRule(" ones ", error);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->kind, InitRule::Kind::Ones);
  auto n = parseInitRule("normal( 0.02 )", error);
  ASSERT_TRUE(n) << error;
  EXPECT_EQ(n->kind, InitRule::Kind::Normal);
  EXPECT_DOUBLE_EQ(n->stddev, 0.02);
  auto e = parseInitRule("normal(2e-2)", error);
  ASSERT_TRUE(e) << error;
  EXPECT_DOUBLE_EQ(e->stddev, 0.02);
}

TEST(InitRule, RejectsOtherRules) {
  const char *bad[] = {"",
                       "zero",
                       "uniform(0.1)",
                       "normal",
                       "normal()",
                       "normal(x)",
                       "normal(0)",
                       "normal(-1)",
                       "normal(inf)",
                       "normal(nan)",
                       "normal(0.1",
                       "normal(0.1, 2)"};
  for (const char *text : bad) {
    std::string error;
    EXPECT_FALSE(parseInitRule(text, error)) << text;
    EXPECT_FALSE(error.empty()) << text;
  }
}

TEST(InitRule, CanonicalSpellingRoundTrips) {
  EXPECT_EQ(InitRule::zeros().str(), "zeros");
  EXPECT_EQ(InitRule::ones().str(), "ones");
  EXPECT_EQ(InitRule::normal(0.02).str(), "normal(0.02)");
  // GPT-2's residual init, 0.02 / sqrt(2 * 12): the shortest exact decimal.
  double std124M = 0.02 / std::sqrt(24.0);
  std::string s = InitRule::normal(std124M).str();
  std::string error;
  auto back = parseInitRule(s, error);
  ASSERT_TRUE(back) << s;
  EXPECT_EQ(back->stddev, std124M) << s;
  EXPECT_EQ(s, "normal(0.004082482904638631)");
}

TEST(InitRule, ShortestDouble) {
  EXPECT_EQ(shortestDouble(0.5), "0.5");
  EXPECT_EQ(shortestDouble(1e-5), "1e-05");
  EXPECT_EQ(shortestDouble(0.1 + 0.2), "0.30000000000000004");
}
