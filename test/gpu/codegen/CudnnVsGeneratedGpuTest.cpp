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
#include "runtime/DeviceMemory.h"
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
  // cuDNN on the layout the GPT step has: q, k, v head windows of the
  // packed [B, T, 3C] qkv, o and the gradients [B, T, H, D] (what the
  // compiled step's cuDNN steps read; `auto` times this layout).
  AttentionCase packed;
  ASSERT_TRUE(makeCase(dev, B, H, H, T, D, causal, true, true, 77, packed));
  CudnnRun packedRun;
  ASSERT_TRUE(prepareCudnn(dev, packed, packedRun));
  double packedFwd = bestCudnnMs(dev, *packedRun.fwd, packed.args, 20);
  double packedBwd = bestCudnnMs(dev, *packedRun.bwd, packed.args, 20);
  std::printf("[ cudnn ] cuDNN on the packed qkv layout: fwd %.4f ms + bwd "
              "%.4f ms = %.4f ms\n",
              packedFwd, packedBwd, packedFwd + packedBwd);
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

/// The GPT block of StridedAttentionGpuTest: packed qkv [B, T, 3C] in,
/// y [B, T, C] and the packed gradient out; after the strided and qkv-slice
/// folds attention reads head windows of qkv in place.
std::string gptBlock(int64_t B, int64_t T, int64_t H, int64_t D) {
  auto dims = [](std::initializer_list<int64_t> shape, const char *e) {
    std::string s = "tensor<";
    for (int64_t d : shape)
      s += std::to_string(d) + "x";
    return s + e + ">";
  };
  int64_t C = H * D;
  std::string btc = dims({B, T, C}, "bf16"), bt3c = dims({B, T, 3 * C}, "bf16"),
              bthd = dims({B, T, H, D}, "bf16"),
              bhtd = dims({B, H, T, D}, "bf16"), lse = dims({B, H, T}, "f32");
  std::string c = std::to_string(C);
  std::string s = "func.func @forward(%qkv: " + bt3c + ", %dy: " + btc +
                  ") -> (" + btc + ", " + bt3c + ") {\n";
  s += "  %q, %k, %v = llmc.split %qkv axis 2 sizes [" + c + ", " + c + ", " +
       c + "] : (" + bt3c + ") -> (" + btc + ", " + btc + ", " + btc + ")\n";
  for (const char *x : {"q", "k", "v", "dy"}) {
    std::string n = x;
    s += "  %" + n + "4 = llmc.reshape %" + n + " : " + btc + " -> " + bthd +
         "\n  %" + n + "t = llmc.transpose %" + n + "4 [0, 2, 1, 3] : (" +
         bthd + ") -> " + bhtd + "\n";
  }
  s += "  %o, %lse = llmc.attention_lse %qt, %kt, %vt {causal} : (" + bhtd +
       ", " + bhtd + ", " + bhtd + ") -> (" + bhtd + ", " + lse + ")\n";
  s += "  %ot = llmc.transpose %o [0, 2, 1, 3] : (" + bhtd + ") -> " + bthd +
       "\n  %y = llmc.reshape %ot : " + bthd + " -> " + btc + "\n";
  s += "  %dq, %dk, %dv = llmc.attention_grad %qt, %kt, %vt, %o, %lse, %dyt "
       "{causal} : (" + bhtd + ", " + bhtd + ", " + bhtd + ", " + bhtd + ", " +
       lse + ", " + bhtd + ") -> (" + bhtd + ", " + bhtd + ", " + bhtd + ")\n";
  for (const char *x : {"dq", "dk", "dv"}) {
    std::string n = x;
    s += "  %" + n + "t = llmc.transpose %" + n + " [0, 2, 1, 3] : (" + bhtd +
         ") -> " + bthd + "\n  %" + n + "r = llmc.reshape %" + n + "t : " +
         bthd + " -> " + btc + "\n";
  }
  s += "  %dqkv = llmc.concat %dqr, %dkr, %dvr axis 2 : (" + btc + ", " + btc +
       ", " + btc + ") -> " + bt3c + "\n  return %y, %dqkv : " + btc + ", " +
       bt3c + "\n}\n";
  return s;
}

