//===- GpuHarness.cpp - Run a function's kernels and the reference --------===//
#include "test/gpu/codegen/GpuHarness.h"

#include "compiler/Pipeline.h"
#include "compiler/codegen/Emitters.h"
#include "compiler/codegen/PlanBuilder.h"
#include "compiler/eval/DeviceTensors.h"
#include "compiler/eval/Evaluator.h"
#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/LlmcOps.h"
#include "passes/FusionUtils.h"
#include "runtime/Executor.h"
#include "runtime/Nvrtc.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/DenseSet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

using namespace mlir;

namespace llmc::test {

namespace {

/// What `llmc compile` lowers: the function's kernel groups (bias epilogues
/// fused, in-place updates marked). The evaluator runs groups as their ops.
FailureOr<codegen::LoweredFunction>
lowerGroups(func::FuncOp func, const codegen::CodegenOptions &options,
            const FusionConfig &fusion = {}) {
  if (failed(runKernelPipeline(func->getParentOfType<ModuleOp>(), fusion)))
    return failure();
  return codegen::lowerFunction(func, options);
}

uint64_t runSeed() {
  static const uint64_t seed = [] {
    if (const char *s = std::getenv("LLMC_TEST_SEED"))
      return static_cast<uint64_t>(std::strtoull(s, nullptr, 10));
    return static_cast<uint64_t>(std::random_device{}());
  }();
  return seed;
}

RefTensor randomArgument(func::FuncOp func, unsigned i, std::mt19937_64 &rng,
                         double floatScale) {
  auto type = cast<RankedTensorType>(func.getArgument(i).getType());
  ElementKind kind = *kindOf(type.getElementType());
  RefTensor t(kind, {type.getShape().begin(), type.getShape().end()});
  int64_t lo = 0, hi = 8;
  if (auto scale = func.getArgAttrOfType<FloatAttr>(i, "gpu_test.scale"))
    floatScale = scale.getValueAsDouble();
  bool zeros = static_cast<bool>(func.getArgAttr(i, "gpu_test.zeros"));
  bool absolute = static_cast<bool>(func.getArgAttr(i, "gpu_test.abs"));
  if (auto range =
          func.getArgAttrOfType<DenseI64ArrayAttr>(i, "gpu_test.range")) {
    lo = range[0];
    hi = range[1];
  }
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int64_t> uniform(lo, hi - 1);
  for (int64_t e = 0, n = t.numElements(); e < n; ++e) {
    if (t.isFloat()) {
      double x = zeros ? 0.0 : normal(rng) * floatScale;
      t.floats[e] = roundToKind(absolute ? std::fabs(x) : x, kind);
    } else if (kind == ElementKind::I1)
      t.ints[e] = rng() & 1;
    else
      t.ints[e] = uniform(rng);
  }
  return t;
}

std::string resultName(func::FuncOp func, unsigned i) {
  if (auto n = func.getResultAttrOfType<StringAttr>(i, "llmc.output"))
    return n.getValue().str();
  return "#" + std::to_string(i);
}

/// Expects `gpu` within `tol` of `ref`; false when it is not.
bool compare(const std::string &what, const RefTensor &gpu,
             const RefTensor &ref, Tolerance tol) {
  EXPECT_EQ(gpu.numElements(), ref.numElements()) << what;
  if (gpu.numElements() != ref.numElements())
    return false;
  if (!ref.isFloat()) {
    int64_t mismatches = 0, first = -1;
    for (int64_t e = 0; e < ref.numElements(); ++e)
      if (gpu.ints[e] != ref.ints[e] && mismatches++ == 0)
        first = e;
    std::printf("[ numerics ] %s %s: %lld of %lld elements differ\n",
                what.c_str(), ref.typeString().c_str(),
                static_cast<long long>(mismatches),
                static_cast<long long>(ref.numElements()));
    EXPECT_EQ(mismatches, 0)
        << what << ": first at element " << first << ": gpu "
        << (first >= 0 ? gpu.ints[first] : 0) << ", reference "
        << (first >= 0 ? ref.ints[first] : 0);
    return mismatches == 0;
  }
  double diff = 0, norm = 0;
  int64_t nanMismatch = 0, firstNan = -1;
  for (int64_t e = 0; e < ref.numElements(); ++e) {
    double r = ref.floats[e], g = gpu.floats[e];
    if (std::isnan(r) || std::isnan(g) || std::isinf(r) || std::isinf(g)) {
      bool differs = std::isnan(r) || std::isnan(g)
                         ? std::isnan(r) != std::isnan(g)
                         : r != g;
      if (differs && nanMismatch++ == 0)
        firstNan = e;
      continue;
    }
    diff += (g - r) * (g - r);
    norm += r * r;
  }
  double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  double limit = ref.kind == ElementKind::F32 ? tol.f32 : tol.low;
  std::printf("[ numerics ] %s %s: relative L2 error %.3g (tolerance %.0e)\n",
              what.c_str(), ref.typeString().c_str(), rel, limit);
  EXPECT_EQ(nanMismatch, 0)
      << what << ": NaN/inf positions differ at " << nanMismatch
      << " elements; the first, element " << firstNan << ": gpu "
      << (firstNan >= 0 ? gpu.floats[firstNan] : 0.0) << ", reference "
      << (firstNan >= 0 ? ref.floats[firstNan] : 0.0);
  EXPECT_LT(rel, limit) << what;
  return nanMismatch == 0 && rel < limit;
}

} // namespace

void checkCompiles(const std::string &mlir) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(mlir, &context);
  ASSERT_TRUE(module) << "test IR does not parse";
  auto func = module->lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(func) << "test IR has no @forward";
  checkFunctionCompiles(func);
}

