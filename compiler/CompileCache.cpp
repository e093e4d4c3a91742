//===- CompileCache.cpp - Whole compiles, cached without their weights ----===//
//
// 1. Map the model file and scan it (OnnxScan.h): the structure hash and
//    where each weight lies.
// 2. The key: that hash, every option, the toolchain.
// 3. A valid entry: read the plan, copy the weights into it, done.
// 4. Otherwise import and compile, then store the entry when every
//    parameter's initial data is its weight's bytes (plus zero padding).
//
//===----------------------------------------------------------------------===//
#include "compiler/CompileCache.h"

#include "compiler/ArchMemo.h"

#include "frontends/onnx/OnnxScan.h"
#include "runtime/AtomicFile.h"
#include "runtime/BinaryIdentity.h"
#include "runtime/Bundle.h"
#include "runtime/Hash.h"
#include "runtime/KernelCache.h"
#include "runtime/Nvrtc.h"
#include "compiler/Version.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <type_traits>
#include <map>
#include <thread>

using json = nlohmann::json;

namespace llmc {

namespace {

constexpr const char *kEntryFormat = "llmc-compile-cache-1";

// A new field in one of these structs changes what a compile produces, so
// it must be written into the key below: these sizes fail the build until
// optionsText names it.
static_assert(sizeof(OptimizerConfig) == 96,
              "OptimizerConfig changed: add the field to optionsText "
              "(compiler/CompileCache.cpp), then update this size");
static_assert(sizeof(PrecisionConfig) == 192,
              "PrecisionConfig changed: add the field to optionsText "
              "(compiler/CompileCache.cpp), then update this size");
static_assert(sizeof(CompileConfig) == 480,
              "CompileConfig changed: add the field to optionsText "
              "(compiler/CompileCache.cpp), then update this size");
static_assert(sizeof(ModelOptions) == 104,
              "ModelOptions changed: add the field to optionsText "
              "(compiler/CompileCache.cpp), then update this size");

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

/// Every option that changes the plan, one per line, in a fixed order.
std::string optionsText(const ModelOptions &m, const CompileConfig &c,
                        const std::string &arch) {
  std::string s;
  auto add = [&](const std::string &name, const std::string &value) {
    s += name + "=" + value + "\n";
  };
  auto num = [](double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  for (const auto &[name, value] : m.dims)
    add("dim " + name, std::to_string(value));
  add("batch", m.batch ? std::to_string(*m.batch) : "-");
  add("seq", m.seq ? std::to_string(*m.seq) : "-");
  add("batchSeqAreDefaults", std::to_string(m.batchSeqAreDefaults));
  add("foldLimit", std::to_string(m.foldLimit));
  add("raise", std::to_string(m.raise));
  add("arch", arch);
  add("seed", std::to_string(c.seed));
  add("eval", std::to_string(c.eval));
  const OptimizerConfig &o = c.optimizer;
  add("optimizer", o.kind);
  add("beta1", num(o.beta1));
  add("beta2", num(o.beta2));
  add("epsilon", num(o.epsilon));
  add("weightDecay", num(o.weightDecay));
  add("momentum", num(o.momentum));
  add("clipNorm", num(o.clipNorm));
  add("decayMinRank", std::to_string(o.decayMinRank));
  add("multiTensor", std::to_string(o.multiTensor));
  // Only when set, so that the keys of plain steps stay what they were.
  if (o.accumulate)
    add("accumulate", "1");
  add("precision", c.precision.precision);
  add("mutation", c.precision.mutation);
  add("attentionBackend", c.precision.attentionBackend);
  // Only when not the default, so that the keys of plain steps stay.
  if (!c.precision.deterministicAttention)
    add("attentionBackward", "atomic");
  add("pad", std::to_string(c.precision.pad));
  add("padAlways", std::to_string(c.precision.padAlways));
  add("padDims", c.precision.padDims);
  add("lossScaleInit", num(c.precision.lossScaleInit));
  add("lossScaleGrowthInterval",
      std::to_string(c.precision.lossScaleGrowthInterval));
  // c.precision.padArch is derived from arch (compileModule sets it).
  const FusionConfig &f = c.fusion;
  add("fuseEpilogues", std::to_string(f.epilogues));
  add("fuseElementwise", std::to_string(f.elementwise));
  add("fuseReductions", std::to_string(f.reductions));
  add("fuseHorizontal", std::to_string(f.horizontal));
  add("fuseNormPrologue", std::to_string(f.normPrologue));
  add("fuseNormEpilogue", std::to_string(f.normEpilogue));
  add("fuseColSums", std::to_string(f.colSums));
  add("fuseGeluEpilogue", std::to_string(f.geluEpilogue));
  add("fuseGeluGradEpilogue", std::to_string(f.geluGradEpilogue));
  add("fuseGeluGradBiasGrad", std::to_string(f.geluGradBiasGrad));
  add("fuseBiasGradEpilogue", std::to_string(f.biasGradEpilogue));
  add("fuseStrided", std::to_string(f.strided));
  add("fuseQkvSlices", std::to_string(f.qkvSlices));
  add("fuseClassifier", std::to_string(f.classifier));
  add("injectNanOp", c.injectNanOp);
  add("memoryBudget", std::to_string(c.recompute.budget));
  add("recomputeLevels", std::to_string(c.recompute.levels));
  add("classifierChunks", std::to_string(c.recompute.classifierChunks));
  // c.explain only adds a description (and bypasses the cache); c.name
  // only names the plan (set after a hit); c.cacheDir is where, not what;
  // c.compileKernels and c.compileCache are set when the cache is used.
  return s;
}

std::string toolchainText(const std::string &arch,
                          const std::string &binary) {
  std::string nvrtc;
  Status s = nvrtcVersion(nvrtc);
  (void)s; // no NVRTC: compileModule reports it; the key just says so
  CompileOptions options;
  options.arch = arch;
  // An entry is a bundle: another bundle version is another entry.
  std::string text = std::string("llmc ") + LLMC_VERSION + "\n" + binary +
                     "\nbundle " + std::to_string(kBundleVersion) +
                     "\nnvrtc " + nvrtc + "\n";
  for (const std::string &o : nvrtcOptions(options))
    text += o + "\n";
  return text;
}

std::string keyOf(const std::string &structure, const std::string &options,
                  const std::string &toolchain) {
  auto hash = [&](uint64_t seed) {
    uint64_t h = seed;
    for (const std::string *field : {&structure, &options, &toolchain}) {
      h = fnv1a(field->data(), field->size(), h);
      uint64_t n = field->size();
      h = fnv1a(&n, sizeof n, h);
    }
    return h;
  };
  return hex64(hash(kFnvOffset)) +
         hex64(hash(kFnvOffset ^ 0x9e3779b97f4a7c15ull));
}

/// Where the weights' bytes are: the mapped model, and any external data
/// files, read on demand.
class WeightSource {
public:
  WeightSource(std::shared_ptr<const llvm::MemoryBuffer> model,
               std::string baseDir)
      : model_(std::move(model)), baseDir_(std::move(baseDir)) {}

  /// Gives `buffer` the initial data `w` followed by zeros up to its size:
  /// a view into the mapped model when the weight is all of it, else a
  /// copy that writes the weight's part once.
  Status fill(const OnnxWeight &w, BufferInfo &buffer) {
    buffer.init.clear();
    buffer.initView.reset();
    if (w.file.empty() && w.offset + w.size <= model_->getBufferSize()) {
      const auto *p = reinterpret_cast<const uint8_t *>(
          model_->getBufferStart() + w.offset);
      if (w.size == buffer.bytes) {
        buffer.initView = std::shared_ptr<const uint8_t>(model_, p);
        buffer.initViewBytes = w.size;
        return Status::ok();
      }
      buffer.init.reserve(buffer.bytes);
      buffer.init.assign(p, p + w.size);
      buffer.init.resize(buffer.bytes, 0);
      return Status::ok();
    }
    buffer.init.assign(buffer.bytes, 0);
    return read(w, buffer.init.data());
  }

  /// Copies weight `w` into `out` (which has room for w.size bytes).
  Status read(const OnnxWeight &w, uint8_t *out) {
    if (w.file.empty()) {
      if (w.offset + w.size > model_->getBufferSize())
        return Status::error("weight '" + w.name + "' lies past the file");
      std::memcpy(out, model_->getBufferStart() + w.offset, w.size);
      return Status::ok();
    }
    std::string path = (llvm::sys::path::is_absolute(w.file)
                            ? w.file
                            : baseDir_ + "/" + w.file);
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(w.offset));
    in.read(reinterpret_cast<char *>(out), static_cast<std::streamsize>(w.size));
    if (!in)
      return Status::error("cannot read weight '" + w.name + "' from " + path);
    return Status::ok();
  }

private:
  std::shared_ptr<const llvm::MemoryBuffer> model_;
  std::string baseDir_;
};

json reportJson(const CompileReport &r) {
  return {{"eval", r.eval},
          {"arch", r.arch},
          {"nvrtcVersion", r.nvrtcVersion},
          {"precision", r.precision},
          {"kernels", r.kernels},
          {"matmuls", r.matmuls},
          {"memsets", r.memsets},
          {"launches", r.launches},
          {"inPlaceUpdates", r.inPlaceUpdates},
          {"copiedUpdates", r.copiedUpdates},
          {"arenaBytes", r.arenaBytes},
          {"persistentBytes", r.persistentBytes},
          {"unplannedBytes", r.unplannedBytes},
          {"params", r.params},
          {"tokens", r.tokens},
          {"vocab", r.vocab},
          {"modelFlops", r.modelFlops},
          {"matmulFlops", r.matmulFlops},
          {"padding", r.padding},
          {"recompute", r.recompute},
          {"classifier", r.classifier},
          {"attention", r.attention}};
}

/// Reads `key` of object `j` into `out` when it is there with the right
/// type (llmc builds without exceptions: nothing may throw).
template <typename T> bool get(const json &j, const char *key, T &out) {
  if (!j.is_object())
    return false;
  auto it = j.find(key);
  if (it == j.end())
    return false;
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean())
      return false;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string())
      return false;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number())
      return false;
  } else {
    if (!it->is_number_integer() ||
        (std::is_unsigned_v<T> && !it->is_number_unsigned()))
      return false;
  }
  out = it->get<T>();
  return true;
}

