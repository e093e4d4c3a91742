//===- CApi.cpp - include/llmc/llmc.h over llmc::jit::Step ----------------===//
//
// The only file of libllmc.so with exported symbols (a version script hides
// everything else, so the LLVM, MLIR and protobuf linked in cannot clash
// with another copy in the same process). It is compiled with exceptions on,
// unlike the rest of llmc: every entry point runs inside `guarded`, which
// turns anything thrown below it (std::bad_alloc, a JSON type error) into a
// status and a message instead of letting it unwind into C.
//
//===----------------------------------------------------------------------===//
#include "llmc/llmc.h"
#include "llmc/Step.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>

using llmc::Status;
namespace jit = llmc::jit;

struct llmc_step {
  jit::Step step;
  std::string report;
};

namespace {

thread_local std::string lastError;

/// Live handles: a destroyed or invented pointer is found missing here
/// instead of being dereferenced.
std::mutex handlesMutex;
std::unordered_set<const llmc_step *> &handles() {
  static auto *set = new std::unordered_set<const llmc_step *>();
  return *set;
}

llmc_status fail(llmc_status code, const std::string &message) {
  lastError = message;
  return code;
}

llmc_status check(const Status &s, llmc_status code) {
  return s ? LLMC_OK : fail(code, s.message());
}

template <class F> llmc_status guarded(F &&body) {
  try {
    lastError.clear();
    return body();
  } catch (const std::bad_alloc &) {
    return fail(LLMC_ERROR_RUNTIME, "out of host memory");
  } catch (const std::exception &e) {
    return fail(LLMC_ERROR_INTERNAL,
                std::string("internal error (please report): ") + e.what());
  } catch (...) {
    return fail(LLMC_ERROR_INTERNAL,
                "internal error (please report): an unknown exception");
  }
}

llmc_status live(const llmc_step *step) {
  if (!step)
    return fail(LLMC_ERROR_BAD_HANDLE, "the step handle is NULL");
  std::lock_guard<std::mutex> lock(handlesMutex);
  if (!handles().count(step))
    return fail(LLMC_ERROR_BAD_HANDLE,
                "the step handle is not a live step (destroyed, or never "
                "returned by llmc_compile)");
  return LLMC_OK;
}

#define LLMC_CHECK(expr)                                                       \
  do {                                                                         \
    llmc_status llmcCode_ = (expr);                                            \
    if (llmcCode_ != LLMC_OK)                                                  \
      return llmcCode_;                                                        \
  } while (0)

/// `body()` under `guarded`, once `step` is known to be live: every entry
/// point that takes a step starts so.
template <class F> llmc_status withStep(const llmc_step *step, F &&body) {
  return guarded([&] {
    LLMC_CHECK(live(step));
    return body();
  });
}

/// LLMC_OK, or the error that the pointer argument `what` is NULL.
llmc_status notNull(const void *p, const char *what) {
  return p ? LLMC_OK
           : fail(LLMC_ERROR_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

llmc_status parseOptions(const char *text, jit::Options &o) {
  if (!text || !*text)
    return LLMC_OK;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                std::string("options are not a JSON object: ") + text);
  for (auto &[key, v] : j.items()) {
    auto bad = [&](const char *want) {
      return fail(LLMC_ERROR_INVALID_ARGUMENT, "option '" + key + "' must be " +
                                                   want + ", got " + v.dump());
    };
    auto integer = [&](auto &dst) -> bool {
      if (!v.is_number_integer())
        return false;
      dst = v.get<std::remove_reference_t<decltype(dst)>>();
      return true;
    };
    auto number = [&](double &dst) -> bool {
      if (!v.is_number())
        return false;
      dst = v.get<double>();
      return true;
    };
    auto text = [&](std::string &dst) -> bool {
      if (!v.is_string())
        return false;
      dst = v.get<std::string>();
      return true;
    };
    bool ok = true;
    if (key == "batch")
      ok = integer(o.batch) || (bad("an integer"), false);
    else if (key == "seq")
      ok = integer(o.seq) || (bad("an integer"), false);
    else if (key == "seed")
      ok = (v.is_number_unsigned() && (o.seed = v.get<uint64_t>(), true)) ||
           (bad("a non-negative integer"), false);
    else if (key == "cuda_device")
      ok = integer(o.cudaDevice) || (bad("an integer"), false);
    else if (key == "decay_min_rank")
      ok = integer(o.decayMinRank) || (bad("an integer"), false);
    else if (key == "warmup")
      ok = integer(o.warmup) || (bad("an integer"), false);
    else if (key == "precision")
      ok = text(o.precision) || (bad("a string"), false);
    else if (key == "arch")
      ok = text(o.arch) || (bad("a string"), false);
    else if (key == "padding")
      ok = text(o.padding) || (bad("a string"), false);
    else if (key == "attention_backend")
      ok = text(o.attentionBackend) || (bad("a string"), false);
    else if (key == "memory_budget")
      ok = text(o.memoryBudget) || (bad("a string"), false);
    else if (key == "cache_dir")
      ok = text(o.cacheDir) || (bad("a string"), false);
    else if (key == "optimizer")
      ok = text(o.optimizer) || (bad("a string"), false);
    else if (key == "beta1")
      ok = number(o.beta1) || (bad("a number"), false);
    else if (key == "beta2")
      ok = number(o.beta2) || (bad("a number"), false);
    else if (key == "eps")
      ok = number(o.epsilon) || (bad("a number"), false);
    else if (key == "weight_decay")
      ok = number(o.weightDecay) || (bad("a number"), false);
    else if (key == "momentum")
      ok = number(o.momentum) || (bad("a number"), false);
    else if (key == "clip_norm")
      ok = number(o.clipNorm) || (bad("a number"), false);
    else if (key == "lr")
      ok = number(o.lr) || (bad("a number"), false);
    else if (key == "device") {
      std::string d;
      if (!text(d) || (d != "cpu" && d != "cuda"))
        return bad("\"cpu\" or \"cuda\"");
      o.device = d == "cpu" ? jit::Device::Cpu : jit::Device::Cuda;
    } else if (key == "dims") {
      if (!v.is_object())
        return bad("an object of integers");
      for (auto &[name, n] : v.items()) {
        if (!n.is_number_integer())
          return bad("an object of integers");
        o.dims[name] = n.get<int64_t>();
      }
    } else
      return fail(LLMC_ERROR_INVALID_ARGUMENT,
                  "unknown option '" + key +
                      "' (docs/jit-api.md lists the options)");
    if (!ok)
      return LLMC_ERROR_INVALID_ARGUMENT;
  }
  return LLMC_OK;
}

llmc_status toView(const llmc_tensor &t, size_t i, const char *what,
                   jit::TensorView &v) {
  // Built for a message only: this runs for every input of every step.
  auto where = [&] { return std::string(what) + " #" + std::to_string(i); };
  if (t.dtype < LLMC_F32 || t.dtype > LLMC_U8)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                where() + ": unknown dtype code " + std::to_string(t.dtype));
  if (t.device != LLMC_CPU && t.device != LLMC_CUDA)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                where() + ": unknown device code " + std::to_string(t.device));
  if (t.rank < 0 || t.rank > 16 || (t.rank > 0 && !t.shape))
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                where() + ": rank " + std::to_string(t.rank) +
                    " needs a shape array of that many dims (rank <= 16)");
  v.data = t.data;
  v.dtype = static_cast<jit::DType>(t.dtype);
  v.device = t.device == LLMC_CPU ? jit::Device::Cpu : jit::Device::Cuda;
  v.shape.assign(t.shape, t.shape + t.rank);
  v.stream = t.stream == LLMC_NO_STREAM ? jit::kNoStream : t.stream;
  return LLMC_OK;
}