void checkFunctionCompiles(func::FuncOp func) {
  auto lowered = lowerGroups(func, codegen::CodegenOptions());
  ASSERT_TRUE(succeeded(lowered)) << "code generation failed";
  auto plan = codegen::buildUnplannedPlan(func, *lowered);
  ASSERT_TRUE(succeeded(plan)) << "plan building failed";
  std::vector<CompileRequest> requests;
  for (const KernelInfo &k : plan->plan.kernels)
    requests.push_back({k.name, k.source, CompileOptions()});
  std::vector<CompileResult> results = compileAll(requests);
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_TRUE(results[i].status) << results[i].status.message();
    EXPECT_FALSE(results[i].cubin.empty()) << requests[i].name;
  }
  std::mt19937_64 rng(runSeed());
  std::vector<RefTensor> args;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    args.push_back(randomArgument(func, i, rng, 1.0));
  EXPECT_TRUE(succeeded(evaluate(func, args))) << "the reference failed";
}

void checkAgainstReference(const std::string &mlir, Tolerance tol,
                           double floatScale) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(mlir, &context);
  ASSERT_TRUE(module) << "test IR does not parse";
  auto func = module->lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(func) << "test IR has no @forward";
  checkFunctionAgainstReference(func, tol, floatScale);
}

namespace {

/// The best of `replays` graph replays of `plan` with random arguments.
double bestOf(const Plan &plan, func::FuncOp func,
              const std::vector<std::string> &argumentBuffers, int replays) {
  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.source = "timing";
  Status s = Executor::create(plan, eo, exec);
  EXPECT_TRUE(s) << s.message();
  if (!s)
    return -1;
  std::mt19937_64 rng(runSeed());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    std::vector<uint8_t> bytes =
        toDeviceBytes(randomArgument(func, i, rng, 1.0));
    s = exec->writeBuffer(argumentBuffers[i], bytes.data(), bytes.size());
    EXPECT_TRUE(s) << s.message();
    if (!s)
      return -1;
  }
  double best = -1;
  for (int r = 0; r < replays; ++r) {
    float ms = 0;
    s = exec->replay();
    if (s)
      s = exec->lastRunMs(ms);
    EXPECT_TRUE(s) << s.message();
    if (!s)
      return -1;
    if (best < 0 || ms < best)
      best = ms;
  }
  return best;
}

/// Parses `mlir` and plans its @forward; false (and a gtest failure) when
/// that fails.
bool planForward(const std::string &mlir, MLIRContext &context,
                 OwningOpRef<ModuleOp> &module, func::FuncOp &func,
                 codegen::UnplannedPlan &plan,
                 const FusionConfig &fusion = {}) {
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  module = parseSourceString<ModuleOp>(mlir, &context);
  func = module ? module->lookupSymbol<func::FuncOp>("forward") : nullptr;
  EXPECT_TRUE(func) << "test IR does not parse or has no @forward";
  if (!func)
    return false;
  auto lowered = lowerGroups(func, codegen::CodegenOptions(), fusion);
  auto planned = succeeded(lowered)
                     ? codegen::buildUnplannedPlan(func, *lowered)
                     : FailureOr<codegen::UnplannedPlan>();
  EXPECT_TRUE(succeeded(planned)) << "code generation failed";
  if (failed(planned))
    return false;
  plan = std::move(*planned);
  return true;
}

} // namespace

