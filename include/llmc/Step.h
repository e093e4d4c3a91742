//===- Step.h - llmc's embedded JIT API (C++) -------------------*- C++ -*-===//
//
// A trainer that keeps its own loop hands llmc the model once and calls the
// compiled training step from that loop (docs/jit-api.md):
//
//   llmc::jit::Options options;
//   options.batch = 4;
//   options.seq = 64;
//   options.device = llmc::jit::Device::Cuda;
//   llmc::jit::Step step;
//   if (llmc::Status s = llmc::jit::compile("model.onnx", options, step); !s)
//     die(s.message());
//   double loss = 0;
//   llmc::Status s = step.run({llmc::jit::TensorView::host(idx, {4, 64}),
//                              llmc::jit::TensorView::host(tgt, {4, 64})},
//                             /*lr=*/3e-4, loss);
//
// Every call returns an llmc::Status (runtime/Status.h): nothing throws and
// nothing aborts on a user's mistake. A Step is not thread-safe: one thread
// at a time may call it (different Steps are independent).
//
// The names live in llmc::jit because llmc::Step and llmc::DType already
// name the runtime's plan step and element type.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_INCLUDE_LLMC_STEP_H
#define LLMC_INCLUDE_LLMC_STEP_H

#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace llmc::jit {

/// Where a step runs, and where a tensor's memory lives.
enum class Device { Cpu, Cuda };

/// Element types a tensor may have at the API (a subset of the plan's).
enum class DType { F32, F16, BF16, I32, I64, U8 };

const char *dtypeName(DType type); // "f32", "i64", ...
size_t dtypeSize(DType type);
const char *deviceName(Device device); // "cpu", "cuda"

/// "No stream to order after" (TensorView::stream).
constexpr uintptr_t kNoStream = UINTPTR_MAX;

struct Options {
  /// Bind the model's symbolic batch and sequence dims (0: leave them; a
  /// model with static shapes ignores them); `dims` binds others by name.
  int64_t batch = 0, seq = 0;
  std::map<std::string, int64_t> dims;
  std::string precision = "fp32"; // fp32 | bf16 (docs/precision.md)
  /// Nice-number padding (docs/padding.md): auto (where the cost model says
  /// it pays) | off | always (every dim the ops allow; for tests). The
  /// API's parameters keep the model's shapes either way.
  std::string padding = "auto";
  /// Where attention runs (docs/codegen.md "cuDNN attention"): auto (cuDNN
  /// where it is measured faster on the GPU) | generated | cudnn.
  std::string attentionBackend = "auto";
  /// Activation checkpointing (docs/memory.md): "" none; a budget for the
  /// planned device memory ("40GiB", "900MiB", bytes, or a fraction of the
  /// GPU's memory, "0.5"); "all" recomputes every saved activation.
  std::string memoryBudget;
  Device device = Device::Cpu;    // Cpu: the float64 reference evaluator
  int cudaDevice = 0;             // which GPU (Device::Cuda)
  std::string arch;               // "" = the GPU's, else sm_90; "sm_XY"
  std::string cacheDir;           // kernel and compile cache; "" = $LLMC_CACHE_DIR or ~/.cache/llmc
  uint64_t seed = 0;              // initial parameters (llmc.init_rule draws)
  // The optimizer the step applies (AdamW as nanoGPT/llm.c configure it).
  std::string optimizer = "adamw"; // adamw | sgd
  double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8, weightDecay = 0.1;
  double momentum = 0.0;
  double clipNorm = 1.0;     // 0: no clipping
  int64_t decayMinRank = 2;  // weight decay on parameters of this rank and up
  // The schedule run() uses when no learning rate is passed: linear warmup
  // over `warmup` steps to `lr`, then constant (llmc train's schedule).
  double lr = 1e-3;
  int64_t warmup = 0;
};

/// A tensor the caller owns, seen for the length of one call. Row-major,
/// contiguous. For Device::Cuda, `data` is a device pointer in the current
/// (primary) context and `stream` the CUstream its contents were written on:
/// llmc orders its copy after that stream and that stream after llmc's use,
/// without blocking the host. 0 and 1 name the legacy default stream, 2 the
/// per-thread default; kNoStream skips the ordering.
struct TensorView {
  const void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  Device device = Device::Cpu;
  uintptr_t stream = 0;

  static TensorView host(const float *data, std::vector<int64_t> shape);
  static TensorView host(const int64_t *data, std::vector<int64_t> shape);
  static TensorView host(const int32_t *data, std::vector<int64_t> shape);
  static TensorView cuda(const void *data, DType dtype,
                         std::vector<int64_t> shape, uintptr_t stream = 0);
  int64_t elementCount() const;
};

/// A named tensor the API hands out (parameters): host memory, owned.
struct HostTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// A named view, for loadParameters.
struct NamedTensor {
  std::string name;
  TensorView tensor;
};

