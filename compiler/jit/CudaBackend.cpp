//===- CudaBackend.cpp - jit::Step as a compiled plan on a GPU ------------===//
//
// The plan `llmc compile` would write (compileModule), or a bundle, on an
// Executor. A run whose device inputs were all written on one stream runs
// on that stream: the graph copies the inputs itself (memcpy nodes whose
// source changes only when the caller's pointer does), so a step with
// nothing changed is one graph launch, and the stream's order replaces the
// event pairs. Inputs from several streams run on the executor's stream,
// ordered by an event each way. Reading the loss waits for the graph's own
// completion event, never a stream. docs/jit-api.md has the whole picture
// ("What one call costs").
//
// evaluate() replays the same training plan at lr 0 between a host
// snapshot and restore of parameters and optimizer state, as `llmc train`
// validates (CudaTrainer::validate): exact, and costly per call (two host
// round trips of the state); an eval plan sharing the arena is the fix
// (docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#include "compiler/jit/Backend.h"
#include "compiler/jit/ModelSource.h"
#include "compiler/jit/ParameterLayout.h"
#include "compiler/jit/PlanCompile.h"
#include "compiler/jit/TensorConvert.h"

#include "runtime/Bundle.h"
#include "runtime/Executor.h"
#include "runtime/LibraryPreload.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

namespace llmc::jit {

namespace {

class CudaBackend : public Backend {
public:
  ~CudaBackend() override;
  Status init(const std::string &path, const std::string *jsonText);
  Status run(const std::vector<TensorView> &in, double lr,
             double *loss) override;
  Status lastLoss(double &loss) override {
    return executor_->readScalar("loss", loss);
  }
  Status evaluate(const std::vector<TensorView> &in, double &loss) override;
  Status readParameter(size_t index, std::vector<uint8_t> &f32) override;
  Status lastStepMs(double &ms) override {
    float f = 0;
    LLMC_RETURN_IF_ERROR(executor_->lastRunMs(f));
    ms = f;
    return Status::ok();
  }
  Status writeParameter(size_t index, const TensorView &value) override;

private:
  Status bind();
  Status writeInputs(const std::vector<TensorView> &in);
  Status launch(const std::vector<TensorView> &in, double lr);
  Status waitFor(uintptr_t stream);
  Status orderCallersAfterStep(const std::vector<TensorView> &in);

