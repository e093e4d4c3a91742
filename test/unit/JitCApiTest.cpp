//===- JitCApiTest.cpp - include/llmc/llmc.h through libllmc.so -----------===//
//
// Links only libllmc.so and the C header, as a C program or the Python
// binding would: the status and message of every misuse (bad handles,
// wrong shapes, dtypes, devices, a model that does not compile, bad
// options), thread-local errors, and a training step with its parameter
// round trip on the CPU path.
//
//===----------------------------------------------------------------------===//
#include "llmc/llmc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace {

const std::string kTiny =
    std::string(LLMC_TEST_MODELS) + "/tiny_gpt_dynamo_loss_dyn.onnx";
const char *kOptions = R"({"batch": 2, "seq": 16, "seed": 0})";
const int64_t kShape[2] = {2, 16};

std::string lastError() { return llmc_last_error(); }

#define EXPECT_STATUS(call, code, part)                                        \
  do {                                                                         \
    llmc_status s_ = (call);                                                   \
    EXPECT_EQ(s_, code) << lastError();                                        \
    EXPECT_NE(lastError().find(part), std::string::npos) << lastError();       \
  } while (0)

struct Tokens {
  std::vector<int64_t> idx, tgt;
  Tokens() {
    for (int i = 0; i < 32; ++i) {
      idx.push_back((i * 37 + 5) % 512);
      tgt.push_back((i * 37 + 42) % 512);
    }
  }
  std::vector<llmc_tensor> tensors() const {
    return {{idx.data(), LLMC_I64, LLMC_CPU, 2, kShape, LLMC_NO_STREAM},
            {tgt.data(), LLMC_I64, LLMC_CPU, 2, kShape, LLMC_NO_STREAM}};
  }
};

class CApiTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(llmc_compile(kTiny.c_str(), kOptions, &step), LLMC_OK)
        << lastError();
    ASSERT_NE(step, nullptr);
  }
  void TearDown() override { EXPECT_EQ(llmc_step_destroy(step), LLMC_OK); }
  llmc_step *step = nullptr;
};

TEST(CApi, Version) {
  EXPECT_STREQ(llmc_version(), "0.1.0");
  EXPECT_EQ(llmc_abi_version(), LLMC_ABI_VERSION);
  EXPECT_STREQ(llmc_last_error(), "");
}

TEST_F(CApiTest, DescribesTheStep) {
  size_t n = 0;
  ASSERT_EQ(llmc_step_num_inputs(step, &n), LLMC_OK);
  EXPECT_EQ(n, 2u);
  const char *name = nullptr;
  int32_t dtype = -1, rank = -1;
  int64_t shape[4] = {};
  ASSERT_EQ(llmc_step_input_info(step, 1, &name, &dtype, &rank, shape, 4),
            LLMC_OK);
  EXPECT_STREQ(name, "tgt");
  EXPECT_EQ(dtype, LLMC_I64);
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(shape[1], 16);
  EXPECT_STATUS(llmc_step_input_info(step, 2, &name, &dtype, &rank, shape, 4),
                LLMC_ERROR_INVALID_ARGUMENT, "index 2 is past the last of 2");
  ASSERT_EQ(llmc_step_num_parameters(step, &n), LLMC_OK);
  EXPECT_EQ(n, 29u);
  ASSERT_EQ(llmc_step_parameter_info(step, 0, &name, &dtype, &rank, shape, 4),
            LLMC_OK);
  EXPECT_STREQ(name, "m.wte.weight");
  EXPECT_EQ(dtype, LLMC_F32);
  const char *json = nullptr;
  ASSERT_EQ(llmc_step_report_json(step, &json), LLMC_OK);
  EXPECT_NE(std::string(json).find("\"vocab\": 512"), std::string::npos);
}

