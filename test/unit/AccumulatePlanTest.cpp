//===- AccumulatePlanTest.cpp - One plan for the accumulate and apply steps ===//
//
// Gradient accumulation on the GPU (docs/memory.md): gpt2-tiny through the
// training pipeline with llmc-accumulate-gradients and the kernel pipeline,
// then codegen::buildAccumulatingPlan. The plan holds both launch sequences
// over one arena: the accumulate sequence first (Plan::accumulateSteps),
// the apply sequence after it ending with a memset of every accumulator;
// parameters and accumulators are one buffer each, shared by both; the
// transients of the two share space. The split survives the bundle's JSON,
// and validatePlan refuses a split that leaves no apply sequence.
//
//===----------------------------------------------------------------------===//
#include "compiler/Pipeline.h"
#include "compiler/codegen/PlanBuilder.h"
#include "runtime/PlanJson.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "dialects/llmc/LlmcDialect.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace mlir;
using namespace ::llmc;

namespace {

struct Compiled {
  Plan joint, accumulate, apply;
  std::set<std::string> params;
};

/// gpt2-tiny as `llmc train --tokens-per-step` compiles it, and each of its
/// two functions planned on its own for comparison.
::testing::AssertionResult compile(MLIRContext &context, Compiled &out) {
  std::ifstream in(std::string(LLMC_TEST_MODELS) + "/gpt2-tiny.mlir");
  std::stringstream text;
  text << in.rdbuf();
  auto module = parseSourceString<ModuleOp>(text.str(), &context);
  OptimizerConfig optimizer;
  optimizer.accumulate = true;
  if (!module || failed(runTrainingPipeline(*module, optimizer)) ||
      failed(runKernelPipeline(*module)))
    return ::testing::AssertionFailure() << "the pipelines failed";
  auto acc = module->lookupSymbol<func::FuncOp>("accumulate_step");
  auto apply = module->lookupSymbol<func::FuncOp>("train_step");
  if (!acc || !apply)
    return ::testing::AssertionFailure() << "no @accumulate_step/@train_step";
  for (unsigned i = 0; i < apply.getNumArguments(); ++i)
    if (auto p = apply.getArgAttrOfType<StringAttr>(i, "llmc.param"))
      out.params.insert(p.getValue().str());
  auto accLowered = codegen::lowerFunction(acc, codegen::CodegenOptions());
  auto applyLowered = codegen::lowerFunction(apply, codegen::CodegenOptions());
  if (failed(accLowered) || failed(applyLowered))
    return ::testing::AssertionFailure() << "lowering failed";
  codegen::PlanBuildOptions options;
  options.initialData = false;
  auto joint = codegen::buildAccumulatingPlan(acc, *accLowered, apply,
                                              *applyLowered, options);
  auto alone = codegen::buildPlannedPlan(acc, *accLowered, options);
  auto applyAlone = codegen::buildPlannedPlan(apply, *applyLowered, options);
  if (failed(joint) || failed(alone) || failed(applyAlone))
    return ::testing::AssertionFailure() << "planning failed";
  out.joint = std::move(joint->plan);
  out.accumulate = std::move(alone->plan);
  out.apply = std::move(applyAlone->plan);
  return ::testing::AssertionSuccess();
}

bool isAccumulator(const std::string &name) {
  return name.rfind("accum.", 0) == 0;
}

} // namespace

