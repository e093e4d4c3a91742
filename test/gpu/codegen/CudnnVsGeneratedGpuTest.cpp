//===- CudnnVsGeneratedGpuTest.cpp - the two attention backends -----------===//
//
// cuDNN's fused attention and llmc's generated kernels (attention_lse,
// attention_grad) on the same random bf16 inputs at GPT-2 124M's shape
// ([B 16, H 12, T 1024, D 64], causal): O, lse, dQ, dK, dV of the two
// agree, and each is within bf16 tolerance of a float64 reference on two
// (batch, head) pairs; then both are timed (best of 20) and the times
// printed, which is what `--attention-backend auto` decides on
// (docs/codegen.md, "cuDNN attention"). Skips without a GPU or cuDNN.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/CudnnAttentionTestUtil.h"
#include "test/gpu/codegen/GpuHarness.h"

#include "compiler/Pipeline.h"
#include "compiler/codegen/FunctionLowering.h"
#include "compiler/codegen/PlanBuilder.h"
#include "dialects/llmc/LlmcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"

#include <cstdio>

using namespace llmc;
using namespace llmc::test;

namespace {

std::string attentionStep(int64_t B, int64_t H, int64_t T, int64_t D,
                          bool causal) {
  auto t = [](std::initializer_list<int64_t> dims, const char *e) {
    std::string s = "tensor<";
    for (int64_t d : dims)
      s += std::to_string(d) + "x";
    return s + e + ">";
  };
  std::string x = t({B, H, T, D}, "bf16"), lse = t({B, H, T}, "f32");
  std::string attr = causal ? " {causal}" : "";
  return "func.func @forward(%q: " + x + ", %k: " + x + ", %v: " + x +
         ", %dy: " + x + ") -> (" + x + ", " + lse + ", " + x + ", " + x +
         ", " + x + ") {\n  %o, %lse = llmc.attention_lse %q, %k, %v" + attr +
         " : (" + x + ", " + x + ", " + x + ") -> (" + x + ", " + lse +
         ")\n  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %lse, %dy" +
         attr + " : (" + x + ", " + x + ", " + x + ", " + x + ", " + lse +
         ", " + x + ") -> (" + x + ", " + x + ", " + x + ")\n  return %o, "
         "%lse, %dq, %dk, %dv : " + x + ", " + lse + ", " + x + ", " + x +
         ", " + x + "\n}\n";
}

std::vector<uint8_t> bytesOf(const std::vector<uint16_t> &bits) {
  std::vector<uint8_t> b(bits.size() * 2);
  std::memcpy(b.data(), bits.data(), b.size());
  return b;
}

std::vector<double> valuesOf(const std::vector<uint8_t> &bytes, bool f32) {
  std::vector<double> v(bytes.size() / (f32 ? 4 : 2));
  for (size_t i = 0; i < v.size(); ++i) {
    if (f32) {
      float x;
      std::memcpy(&x, bytes.data() + 4 * i, 4);
      v[i] = x;
    } else {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      v[i] = bitsToFloat(h, FloatFormat::BF16);
    }
  }
  return v;
}

/// Runs the generated kernels of `mlir` once on the case's inputs; the five
/// results as doubles.
void runGenerated(const std::string &mlir, const AttentionCase &c,
                  std::vector<std::vector<double>> &results) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(mlir, &context);
  ASSERT_TRUE(module) << "test IR does not parse";
  auto func = module->lookupSymbol<mlir::func::FuncOp>("forward");
  ASSERT_TRUE(succeeded(runKernelPipeline(*module)));
  auto lowered = codegen::lowerFunction(func, codegen::CodegenOptions());
  ASSERT_TRUE(succeeded(lowered));
  auto plan = codegen::buildUnplannedPlan(func, *lowered);
  ASSERT_TRUE(succeeded(plan));
  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.source = "cudnn-vs-generated";
  Status s = Executor::create(plan->plan, eo, exec);
  ASSERT_TRUE(s) << s.message();
  const std::vector<uint16_t> *inputs[] = {&c.qBits, &c.kBits, &c.vBits,
                                           &c.dOBits};
  for (int i = 0; i < 4; ++i) {
    std::vector<uint8_t> b = bytesOf(*inputs[i]);
    s = exec->writeBuffer(plan->argumentBuffers[i], b.data(), b.size());
    ASSERT_TRUE(s) << s.message();
  }
  s = exec->runPlain();
  ASSERT_TRUE(s) << s.message();
  results.clear();
  for (int i = 0; i < 5; ++i) {
    std::vector<uint8_t> bytes;
    s = exec->readBuffer(plan->resultBuffers[i], bytes);
    ASSERT_TRUE(s) << s.message();
    results.push_back(valuesOf(bytes, i == 1));
  }
}

