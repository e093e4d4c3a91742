//===- OnnxOpsetsTest.cpp - Every imported op has its oldest opset --------===//
//
// frontends/onnx/OnnxOpsets.cpp says from which opset llmc reads each op as
// opset 13 defines it. An op with a handler but no entry is read from 13 on
// only; this test makes whoever adds a handler classify it against ONNX's
// older versions of the op.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include <gtest/gtest.h>

using namespace llmc::onnximport;

TEST(OnnxOpsets, EveryImportedOpIsClassified) {
  int ops = 0;
  for (const auto &entry : opHandlers()) {
    OldestOpset oldest = oldestOpset(entry.getKey());
    EXPECT_NE(oldest.why, kUnclassified)
        << entry.getKey().str()
        << " has a handler but no entry in frontends/onnx/OnnxOpsets.cpp";
    // Ops ONNX added after 13 carry the opset that added them and no
    // reason; older ops are read from an opset before 13.
    if (oldest.opset > 13)
      EXPECT_STREQ(oldest.why, "") << entry.getKey().str();
    else
      EXPECT_LT(oldest.opset, 13) << entry.getKey().str();
    ++ops;
  }
  EXPECT_GT(ops, 90);
}

TEST(OnnxOpsets, OldFormsAndTheirReasons) {
  EXPECT_EQ(oldestOpset("Softmax").opset, 1);
  EXPECT_EQ(oldestOpset("Add").opset, 7);
  EXPECT_EQ(oldestOpset("Clip").opset, 11);
  EXPECT_STREQ(oldestOpset("Clip").why, "takes min and max as attributes");
  EXPECT_EQ(oldestOpset("Dropout").opset, 12);
  EXPECT_EQ(oldestOpset("LayerNormalization").opset, 17);
  EXPECT_STREQ(oldestOpset("NoSuchOp").why, kUnclassified);
}