  std::unique_ptr<Executor> executor_;
  std::vector<const BufferInfo *> inputBuffers_, paramBuffers_;
  bool hasStep_ = false;
  // What the arena holds, so that an unchanged value costs no copy: the
  // learning rate last written, and the step counter, which the graph
  // increments on the device (-1: unknown, write it).
  double lrOnDevice_ = -1;
  int64_t stepOnDevice_ = -1;
  CUevent ready_ = nullptr, done_ = nullptr;
  std::vector<CUdeviceptr> sources_; // per input: device pointer, or 0
  std::string name_;
};

CudaBackend::~CudaBackend() {
  if (!executor_)
    return;
  const cuda::DriverApi &cu = executor_->driver();
  cu.cuCtxSetCurrent(executor_->cudaContext());
  if (ready_)
    cu.cuEventDestroy(ready_);
  if (done_)
    cu.cuEventDestroy(done_);
}

/// Holds a retain of GPU `device`'s primary context: created before the
/// executor so that the time of creating it is measured on its own, and
/// released after the executor has retained it too (releasing the last
/// retain would destroy it).
class ContextRetain {
public:
  explicit ContextRetain(int device) {
    if (cuda::loadDriver(cu_) && cu_->cuDeviceGet(&device_, device) ==
                                     CUDA_SUCCESS) {
      CUcontext ctx;
      held_ = cu_->cuDevicePrimaryCtxRetain(&ctx, device_) == CUDA_SUCCESS;
    }
  }
  ~ContextRetain() {
    if (held_)
      cu_->cuDevicePrimaryCtxRelease(device_);
  }

private:
  const cuda::DriverApi *cu_ = nullptr;
  CUdevice device_ = 0;
  bool held_ = false; // failures are left for the executor to report
};

static double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

Status CudaBackend::init(const std::string &path,
                         const std::string *jsonText) {
  auto start = std::chrono::steady_clock::now();
  name_ = modelName(path, jsonText);
  std::string why;
  // The CUDA context is created in two parts timed together: cuInit here,
  // the primary context after the compile.
  bool available = gpuAvailable(why);
  report.contextSeconds = secondsSince(start);
  report.phases.push_back({"cuInit", report.contextSeconds});
  if (!available)
    return Status::error("device 'cuda' needs a GPU: " + why +
                         " (device 'cpu' runs the reference evaluator)");
  // cuBLASLt (and NVRTC, for the cache key) load beside the compile
  // cache's lookup; joined before the executor needs them. After cuInit,
  // not beside it: no library initializer runs while the driver starts.
  struct Joined {
    std::thread t;
    ~Joined() {
      if (t.joinable())
        t.join();
    }
  } preload{cuda::preloadLibraries()};
  Plan plan;
  bool bundle = !jsonText && llvm::StringRef(path).ends_with(".llmc");
  if (bundle) {
    auto t = std::chrono::steady_clock::now();
    LLMC_RETURN_IF_ERROR(readBundle(path, plan));
    report.vocab = plan.vocab;
    report.phases.push_back({"bundle read", secondsSince(t)});
  } else {
    LLMC_RETURN_IF_ERROR(compileGpuPlan(path, jsonText, options, plan, report));
  }
  ExecutorOptions eo;
  eo.device = options.cudaDevice;
  eo.source = name_;
  eo.cacheDir = options.cacheDir;
  auto t0 = std::chrono::steady_clock::now();
  ContextRetain context(options.cudaDevice);
  report.contextSeconds += secondsSince(t0);
  report.phases.push_back({"primary context", secondsSince(t0)});
  t0 = std::chrono::steady_clock::now();
  preload.t.join();
  report.phases.push_back({"waiting for cuBLASLt's load", secondsSince(t0)});
  LLMC_RETURN_IF_ERROR(Executor::create(std::move(plan), eo, executor_));
  report.phases.insert(report.phases.end(),
                       executor_->loadTimes().phases.begin(),
                       executor_->loadTimes().phases.end());
  t0 = std::chrono::steady_clock::now();
  LLMC_RETURN_IF_ERROR(bind());
  const cuda::DriverApi &cu = executor_->driver();
  LLMC_CU(cu.cuCtxSetCurrent(executor_->cudaContext()), name_);
  LLMC_CU(cu.cuEventCreate(&ready_, CU_EVENT_DISABLE_TIMING), name_);
  LLMC_CU(cu.cuEventCreate(&done_, CU_EVENT_DISABLE_TIMING), name_);
  report.phases.push_back({"binding", secondsSince(t0)});
  report.device = Device::Cuda;
  report.model = name_;
  report.precision = bundle ? "" : options.precision;
  if (report.arch.empty())
    report.arch = executor_->arch();
  report.arenaBytes = executor_->plan().arenaBytes;
  if (bundle)
    for (const TensorInfo &p : parameters)
      report.parameters += elementCount(p.shape);
  report.compileSeconds = secondsSince(start);
  double noted = 0;
  for (const auto &phase : report.phases)
    noted += phase.second;
  report.phases.push_back({"other", report.compileSeconds - noted});
  return Status::ok();
}

/// The plan's contract (docs/codegen.md, "What the trainer expects"):
/// inputs are the `input` buffers in argument order; `lr` and `loss`
/// slots; optionally `step`.
Status CudaBackend::bind() {
  const Plan &plan = executor_->plan();
  for (const BufferInfo &b : plan.buffers) {
    if (b.role != BufferRole::Input && b.role != BufferRole::Param)
      continue;
    auto dtype = dtypeOfPlan(b.dtype);
    if (!dtype)
      return Status::error("'" + name_ + "': buffer '" + b.name +
                           "' has the dtype " + dtypeName(b.dtype) +
                           ", which the JIT API cannot pass yet");
    if (b.role == BufferRole::Input) {
      inputBuffers_.push_back(&b);
      inputs.push_back({b.name, *dtype, b.shape});
    } else {
      paramBuffers_.push_back(&b);
      parameters.push_back({b.name, DType::F32, parameterLayout(b).logical});
    }
  }
  for (const char *slot : {"lr", "loss"})
    if (!plan.findScalar(slot))
      return Status::error("'" + name_ + "' has no scalar slot '" + slot +
                           "': it is not a training step compiled by llmc "
                           "(an eval plan from `llmc compile --eval` trains "
                           "nothing)");
  hasStep_ = plan.findScalar("step") != nullptr;
  // Device inputs are copied by the graph itself: exactly the caller's
  // bytes (the buffer may be larger, for alignment).
  std::vector<GraphInput> graphInputs;
  for (size_t i = 0; i < inputBuffers_.size(); ++i)
    graphInputs.push_back({inputBuffers_[i]->name,
                           static_cast<uint64_t>(elementCount(inputs[i].shape)) *
                               dtypeSize(inputs[i].dtype)});
  sources_.assign(graphInputs.size(), 0);
  return executor_->setGraphInputs(std::move(graphInputs));
}

Status CudaBackend::waitFor(uintptr_t stream) {
  const cuda::DriverApi &cu = executor_->driver();
  CUstream caller = reinterpret_cast<CUstream>(stream);
  LLMC_CU(cu.cuEventRecord(ready_, caller),
          "ordering after the caller's stream");
  LLMC_CU(cu.cuStreamWaitEvent(executor_->stream(), ready_, 0),
          "ordering after the caller's stream");
  return Status::ok();
}

/// Host inputs are copied now (pageable: staged before the call returns);
/// device inputs become the graph's input sources.
Status CudaBackend::writeInputs(const std::vector<TensorView> &in) {
  for (size_t i = 0; i < in.size(); ++i) {
    sources_[i] = 0;
    if (in[i].device == Device::Cuda) {
      sources_[i] = reinterpret_cast<CUdeviceptr>(in[i].data);
      continue;
    }
    size_t bytes = elementCount(in[i].shape) * dtypeSize(in[i].dtype);
    LLMC_RETURN_IF_ERROR(
        executor_->writeBuffer(inputBuffers_[i]->name, in[i].data, bytes));
  }
  return Status::ok();
}

/// The stream all device inputs were written on, when there is exactly one
/// (and it is not kNoStream); the step then runs on it.
static bool callersStream(const std::vector<TensorView> &in, uintptr_t &out) {
  bool any = false;
  for (const TensorView &t : in) {
    if (t.device != Device::Cuda)
      continue;
    if (t.stream == kNoStream || (any && t.stream != out))
      return false;
    out = t.stream;
    any = true;
  }
  return any;
}

/// With inputs from several streams the step runs on the executor's
/// stream: each input's stream waits for the replay that read it, so the
/// caller may overwrite an input as soon as its stream moves on.
Status CudaBackend::orderCallersAfterStep(const std::vector<TensorView> &in) {
  const cuda::DriverApi &cu = executor_->driver();
  LLMC_CU(cu.cuEventRecord(done_, executor_->stream()), name_);
  for (size_t i = 0; i < in.size(); ++i) {
    uintptr_t s = in[i].stream;
    bool seen = false;
    for (size_t j = 0; j < i; ++j)
      seen |= in[j].device == Device::Cuda && in[j].stream == s;
    if (in[i].device == Device::Cuda && s != kNoStream && !seen)
      LLMC_CU(cu.cuStreamWaitEvent(reinterpret_cast<CUstream>(s), done_, 0),
              "ordering the caller's stream after the step");
  }
  return Status::ok();
}

Status CudaBackend::launch(const std::vector<TensorView> &in, double lr) {
  const cuda::DriverApi &cu = executor_->driver();
  LLMC_CU(cu.cuCtxSetCurrent(executor_->cudaContext()), name_);
  uintptr_t caller = kNoStream;
  bool onCaller = callersStream(in, caller);
  LLMC_RETURN_IF_ERROR(executor_->useStream(
      onCaller ? reinterpret_cast<CUstream>(caller) : executor_->stream()));
  if (!onCaller) {
    uintptr_t waited = kNoStream;
    for (const TensorView &t : in)
      if (t.device == Device::Cuda && t.stream != kNoStream &&
          t.stream != waited) {
        LLMC_RETURN_IF_ERROR(waitFor(t.stream));
        waited = t.stream;
      }
  }
  LLMC_RETURN_IF_ERROR(writeInputs(in));
  // Until this launch is known to have been queued, neither is known.
  int64_t step = std::exchange(stepOnDevice_, -1);
  double rate = std::exchange(lrOnDevice_, -1);
  if (rate != lr)
    LLMC_RETURN_IF_ERROR(executor_->setScalar("lr", lr));
  if (hasStep_ && step != steps)
    LLMC_RETURN_IF_ERROR(
        executor_->setScalar("step", static_cast<double>(steps)));
  LLMC_RETURN_IF_ERROR(executor_->replay(sources_));
  lrOnDevice_ = lr;
  stepOnDevice_ = steps + 1;
  return onCaller ? Status::ok() : orderCallersAfterStep(in);
}

Status CudaBackend::run(const std::vector<TensorView> &in, double lr,
                        double *loss) {
  LLMC_RETURN_IF_ERROR(launch(in, lr));
  return loss ? executor_->readScalar("loss", *loss) : Status::ok();
}

Status CudaBackend::evaluate(const std::vector<TensorView> &in, double &loss) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> saved;
  for (const BufferInfo &b : executor_->plan().buffers)
    if (b.role == BufferRole::Param || b.role == BufferRole::OptimizerState) {
      saved.push_back({b.name, {}});
      LLMC_RETURN_IF_ERROR(executor_->readBuffer(b.name, saved.back().second));
    }
  Status s = launch(in, 0.0);
  if (s)
    s = executor_->readScalar("loss", loss);
  for (auto &[name, bytes] : saved)
    LLMC_RETURN_IF_ERROR(
        executor_->writeBuffer(name, bytes.data(), bytes.size()));
  LLMC_RETURN_IF_ERROR(executor_->synchronize());
  return s;
}

Status CudaBackend::readParameter(size_t index, std::vector<uint8_t> &f32) {
  const BufferInfo &b = *paramBuffers_[index];
  std::vector<uint8_t> stored;
  LLMC_RETURN_IF_ERROR(executor_->readBuffer(b.name, stored));
  if (b.dtype != llmc::DType::F32)
    return Status::error("parameter '" + b.name + "' is stored as " +
                         dtypeName(b.dtype) +
                         "; the JIT API reads f32 master weights only");
  return unpad(parameterLayout(b), stored.data(), f32);
}

Status CudaBackend::writeParameter(size_t index, const TensorView &value) {
  const BufferInfo &b = *paramBuffers_[index];
  ParameterLayout layout = parameterLayout(b);
  size_t bytes = elementCount(value.shape) * dtypeSize(value.dtype);
  std::vector<uint8_t> host;
  const uint8_t *logical = static_cast<const uint8_t *>(value.data);
  const cuda::DriverApi &cu = executor_->driver();
  LLMC_CU(cu.cuCtxSetCurrent(executor_->cudaContext()), name_);
  // Back on the executor's stream: the last step's stream is the caller's,
  // which need not outlive that step.
  LLMC_RETURN_IF_ERROR(executor_->useStream(executor_->stream()));
  if (value.device == Device::Cuda) {
    // Rare (a load, not a step): through the host, so that padding is
    // applied in one place.
    if (value.stream != kNoStream)
      LLMC_CU(cu.cuStreamSynchronize(reinterpret_cast<CUstream>(value.stream)),
              "waiting for the caller's stream");
    host.resize(bytes);
    LLMC_CU(cu.cuMemcpyDtoH(host.data(),
                            reinterpret_cast<CUdeviceptr>(value.data), bytes),
            "reading parameter '" + b.name + "' from device memory");
    logical = host.data();
  }
  std::vector<uint8_t> stored;
  LLMC_RETURN_IF_ERROR(pad(layout, logical, stored));
  LLMC_RETURN_IF_ERROR(
      executor_->writeBuffer(b.name, stored.data(), stored.size()));
  // The staging vector dies here: the pageable copy is staged already, but
  // wait anyway so that a later failure names this parameter.
  return executor_->synchronize();
}

} // namespace

Status createCudaBackend(const std::string &path, const std::string *jsonText,
                         const Options &options,
                         std::unique_ptr<Backend> &out) {
  auto backend = std::make_unique<CudaBackend>();
  backend->options = options;
  LLMC_RETURN_IF_ERROR(backend->init(path, jsonText));
  out = std::move(backend);
  return Status::ok();
}

} // namespace llmc::jit