TEST(AccumulatePlan, TwoSequencesOverOneArena) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  Compiled c;
  ASSERT_TRUE(compile(context, c));
  const Plan &plan = c.joint;
  ASSERT_TRUE(validatePlan(plan).isOk()) << validatePlan(plan).message();
  ASSERT_GT(plan.accumulateSteps, 0u);
  ASSERT_LT(plan.accumulateSteps, plan.steps.size());
  ASSERT_FALSE(c.params.empty());

  // One buffer per parameter and per accumulator, shared by both steps.
  std::set<std::string> accumulators;
  for (const BufferInfo &b : plan.buffers) {
    EXPECT_EQ(b.name.find('#'), std::string::npos)
        << "'" << b.name << "': an argument of both steps was doubled";
    if (isAccumulator(b.name)) {
      EXPECT_EQ(b.role, BufferRole::Grad) << b.name;
      accumulators.insert(b.name);
    }
  }
  for (const std::string &p : c.params) {
    const BufferInfo *b = plan.findBuffer(p);
    ASSERT_NE(b, nullptr) << p;
    EXPECT_EQ(b->role, BufferRole::Param);
    EXPECT_TRUE(accumulators.count("accum.grad:" + p)) << p;
  }
  EXPECT_TRUE(accumulators.count("accum.loss"));
  EXPECT_TRUE(accumulators.count("accum.count"));
  EXPECT_EQ(accumulators.size(), c.params.size() + 2);

  // The apply sequence ends by zeroing each accumulator once; nothing
  // before that memsets one.
  size_t n = plan.steps.size(), zeros = accumulators.size();
  std::set<std::string> zeroed;
  for (size_t i = 0; i < n; ++i) {
    const auto *memset = std::get_if<MemsetStep>(&plan.steps[i].op);
    bool isZero = memset && isAccumulator(memset->buffer);
    EXPECT_EQ(isZero, i >= n - zeros) << plan.describeStep(i);
    if (isZero) {
      EXPECT_EQ(memset->value, 0);
      zeroed.insert(memset->buffer);
    }
  }
  EXPECT_EQ(zeroed, accumulators);

  // The accumulate sequence runs no optimizer: it reads no lr or step slot
  // and writes no loss; its kernels are named apart from the apply step's.
  for (size_t i = 0; i < plan.accumulateSteps; ++i) {
    const Step &step = plan.steps[i];
    if (const auto *launch = std::get_if<LaunchStep>(&step.op)) {
      EXPECT_EQ(plan.kernels[launch->kernel].name.rfind("acc.", 0), 0u)
          << plan.describeStep(i);
      for (const KernelArg &a : launch->args)
        EXPECT_NE(a.kind, KernelArg::Kind::Scalar) << plan.describeStep(i);
    }
  }
  bool applyReadsLr = false;
  for (size_t i = plan.accumulateSteps; i < n; ++i)
    if (const auto *launch = std::get_if<LaunchStep>(&plan.steps[i].op)) {
      EXPECT_NE(plan.kernels[launch->kernel].name.rfind("acc.", 0), 0u)
          << plan.describeStep(i);
      for (const KernelArg &a : launch->args)
        applyReadsLr |= a.kind == KernelArg::Kind::Scalar && a.name == "lr";
    }
  EXPECT_TRUE(applyReadsLr);
  EXPECT_NE(plan.findScalar("loss"), nullptr);

  // Each step planned alone holds the parameters and accumulators as well;
  // together they hold them once, and the transients overlap.
  uint64_t shared = 0;
  for (const BufferInfo &b : plan.buffers)
    if (b.role == BufferRole::Param || isAccumulator(b.name))
      shared += b.bytes;
  EXPECT_GE(plan.arenaBytes,
            std::max(c.accumulate.arenaBytes, c.apply.arenaBytes));
  EXPECT_LE(plan.arenaBytes,
            c.accumulate.arenaBytes + c.apply.arenaBytes - shared);
  std::printf("arena: accumulate alone %llu, apply alone %llu, one plan "
              "%llu bytes (%llu shared)\n",
              static_cast<unsigned long long>(c.accumulate.arenaBytes),
              static_cast<unsigned long long>(c.apply.arenaBytes),
              static_cast<unsigned long long>(plan.arenaBytes),
              static_cast<unsigned long long>(shared));
}

TEST(AccumulatePlan, BundleJsonKeepsTheSplit) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  Compiled c;
  ASSERT_TRUE(compile(context, c));
  std::vector<BlobRef> blobs;
  nlohmann::json j = planToJson(c.joint, blobs);
  auto load = [&](uint64_t i, std::vector<uint8_t> &bytes) {
    bytes.assign(blobs[i].data, blobs[i].data + blobs[i].size);
    return Status::ok();
  };
  Plan back;
  ASSERT_TRUE(planFromJson(j, load, back).isOk());
  EXPECT_EQ(back.accumulateSteps, c.joint.accumulateSteps);
  EXPECT_EQ(back.steps.size(), c.joint.steps.size());
  EXPECT_TRUE(validatePlan(back).isOk());

  // Bundles written before accumulation have no key: a plain step.
  j.erase("accumulateSteps");
  Plan old;
  ASSERT_TRUE(planFromJson(j, load, old).isOk());
  EXPECT_EQ(old.accumulateSteps, 0u);

  j["accumulateSteps"] = "three";
  EXPECT_FALSE(planFromJson(j, load, old).isOk());
}

TEST(AccumulatePlan, ValidateRefusesAnEmptyApplySequence) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  Compiled c;
  ASSERT_TRUE(compile(context, c));
  Plan plan = c.joint;
  plan.accumulateSteps = plan.steps.size();
  Status s = validatePlan(plan);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("accumulate steps of " +
                             std::to_string(plan.steps.size()) +
                             " steps; the apply sequence after them must "
                             "not be empty"),
            std::string::npos)
      << s.message();
}