TEST_F(CApiTest, TrainsAndRoundTripsParameters) {
  Tokens t;
  auto in = t.tensors();
  double l0 = 0, l1 = 0, l2 = 0, loss = 0;
  ASSERT_EQ(llmc_step_evaluate(step, in.data(), 2, &l0), LLMC_OK)
      << lastError();
  EXPECT_NEAR(l0, std::log(512.0), 0.3);
  std::vector<float> wte(512 * 64);
  ASSERT_EQ(llmc_step_get_parameter(step, "m.wte.weight", wte.data(),
                                    wte.size() * 4),
            LLMC_OK);
  ASSERT_EQ(llmc_step_run(step, in.data(), 2, 3e-3, &loss), LLMC_OK)
      << lastError();
  EXPECT_EQ(loss, l0);
  // Without a loss pointer the call only queues the step.
  ASSERT_EQ(llmc_step_run(step, in.data(), 2, -1, nullptr), LLMC_OK);
  double queued = 0;
  ASSERT_EQ(llmc_step_last_loss(step, &queued), LLMC_OK);
  EXPECT_LT(queued, l0);
  EXPECT_STATUS(llmc_step_last_loss(step, nullptr),
                LLMC_ERROR_INVALID_ARGUMENT, "loss is NULL");
  int64_t steps = 0;
  ASSERT_EQ(llmc_step_steps_taken(step, &steps), LLMC_OK);
  EXPECT_EQ(steps, 2);
  double ms = -1;
  ASSERT_EQ(llmc_step_last_step_ms(step, &ms), LLMC_OK);
  EXPECT_GT(ms, 0.0);
  ASSERT_EQ(llmc_step_evaluate(step, in.data(), 2, &l1), LLMC_OK);
  EXPECT_LT(l1, l0);
  // Only the embedding back: the loss moves, but not to l0.
  const char *names[] = {"m.wte.weight"};
  int64_t wteShape[2] = {512, 64};
  llmc_tensor value = {wte.data(), LLMC_F32, LLMC_CPU, 2, wteShape,
                       LLMC_NO_STREAM};
  EXPECT_STATUS(llmc_step_load_parameters(step, names, &value, 1, 1),
                LLMC_ERROR_INVALID_ARGUMENT, "is missing");
  ASSERT_EQ(llmc_step_load_parameters(step, names, &value, 1, 0), LLMC_OK)
      << lastError();
  std::vector<float> back(wte.size());
  ASSERT_EQ(llmc_step_get_parameter(step, "m.wte.weight", back.data(),
                                    back.size() * 4),
            LLMC_OK);
  EXPECT_EQ(back, wte);
  ASSERT_EQ(llmc_step_evaluate(step, in.data(), 2, &l2), LLMC_OK);
  EXPECT_NE(l2, l1);
}

TEST(CApi, BadHandles) {
  double loss = 0;
  EXPECT_STATUS(llmc_step_run(nullptr, nullptr, 0, 1e-3, &loss),
                LLMC_ERROR_BAD_HANDLE, "the step handle is NULL");
  int notAStep = 0;
  auto *fake = reinterpret_cast<llmc_step *>(&notAStep);
  EXPECT_STATUS(llmc_step_evaluate(fake, nullptr, 0, &loss),
                LLMC_ERROR_BAD_HANDLE, "not a live step");
  size_t n = 0;
  EXPECT_STATUS(llmc_step_num_inputs(fake, &n), LLMC_ERROR_BAD_HANDLE,
                "not a live step");
  llmc_step *step = nullptr;
  ASSERT_EQ(llmc_compile(kTiny.c_str(), kOptions, &step), LLMC_OK);
  ASSERT_EQ(llmc_step_destroy(step), LLMC_OK);
  EXPECT_STATUS(llmc_step_num_parameters(step, &n), LLMC_ERROR_BAD_HANDLE,
                "not a live step");
  EXPECT_STATUS(llmc_step_destroy(step), LLMC_ERROR_BAD_HANDLE,
                "destroyed twice");
  EXPECT_EQ(llmc_step_destroy(nullptr), LLMC_OK);
}