bool stringsFromJson(const json &j, const char *key,
                     std::vector<std::string> &out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array())
    return false;
  for (const json &s : *it) {
    if (!s.is_string())
      return false;
    out.push_back(s.get<std::string>());
  }
  return true;
}

bool reportFromJson(const json &j, CompileReport &r) {
  return get(j, "eval", r.eval) && get(j, "arch", r.arch) &&
         get(j, "nvrtcVersion", r.nvrtcVersion) &&
         get(j, "precision", r.precision) && get(j, "kernels", r.kernels) &&
         get(j, "matmuls", r.matmuls) && get(j, "memsets", r.memsets) &&
         get(j, "launches", r.launches) &&
         get(j, "inPlaceUpdates", r.inPlaceUpdates) &&
         get(j, "copiedUpdates", r.copiedUpdates) &&
         get(j, "arenaBytes", r.arenaBytes) &&
         get(j, "persistentBytes", r.persistentBytes) &&
         get(j, "unplannedBytes", r.unplannedBytes) &&
         get(j, "params", r.params) && get(j, "tokens", r.tokens) &&
         get(j, "vocab", r.vocab) && get(j, "modelFlops", r.modelFlops) &&
         get(j, "matmulFlops", r.matmulFlops) &&
         stringsFromJson(j, "padding", r.padding) &&
         stringsFromJson(j, "recompute", r.recompute) &&
         stringsFromJson(j, "classifier", r.classifier) &&
         stringsFromJson(j, "attention", r.attention);
}

