//===- Step.cpp - llmc::jit::Step: checks, then the backend ---------------===//
//
// Everything a caller can get wrong is checked here, before a backend runs:
// the number of inputs, each one's dtype, shape, device and pointer, token
// ids against the loss's classes (a GPU gather past the table would fault
// the context; only host ids can be checked without a sync), and
// parameter names, shapes and dtypes. Messages name the input or parameter
// by the model's name and say what was expected.
//
//===----------------------------------------------------------------------===//
#include "llmc/Step.h"
#include "compiler/Compile.h"
#include "compiler/Version.h"
#include "compiler/jit/Backend.h"
#include "compiler/jit/TensorConvert.h"

#include "runtime/Plan.h"

#include "llvm/ADT/StringRef.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

namespace llmc::jit {

const char *dtypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::U8:
    return "u8";
  }
  return "?";
}

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  case DType::U8:
    return 1;
  }
  return 0;
}

const char *deviceName(Device device) {
  return device == Device::Cpu ? "cpu" : "cuda";
}

const char *version() { return LLMC_VERSION; }

TensorView TensorView::host(const float *data, std::vector<int64_t> shape) {
  return {data, DType::F32, std::move(shape), Device::Cpu, 0};
}
TensorView TensorView::host(const int64_t *data, std::vector<int64_t> shape) {
  return {data, DType::I64, std::move(shape), Device::Cpu, 0};
}
TensorView TensorView::host(const int32_t *data, std::vector<int64_t> shape) {
  return {data, DType::I32, std::move(shape), Device::Cpu, 0};
}
TensorView TensorView::cuda(const void *data, DType dtype,
                            std::vector<int64_t> shape, uintptr_t stream) {
  return {data, dtype, std::move(shape), Device::Cuda, stream};
}
int64_t TensorView::elementCount() const { return jit::elementCount(shape); }

//===----------------------------------------------------------------------===//
// The report
//===----------------------------------------------------------------------===//

static std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string CompileReport::toJson() const {
  std::string padded;
  for (const std::string &line : padding)
    padded += (padded.empty() ? "" : ", ") + quoted(line);
  char numbers[512];
  std::snprintf(numbers, sizeof numbers,
                "\"parameters\": %lld, \"tokens\": %lld, \"vocab\": %lld, "
                "\"kernels\": %zu, \"matmuls\": %zu, \"launches\": %zu, "
                "\"cache_hits\": %zu, \"arena_bytes\": %llu, "
                "\"model_flops\": %.6g, \"compile_seconds\": %.6g, "
                "\"context_seconds\": %.6g",
                static_cast<long long>(parameters),
                static_cast<long long>(tokens), static_cast<long long>(vocab),
                kernels, matmuls, launches, cacheHits,
                static_cast<unsigned long long>(arenaBytes), modelFlops,
                compileSeconds, contextSeconds);
  std::string times;
  for (const auto &[name, seconds] : phases) {
    char value[32];
    std::snprintf(value, sizeof value, ": %.6g", seconds);
    times += (times.empty() ? "" : ", ") + quoted(name) + value;
  }
  return "{\"device\": " + quoted(deviceName(device)) +
         ", \"model\": " + quoted(model) +
         ", \"precision\": " + quoted(precision) +
         ", \"arch\": " + quoted(arch) +
         ", \"nvrtc_version\": " + quoted(nvrtcVersion) +
         ", \"cache\": " + quoted(cache) + ", \"padding\": [" + padded +
         "], \"phases\": {" + times + "}, " + numbers + "}";
}

//===----------------------------------------------------------------------===//
// Step
//===----------------------------------------------------------------------===//

Step::Step() = default;
Step::~Step() = default;
Step::Step(Step &&other) noexcept = default;
Step &Step::operator=(Step &&other) noexcept = default;
Step::Step(std::unique_ptr<Backend> backend) : backend_(std::move(backend)) {}

static const std::vector<TensorInfo> kNoTensors;
static const CompileReport kNoReport;

const std::vector<TensorInfo> &Step::inputs() const {
  return backend_ ? backend_->inputs : kNoTensors;
}
const std::vector<TensorInfo> &Step::parameterInfo() const {
  return backend_ ? backend_->parameters : kNoTensors;
}
const CompileReport &Step::report() const {
  return backend_ ? backend_->report : kNoReport;
}
int64_t Step::stepsTaken() const { return backend_ ? backend_->steps : 0; }

double Step::scheduledLearningRate() const {
  if (!backend_)
    return 0;
  const Options &o = backend_->options;
  if (o.warmup > 0 && backend_->steps < o.warmup)
    return o.lr * static_cast<double>(backend_->steps + 1) /
           static_cast<double>(o.warmup);
  return o.lr;
}

static Status invalidStep() {
  return Status::error("the step is not compiled (a default-constructed or "
                       "moved-from llmc::jit::Step): call llmc::jit::compile "
                       "first");
}

