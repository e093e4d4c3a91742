//===- Compile.cpp - From a loaded model to a runnable plan ---------------===//
//
// 1. The training pipeline, unless the module already has @train_step (an
//    eval plan: the eval pipeline, and @forward is what is compiled); then
//    kernel formation (llmc.kernel groups, bias epilogues, in place).
// 2. lowerFunction + buildPlannedPlan (kernels, cuBLASLt calls, memory plan,
//    scalar slots, initial weights).
// 3. NVRTC for every kernel on a thread pool, through the kernel cache; the
//    cubins go into the plan next to their sources, so a bundle runs on its
//    arch without a compiler and is recompiled from source on another.
//
//===----------------------------------------------------------------------===//
#include "compiler/ClassifierChunks.h"
#include "compiler/Compile.h"
#include "compiler/AttentionBackend.h"
#include "compiler/Pipeline.h"
#include "compiler/PrecisionExplain.h"
#include "compiler/codegen/ShareKernels.h"

#include "dialects/llmc/LlmcOps.h"
#include "runtime/KernelCache.h"
#include "runtime/Nvrtc.h"

#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>

using namespace mlir;

namespace llmc {

namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

int64_t elements(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  return type && type.hasStaticShape() ? type.getNumElements() : 0;
}

/// Parameters, tokens and attention FLOPs of the compiled function: the
/// yardstick's 6 * params * tokens + 12 * d * S per token and attention op
/// (forward QK^T and PV, 4 T S d, times three for the backward); an eval
/// plan has the forward third of both.
void countModel(func::FuncOp train, CompileReport &report) {
  for (unsigned i = 0; i < train.getNumArguments(); ++i) {
    Type t = train.getArgument(i).getType();
    // The model's parameters, not the padding (llmc.real_shape).
    if (auto real =
            train.getArgAttrOfType<DenseI64ArrayAttr>(i, "llmc.real_shape"))
      t = cast<RankedTensorType>(t).clone(real.asArrayRef());
    if (train.getArgAttr(i, "llmc.param"))
      report.params += elements(t);
    auto type = dyn_cast<RankedTensorType>(t);
    if (!report.tokens && train.getArgAttr(i, "llmc.input") && type &&
        type.getRank() == 2 && type.getElementType().isInteger())
      report.tokens = elements(t);
  }
  double attention = 0;
  report.vocab = crossEntropyClasses(train);
  train.walk([&](Operation *op) {
    if (!isa<mlir::llmc::AttentionOp, mlir::llmc::AttentionLseOp>(op))
      return;
    auto qt = cast<RankedTensorType>(op->getOperand(0).getType());
    auto kt = cast<RankedTensorType>(op->getOperand(1).getType());
    if (qt.getRank() != 4 || kt.getRank() != 4)
      return;
    auto q = mlir::llmc::attentionOperandShape(op, 0);
    auto k = mlir::llmc::attentionOperandShape(op, 1);
    double tokens = static_cast<double>(q[0]) * q[2];
    double width = static_cast<double>(q[1]) * q[3];
    attention += 4.0 * width * static_cast<double>(k[2]) * tokens;
  });
  double passes = report.eval ? 1.0 : 3.0; // forward, or forward + backward
  report.modelFlops =
      passes *
      (2.0 * static_cast<double>(report.params) * report.tokens + attention);
}

/// The function to lower: @train_step after the training pipeline, or
/// @forward after the eval pipeline.
FailureOr<func::FuncOp> runPipeline(ModuleOp module,
                                    const CompileConfig &config) {
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (config.eval) {
    if (!forward && train)
      return emitError(module.getLoc())
             << "an eval plan is compiled from @forward, and the module has "
                "only @train_step (a hand-written step has no forward to "
                "take apart)";
    if (!forward)
      return emitError(module.getLoc())
             << "the model has no func.func @forward (docs/model-ir.md)";
    if (failed(runEvalPipeline(module, config.precision)))
      return failure();
    return module.lookupSymbol<func::FuncOp>("forward");
  }
  if (train && config.precision.precision != "fp32")
    return emitError(module.getLoc())
           << "--precision " << config.precision.precision
           << " lowers @forward before autodiff, and the module has only a "
              "hand-written @train_step";
  if (train)
    return train;
  if (!forward)
    return emitError(module.getLoc())
           << "the model has no func.func @forward (docs/model-ir.md)";
  if (failed(runTrainingPipeline(module, config.optimizer, config.precision,
                                 config.injectNanOp)))
    return failure();
  return module.lookupSymbol<func::FuncOp>("train_step");
}

void countPlan(const Plan &plan, CompileReport &report) {
  report.kernels = plan.kernels.size();
  for (const Step &s : plan.steps) {
    if (!std::holds_alternative<MemsetStep>(s.op))
      ++report.launches;
    if (auto *m = std::get_if<MatmulStep>(&s.op)) {
      ++report.matmuls;
      report.matmulFlops += 2.0 * static_cast<double>(m->m) * m->n * m->k *
                            static_cast<double>(m->batch);
    } else if (std::holds_alternative<MemsetStep>(s.op)) {
      ++report.memsets;
    }
  }
  report.arenaBytes = plan.arenaBytes;
}

LogicalResult compileKernels(MLIRContext *ctx, Plan &plan,
                             const CompileConfig &config,
                             CompileReport &report) {
  std::string dir =
      config.cacheDir.empty() ? KernelCache::defaultDir() : config.cacheDir;
  KernelCache cache(dir);
  if (Status s = checkArchSupported(report.arch); !s)
    return emitError(UnknownLoc::get(ctx)) << s.message();
  std::vector<CompileRequest> requests;
  for (const KernelInfo &k : plan.kernels) {
    CompileRequest r;
    r.name = k.name;
    r.source = k.source;
    r.options.arch = report.arch;
    requests.push_back(std::move(r));
  }
  std::vector<CompileResult> results =
      compileAll(requests, dir.empty() ? nullptr : &cache);
  size_t failures = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].warning.empty())
      emitWarning(UnknownLoc::get(ctx)) << results[i].warning;
    if (!results[i].status) {
      ++failures;
      emitError(UnknownLoc::get(ctx))
          << results[i].status.message() << "\n(kernel '"
          << plan.kernels[i].name << "' of " << plan.kernels[i].origin << ")";
      continue;
    }
    plan.kernels[i].cubin = std::move(results[i].cubin);
    plan.kernels[i].arch = report.arch;
    report.cacheHits += results[i].cacheHit;
  }
  if (failures)
    return emitError(UnknownLoc::get(ctx))
           << failures << " of " << results.size()
           << " kernels failed to compile";
  Status s = nvrtcVersion(report.nvrtcVersion);
  (void)s;
  return success();
}