/// Best of `n` runs of `plan` on the session's stream, in ms.
double bestCudnnMs(DeviceSession &dev, CudnnAttention &plan,
                   const CudnnAttentionArgs &args, int n) {
  const cuda::DriverApi &cu = dev.cu();
  CUevent start, stop;
  EXPECT_EQ(cu.cuEventCreate(&start, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  EXPECT_EQ(cu.cuEventCreate(&stop, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  double best = -1;
  for (int i = 0; i < n; ++i) {
    cu.cuEventRecord(start, dev.stream());
    Status s = plan.run(dev.stream(), args);
    EXPECT_TRUE(s) << s.message();
    cu.cuEventRecord(stop, dev.stream());
    cu.cuEventSynchronize(stop);
    float ms = 0;
    cu.cuEventElapsedTime(&ms, start, stop);
    if (best < 0 || ms < best)
      best = ms;
  }
  cu.cuEventDestroy(start);
  cu.cuEventDestroy(stop);
  return best;
}

/// The (b, h) rows of a contiguous [B, H, T, X] tensor.
std::vector<double> head(const std::vector<double> &all, int64_t H, int64_t T,
                         int64_t X, int64_t b, int64_t h) {
  auto first = all.begin() + (b * H + h) * T * X;
  return std::vector<double>(first, first + T * X);
}

void compareAtShape(int64_t B, int64_t H, int64_t T, int64_t D, bool causal,
                    bool time) {
  DeviceSession dev;
  Status st = dev.open();
  ASSERT_TRUE(st) << st.message();
  AttentionCase c;
  st = makeCase(dev, B, H, H, T, D, causal, true, false, 2024, c);
  ASSERT_TRUE(st) << st.message();
  CudnnRun run;
  st = prepareCudnn(dev, c, run);
  ASSERT_TRUE(st) << st.message();
  st = runCudnn(dev, c, run);
  ASSERT_TRUE(st) << st.message();

  std::string mlir = attentionStep(B, H, T, D, causal);
  std::vector<std::vector<double>> gen;
  runGenerated(mlir, c, gen);
  ASSERT_EQ(gen.size(), 5u);

  std::vector<std::vector<double>> cud(5);
  std::vector<uint16_t> bits;
  CUdeviceptr outs[] = {c.args.o, 0, c.args.dQ, c.args.dK, c.args.dV};
  size_t n = static_cast<size_t>(B * H * T * D);
  for (int i = 0; i < 5; ++i) {
    if (i == 1) {
      std::vector<float> stats;
      ASSERT_TRUE(dev.download(c.args.stats, static_cast<size_t>(B * H * T),
                               stats));
      cud[1].assign(stats.begin(), stats.end());
      continue;
    }
    ASSERT_TRUE(dev.download(outs[i], n, bits));
    cud[i].resize(n);
    for (size_t j = 0; j < n; ++j)
      cud[i][j] = bitsToFloat(bits[j], FloatFormat::BF16);
  }
  const char *names[] = {"O", "lse", "dQ", "dK", "dV"};
  for (int i = 0; i < 5; ++i) {
    double e = relativeError(cud[i], gen[i]);
    std::printf("[ cudnn ] %s: cuDNN vs generated, relative L2 %.2e\n",
                names[i], e);
    EXPECT_LT(e, i == 1 ? 1e-5 : 1.5e-2) << names[i];
  }
  // Both against float64 on the first and the last (batch, head).
  for (auto [b, h] : {std::pair<int64_t, int64_t>{0, 0}, {B - 1, H - 1}}) {
    HeadReference r = referenceHead(c, b, h);
    const std::vector<double> *want[] = {&r.o, &r.lse, &r.dq, &r.dk, &r.dv};
    for (int i = 0; i < 5; ++i) {
      int64_t x = i == 1 ? 1 : D;
      double ec = relativeError(head(cud[i], H, T, x, b, h), *want[i]);
      double eg = relativeError(head(gen[i], H, T, x, b, h), *want[i]);
      std::printf("[ cudnn ] %s (batch %lld head %lld) vs float64: cuDNN "
                  "%.2e, generated %.2e\n",
                  names[i], static_cast<long long>(b),
                  static_cast<long long>(h), ec, eg);
      EXPECT_LT(ec, i == 1 ? 1e-5 : 1e-2) << "cuDNN " << names[i];
      EXPECT_LT(eg, i == 1 ? 1e-5 : 1e-2) << "generated " << names[i];
    }
  }
  if (!time)
    return;
  double fwd = bestCudnnMs(dev, *run.fwd, c.args, 20);
  double bwd = bestCudnnMs(dev, *run.bwd, c.args, 20);
  // The atomic-dQ backward: what determinism costs.
  CudnnAttentionDesc fast = c.bwd;
  fast.deterministic = false;
  std::unique_ptr<CudnnAttention> atomic;
  Status made = CudnnAttention::create(fast, atomic);
  double bwdAtomic = -1;
  if (made) {
    CUdeviceptr ws = 0;
    ASSERT_TRUE(dev.alloc(atomic->workspaceBytes(), ws));
    CudnnAttentionArgs a = c.args;
    a.workspace = ws;
    bwdAtomic = bestCudnnMs(dev, *atomic, a, 20);
  } else {
    std::printf("[ cudnn ] atomic-dQ backward unavailable: %s\n",
                made.message().c_str());
  }
  double generated = bestReplayMs(mlir, 20);
  std::printf("[ cudnn ] attention [%lld, %lld, %lld, %lld] bf16%s: cuDNN "
              "fwd %.4f ms + bwd %.4f ms (deterministic; atomic dQ %.4f ms) "
              "= %.4f ms; generated fwd+bwd %.4f ms\n",
              static_cast<long long>(B), static_cast<long long>(H),
              static_cast<long long>(T), static_cast<long long>(D),
              causal ? " causal" : "", fwd, bwd, bwdAtomic, fwd + bwd,
              generated);
  for (const auto &[label, ms] : stepReplayMs(mlir, 10))
    std::printf("[ cudnn ] generated: %-40s %.4f ms\n", label.c_str(), ms);
  EXPECT_GT(fwd, 0.0);
  EXPECT_GT(bwd, 0.0);
}

// GPT-2 124M's attention: the numbers the coordinator's checkpoint asks for.
TEST(CudnnVsGeneratedGpu, Gpt2ShapeAgreesAndTimes) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  compareAtShape(16, 12, 1024, 64, true, true);
}

// Non-causal and a T that is not a tile multiple.
TEST(CudnnVsGeneratedGpu, NonCausalOddLength) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  compareAtShape(2, 4, 200, 64, false, false);
}

} // namespace
