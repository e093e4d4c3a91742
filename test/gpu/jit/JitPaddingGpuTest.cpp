//===- JitPaddingGpuTest.cpp - Padded parameters in the model's shapes ---===//
//
// Issue 13: parameters live padded on the GPU, the JIT API speaks the
// model's shapes (compiler/jit/ParameterLayout.h over runtime/Padding.h).
//
//===----------------------------------------------------------------------===//
#include "llmc/Step.h"

#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace llmc;

namespace {

// Issue 13: parameters live padded on the GPU (vocab 8063 as 8064 rows
// with padding "always"), and the API sees, returns and loads the model's
// shapes: the same as the unpadded reference evaluator's, before and after
// steps, and loading them back pads with zeros.
TEST(JitGpu, PaddedParametersKeepTheModelsShapes) {
  std::string why;
  if (!gpuAvailable(why))
    GTEST_SKIP() << "no CUDA GPU: " << why;
  const char *dir = std::getenv("LLMC_TEST_MODELS");
  std::string model = std::string(dir ? dir : LLMC_TEST_MODELS_DIR) +
                      "/odd_gpt2_v8063_dynamo_loss.onnx";
  jit::Options o;
  o.padding = "always";
  o.device = jit::Device::Cuda;
  jit::Step gpu, cpu;
  Status s = jit::compile(model, o, gpu);
  ASSERT_TRUE(s) << s.message();
  ASSERT_FALSE(gpu.report().padding.empty());
  std::printf("[ padding  ] %s\n", gpu.report().padding[0].c_str());
  o.padding = "off";
  o.device = jit::Device::Cpu;
  ASSERT_TRUE(s = jit::compile(model, o, cpu)) << s.message();
  ASSERT_EQ(gpu.parameterInfo().size(), cpu.parameterInfo().size());
  for (size_t i = 0; i < cpu.parameterInfo().size(); ++i)
    EXPECT_EQ(gpu.parameterInfo()[i].shape, cpu.parameterInfo()[i].shape)
        << cpu.parameterInfo()[i].name;
  std::vector<jit::HostTensor> pg, pc;
  ASSERT_TRUE(s = gpu.parameters(pg)) << s.message();
  ASSERT_TRUE(s = cpu.parameters(pc)) << s.message();
  for (size_t i = 0; i < pg.size(); ++i)
    EXPECT_EQ(pg[i].bytes, pc[i].bytes) << "initial " << pg[i].name;

  std::vector<std::vector<int64_t>> data;
  for (const jit::TensorInfo &in : cpu.inputs()) {
    int64_t n = 1;
    for (int64_t d : in.shape)
      n *= d;
    std::vector<int64_t> v(n);
    for (int64_t i = 0; i < n; ++i)
      v[i] = (i * 104729 + data.size() * 13) % 8063;
    data.push_back(std::move(v));
  }
  std::vector<jit::TensorView> views;
  for (size_t i = 0; i < data.size(); ++i)
    views.push_back(jit::TensorView::host(data[i].data(), cpu.inputs()[i].shape));
  for (int k = 0; k < 3; ++k) {
    double lg = 0, lc = 0;
    ASSERT_TRUE(s = gpu.run(views, 1e-3, lg)) << s.message();
    ASSERT_TRUE(s = cpu.run(views, 1e-3, lc)) << s.message();
    std::printf("[ padding  ] step %d: loss gpu %.7f reference %.7f\n", k, lg,
                lc);
    EXPECT_NEAR(lg, lc, 1e-4 * std::fabs(lc)) << "step " << k;
  }
  // The reference's weights into the padded GPU step: the same loss.
  ASSERT_TRUE(s = cpu.parameters(pc)) << s.message();
  std::vector<jit::NamedTensor> values;
  for (const jit::HostTensor &t : pc)
    values.push_back({t.name, jit::TensorView::host(
                                  reinterpret_cast<const float *>(t.bytes.data()),
                                  t.shape)});
  ASSERT_TRUE(s = gpu.loadParameters(values)) << s.message();
  ASSERT_TRUE(s = gpu.parameters(pg)) << s.message();
  for (size_t i = 0; i < pg.size(); ++i)
    EXPECT_EQ(pg[i].bytes, pc[i].bytes) << "loaded " << pg[i].name;
  double lg = 0, lc = 0;
  ASSERT_TRUE(s = gpu.evaluate(views, lg)) << s.message();
  ASSERT_TRUE(s = cpu.evaluate(views, lc)) << s.message();
  EXPECT_NEAR(lg, lc, 1e-4 * std::fabs(lc));
}

} // namespace
