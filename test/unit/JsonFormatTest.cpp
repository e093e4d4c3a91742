//===- JsonFormatTest.cpp - JSON parsing, op table, recipe summaries ------===//
//
// The JSON helpers that must never throw (LLVM builds without exceptions),
// the op signature table checked against the registered llmc ops (so a new
// op without a JSON mapping fails here), and the recipe summary arithmetic.
//
//===----------------------------------------------------------------------===//
#include "dialects/llmc/LlmcDialect.h"
#include "frontends/json/Json.h"
#include "frontends/json/OpSignatures.h"
#include "frontends/json/recipes/Recipes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include <gtest/gtest.h>

#include <set>

using namespace llmc::json;

TEST(Json, ParsesWithCommentsAndReportsLineAndColumn) {
  std::string error;
  auto ok = parseText("// RUN: x\n{\"a\": [1, 2] /* c */}\n", error);
  ASSERT_TRUE(ok) << error;
  EXPECT_EQ((*ok)["a"].size(), 2u);
  auto bad = parseText("{\n  \"a\": ,\n}", error);
  EXPECT_FALSE(bad);
  EXPECT_NE(error.find("line 2, column 8"), std::string::npos) << error;
  EXPECT_FALSE(parseText("{} trailing", error));
}

TEST(Json, CheckedAccessors) {
  std::string error;
  auto v = parseText(R"({"i": 3, "f": 2.0, "n": -1, "big": 18446744073709551615,
                         "s": "x"})",
                     error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(asInt(*member(*v, "i")), 3);
  EXPECT_EQ(asInt(*member(*v, "n")), -1);
  EXPECT_FALSE(asInt(*member(*v, "f"))); // 2.0 is not an integer
  EXPECT_FALSE(asInt(*member(*v, "big")));
  EXPECT_FALSE(asInt(*member(*v, "s")));
  EXPECT_EQ(asNumber(*member(*v, "f")), 2.0);
  EXPECT_EQ(member(*v, "missing"), nullptr);
  EXPECT_EQ(member(Json::array(), "i"), nullptr);
  EXPECT_EQ(describe(*member(*v, "s")), "the string \"x\"");
  EXPECT_EQ(dump(Json("\xff")), "\"\xef\xbf\xbd\""); // replaced, not thrown
}

TEST(OpSignatures, CoverEveryRegisteredLlmcOp) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect>();
  std::set<std::string> registered;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "llmc")
      continue;
    std::string op = name.getStringRef().drop_front(5).str();
    registered.insert(op);
    if (op == "multi_adamw_update")
      continue; // built by llmc-batch-adamw from adamw_update nodes
    if (op == "kernel" || op == "yield")
      continue; // kernel groups: formed by llmc-form-kernels, not a node

    const OpSignature *sig = lookupOpSignature(op);
    ASSERT_NE(sig, nullptr) << "llmc." << op << " has no JSON signature";
    // The table names exactly the op's inherent attributes.
    std::set<std::string> expected, listed;
    for (mlir::StringAttr attr : name.getAttributeNames())
      if (attr.getValue() != "operandSegmentSizes")
        expected.insert(attr.getValue().str());
    for (const AttrSpec &a : sig->attrs) {
      listed.insert(a.name);
      EXPECT_TRUE(attrKindOf(a.name)) << op << "." << a.name;
    }
    EXPECT_EQ(listed, expected) << "llmc." << op;
  }
  for (const OpSignature &sig : opSignatures())
    EXPECT_TRUE(registered.count(sig.op)) << sig.op << " is not an llmc op";
}

TEST(OpSignatures, DescribesEnumsFromTheDialect) {
  EXPECT_EQ(enumSpellings(AttrKind::GeluApproximation),
            (std::vector<std::string>{"erf", "tanh"}));
  EXPECT_EQ(describeAttrKind(AttrKind::LossReduction),
            "one of \"mean\", \"sum\", \"none\"");
  const OpSignature *ln = lookupOpSignature("layer_norm");
  ASSERT_NE(ln, nullptr);
  EXPECT_TRUE(ln->hasOptionalOperands());
  EXPECT_FALSE(ln->findAttr("epsilon")->required);
}

TEST(Recipes, SummaryCountsParametersWithDimDefaults) {
  std::string error;
  auto g = parseText(R"({"dims": {"seq": 16},
    "parameters": [{"shape": [4, 8]}, {"shape": ["seq", 2]}, {"shape": []}],
    "nodes": [{"op": "add"}, {"op": "add"}, {"op": "neg"}]})",
                     error);
  ASSERT_TRUE(g) << error;
  GraphSummary s = summarizeGraph(*g);
  EXPECT_EQ(s.parameterCount, 4 * 8 + 16 * 2 + 1);
  EXPECT_EQ(s.parameterTensors, 3);
  EXPECT_EQ(s.nodeCount, 3);
  ASSERT_EQ(s.opCounts.size(), 2u);
  EXPECT_EQ(s.opCounts[0], (std::pair<std::string, int64_t>{"add", 2}));
  EXPECT_EQ(withThousands(124439808), "124,439,808");
  EXPECT_EQ(withThousands(999), "999");
  EXPECT_EQ(withThousands(1000), "1,000");
}

TEST(Recipes, EverySizeBuildsAndUnknownSizesDoNot) {
  for (const Recipe &r : recipes()) {
    for (const std::string &size : r.sizes()) {
      auto g = r.build(size);
      ASSERT_TRUE(g) << r.name << " " << size;
      EXPECT_EQ((*g)["outputs"], Json::array({"loss"}));
    }
    EXPECT_FALSE(r.build("huge")) << r.name;
  }
}