/// Lowers `mlir` with or without cuDNN steps, runs two CUDA-graph replays
/// on `inputs` through the executor, and returns each result's bytes after
/// each replay.
void runPlan(const std::string &mlir, bool cudnn,
             const std::vector<std::vector<uint8_t>> &inputs,
             std::vector<std::vector<uint8_t>> &first,
             std::vector<std::vector<uint8_t>> &second, size_t &attentionSteps) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(mlir, &context);
  ASSERT_TRUE(module) << "test IR does not parse";
  auto func = module->lookupSymbol<mlir::func::FuncOp>("forward");
  ASSERT_TRUE(succeeded(runKernelPipeline(*module)));
  codegen::CodegenOptions options;
  options.cudnnAttention = cudnn;
  auto lowered = codegen::lowerFunction(func, options);
  ASSERT_TRUE(succeeded(lowered));
  auto plan = codegen::buildUnplannedPlan(func, *lowered);
  ASSERT_TRUE(succeeded(plan));
  attentionSteps = 0;
  for (const Step &step : plan->plan.steps)
    attentionSteps += std::holds_alternative<AttentionStep>(step.op);
  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.source = cudnn ? "cudnn steps" : "generated";
  Status s = Executor::create(plan->plan, eo, exec);
  ASSERT_TRUE(s) << s.message();
  std::printf("[ cudnn ] %s plan: %zu steps, memory:\n%s", eo.source.c_str(),
              plan->plan.steps.size(),
              formatDeviceMemory(exec->memoryPlan(), "  ").c_str());
  for (size_t i = 0; i < inputs.size(); ++i) {
    s = exec->writeBuffer(plan->argumentBuffers[i], inputs[i].data(),
                          inputs[i].size());
    ASSERT_TRUE(s) << s.message();
  }
  for (auto *out : {&first, &second}) {
    s = exec->replay();
    ASSERT_TRUE(s) << s.message();
    out->clear();
    for (const std::string &name : plan->resultBuffers) {
      std::vector<uint8_t> bytes;
      s = exec->readBuffer(name, bytes);
      ASSERT_TRUE(s) << s.message();
      out->push_back(std::move(bytes));
    }
  }
}

// The whole path: codegen emits cuDNN steps for the GPT block's packed
// attention, the executor finalizes their plans at load and captures them
// into the step's CUDA graph; the results match the generated kernels' and
// two replays give the same bits.
TEST(CudnnVsGeneratedGpu, ExecutorStepsMatchGenerated) {
  LLMC_REQUIRE_GPU_AND_CUDNN();
  const int64_t B = 2, T = 256, H = 4, D = 64, C = H * D;
  std::mt19937_64 rng(11);
  std::vector<std::vector<uint8_t>> inputs = {
      bytesOf(randomBits(B * T * 3 * C, FloatFormat::BF16, rng)),
      bytesOf(randomBits(B * T * C, FloatFormat::BF16, rng))};
  std::string mlir = gptBlock(B, T, H, D);
  std::vector<std::vector<uint8_t>> gen, gen2, cud, cud2;
  size_t genSteps = 0, cudSteps = 0;
  runPlan(mlir, false, inputs, gen, gen2, genSteps);
  runPlan(mlir, true, inputs, cud, cud2, cudSteps);
  EXPECT_EQ(genSteps, 0u);
  EXPECT_EQ(cudSteps, 2u) << "the forward and the backward";
  ASSERT_EQ(gen.size(), 2u);
  ASSERT_EQ(cud.size(), 2u);
  const char *names[] = {"y", "dqkv"};
  for (int i = 0; i < 2; ++i) {
    double e = relativeError(valuesOf(cud[i], false), valuesOf(gen[i], false));
    std::printf("[ cudnn ] executor %s: cuDNN steps vs generated, relative L2 "
                "%.2e\n",
                names[i], e);
    EXPECT_LT(e, 1.5e-2) << names[i];
    EXPECT_TRUE(cud[i] == cud2[i]) << names[i] << " differs between replays";
  }
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