std::string bytesText(uint64_t bytes) {
  char buf[64];
  if (bytes >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / double(1ull << 20));
  else
    std::snprintf(buf, sizeof buf, "%.2f KiB", bytes / 1024.0);
  return buf;
}

} // namespace

std::vector<std::string> paddingLines(ModuleOp module) {
  std::vector<std::string> lines;
  auto decisions = module->getAttrOfType<ArrayAttr>("llmc.padding");
  if (!decisions)
    return lines;
  for (Attribute a : decisions) {
    auto d = cast<DictionaryAttr>(a);
    auto from = d.getAs<IntegerAttr>("from"), to = d.getAs<IntegerAttr>("to");
    auto flops = d.getAs<IntegerAttr>("extra_flops");
    auto why = d.getAs<StringAttr>("why");
    auto params = d.getAs<ArrayAttr>("params");
    if (!from || !to || !flops || !why || !params)
      continue;
    std::string names;
    for (Attribute p : params)
      names += (names.empty() ? "" : ", ") +
               cast<StringAttr>(p).getValue().str();
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lld -> %lld, +%.3g FLOPs/step: ",
                  static_cast<long long>(from.getInt()),
                  static_cast<long long>(to.getInt()),
                  static_cast<double>(flops.getInt()));
    lines.push_back(buf + why.getValue().str() + " (" + names + ")");
  }
  return lines;
}