TEST_F(CApiTest, WrongTensors) {
  Tokens t;
  auto in = t.tensors();
  double loss = -1;
  EXPECT_STATUS(llmc_step_run(step, in.data(), 1, 1e-3, &loss),
                LLMC_ERROR_INVALID_ARGUMENT, "the step takes 2 inputs");
  auto bad = in;
  bad[0].dtype = LLMC_I32;
  EXPECT_STATUS(llmc_step_run(step, bad.data(), 2, 1e-3, &loss),
                LLMC_ERROR_INVALID_ARGUMENT,
                "input 'idx' (#0) is i32[2, 16] but the model expects "
                "i64[2, 16]");
  bad = in;
  int64_t flat[1] = {32};
  bad[1].rank = 1;
  bad[1].shape = flat;
  EXPECT_STATUS(llmc_step_run(step, bad.data(), 2, 1e-3, &loss),
                LLMC_ERROR_INVALID_ARGUMENT,
                "input 'tgt' (#1) is i64[32] but the model expects i64[2, 16]");
  bad = in;
  bad[0].device = LLMC_CUDA;
  EXPECT_STATUS(llmc_step_run(step, bad.data(), 2, 1e-3, &loss),
                LLMC_ERROR_INVALID_ARGUMENT, "is in GPU memory");
  bad = in;
  bad[0].dtype = 42;
  EXPECT_STATUS(llmc_step_run(step, bad.data(), 2, 1e-3, &loss),
                LLMC_ERROR_INVALID_ARGUMENT, "input #0: unknown dtype code 42");
  bad = in;
  bad[0].device = 7;
  EXPECT_STATUS(llmc_step_evaluate(step, bad.data(), 2, &loss),
                LLMC_ERROR_INVALID_ARGUMENT, "unknown device code 7");
  bad = in;
  bad[0].shape = nullptr;
  EXPECT_STATUS(llmc_step_run(step, bad.data(), 2, 1e-3, &loss),
                LLMC_ERROR_INVALID_ARGUMENT, "needs a shape array");
  EXPECT_STATUS(llmc_step_run(step, nullptr, 2, 1e-3, &loss),
                LLMC_ERROR_INVALID_ARGUMENT, "inputs is NULL but n is 2");
  EXPECT_STATUS(llmc_step_run(step, in.data(), 2, std::nan(""), &loss),
                LLMC_ERROR_INVALID_ARGUMENT, "lr is NaN");
  std::vector<float> small(3);
  EXPECT_STATUS(
      llmc_step_get_parameter(step, "m.lnf.bias", small.data(), 12),
      LLMC_ERROR_INVALID_ARGUMENT,
      "parameter 'm.lnf.bias' has 256 bytes, dst has 12");
  EXPECT_STATUS(llmc_step_get_parameter(step, "nope", small.data(), 12),
                LLMC_ERROR_INVALID_ARGUMENT, "no parameter 'nope'");
  EXPECT_EQ(loss, -1);
  int64_t steps = -1;
  ASSERT_EQ(llmc_step_steps_taken(step, &steps), LLMC_OK);
  EXPECT_EQ(steps, 0);
}

TEST(CApi, CompileErrors) {
  llmc_step *step = reinterpret_cast<llmc_step *>(1);
  EXPECT_STATUS(llmc_compile("/nonexistent.onnx", nullptr, &step),
                LLMC_ERROR_COMPILE, "cannot read '/nonexistent.onnx'");
  EXPECT_EQ(step, nullptr);
  EXPECT_STATUS(llmc_compile_json_graph(
                    R"({"format": "llmc-graph", "version": 1,
                        "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
                        "nodes": [{"op": "frobnicate", "inputs": ["x"],
                                   "outputs": ["y"]}],
                        "outputs": ["y"]})",
                    nullptr, &step),
                LLMC_ERROR_COMPILE, "frobnicate");
  EXPECT_STATUS(llmc_compile(kTiny.c_str(), "{\"batch\": \"two\"}", &step),
                LLMC_ERROR_INVALID_ARGUMENT,
                "option 'batch' must be an integer, got \"two\"");
  EXPECT_STATUS(llmc_compile(kTiny.c_str(), "{\"device\": \"tpu\"}", &step),
                LLMC_ERROR_INVALID_ARGUMENT,
                "option 'device' must be \"cpu\" or \"cuda\"");
  EXPECT_STATUS(llmc_compile(kTiny.c_str(), "[1, 2]", &step),
                LLMC_ERROR_INVALID_ARGUMENT, "options are not a JSON object");
  EXPECT_STATUS(llmc_compile(kTiny.c_str(), "{\"precision\": \"fp4\"}", &step),
                LLMC_ERROR_COMPILE, "precision 'fp4' is not one of fp32, bf16");
  EXPECT_STATUS(llmc_compile(nullptr, nullptr, &step),
                LLMC_ERROR_INVALID_ARGUMENT, "model_path is NULL");
  EXPECT_STATUS(llmc_compile(kTiny.c_str(), nullptr, nullptr),
                LLMC_ERROR_INVALID_ARGUMENT, "out is NULL");
}

TEST(CApi, ErrorsAreThreadLocal) {
  llmc_step *step = nullptr;
  EXPECT_NE(llmc_compile("/nonexistent.onnx", nullptr, &step), LLMC_OK);
  std::string other = "unset";
  std::thread([&] { other = llmc_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(lastError(), "");
  // A success clears the calling thread's message.
  EXPECT_EQ(llmc_step_destroy(nullptr), LLMC_OK);
  EXPECT_EQ(lastError(), "");
}

} // namespace