/// dtype, shape and device of one tensor against what the step expects.
/// `what()` names it, built only for a message: a step's checks run on
/// every call and allocate nothing when they pass.
template <class What>
static Status checkTensor(const TensorView &v, const TensorInfo &want,
                          const What &what, Device stepDevice) {
  if (v.dtype != want.dtype || v.shape != want.shape)
    return Status::error(what() + " is " + typeText(v.dtype, v.shape) +
                         " but the model expects " +
                         typeText(want.dtype, want.shape));
  if (v.device == Device::Cuda && stepDevice == Device::Cpu)
    return Status::error(what() + " is in GPU memory, but this step runs on "
                                  "the CPU (device 'cpu'): pass host memory, "
                                  "or compile with device 'cuda'");
  if (!v.data && elementCount(v.shape) > 0)
    return Status::error(what() + " has a null data pointer");
  return Status::ok();
}

/// Host token ids must index the embedding and the loss: a larger id would
/// read past a table on the GPU. Negative targets are -100-style ignore
/// labels, which the loss skips.
template <class What>
static Status checkTokenIds(const TensorView &v, int64_t vocab,
                            const What &what) {
  if (vocab <= 0 || v.device != Device::Cpu ||
      (v.dtype != DType::I64 && v.dtype != DType::I32))
    return Status::ok();
  int64_t n = elementCount(v.shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = v.dtype == DType::I64
                     ? static_cast<const int64_t *>(v.data)[i]
                     : static_cast<const int32_t *>(v.data)[i];
    if (id >= vocab)
      return Status::error(what() + " holds " + std::to_string(id) +
                           " at element " + std::to_string(i) +
                           ", but the model's vocabulary has " +
                           std::to_string(vocab) + " entries (ids 0.." +
                           std::to_string(vocab - 1) + ")");
  }
  return Status::ok();
}

Status Step::checkInputs(const std::vector<TensorView> &in) const {
  if (!backend_)
    return invalidStep();
  const std::vector<TensorInfo> &want = backend_->inputs;
  if (in.size() != want.size()) {
    std::string names;
    for (const TensorInfo &t : want)
      names += (names.empty() ? "" : ", ") + t.name + " " +
               typeText(t.dtype, t.shape);
    return Status::error("the step takes " + std::to_string(want.size()) +
                         " inputs (" + names + "), got " +
                         std::to_string(in.size()));
  }
  for (size_t i = 0; i < in.size(); ++i) {
    auto what = [&] {
      return "input '" + want[i].name + "' (#" + std::to_string(i) + ")";
    };
    LLMC_RETURN_IF_ERROR(
        checkTensor(in[i], want[i], what, backend_->report.device));
    // The integer inputs of rank 2 are token ids and targets (and masks,
    // whose 0/1 pass too).
    if (want[i].shape.size() == 2)
      LLMC_RETURN_IF_ERROR(checkTokenIds(in[i], backend_->report.vocab, what));
  }
  return Status::ok();
}

Status Step::run(const std::vector<TensorView> &inputs, double lr,
                 double &loss) {
  if (!backend_)
    return invalidStep();
  if (!std::isfinite(lr) || lr < 0)
    return Status::error("the learning rate must be finite and >= 0, got " +
                         std::to_string(lr));
  LLMC_RETURN_IF_ERROR(checkInputs(inputs));
  LLMC_RETURN_IF_ERROR(backend_->run(inputs, lr, &loss));
  ++backend_->steps;
  return Status::ok();
}

Status Step::launch(const std::vector<TensorView> &inputs, double lr) {
  if (!backend_)
    return invalidStep();
  if (!std::isfinite(lr) || lr < 0)
    return Status::error("the learning rate must be finite and >= 0, got " +
                         std::to_string(lr));
  LLMC_RETURN_IF_ERROR(checkInputs(inputs));
  LLMC_RETURN_IF_ERROR(backend_->run(inputs, lr, nullptr));
  ++backend_->steps;
  return Status::ok();
}

Status Step::lastLoss(double &loss) const {
  if (!backend_)
    return invalidStep();
  return backend_->lastLoss(loss);
}

Status Step::run(const std::vector<TensorView> &inputs, double &loss) {
  return run(inputs, scheduledLearningRate(), loss);
}

Status Step::evaluate(const std::vector<TensorView> &inputs, double &loss) {
  if (!backend_)
    return invalidStep();
  LLMC_RETURN_IF_ERROR(checkInputs(inputs));
  return backend_->evaluate(inputs, loss);
}

Status Step::lastStepMs(double &ms) const {
  if (!backend_)
    return invalidStep();
  return backend_->lastStepMs(ms);
}

Status Step::parameters(std::vector<HostTensor> &out) const {
  out.clear();
  if (!backend_)
    return invalidStep();
  for (size_t i = 0; i < backend_->parameters.size(); ++i) {
    const TensorInfo &p = backend_->parameters[i];
    HostTensor t{p.name, DType::F32, p.shape, {}};
    LLMC_RETURN_IF_ERROR(backend_->readParameter(i, t.bytes));
    out.push_back(std::move(t));
  }
  return Status::ok();
}

