//===- OnnxTorchMetadataTest.cpp - Reading the dynamo exporter's metadata -===//
//
// The importer tells a folded copy of parameters from a folded constant of
// the model by what the exporter's optimizer recorded (folded_from) and
// torch.export's signature (frontends/onnx/OnnxTorchMetadata.h). The fields
// are unknown to the onnx.proto llmc is built from, so these tests write
// them as raw protobuf bytes, as a newer onnx package does.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxTorchMetadata.h"
#include "frontends/onnx/onnx.pb.h"

#include <gtest/gtest.h>

using namespace llmc::onnximport;

namespace {

void appendVarint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

/// A length-delimited field `field` holding `bytes`.
std::string lengthField(int field, const std::string &bytes) {
  std::string out;
  appendVarint(out, (static_cast<uint64_t>(field) << 3) | 2);
  appendVarint(out, bytes.size());
  return out + bytes;
}

/// A metadata_props entry (StringStringEntryProto) in field `field`.
std::string metadataField(int field, const std::string &key,
                          const std::string &value) {
  return lengthField(field, lengthField(1, key) + lengthField(2, value));
}

/// A graph whose value_info `name` has metadata `key: value`.
void addValueInfo(std::string &graph, const std::string &name,
                  const std::string &key, const std::string &value) {
  std::string info = lengthField(1, name) + metadataField(4, key, value);
  graph += lengthField(13, info); // GraphProto.value_info
}

const char *kFolded = "pkg.onnxscript.optimizer.folded_from";
const char *kKind = "pkg.torch.export.graph_signature.InputSpec.kind";

} // namespace

TEST(OnnxTorchMetadata, PythonStringLists) {
  EXPECT_EQ(parsePythonStringList("['a', 'b.c', \"d\"]"),
            (std::vector<std::string>{"a", "b.c", "d"}));
  EXPECT_TRUE(parsePythonStringList("[]").empty());
  EXPECT_TRUE(parsePythonStringList("not a list").empty());
}

TEST(OnnxTorchMetadata, ReadsFoldedFromKindsAndSignature) {
  std::string bytes;
  addValueInfo(bytes, "m.w", kKind, "PARAMETER");
  addValueInfo(bytes, "val_31", kFolded, "['m.layers.0.q.weight']");
  addValueInfo(bytes, "mask", kFolded, "['arange', 'le', 'val_3']");
  addValueInfo(bytes, "cos", kFolded, "['m.rope.inv_freq', 'arange']");
  addValueInfo(bytes, "twice", kFolded, "['val_31', 'val_9']");
  bytes += metadataField(
      16, "pkg.torch.export.ExportedProgram.graph_signature",
      "\n# inputs\np_m_w: PARAMETER target='m.w'\n"
      "p_m_layers_0_q_weight: PARAMETER target='m.layers.0.q.weight'\n"
      "b_m_rope_inv_freq: BUFFER target='m.rope.inv_freq' persistent=False\n"
      "idx: USER_INPUT\n\n# outputs\nloss: USER_OUTPUT\n");
  onnx::GraphProto graph;
  ASSERT_TRUE(graph.ParseFromString(bytes));
  TorchMetadata md = readTorchMetadata(graph);
  EXPECT_TRUE(md.isDynamoExport());
  EXPECT_EQ(md.valueKinds.lookup("m.w"), "PARAMETER");
  EXPECT_EQ(md.targetKinds.lookup("m.layers.0.q.weight"), "PARAMETER");
  EXPECT_EQ(md.targetKinds.lookup("m.rope.inv_freq"), "BUFFER");
  EXPECT_FALSE(md.targetKinds.count("idx"));
  // A transposed weight is a copy of its parameter.
  EXPECT_EQ(md.foldedParameters("val_31"),
            (std::vector<std::string>{"m.layers.0.q.weight"}));
  // A mask from arange and compare, and cos/sin from a buffer: constants.
  EXPECT_TRUE(md.foldedParameters("mask").empty());
  EXPECT_TRUE(md.foldedParameters("cos").empty());
  // Through another folded value.
  EXPECT_EQ(md.foldedParameters("twice"),
            (std::vector<std::string>{"m.layers.0.q.weight"}));
  EXPECT_TRUE(md.foldedParameters("not_folded").empty());
}

TEST(OnnxTorchMetadata, UnknownStateCountsAsAParameter) {
  // Without the graph's signature (an older exporter), a dotted source the
  // value kinds do not know is module state: kept trainable.
  TorchMetadata md;
  md.valueKinds["idx"] = "USER_INPUT";
  md.foldedFrom["val_7"] = {"m.qkv.weight"};
  md.foldedFrom["val_56"] = {"arange", "val_3"};
  EXPECT_EQ(md.foldedParameters("val_7"),
            (std::vector<std::string>{"m.qkv.weight"}));
  EXPECT_TRUE(md.foldedParameters("val_56").empty());
}

TEST(OnnxTorchMetadata, PlainFilesHaveNone) {
  onnx::GraphProto graph;
  graph.add_value_info()->set_name("x");
  TorchMetadata md = readTorchMetadata(graph);
  EXPECT_FALSE(md.isDynamoExport());
  EXPECT_TRUE(md.foldedFrom.empty());
  EXPECT_TRUE(md.targetKinds.empty());
}
