//===- PaddedStateTest.cpp - Padded state in the model's shapes -----------===//
//
// llmc-pad-shapes stores a parameter and its AdamW moments padded (vocab
// 8063 as 8064 rows); the trainer's state tensors (checkpoints) have the
// model's shapes on the CPU engine: reads give up the real corner, writes
// fill it and zero the padding. (The GPU engine's copyLogical goes through
// the same runtime/Padding.h; test/lit/train/padded-checkpoint.test
// resumes across padded and unpadded runs bit for bit.) Padded hidden and
// intermediate columns (--pad-dims) get zero gradients through the masked
// norms and stay zero under AdamW with weight decay.
//
//===----------------------------------------------------------------------===//
#include "compiler/CpuStepEngine.h"
#include "compiler/ModelLoader.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace llmc;

namespace {

TEST(PaddedState, CpuEngineSpeaksTheModelsShapes) {
  mlir::MLIRContext context;
  auto module = loadModel(std::string(LLMC_TEST_MODELS) +
                              "/odd_gpt2_v8063_dynamo_loss.onnx",
                          ModelOptions(), context);
  ASSERT_TRUE(module);
  OptimizerConfig opt;
  PrecisionConfig precision;
  precision.padAlways = true;
  auto trainer = CpuTrainer::create(*module, &opt, /*seed=*/0, precision);
  ASSERT_TRUE(mlir::succeeded(trainer));
  const std::string head = "m.lm_head.weight";
  auto padded = (*trainer)->paddedShapes();
  ASSERT_TRUE(padded.count(head));
  EXPECT_EQ(padded[head].first, (std::vector<int64_t>{8063, 80}));
  EXPECT_EQ(padded[head].second, (std::vector<int64_t>{8064, 80}));

  std::unique_ptr<CpuStepEngine> engine;
  Status s = CpuStepEngine::create(std::move(*trainer), engine);
  ASSERT_TRUE(s) << s.message();
  size_t seen = 0;
  for (const StateTensor &t : engine->stateTensors()) {
    if (t.name != head && t.name != "adamw.m:" + head &&
        t.name != "adamw.v:" + head)
      continue;
    ++seen;
    EXPECT_EQ(t.shape, (std::vector<int64_t>{8063, 80})) << t.name;
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(s = engine->readState(t, bytes)) << s.message();
    ASSERT_EQ(bytes.size(), 8063u * 80 * 4) << t.name;

    // Write ones: the real rows hold them, the padding row stays zero.
    std::vector<float> ones(8063 * 80, 1.0f);
    std::memcpy(bytes.data(), ones.data(), bytes.size());
    ASSERT_TRUE(s = engine->writeState(t, bytes)) << s.message();
    for (const CpuTrainer::StateArgument &a :
         engine->trainer().stateArguments()) {
      if (a.name != t.name)
        continue;
      const RefTensor &held = engine->trainer().argument(a.index);
      ASSERT_EQ(held.shape, (std::vector<int64_t>{8064, 80}));
      EXPECT_EQ(held.floats[0], 1.0);
      EXPECT_EQ(held.floats[8063 * 80 - 1], 1.0);
      for (int64_t i = 8063 * 80; i < 8064 * 80; ++i)
        ASSERT_EQ(held.floats[i], 0.0) << t.name << " element " << i;
    }
    std::vector<uint8_t> back;
    ASSERT_TRUE(s = engine->readState(t, back)) << s.message();
    EXPECT_EQ(back, bytes) << t.name;

    // A tensor of the padded shape is refused, naming the model's.
    std::vector<uint8_t> wrong(8064u * 80 * 4);
    StateTensor asPadded = t;
    asPadded.shape = {8064, 80};
    s = engine->writeState(asPadded, wrong);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("does not match the model's"),
              std::string::npos)
        << s.message();
  }
  EXPECT_EQ(seen, 3u);
}

/// Every element of `t` (padded shape) outside the real corner `real`.
int64_t nonZeroPadding(const RefTensor &t, const std::vector<int64_t> &real,
                       int64_t &checked) {
  int64_t bad = 0;
  for (size_t i = 0; i < t.floats.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i);
    bool padding = false;
    for (size_t d = t.shape.size(); d-- > 0;) {
      padding |= rest % t.shape[d] >= real[d];
      rest /= t.shape[d];
    }
    if (!padding)
      continue;
    ++checked;
    bad += t.floats[i] != 0.0;
  }
  return bad;
}

TEST(PaddedState, HiddenAndIntermediatePaddingStaysZeroUnderAdamW) {
  mlir::MLIRContext context;
  auto module = loadModel(std::string(LLMC_TEST_MODELS) +
                              "/odd_gpt2_v8063_dynamo_loss.onnx",
                          ModelOptions(), context);
  ASSERT_TRUE(module);
  OptimizerConfig opt;
  opt.weightDecay = 0.1;
  opt.decayMinRank = 1; // the norms' weights and the biases decay too
  PrecisionConfig precision;
  precision.padAlways = true;
  precision.padDims = "80:96,200:256,40:48";
  auto trainer = CpuTrainer::create(*module, &opt, /*seed=*/0, precision);
  ASSERT_TRUE(mlir::succeeded(trainer));
  auto padded = (*trainer)->paddedShapes();
  ASSERT_TRUE(padded.count("m.transformer.h.0.ln_1.weight"));
  EXPECT_EQ(padded["m.transformer.h.0.ln_1.weight"].second,
            (std::vector<int64_t>{96}));
  EXPECT_EQ(padded["m.transformer.h.0.mlp.c_fc.weight"].second,
            (std::vector<int64_t>{96, 256}));

  std::map<std::string, RefTensor> batch;
  for (const StepInput &in : (*trainer)->inputs()) {
    RefTensor t = in.type;
    for (size_t i = 0; i < t.ints.size(); ++i)
      t.ints[i] = static_cast<int64_t>((i * 7919 + 13) % 8063);
    batch[in.name] = t;
  }
  for (int step = 0; step < 3; ++step)
    ASSERT_TRUE(mlir::succeeded((*trainer)->step(batch, 1e-2)));

  int64_t checked = 0, tensors = 0;
  for (const CpuTrainer::StateArgument &a : (*trainer)->stateArguments()) {
    auto real = (*trainer)->realShape(a.index);
    if (!real)
      continue;
    const RefTensor &held = (*trainer)->argument(a.index);
    ASSERT_EQ(held.shape.size(), real->size()) << a.name;
    ++tensors;
    EXPECT_EQ(nonZeroPadding(held, *real, checked), 0) << a.name;
  }
  // Parameters, AdamW's m and v: every padded one was looked at.
  EXPECT_EQ(tensors, 3 * static_cast<int64_t>(padded.size()));
  EXPECT_GT(checked, 0);
}

} // namespace