double bestReplayMs(const std::string &mlir, int replays,
                    const FusionConfig &fusion) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  codegen::UnplannedPlan plan;
  if (!planForward(mlir, context, module, func, plan, fusion))
    return -1;
  return bestOf(plan.plan, func, plan.argumentBuffers, replays);
}

double measuredCopyGBs() {
  static const double gbs = [] {
    MLIRContext context;
    OwningOpRef<ModuleOp> module;
    func::FuncOp func;
    codegen::UnplannedPlan plan;
    // Any plan gives an executor on the device; the copy is its own.
    if (!planForward(R"(func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = llmc.neg %x : tensor<4xf32>
  return %0 : tensor<4xf32>
})",
                     context, module, func, plan))
      return 0.0;
    std::unique_ptr<Executor> exec;
    ExecutorOptions eo;
    eo.source = "copy bandwidth";
    double g = 0;
    Status s = Executor::create(plan.plan, eo, exec);
    if (s)
      s = exec->measureCopyBandwidth(g);
    EXPECT_TRUE(s) << s.message();
    return s ? g : 0.0;
  }();
  return gbs;
}

std::vector<std::pair<std::string, double>>
stepReplayMs(const std::string &mlir, int replays,
             const FusionConfig &fusion) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  codegen::UnplannedPlan plan;
  std::vector<std::pair<std::string, double>> out;
  if (!planForward(mlir, context, module, func, plan, fusion))
    return out;
  double before = 0;
  for (size_t k = 1; k <= plan.plan.steps.size(); ++k) {
    Plan prefix = plan.plan;
    prefix.steps.resize(k);
    double ms = bestOf(prefix, func, plan.argumentBuffers, replays);
    if (ms < 0)
      return {};
    out.push_back({plan.plan.steps[k - 1].label, ms - before});
    before = ms;
  }
  return out;
}

void checkFunctionAgainstReference(func::FuncOp func, Tolerance tol,
                                   double floatScale) {
  codegen::CodegenOptions options;
  auto lowered = lowerGroups(func, options);
  ASSERT_TRUE(succeeded(lowered)) << "code generation failed";
  auto plan = codegen::buildUnplannedPlan(func, *lowered);
  ASSERT_TRUE(succeeded(plan)) << "plan building failed";

  uint64_t seed = runSeed();
  std::mt19937_64 rng(seed);
  std::vector<RefTensor> args;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    args.push_back(randomArgument(func, i, rng, floatScale));

  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.source = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  eo.syncEachStep = true;
  Status s = Executor::create(plan->plan, eo, exec);
  ASSERT_TRUE(s) << s.message();
  for (unsigned i = 0; i < args.size(); ++i) {
    std::vector<uint8_t> bytes = toDeviceBytes(args[i]);
    s = exec->writeBuffer(plan->argumentBuffers[i], bytes.data(), bytes.size());
    ASSERT_TRUE(s) << s.message();
  }
  s = exec->runPlain();
  ASSERT_TRUE(s) << s.message();

  auto ref = evaluate(func, args);
  ASSERT_TRUE(succeeded(ref)) << "the reference evaluator failed";
  std::string test =
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::printf("[ numerics ] %s: seed %llu, %zu kernels\n", test.c_str(),
              static_cast<unsigned long long>(seed), lowered->kernelCount());
  std::vector<std::vector<uint8_t>> plain(func.getNumResults());
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    s = exec->readBuffer(plan->resultBuffers[i], plain[i]);
    ASSERT_TRUE(s) << s.message();
    const RefTensor &r = (*ref)[i];
    RefTensor gpu = fromDeviceBytes(plain[i], r.kind, r.shape);
    compare(test + " result " + resultName(func, i), gpu, r, tol);
  }

  // The same plan as a CUDA graph, twice: the kernels are deterministic
  // (fixed reduction orders, no atomics), so every result is bitwise equal
  // to the plain run's.
  for (int replay = 0; replay < 2; ++replay) {
    s = exec->replay();
    ASSERT_TRUE(s) << s.message();
  }
  float ms = 0;
  s = exec->lastRunMs(ms);
  ASSERT_TRUE(s) << s.message();
  size_t differing = 0;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    std::vector<uint8_t> bytes;
    s = exec->readBuffer(plan->resultBuffers[i], bytes);
    ASSERT_TRUE(s) << s.message();
    differing += bytes != plain[i];
  }
  std::printf("[ numerics ] %s: graph replay %.3f ms, %zu of %u results "
              "differ bitwise from the plain run\n",
              test.c_str(), ms, differing, func.getNumResults());
  EXPECT_EQ(differing, 0u) << "graph replay is not deterministic";

  // Persistent counters that a kernel puts back itself (a column sum's
  // tickets, ReduceEmitters.cpp; gather_grad's bucket counts,
  // ScatterEmitters.cpp) read zero after three runs: otherwise the next
  // step would skip its final phase and keep the last step's sums, which
  // the bitwise check above cannot see on unchanged inputs.
  for (const BufferInfo &b : plan->plan.buffers) {
    llvm::StringRef name(b.name);
    if (!name.ends_with(".tickets") && !name.ends_with(".counts"))
      continue;
    std::vector<uint8_t> bytes;
    s = exec->readBuffer(b.name, bytes);
    ASSERT_TRUE(s) << s.message();
    EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(),
                            [](uint8_t v) { return v == 0; }))
        << b.name << " is not back to zero after the run";
  }
}