llmc_status toViews(const llmc_tensor *t, size_t n,
                    std::vector<jit::TensorView> &views) {
  if (n && !t)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "inputs is NULL but n is " + std::to_string(n));
  views.resize(n);
  for (size_t i = 0; i < n; ++i)
    LLMC_CHECK(toView(t[i], i, "input", views[i]));
  return LLMC_OK;
}

/// The views of a step's `n` inputs, checked against what it expects.
llmc_status inputViews(const llmc_step &step, const llmc_tensor *inputs,
                       size_t n, std::vector<jit::TensorView> &views) {
  LLMC_CHECK(toViews(inputs, n, views));
  return check(step.step.checkInputs(views), LLMC_ERROR_INVALID_ARGUMENT);
}

llmc_status compileWith(const std::string *path, const std::string *json,
                        const char *options, llmc_step **out) {
  if (!out)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  jit::Options o;
  LLMC_CHECK(parseOptions(options, o));
  auto step = std::make_unique<llmc_step>();
  Status s = path ? jit::compile(*path, o, step->step)
                  : jit::compileJsonGraph(*json, o, step->step);
  LLMC_CHECK(check(s, LLMC_ERROR_COMPILE));
  step->report = step->step.report().toJson();
  std::lock_guard<std::mutex> lock(handlesMutex);
  handles().insert(step.get());
  *out = step.release();
  return LLMC_OK;
}