Status Step::parameter(const std::string &name, HostTensor &out) const {
  if (!backend_)
    return invalidStep();
  const std::vector<TensorInfo> &params = backend_->parameters;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == name) {
      out = HostTensor{name, DType::F32, params[i].shape, {}};
      return backend_->readParameter(i, out.bytes);
    }
  return Status::error("the model has no parameter '" + name + "'");
}

Status Step::loadParameters(const std::vector<NamedTensor> &values,
                            bool strict) {
  if (!backend_)
    return invalidStep();
  const std::vector<TensorInfo> &params = backend_->parameters;
  std::vector<int> which(values.size(), -1);
  std::set<std::string> given;
  for (size_t v = 0; v < values.size(); ++v) {
    for (size_t p = 0; p < params.size(); ++p)
      if (params[p].name == values[v].name)
        which[v] = static_cast<int>(p);
    if (which[v] < 0)
      return Status::error("the model has no parameter '" + values[v].name +
                           "'" +
                           (params.empty() ? ""
                                           : " (its first is '" +
                                                 params.front().name + "')"));
    if (!given.insert(values[v].name).second)
      return Status::error("parameter '" + values[v].name +
                           "' is given twice");
    // Parameters are f32 at the API, on either device.
    LLMC_RETURN_IF_ERROR(checkTensor(
        values[v].tensor, params[which[v]],
        [&] { return "parameter '" + values[v].name + "'"; },
        backend_->report.device));
  }
  if (strict)
    for (const TensorInfo &p : params)
      if (!given.count(p.name))
        return Status::error("parameter '" + p.name +
                             "' is missing (pass strict = false to load a "
                             "subset)");
  // All checked before the first write: a bad entry changes nothing.
  for (size_t v = 0; v < values.size(); ++v)
    LLMC_RETURN_IF_ERROR(backend_->writeParameter(which[v], values[v].tensor));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// compile
//===----------------------------------------------------------------------===//

static Status checkOptions(const Options &o) {
  if (o.batch < 0 || o.seq < 0)
    return Status::error("batch and seq must be >= 0 (0 keeps the model's)");
  if (o.precision != "fp32" && o.precision != "bf16")
    return Status::error("precision '" + o.precision +
                         "' is not one of fp32, bf16");
  RecomputeConfig recompute;
  if (std::string error; !recomputeFromText(o.memoryBudget, recompute, error))
    return Status::error("memory_budget: " + error);
  if (o.attentionBackend != "auto" && o.attentionBackend != "generated" &&
      o.attentionBackend != "cudnn")
    return Status::error("attention_backend '" + o.attentionBackend +
                         "' is not auto, generated or cudnn");
  if (o.padding != "auto" && o.padding != "off" && o.padding != "always")
    return Status::error("padding '" + o.padding +
                         "' is not one of auto, off, always");
  if (o.optimizer != "adamw" && o.optimizer != "sgd")
    return Status::error("optimizer '" + o.optimizer +
                         "' is not one of adamw, sgd");
  if (!(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1))
    return Status::error("beta1 and beta2 must lie in [0, 1)");
  if (!(o.epsilon >= 0 && o.weightDecay >= 0 && o.clipNorm >= 0 &&
        o.momentum >= 0 && o.lr >= 0 && std::isfinite(o.lr)))
    return Status::error("epsilon, weight decay, clip norm, momentum and lr "
                         "must be finite and >= 0");
  if (o.decayMinRank < 0 || o.decayMinRank > 63)
    return Status::error("decayMinRank must lie in [0, 63]");
  if (o.warmup < 0)
    return Status::error("warmup must be >= 0");
  if (!o.arch.empty()) {
    llvm::StringRef a(o.arch);
    bool ok = a.consume_front("sm_") && !a.empty();
    if (ok && a.ends_with("a"))
      a = a.drop_back();
    unsigned n = 0;
    if (!ok || a.getAsInteger(10, n))
      return Status::error("arch '" + o.arch +
                           "' is not sm_XY or sm_XYa (sm_90 for H100/H200)");
  }
  if (o.cudaDevice < 0)
    return Status::error("cudaDevice must be >= 0");
  return Status::ok();
}

static Status compileAny(const std::string &path, const std::string *json,
                         const Options &options, Step &out) {
  out = Step();
  LLMC_RETURN_IF_ERROR(checkOptions(options));
  bool bundle = !json && llvm::StringRef(path).ends_with(".llmc");
  if (bundle && options.device == Device::Cpu)
    return Status::error("'" + path +
                         "' is a compiled bundle, which runs on the GPU: "
                         "compile with device 'cuda', or give the model "
                         "file for device 'cpu'");
  std::unique_ptr<Backend> backend;
  LLMC_RETURN_IF_ERROR(options.device == Device::Cpu
                           ? createCpuBackend(path, json, options, backend)
                           : createCudaBackend(path, json, options, backend));
  out = Step(std::move(backend));
  return Status::ok();
}

Status compile(const std::string &path, const Options &options, Step &out) {
  return compileAny(path, nullptr, options, out);
}

Status compileJsonGraph(const std::string &json, const Options &options,
                        Step &out) {
  return compileAny("", &json, options, out);
}

} // namespace llmc::jit