void checkEveryValueAgainstReference(func::FuncOp func, Tolerance tol,
                                     double floatScale) {
  auto lowered = lowerGroups(func, codegen::CodegenOptions());
  ASSERT_TRUE(succeeded(lowered)) << "code generation failed";
  auto plan = codegen::buildUnplannedPlan(func, *lowered);
  ASSERT_TRUE(succeeded(plan)) << "plan building failed";
  std::mt19937_64 rng(runSeed());
  std::vector<RefTensor> args;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    args.push_back(randomArgument(func, i, rng, floatScale));
  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.source = "every value";
  eo.syncEachStep = true;
  Status s = Executor::create(plan->plan, eo, exec);
  ASSERT_TRUE(s) << s.message();
  for (unsigned i = 0; i < args.size(); ++i) {
    std::vector<uint8_t> bytes = toDeviceBytes(args[i]);
    s = exec->writeBuffer(plan->argumentBuffers[i], bytes.data(), bytes.size());
    ASSERT_TRUE(s) << s.message();
  }
  s = exec->runPlain();
  ASSERT_TRUE(s) << s.message();

  // The buffer of each value a launch wrote, by the op inside the group
  // that computes it (the evaluator shows a group's ops one by one). A
  // buffer that a later group overwrites (llmc-fuse-classifier's logits)
  // holds the later value: not compared.
  struct Watched {
    std::string buffer, label;
  };
  llvm::DenseMap<Value, Watched> watched;
  llvm::DenseSet<Value> overwritten;
  func.walk([&](mlir::llmc::KernelOp group) {
    for (unsigned j = 0; j < group.getNumResults(); ++j)
      if (int64_t in = mlir::llmc::fusion::overwrittenInput(group, j); in >= 0)
        overwritten.insert(mlir::llmc::fusion::groupInputs(group)[in]);
  });
  for (const codegen::LoweredOp &lo : lowered->ops)
    for (auto [j, r] : llvm::enumerate(lo.results)) {
      if (overwritten.count(r))
        continue;
      Value inner = r;
      if (auto group = r.getDefiningOp<mlir::llmc::KernelOp>()) {
        unsigned n = cast<OpResult>(r).getResultNumber();
        if (mlir::llmc::fusion::overwrittenInput(group, n) >= 0)
          continue;
        inner = group.getYield()->getOperand(n);
      }
      std::string buffer = lo.name + ".out" + std::to_string(j);
      if (plan->plan.findBuffer(buffer))
        watched[inner] = {buffer, codegen::KernelSource::origin(lo.op)};
    }

  std::string first;
  size_t checked = 0;
  auto observe = [&](Operation &op, const std::vector<RefTensor> &results) {
    for (auto [j, ref] : llvm::enumerate(results)) {
      auto it = watched.find(op.getResult(j));
      if (it == watched.end())
        continue;
      std::vector<uint8_t> bytes;
      Status read = exec->readBuffer(it->second.buffer, bytes);
      EXPECT_TRUE(read) << read.message();
      if (!read)
        return true;
      RefTensor gpu = fromDeviceBytes(bytes, ref.kind, ref.shape);
      std::string what = "[ value " + std::to_string(checked++) + " ] " +
                         it->second.buffer + " = " + it->second.label +
                         " result #" + std::to_string(j);
      if (!compare(what, gpu, ref, tol) && first.empty())
        first = what;
    }
    return false;
  };
  ASSERT_TRUE(succeeded(evaluate(func, args, observe)))
      << "the reference evaluator failed";
  std::printf("[ numerics ] %zu values compared (seed %llu)\n", checked,
              static_cast<unsigned long long>(runSeed()));
  if (!first.empty())
    std::printf("[ first divergence ] %s\n", first.c_str());
  EXPECT_GT(checked, 0u) << "no value of the plan was compared";
}