json locationsJson(const std::vector<codegen::ValueLocation> &v) {
  json out = json::array();
  for (const codegen::ValueLocation &l : v)
    out.push_back({{"scalar", l.scalar}, {"name", l.name}});
  return out;
}

bool locationsFromJson(const json &j, const char *key,
                       std::vector<codegen::ValueLocation> &out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array())
    return false;
  for (const json &l : *it) {
    codegen::ValueLocation v;
    if (!get(l, "scalar", v.scalar) || !get(l, "name", v.name))
      return false;
    out.push_back(std::move(v));
  }
  return true;
}

class Entry {
public:
  Entry(std::string dir, std::string key)
      : plan_(dir + "/" + key + ".plan"), meta_(dir + "/" + key + ".json"),
        key_(std::move(key)) {}

  const std::string &metaPath() const { return meta_; }

  /// Missing: false with `problem` empty; corrupt: false with `problem`.
  bool load(const OnnxScan &scan, WeightSource &weights, CompiledModel &out,
            std::vector<std::string> &warnings, std::string &problem,
            LoadPhases &times);

  /// Stores `compiled` unless a parameter's initial data is not its weight;
  /// then returns false with `why`.
  bool store(const OnnxScan &scan, WeightSource &weights,
             CompiledModel &compiled, const std::vector<std::string> &warnings,
             std::string &why);

private:
  std::string plan_, meta_, key_;
};