llmc_status info(const std::vector<jit::TensorInfo> &list, size_t i,
                 const char **name, int32_t *dtype, int32_t *rank,
                 int64_t *shape, int32_t capacity) {
  if (i >= list.size())
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "index " + std::to_string(i) + " is past the last of " +
                    std::to_string(list.size()));
  const jit::TensorInfo &t = list[i];
  if (name)
    *name = t.name.c_str();
  if (dtype)
    *dtype = static_cast<int32_t>(t.dtype);
  if (rank)
    *rank = static_cast<int32_t>(t.shape.size());
  for (int32_t d = 0; shape && d < capacity && d < int32_t(t.shape.size());
       ++d)
    shape[d] = t.shape[d];
  return LLMC_OK;
}

} // namespace

extern "C" {

const char *llmc_version(void) { return jit::version(); }
int llmc_abi_version(void) { return LLMC_ABI_VERSION; }
const char *llmc_last_error(void) { return lastError.c_str(); }

llmc_status llmc_compile(const char *model_path, const char *options_json,
                         llmc_step **out) {
  return guarded([&] {
    if (!model_path)
      return fail(LLMC_ERROR_INVALID_ARGUMENT, "model_path is NULL");
    std::string path = model_path;
    return compileWith(&path, nullptr, options_json, out);
  });
}

llmc_status llmc_compile_json_graph(const char *graph_json,
                                    const char *options_json,
                                    llmc_step **out) {
  return guarded([&] {
    if (!graph_json)
      return fail(LLMC_ERROR_INVALID_ARGUMENT, "graph_json is NULL");
    std::string json = graph_json;
    return compileWith(nullptr, &json, options_json, out);
  });
}

llmc_status llmc_step_destroy(llmc_step *step) {
  return guarded([&] {
    if (!step)
      return LLMC_OK;
    {
      std::lock_guard<std::mutex> lock(handlesMutex);
      if (!handles().erase(step))
        return fail(LLMC_ERROR_BAD_HANDLE,
                    "llmc_step_destroy: not a live step (destroyed twice?)");
    }
    delete step;
    return LLMC_OK;
  });
}

llmc_status llmc_step_run(llmc_step *step, const llmc_tensor *inputs, size_t n,
                          double lr, double *loss) {
  return withStep(step, [&] {
    // Reused by the thread's calls, so that a step allocates no views.
    thread_local std::vector<jit::TensorView> views;
    LLMC_CHECK(inputViews(*step, inputs, n, views));
    if (!(lr < 0) && !(lr >= 0))
      return fail(LLMC_ERROR_INVALID_ARGUMENT, "lr is NaN");
    double rate = lr < 0 ? step->step.scheduledLearningRate() : lr;
    Status s = loss ? step->step.run(views, rate, *loss)
                    : step->step.launch(views, rate);
    return check(s, LLMC_ERROR_RUNTIME);
  });
}

llmc_status llmc_step_evaluate(llmc_step *step, const llmc_tensor *inputs,
                               size_t n, double *loss) {
  return withStep(step, [&] {
    std::vector<jit::TensorView> views;
    LLMC_CHECK(inputViews(*step, inputs, n, views));
    double value = 0;
    LLMC_CHECK(check(step->step.evaluate(views, value), LLMC_ERROR_RUNTIME));
    if (loss)
      *loss = value;
    return LLMC_OK;
  });
}

llmc_status llmc_step_last_loss(llmc_step *step, double *loss) {
  return withStep(step, [&] {
    LLMC_CHECK(notNull(loss, "loss"));
    return check(step->step.lastLoss(*loss), LLMC_ERROR_RUNTIME);
  });
}

llmc_status llmc_step_num_inputs(llmc_step *step, size_t *n) {
  return withStep(step, [&] {
    LLMC_CHECK(notNull(n, "n"));
    *n = step->step.inputs().size();
    return LLMC_OK;
  });
}

llmc_status llmc_step_input_info(llmc_step *step, size_t i, const char **name,
                                 int32_t *dtype, int32_t *rank,
                                 int64_t *shape, int32_t shape_capacity) {
  return withStep(step, [&] {
    return info(step->step.inputs(), i, name, dtype, rank, shape,
                shape_capacity);
  });
}

llmc_status llmc_step_num_parameters(llmc_step *step, size_t *n) {
  return withStep(step, [&] {
    LLMC_CHECK(notNull(n, "n"));
    *n = step->step.parameterInfo().size();
    return LLMC_OK;
  });
}

llmc_status llmc_step_parameter_info(llmc_step *step, size_t i,
                                     const char **name, int32_t *dtype,
                                     int32_t *rank, int64_t *shape,
                                     int32_t shape_capacity) {
  return withStep(step, [&] {
    return info(step->step.parameterInfo(), i, name, dtype, rank, shape,
                shape_capacity);
  });
}

llmc_status llmc_step_get_parameter(llmc_step *step, const char *name,
                                    void *dst, size_t bytes) {
  return withStep(step, [&] {
    if (!name || !dst)
      return fail(LLMC_ERROR_INVALID_ARGUMENT, "name or dst is NULL");
    jit::HostTensor t;
    LLMC_CHECK(check(step->step.parameter(name, t),
                     LLMC_ERROR_INVALID_ARGUMENT));
    if (bytes != t.bytes.size())
      return fail(LLMC_ERROR_INVALID_ARGUMENT,
                  "parameter '" + t.name + "' has " +
                      std::to_string(t.bytes.size()) + " bytes, dst has " +
                      std::to_string(bytes));
    std::memcpy(dst, t.bytes.data(), bytes);
    return LLMC_OK;
  });
}

llmc_status llmc_step_load_parameters(llmc_step *step,
                                      const char *const *names,
                                      const llmc_tensor *values, size_t n,
                                      int strict) {
  return withStep(step, [&] {
    if (n && (!names || !values))
      return fail(LLMC_ERROR_INVALID_ARGUMENT, "names or values is NULL");
    std::vector<jit::NamedTensor> named(n);
    for (size_t i = 0; i < n; ++i) {
      if (!names[i])
        return fail(LLMC_ERROR_INVALID_ARGUMENT,
                    "names[" + std::to_string(i) + "] is NULL");
      named[i].name = names[i];
      LLMC_CHECK(toView(values[i], i, "parameter", named[i].tensor));
    }
    return check(step->step.loadParameters(named, strict != 0),
                 LLMC_ERROR_INVALID_ARGUMENT);
  });
}

llmc_status llmc_step_steps_taken(llmc_step *step, int64_t *steps) {
  return withStep(step, [&] {
    LLMC_CHECK(notNull(steps, "steps"));
    *steps = step->step.stepsTaken();
    return LLMC_OK;
  });
}

llmc_status llmc_step_last_step_ms(llmc_step *step, double *ms) {
  return withStep(step, [&] {
    LLMC_CHECK(notNull(ms, "ms"));
    return check(step->step.lastStepMs(*ms), LLMC_ERROR_RUNTIME);
  });
}

llmc_status llmc_step_report_json(llmc_step *step, const char **json) {
  return withStep(step, [&] {
    LLMC_CHECK(notNull(json, "json"));
    *json = step->report.c_str();
    return LLMC_OK;
  });
}

} // extern "C"