/// "0.074 ms" from nanoseconds.
std::string msText(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

std::vector<std::string> recomputeLines(ModuleOp module, bool values) {
  std::vector<std::string> lines;
  auto decisions = module->getAttrOfType<ArrayAttr>("llmc.recompute");
  if (!decisions)
    return lines;
  static const char *const kClass[] = {"elementwise/norm", "attention",
                                       "matmul"};
  for (Attribute a : decisions) {
    auto d = dyn_cast<DictionaryAttr>(a);
    auto func = d ? d.getAs<StringAttr>("func") : nullptr;
    auto list = d ? d.getAs<ArrayAttr>("values") : nullptr;
    auto candidates = d ? d.getAs<IntegerAttr>("candidates") : nullptr;
    if (!func || !list || !candidates)
      continue;
    uint64_t classBytes[3] = {0, 0, 0};
    size_t classCount[3] = {0, 0, 0};
    std::vector<std::string> valueLines;
    for (Attribute v : list) {
      auto vd = cast<DictionaryAttr>(v);
      auto cls = vd.getAs<IntegerAttr>("class");
      auto bytes = vd.getAs<IntegerAttr>("bytes");
      auto op = vd.getAs<StringAttr>("op");
      auto position = vd.getAs<IntegerAttr>("position");
      auto ops = vd.getAs<IntegerAttr>("ops");
      if (!cls || !bytes || !op || !position || !ops || cls.getInt() < 0 ||
          cls.getInt() > 2)
        continue;
      classBytes[cls.getInt()] += bytes.getInt();
      ++classCount[cls.getInt()];
      std::string line = "  " + op.getValue().str();
      if (auto name = vd.getAs<StringAttr>("name"))
        line += " \"" + name.getValue().str() + "\"";
      line += " (op " + std::to_string(position.getInt()) + " of @" +
              func.getValue().str() + "): " +
              formatMemoryBytes(bytes.getInt()) + " no longer kept, " +
              std::to_string(ops.getInt()) + " op" +
              (ops.getInt() == 1 ? "" : "s") + " recomputed (" +
              kClass[cls.getInt()] + ")";
      if (auto ns = vd.getAs<IntegerAttr>("modelled_ns"))
        line += ", modelled " + msText(ns.getInt());
      valueLines.push_back(line);
    }
    std::string line = "@" + func.getValue().str() + ": " +
                       std::to_string(list.size()) + " of " +
                       std::to_string(candidates.getInt()) +
                       " saved values recomputed";
    for (int c = 0; c < 3; ++c)
      if (classCount[c])
        line += ", " + std::to_string(classCount[c]) + " " + kClass[c] + " (" +
                formatMemoryBytes(classBytes[c]) + ")";
    auto before = d.getAs<IntegerAttr>("peak_before");
    auto after = d.getAs<IntegerAttr>("peak_after");
    auto budget = d.getAs<IntegerAttr>("budget");
    if (before && after)
      line += "; planned peak " + formatMemoryBytes(before.getInt()) +
              " -> " + formatMemoryBytes(after.getInt()) + " (saves " +
              formatMemoryBytes(before.getInt() > after.getInt()
                                    ? before.getInt() - after.getInt()
                                    : 0) +
              ")";
    if (budget)
      line += ", budget " + formatMemoryBytes(budget.getInt());
    else
      line += " (forced: --recompute all)";
    if (auto ns = d.getAs<IntegerAttr>("modelled_ns"))
      line += "; modelled recompute time " + msText(ns.getInt());
    lines.push_back(line);
    if (!values)
      continue;
    lines.insert(lines.end(), valueLines.begin(), valueLines.end());
    // The levels the budget search planned, up to the one it took.
    if (auto tried = d.getAs<ArrayAttr>("tried"))
      for (Attribute t : tried) {
        auto td = dyn_cast<DictionaryAttr>(t);
        auto level = td ? td.getAs<IntegerAttr>("level") : nullptr;
        auto count = td ? td.getAs<IntegerAttr>("count") : nullptr;
        auto peak = td ? td.getAs<IntegerAttr>("peak") : nullptr;
        auto ns = td ? td.getAs<IntegerAttr>("modelled_ns") : nullptr;
        if (level && count && peak && ns)
          lines.push_back("  level " + std::to_string(level.getInt()) + ": " +
                          std::to_string(count.getInt()) +
                          " values, planned peak " +
                          formatMemoryBytes(peak.getInt()) + ", modelled " +
                          msText(ns.getInt()));
      }
  }
  return lines;
}

int64_t crossEntropyClasses(func::FuncOp func) {
  int64_t classes = 0;
  func.walk([&](mlir::llmc::CrossEntropyOp op) {
    auto logits = cast<RankedTensorType>(op->getOperand(0).getType());
    if (!classes && logits.getRank() >= 1)
      classes = op.getClassCount(); // not the padded width
  });
  return classes;
}

FailureOr<CompiledModel> compileModule(ModuleOp module,
                                       const CompileConfig &config) {
  auto start = std::chrono::steady_clock::now();
  CompiledModel out;
  CompileReport &report = out.report;
  report.eval = config.eval;
  report.precision = config.precision.precision;
  report.arch = config.arch.empty() ? detectArch() : config.arch;
  CompileConfig forArch = config;
  forArch.precision.padArch = padArchFor(report.arch);
  // --explain: the forward passes again on a copy of the model as loaded,
  // with llmc-lower-precision recording its decisions.
  OwningOpRef<ModuleOp> loaded;
  if (config.explain)
    loaded = module.clone();
  auto func = runPipeline(module, forArch);
  if (failed(func))
    return failure();
  // Where attention runs, decided (and marked on the ops) before any plan
  // is judged: the classifier's chunks, the budget and --batch auto count
  // cuDNN's workspace (docs/memory.md). With gradient accumulation the
  // micro-batch's step holds the attention.
  auto accumulate = module.lookupSymbol<func::FuncOp>("accumulate_step");
  codegen::CodegenOptions codegenOptions;
  codegenOptions.vectorSingles = config.fusion.elementwise;
  codegenOptions.deterministicAttention =
      config.precision.deterministicAttention;
  chooseAttentionBackend(accumulate && !config.eval ? accumulate : *func,
                         config.precision.attentionBackend, codegenOptions,
                         report.attention);
  // The classifier's chunks before recomputation: they save memory at a
  // smaller cost, and the budget search then plans the chunked step.
  ClassifierChunkChoice chunks;
  if (!config.eval) {
    auto chosen = runClassifierChunks(module, config.recompute, config.fusion);
    if (failed(chosen))
      return failure();
    chunks = std::move(*chosen);
  }
  if ((!config.eval &&
       failed(runRematerialize(module, config.recompute, config.fusion))) ||
      failed(runKernelPipeline(module, config.fusion)))
    return failure();
  report.classifier = classifierChunkLines(chunks, /*candidates=*/false);
  if (config.explain) {
    out.explanation = explainFusion(*func, config.fusion);
    // The micro-batch's step, where the forward, the backward and any
    // recomputed copies are, before the apply step.
    FusionExplanation micro;
    if (accumulate && !config.eval) {
      micro = explainFusion(accumulate, config.fusion);
      out.explanation.text = micro.text + out.explanation.text;
    }
    std::string recomputed;
    for (const std::string &l : classifierChunkLines(chunks, true))
      recomputed += "classifier " + l + "\n";
    for (const std::string &l : recomputeLines(module, /*values=*/true))
      recomputed += "recompute " + l + "\n";
    // llmc-pad-shapes' padded dims and unaligned ones it left, with why
    // (docs/padding.md, "The report").
    std::vector<std::string> padded = paddingLines(module);
    std::string paddingText;
    for (const std::string &l : padded)
      paddingText += "padding " + l + "\n";
    recomputed = paddingText + recomputed;
    PrecisionExplanation precision =
        explainPrecision(*loaded, forArch.precision);
    out.explanation.text =
        precision.text + recomputed + out.explanation.text;
    nlohmann::json doc = nlohmann::json::parse(out.explanation.json,
                                               nullptr, false);
    if (doc.is_object()) {
      doc["precision"] = nlohmann::json::parse(precision.json, nullptr, false);
      doc["padding"] = padded;
      if (!micro.json.empty())
        doc["accumulate_step"] =
            nlohmann::json::parse(micro.json, nullptr, false);
      out.explanation.json = doc.dump(1) + "\n";
    }
  }
  report.pipelineSeconds = secondsSince(start);

  auto t1 = std::chrono::steady_clock::now();
  countModel(accumulate && !config.eval ? accumulate : *func, report);
  auto lowered = codegen::lowerFunction(*func, codegenOptions);
  if (failed(lowered))
    return failure();
  codegen::PlanBuildOptions planOptions;
  planOptions.seed = config.seed;
  FailureOr<codegen::PlannedFunction> planned;
  if (accumulate && !config.eval) {
    auto accLowered = codegen::lowerFunction(accumulate, codegenOptions);
    if (failed(accLowered))
      return failure();
    planned = codegen::buildAccumulatingPlan(accumulate, *accLowered, *func,
                                             *lowered, planOptions);
  } else {
    planned = codegen::buildPlannedPlan(*func, *lowered, planOptions);
  }
  if (failed(planned))
    return failure();
  out.planned = std::move(*planned);
  Plan &plan = out.planned.plan;
  // What an eval plan is for: the host reads the loss from its slot.
  if (config.eval && !plan.findScalar("loss"))
    return func->emitError("an eval plan needs the loss in a scalar slot: "
                           "@forward must return it as a rank-0 f32 result "
                           "named 'loss' (llmc.output)");
  if (!config.name.empty())
    plan.name = config.name;
  plan.vocab = report.vocab;
  codegen::shareIdenticalKernels(plan);
  countPlan(plan, report);
  report.persistentBytes = out.planned.persistentBytes;
  report.unplannedBytes = out.planned.unplannedBytes;
  report.inPlaceUpdates = out.planned.inPlaceUpdates;
  report.copiedUpdates = out.planned.copiedUpdates;
  report.codegenSeconds = secondsSince(t1);

  report.padding = paddingLines(module);
  report.recompute = recomputeLines(module, /*values=*/false);
  auto t2 = std::chrono::steady_clock::now();
  if (config.compileKernels &&
      failed(compileKernels(module.getContext(), plan, config, report)))
    return failure();
  report.nvrtcSeconds = secondsSince(t2);
  // After NVRTC, so the modules' cubins are counted.
  report.memory = planDeviceMemory(plan, DeviceFacts());
  return out;
}

std::string formatReport(const CompileReport &r) {
  char buf[512];
  std::string s;
  auto line = [&](const char *fmt, auto... args) {
    std::snprintf(buf, sizeof buf, fmt, args...);
    s += buf;
  };
  line("arch            %s (NVRTC %s)\n", r.arch.c_str(),
       r.nvrtcVersion.empty() ? "not run" : r.nvrtcVersion.c_str());
  std::string precision = r.precision;
  if (r.precision == "bf16")
    precision += " (autocast: docs/precision.md)";
  else if (r.precision == "fp16")
    precision += " (autocast with dynamic loss scaling: docs/precision.md)";
  else if (r.precision == "tf32")
    precision += " (f32 tensors, TF32 tensor-core matmuls: docs/precision.md)";
  line("precision       %s\n", precision.c_str());
  line("kernels         %zu (%zu from the cache)\n", r.kernels, r.cacheHits);
  line("launches        %zu per step (kernel launches and cuBLASLt calls)\n",
       r.launches);
  line("cuBLASLt calls  %zu\n", r.matmuls);
  line("memsets         %zu\n", r.memsets);
  line("arena           %s (%llu bytes; persistent %s; one buffer per value "
       "would take %s)\n",
       bytesText(r.arenaBytes).c_str(),
       static_cast<unsigned long long>(r.arenaBytes),
       bytesText(r.persistentBytes).c_str(),
       bytesText(r.unplannedBytes).c_str());
  if (!r.memory.items.empty()) {
    line("device memory   %s before the first step (%llu bytes: the arena "
         "and the runtime's fixed costs)\n",
         formatMemoryBytes(r.memory.total()).c_str(),
         static_cast<unsigned long long>(r.memory.total()));
    s += formatDeviceMemory(r.memory, "  ");
  }
  line("parameters      %lld\n", static_cast<long long>(r.params));
  line("tokens/step     %lld\n", static_cast<long long>(r.tokens));
  line("FLOPs/step      %.4g (%d * params * tokens + attention; cuBLASLt "
       "calls %.4g)\n",
       r.modelFlops, r.eval ? 2 : 6, r.matmulFlops);
  if (r.eval)
    s += "updates         none (eval plan: forward and loss only)\n";
  else
    line("updates         %zu in place, %zu copied\n", r.inPlaceUpdates,
         r.copiedUpdates);
  line("compile time    %.2f s (import %.2f s, pipeline %.2f s, codegen "
       "%.2f s, NVRTC %.2f s, bundle write %.2f s)\n",
       r.importSeconds + r.pipelineSeconds + r.codegenSeconds +
           r.nvrtcSeconds + r.writeSeconds,
       r.importSeconds, r.pipelineSeconds, r.codegenSeconds, r.nvrtcSeconds,
       r.writeSeconds);
  // llmc-pad-shapes' decisions, when it padded a dim or left an unaligned
  // one (docs/padding.md).
  for (const std::string &p : r.padding)
    s += "padding         " + p + "\n";
  // llmc-rematerialize's decisions (docs/memory.md).
  for (const std::string &p : r.recompute)
    s += "recompute       " + p + "\n";
  // llmc-chunk-classifier's decision (docs/memory.md).
  for (const std::string &p : r.classifier)
    s += "classifier      " + p + "\n";
  // --attention-backend's decision (docs/codegen.md "cuDNN attention").
  for (const std::string &p : r.attention)
    s += "attention       " + p + "\n";
  return s;
}

bool isValidArch(const std::string &arch, std::string &error) {
  static const std::regex real("sm_[0-9]{2,3}[a-z]?");
  if (std::regex_match(arch, real))
    return true;
  static const std::regex virt("compute_([0-9]{2,3}[a-z]?)");
  std::smatch m;
  if (std::regex_match(arch, m, virt))
    error = "--arch " + arch +
            " is a virtual architecture (PTX, no cubin); use sm_" + m[1].str();
  else
    error = "--arch '" + arch +
            "' is not a GPU architecture: expected sm_XY (sm_90 for "
            "H100/H200, sm_80 for A100)";
  return false;
}

bool parseNoFuseOption(const Args &args, size_t &i, FusionConfig &fusion,
                       std::string &error) {
  const std::string &a = args[i];
  std::string list;
  if (a.rfind("--no-fuse=", 0) == 0)
    list = a.substr(std::string("--no-fuse=").size());
  else if (a == "--no-fuse" && i + 1 < args.size())
    list = args[++i];
  else if (a != "--no-fuse")
    return false;
  if (list.empty()) {
    error = "--no-fuse needs a value: elementwise, reductions, horizontal, "
            "norm-prologue, norm-epilogue, colsum, "
            "epilogues, gelu-epilogue, gelu-grad-epilogue, bias-grad-epilogue, "
            "strided, qkv-slices, "
            "classifier "
            "or all, comma-separated";
    return true;
  }
  (void)parseNoFuse(list, fusion, error);
  return true;
}

} // namespace llmc