bool Entry::load(const OnnxScan &scan, WeightSource &weights,
                 CompiledModel &out, std::vector<std::string> &warnings,
                 std::string &problem, LoadPhases &times) {
  std::error_code ec;
  if (!std::filesystem::exists(meta_, ec))
    return false;
  std::ifstream in(meta_, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  json meta = json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::string format, key;
  if (meta.is_discarded() || !get(meta, "format", format) ||
      !get(meta, "key", key)) {
    problem = "its metadata is not JSON of the entry format";
    return false;
  }
  if (format != kEntryFormat || key != key_) {
    problem = "its metadata is of another format or key";
    return false;
  }
  auto report = meta.find("report");
  auto uses = meta.find("weights");
  if (report == meta.end() || !reportFromJson(*report, out.report) ||
      !locationsFromJson(meta, "arguments", out.planned.arguments) ||
      !locationsFromJson(meta, "results", out.planned.results) ||
      !stringsFromJson(meta, "warnings", warnings) || uses == meta.end() ||
      !uses->is_array()) {
    problem = "its metadata lacks a field or has one of the wrong type";
    return false;
  }
  out.planned.persistentBytes = out.report.persistentBytes;
  out.planned.unplannedBytes = out.report.unplannedBytes;
  out.planned.inPlaceUpdates = out.report.inPlaceUpdates;
  out.planned.copiedUpdates = out.report.copiedUpdates;
  Plan &plan = out.planned.plan;
  if (Status s = readBundle(plan_, plan); !s) {
    problem = s.message();
    return false;
  }
  std::map<std::string, const OnnxWeight *> byName;
  for (const OnnxWeight &w : scan.weights)
    byName[w.name] = &w;
  std::map<std::string, BufferInfo *> buffers;
  for (BufferInfo &b : plan.buffers)
    buffers[b.name] = &b;
  std::vector<std::pair<BufferInfo *, const OnnxWeight *>> fills;
  for (const json &use : *uses) {
    std::string bufferName, weightName;
    if (!get(use, "buffer", bufferName) || !get(use, "weight", weightName)) {
      problem = "its weight table is malformed";
      return false;
    }
    auto b = buffers.find(bufferName);
    auto w = byName.find(weightName);
    if (b == buffers.end() || w == byName.end() ||
        w->second->size > b->second->bytes) {
      problem = "it names a weight or buffer the model does not have";
      return false;
    }
    fills.push_back({b->second, w->second});
  }
  times.mark("cache entry");
  // Padded or external weights are copied, and copying is page faults
  // more than bandwidth: spread it over threads, largest weights first.
  std::sort(fills.begin(), fills.end(), [](const auto &x, const auto &y) {
    return x.second->size > y.second->size;
  });
  std::vector<Status> statuses(fills.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < fills.size(); i = next++)
      statuses[i] = weights.fill(*fills[i].second, *fills[i].first);
  };
  unsigned threads = std::min<unsigned>(
      8, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads && t < fills.size(); ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
  for (const Status &s : statuses)
    if (!s) {
      problem = s.message();
      return false;
    }
  times.mark("weights");
  if (Status s = validatePlan(plan); !s) {
    problem = s.message();
    return false;
  }
  times.mark("plan validation");
  return true;
}

bool Entry::store(const OnnxScan &scan, WeightSource &weights,
                  CompiledModel &compiled,
                  const std::vector<std::string> &warnings, std::string &why) {
  Plan &plan = compiled.planned.plan;
  std::map<std::string, const OnnxWeight *> byName;
  for (const OnnxWeight &w : scan.weights)
    byName[w.name] = &w;
  // Parameters whose data is their weight leave it out of the entry; any
  // other parameter data may depend on weight values the key leaves out.
  json uses = json::array();
  std::vector<BufferInfo *> taken;
  std::vector<uint8_t> bytes;
  for (BufferInfo &b : plan.buffers) {
    if (b.role != BufferRole::Param || b.init.empty())
      continue;
    auto w = byName.find(b.name);
    if (w == byName.end()) {
      why = "parameter '" + b.name + "' has initial data that is not an "
            "initializer of the model";
      return false;
    }
    const OnnxWeight &weight = *w->second;
    bytes.resize(weight.size);
    bool same = weight.size <= b.init.size() &&
                weights.read(weight, bytes.data()) &&
                std::memcmp(bytes.data(), b.init.data(), weight.size) == 0;
    for (size_t i = weight.size; same && i < b.init.size(); ++i)
      same = b.init[i] == 0;
    if (!same) {
      why = "parameter '" + b.name + "' starts from other bytes than its "
            "initializer";
      return false;
    }
    uses.push_back({{"buffer", b.name}, {"weight", weight.name}});
    taken.push_back(&b);
  }
  // Write the plan without the weights, then give them back.
  std::vector<std::vector<uint8_t>> held(taken.size());
  for (size_t i = 0; i < taken.size(); ++i)
    held[i].swap(taken[i]->init);
  Status s = writeBundle(plan_, plan);
  for (size_t i = 0; i < taken.size(); ++i)
    held[i].swap(taken[i]->init);
  if (!s) {
    why = s.message();
    return false;
  }
  json meta = {{"format", kEntryFormat},
               {"key", key_},
               {"report", reportJson(compiled.report)},
               {"arguments", locationsJson(compiled.planned.arguments)},
               {"results", locationsJson(compiled.planned.results)},
               {"weights", uses},
               {"warnings", warnings}};
  if (Status m = writeFileAtomically(meta_, meta.dump(1)); !m) {
    why = m.message();
    return false;
  }
  return true;
}

/// Collects the warnings a compile emits (they are shown again on a hit)
/// and passes every diagnostic on to the handlers installed before.
class WarningRecorder {
public:
  explicit WarningRecorder(mlir::MLIRContext &context) : context_(context) {
    id_ = context.getDiagEngine().registerHandler([this](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Warning)
        warnings.push_back(d.str());
      return mlir::failure(); // not handled: the next handler prints it
    });
  }
  ~WarningRecorder() { context_.getDiagEngine().eraseHandler(id_); }
  std::vector<std::string> warnings;

private:
  mlir::MLIRContext &context_;
  mlir::DiagnosticEngine::HandlerID id_;
};