namespace {

/// One plain run of `function` in `mlir` with `fusion`: its results' device
/// bytes, their element kinds and shapes, and the plan's step count.
struct PlainRun {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<RefTensor> like; // kind and shape of each result
  size_t steps = 0;
};

void runPlainOnce(const std::string &mlir, const std::string &function,
                  const FusionConfig &fusion, double floatScale,
                  PlainRun &out) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(mlir, &context);
  ASSERT_TRUE(module) << "test IR does not parse";
  auto func = module->lookupSymbol<func::FuncOp>(function);
  ASSERT_TRUE(func) << "test IR has no @" << function;
  // The arguments before lowering: the reference sees the ungrouped step.
  std::mt19937_64 rng(runSeed());
  std::vector<RefTensor> args;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    args.push_back(randomArgument(func, i, rng, floatScale));
  auto lowered = lowerGroups(func, codegen::CodegenOptions(), fusion);
  ASSERT_TRUE(succeeded(lowered)) << "code generation failed";
  auto plan = codegen::buildUnplannedPlan(func, *lowered);
  ASSERT_TRUE(succeeded(plan)) << "plan building failed";
  out.steps = plan->plan.steps.size();
  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.source = "fusion";
  eo.syncEachStep = true;
  Status s = Executor::create(plan->plan, eo, exec);
  ASSERT_TRUE(s) << s.message();
  for (unsigned i = 0; i < args.size(); ++i) {
    std::vector<uint8_t> bytes = toDeviceBytes(args[i]);
    s = exec->writeBuffer(plan->argumentBuffers[i], bytes.data(), bytes.size());
    ASSERT_TRUE(s) << s.message();
  }
  s = exec->runPlain();
  ASSERT_TRUE(s) << s.message();
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    std::vector<uint8_t> bytes;
    s = exec->readBuffer(plan->resultBuffers[i], bytes);
    ASSERT_TRUE(s) << s.message();
    out.bytes.push_back(std::move(bytes));
    auto type = cast<RankedTensorType>(func.getResultTypes()[i]);
    out.like.emplace_back(*kindOf(type.getElementType()),
                          std::vector<int64_t>(type.getShape().begin(),
                                               type.getShape().end()));
  }
}

} // namespace

void checkFusedMatchesUnfused(const std::string &mlir,
                              const std::string &function, double floatScale,
                              bool bitwise, Tolerance tol) {
  // Bitwise holds for the exact rewrites only: the cuBLASLt GELU and
  // bias-gradient epilogues round once where the unfused kernels round the
  // product first (EpilogueGpuTest checks those against the evaluator).
  checkFusionConfigsMatch(mlir, function,
                          bitwise ? FusionConfig::exact() : FusionConfig(),
                          FusionConfig::none(), floatScale, bitwise, tol);
}