/// What the step takes or trains: a name, an element type, a shape.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// The compile report as data (what `llmc compile` prints).
struct CompileReport {
  Device device = Device::Cpu;
  std::string model, precision, arch, nvrtcVersion;
  int64_t parameters = 0;  // trained elements
  int64_t tokens = 0;      // elements of the token-id input
  int64_t vocab = 0;       // classes of the loss (0: none)
  size_t kernels = 0, matmuls = 0, launches = 0, cacheHits = 0;
  uint64_t arenaBytes = 0; // device memory of the step (cuda)
  double modelFlops = 0;   // per step
  /// From the call to a ready step; for cuda it includes contextSeconds.
  double compileSeconds = 0;
  /// cuda: creating the CUDA context (cuInit, the primary context), which
  /// the warm-start bar leaves out (issue 17).
  double contextSeconds = 0;
  /// The compile cache (docs/compile-time.md): "hit (key K)", "miss,
  /// stored (key K)", "miss, not stored: WHY" or "off: WHY"; empty on the
  /// CPU and for bundles.
  std::string cache;
  /// llmc-pad-shapes' decisions, one line per dim: "8063 -> 8064, +FLOPs:
  /// why (params)" (docs/padding.md). Parameters keep the model's shapes.
  std::vector<std::string> padding;
  /// cuda: where compileSeconds went, in order (name, seconds): CUDA's
  /// init and primary context, the compile cache's lookup (map and scan,
  /// key, cache entry, weights, ...) or the compile, the executor's load
  /// (arena, weights to the GPU, modules, cuBLASLt, ...). JSON: an object.
  std::vector<std::pair<std::string, double>> phases;
  /// One JSON object with the fields above (the C ABI's report).
  std::string toJson() const;
};

class Backend;

class Step {
public:
  Step();
  ~Step();
  Step(Step &&other) noexcept;
  Step &operator=(Step &&other) noexcept;

  /// False for a default-constructed (or moved-from) Step.
  bool valid() const { return backend_ != nullptr; }

  /// The data inputs run() and evaluate() take, in order (the model's
  /// graph inputs: token ids, targets, ...).
  const std::vector<TensorInfo> &inputs() const;
  /// The trained parameters, by the model's names and logical shapes.
  const std::vector<TensorInfo> &parameterInfo() const;
  const CompileReport &report() const;
  /// Training steps taken so far (run() calls that succeeded).
  int64_t stepsTaken() const;
  /// The rate run(inputs, loss) uses for the next step (Options' schedule).
  double scheduledLearningRate() const;

  /// One training step: forward, loss, backward and the optimizer update at
  /// learning rate `lr`. `inputs` are in inputs() order; each is checked
  /// (dtype, shape, device) before anything runs. Sets `loss`.
  Status run(const std::vector<TensorView> &inputs, double lr, double &loss);
  /// As above at the scheduled learning rate.
  Status run(const std::vector<TensorView> &inputs, double &loss);
  /// run() without waiting for the step (cuda): when it returns, host
  /// inputs are copied and device inputs ordered, the step is queued, and
  /// nothing on the host waited for the GPU. lastLoss() waits and reads it.
  /// On the CPU the step is computed before it returns.
  Status launch(const std::vector<TensorView> &inputs, double lr);
  /// The loss of the last run(), launch() or evaluate(); waits for it.
  Status lastLoss(double &loss) const;
  /// The loss at the current parameters; nothing is updated.
  Status evaluate(const std::vector<TensorView> &inputs, double &loss);

  /// GPU milliseconds of the last run() or evaluate() (the replay of the
  /// step's CUDA graph, from events around it; waits for it to finish).
  /// On the CPU, the wall time of the evaluator.
  Status lastStepMs(double &ms) const;

  /// Copies of every parameter (f32, logical shapes), in parameterInfo()
  /// order.
  Status parameters(std::vector<HostTensor> &out) const;
  /// One parameter by name.
  Status parameter(const std::string &name, HostTensor &out) const;
  /// Writes parameters by name; each must match its logical shape and
  /// dtype. `strict`: every parameter must be given. Optimizer state and the
  /// step count are kept, as PyTorch's load_state_dict keeps the optimizer.
  Status loadParameters(const std::vector<NamedTensor> &values,
                        bool strict = true);

  /// The implementation (compiler/jit/Backend.h); null when invalid.
  Backend *backend() const { return backend_.get(); }
  explicit Step(std::unique_ptr<Backend> backend);

  /// The checks run() and evaluate() make before anything runs (count,
  /// dtype, shape, device, host token ids); ok when they would pass.
  Status checkInputs(const std::vector<TensorView> &inputs) const;

private:
  std::unique_ptr<Backend> backend_;
};

/// Compiles a model file (.onnx, .json graph, .mlir) for options.device, or
/// loads a compiled bundle (.llmc, Device::Cuda only). Errors (also the
/// importer's and compiler's diagnostics) are in the Status; `out` is left
/// invalid on failure.
Status compile(const std::string &path, const Options &options, Step &out);
/// The same for a JSON graph given as text (docs/json-format.md).
Status compileJsonGraph(const std::string &json, const Options &options,
                        Step &out);

/// "0.1.0 (git abc123)": the library's version.
const char *version();

} // namespace llmc::jit

#endif // LLMC_INCLUDE_LLMC_STEP_H