mlir::FailureOr<CompiledModel> compileUncached(const std::string &path,
                                               const ModelOptions &m,
                                               const CompileConfig &config,
                                               mlir::MLIRContext &context) {
  auto t0 = std::chrono::steady_clock::now();
  auto module = loadModel(path, m, context);
  if (!module)
    return mlir::failure();
  double importSeconds = secondsSince(t0);
  auto compiled = compileModule(*module, config);
  if (mlir::succeeded(compiled))
    compiled->report.importSeconds = importSeconds;
  return compiled;
}

} // namespace

mlir::FailureOr<CompiledModel>
compileModelFile(const std::string &path, const ModelOptions &modelOptions,
                 const CompileConfig &config, mlir::MLIRContext &context,
                 CompileCacheOutcome *outcome) {
  CompileCacheOutcome ignored;
  CompileCacheOutcome &result = outcome ? *outcome : ignored;
  auto off = [&](std::string why) {
    result.kind = CompileCacheOutcome::Off;
    result.detail = std::move(why);
    return compileUncached(path, modelOptions, config, context);
  };
  std::string dir =
      config.cacheDir.empty() ? KernelCache::defaultDir() : config.cacheDir;
  if (dir.empty())
    return off("no cache directory (set LLMC_CACHE_DIR)");
  if (!config.compileCache)
    return off("--no-compile-cache");
  if (!config.compileKernels)
    return off("kernels are not compiled");
  if (config.explain)
    return off("--explain needs the passes to run");
  if (modelFormatOf(path) != ModelFormat::Onnx)
    return off("only ONNX models are cached");

  // 1. Scan.
  auto t0 = std::chrono::steady_clock::now();
  LoadPhases &times = result.phases;
  times.restart();
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return off("cannot read the model"); // loadModel says why
  // Shared: a hit's parameters point into the mapping (BufferInfo::
  // initView), which stays mapped while the plan holds them.
  std::shared_ptr<const llvm::MemoryBuffer> model(std::move(*file));
  OnnxScan scan =
      scanOnnx(reinterpret_cast<const uint8_t *>(model->getBufferStart()),
               model->getBufferSize());
  if (!scan.cacheable)
    return off("the model is not cacheable: " + scan.whyNot);
  times.mark("map and scan");

  // 2. Key.
  std::string binary = binaryIdentity();
  if (binary.empty())
    return off("the llmc binary cannot be identified for the key");
  times.mark("binary identity");
  std::string arch = config.arch;
  if (arch.empty()) {
    bool remembered = false;
    arch = rememberedArch(
        dir, gpuFingerprint(),
        [](std::string &a) {
          bool found = false;
          a = detectArch(&found);
          return found;
        },
        &remembered);
    times.mark(remembered ? "arch (remembered)" : "arch detection (cuInit)");
  }
  CompileConfig resolved = config;
  resolved.arch = arch;
  // The file's name is in the plan: kernel comments and origins cite
  // locations "at m.onnx:0:0".
  std::string key = keyOf(scan.structureHash + " " +
                              llvm::sys::path::filename(path).str(),
                          optionsText(modelOptions, resolved, arch),
                          toolchainText(arch, binary));
  llvm::SmallString<256> baseDir(path);
  llvm::sys::path::remove_filename(baseDir);
  WeightSource weights(model, baseDir.empty() ? "." : baseDir.str().str());
  Entry entry(dir, key);
  times.mark("key (NVRTC version, options)");

  // 3. Hit.
  CompiledModel cached;
  std::vector<std::string> warnings;
  std::string problem;
  if (entry.load(scan, weights, cached, warnings, problem, times)) {
    for (const std::string &w : warnings)
      mlir::emitWarning(mlir::UnknownLoc::get(&context)) << w;
    if (!config.name.empty())
      cached.planned.plan.name = config.name;
    cached.report.cacheHits = cached.report.kernels;
    // Not stored: it follows from the plan and its cubins.
    cached.report.memory = planDeviceMemory(cached.planned.plan, DeviceFacts());
    times.mark("memory report");
    cached.report.importSeconds = secondsSince(t0);
    result.kind = CompileCacheOutcome::Hit;
    result.detail = key;
    return cached;
  }
  if (!problem.empty())
    mlir::emitWarning(mlir::UnknownLoc::get(&context))
        << "compile cache entry " << entry.metaPath() << " is corrupt ("
        << problem << "): compiled again and replaced";

  // 4. Miss: compile, then store.
  WarningRecorder recorder(context);
  auto compiled = compileUncached(path, modelOptions, resolved, context);
  if (mlir::failed(compiled))
    return mlir::failure();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string why;
  if (ec)
    why = "cannot create " + dir + ": " + ec.message();
  else if (!entry.store(scan, weights, *compiled, recorder.warnings, why))
    why = why.empty() ? "unknown" : why;
  result.kind = why.empty() ? CompileCacheOutcome::Stored
                            : CompileCacheOutcome::NotStored;
  result.detail = why.empty() ? key : why;
  return compiled;
}

std::string describeCacheOutcome(const CompileCacheOutcome &o) {
  switch (o.kind) {
  case CompileCacheOutcome::Hit:
    return "hit (key " + o.detail + ")";
  case CompileCacheOutcome::Stored:
    return "miss, stored (key " + o.detail + ")";
  case CompileCacheOutcome::NotStored:
    return "miss, not stored: " + o.detail;
  case CompileCacheOutcome::Off:
    break;
  }
  return "off: " + o.detail;
}

} // namespace llmc