void checkFusionConfigsMatch(const std::string &mlir,
                             const std::string &function,
                             const FusionConfig &with,
                             const FusionConfig &without, double floatScale,
                             bool bitwise, Tolerance tol, bool fewerLaunches) {
  PlainRun fused, unfused;
  runPlainOnce(mlir, function, with, floatScale, fused);
  if (::testing::Test::HasFatalFailure())
    return;
  runPlainOnce(mlir, function, without, floatScale, unfused);
  if (::testing::Test::HasFatalFailure())
    return;
  std::string test =
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  ASSERT_EQ(fused.bytes.size(), unfused.bytes.size());
  size_t differing = 0;
  for (size_t i = 0; i < fused.bytes.size(); ++i) {
    bool same = fused.bytes[i] == unfused.bytes[i];
    differing += !same;
    if (!same) {
      const RefTensor &like = fused.like[i];
      RefTensor a = fromDeviceBytes(fused.bytes[i], like.kind,
                                             like.shape);
      RefTensor b = fromDeviceBytes(unfused.bytes[i], like.kind,
                                             like.shape);
      compare(test + " fused vs unfused result #" + std::to_string(i), a, b,
              tol);
    }
  }
  std::printf("[ fusion ] %s: seed %llu, %zu launches fused, %zu unfused; "
              "%zu of %zu results differ bitwise\n",
              test.c_str(), static_cast<unsigned long long>(runSeed()),
              fused.steps, unfused.steps, differing, fused.bytes.size());
  if (fewerLaunches)
    EXPECT_LT(fused.steps, unfused.steps) << "nothing was fused";
  else
    EXPECT_EQ(fused.steps, unfused.steps)
        << "the fusion moves work between launches, it removes none";
  if (bitwise) {
    EXPECT_EQ(differing, 0u)
        << "fused kernels must round exactly as the one-op kernels do";
  }
}

void checkEnvVariantsBitwiseEqual(const std::string &mlir, const char *var,
                                  const char *a, const char *b,
                                  const FusionConfig &fusion,
                                  const std::string &function) {
  const char *old = std::getenv(var);
  std::string saved = old ? old : "";
  auto set = [&](const char *value) {
    if (value)
      setenv(var, value, 1);
    else
      unsetenv(var);
  };
  PlainRun first, second;
  set(a);
  runPlainOnce(mlir, function, fusion, 1.0, first);
  set(b);
  if (!::testing::Test::HasFatalFailure())
    runPlainOnce(mlir, function, fusion, 1.0, second);
  set(old ? saved.c_str() : nullptr);
  if (::testing::Test::HasFatalFailure())
    return;
  ASSERT_EQ(first.bytes.size(), second.bytes.size());
  std::string what = std::string(var) + "=" + (a ? a : "(unset)") + " vs " +
                     (b ? b : "(unset)");
  size_t differing = 0;
  for (size_t i = 0; i < first.bytes.size(); ++i) {
    bool same = first.bytes[i] == second.bytes[i];
    differing += !same;
    EXPECT_TRUE(same) << what << ": result #" << i << " differs bitwise";
  }
  std::printf("[ variants ] %s: seed %llu, %zu of %zu results differ "
              "bitwise\n",
              what.c_str(), static_cast<unsigned long long>(runSeed()),
              differing, first.bytes.size());
}

std::string readTestModel(const std::string &file) {
  const char *dir = std::getenv("LLMC_TEST_MODELS");
  std::ifstream in(std::string(dir ? dir : LLMC_TEST_MODELS_DIR) + "/" + file);
  if (!in)
    return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void markTrainStepArguments(func::FuncOp trainStep) {
  Builder b(trainStep.getContext());
  for (unsigned i = 0; i < trainStep.getNumArguments(); ++i) {
    auto input = trainStep.getArgAttrOfType<StringAttr>(i, "llmc.input");
    auto state = trainStep.getArgAttrOfType<StringAttr>(i, "llmc.state");
    auto smallPositive = [&] {
      trainStep.setArgAttr(i, "gpu_test.abs", b.getUnitAttr());
      trainStep.setArgAttr(i, "gpu_test.scale", b.getF64FloatAttr(0.01));
    };
    if (input && (input.getValue() == "idx" || input.getValue() == "targets"))
      trainStep.setArgAttr(i, "gpu_test.range",
                           b.getDenseI64ArrayAttr({0, 512}));
    if (input && input.getValue() == "lr")
      smallPositive();
    if (state && state.getValue() == "step")
      trainStep.setArgAttr(i, "gpu_test.range", b.getDenseI64ArrayAttr({1, 2}));
    if (state && state.getValue() == "adamw.m")
      trainStep.setArgAttr(i, "gpu_test.zeros", b.getUnitAttr());
    if (state && state.getValue() == "adamw.v")
      smallPositive();
  }
}

} // namespace llmc::test
