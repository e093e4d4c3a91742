/*===- llmc.h - llmc's embedded JIT API (C ABI) -------------------*- C -*-===//
 *
 * The C face of include/llmc/Step.h, in libllmc.so, for bindings (the Python
 * package python/llmc uses it through ctypes) and for C programs. The full
 * story is docs/jit-api.md.
 *
 * Errors: every function returns an llmc_status. LLMC_OK is 0; on anything
 * else, llmc_last_error() returns the message of the last failed call on
 * the calling thread (thread-local; valid until that thread's next llmc
 * call). No C++ exception crosses this boundary, and a bad handle (NULL,
 * destroyed, or never created) is reported as LLMC_ERROR_BAD_HANDLE, not
 * dereferenced.
 *
 * Threads: the library may be called from any thread. One llmc_step must
 * not be used by two threads at once (the caller serializes calls on a
 * step); different steps are independent. llmc_step_destroy must not race
 * with other calls on the same step.
 *
 * Memory: tensors passed in are read during the call only (host memory is
 * copied before the call returns; device memory is copied on the step's
 * stream, ordered as described at llmc_tensor). Strings returned are owned
 * by the library.
 *
 *===----------------------------------------------------------------------===*/
#ifndef LLMC_INCLUDE_LLMC_LLMC_H
#define LLMC_INCLUDE_LLMC_LLMC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLMC_API __attribute__((visibility("default")))

/* Bumped when a signature or struct below changes incompatibly. */
#define LLMC_ABI_VERSION 1

typedef enum llmc_status {
  LLMC_OK = 0,
  LLMC_ERROR_INVALID_ARGUMENT = 1, /* wrong shape, dtype, device, option */
  LLMC_ERROR_BAD_HANDLE = 2,       /* NULL, destroyed or unknown handle */
  LLMC_ERROR_COMPILE = 3,          /* the model does not load or compile */
  LLMC_ERROR_RUNTIME = 4,          /* CUDA, the evaluator, a failed step */
  LLMC_ERROR_INTERNAL = 5          /* a bug: an exception inside llmc */
} llmc_status;

typedef enum llmc_dtype {
  LLMC_F32 = 0,
  LLMC_F16 = 1,
  LLMC_BF16 = 2,
  LLMC_I32 = 3,
  LLMC_I64 = 4,
  LLMC_U8 = 5
} llmc_dtype;

typedef enum llmc_device { LLMC_CPU = 0, LLMC_CUDA = 1 } llmc_device;

/* llmc_tensor.stream: "do not order after any stream". */
#define LLMC_NO_STREAM UINTPTR_MAX

/* A caller-owned, row-major, contiguous tensor.
 * device LLMC_CUDA: `data` is a device pointer in the device's primary
 * context (PyTorch's), and `stream` the CUstream it was written on (0 or 1:
 * the legacy default stream, 2: per-thread default). The step's copy is
 * ordered after that stream, and the stream after the step's use: when all
 * device inputs name one stream the step runs on it, else with events. The
 * host does not wait. LLMC_NO_STREAM skips both. */
typedef struct llmc_tensor {
  const void *data;
  int32_t dtype;  /* llmc_dtype */
  int32_t device; /* llmc_device */
  int32_t rank;
  const int64_t *shape;
  uintptr_t stream;
} llmc_tensor;

typedef struct llmc_step llmc_step; /* opaque */

/* "0.1.0": the library's version, and the ABI version it implements. */
LLMC_API const char *llmc_version(void);
LLMC_API int llmc_abi_version(void);

/* The message of the calling thread's last failed call ("" if none). */
LLMC_API const char *llmc_last_error(void);

/* Compiles a model file (.onnx, .json, .mlir; .llmc bundles for cuda) into
 * a training step. `options_json` is NULL or a JSON object whose keys are
 * those of llmc::jit::Options in snake_case: batch, seq, dims ({name: n}),
 * precision ("fp32" | "bf16"), device ("cpu" | "cuda"), cuda_device, arch,
 * cache_dir, seed, optimizer, beta1, beta2, eps, weight_decay, momentum,
 * clip_norm, decay_min_rank, lr, warmup, memory_budget ("40GiB", "0.5",
 * "all"; docs/memory.md). Unknown keys are an error. */
LLMC_API llmc_status llmc_compile(const char *model_path,
                                  const char *options_json, llmc_step **out);
/* The same for a JSON graph given as text (docs/json-format.md). */
LLMC_API llmc_status llmc_compile_json_graph(const char *graph_json,
                                             const char *options_json,
                                             llmc_step **out);
/* Frees the step (NULL is fine). Further calls with it: BAD_HANDLE. */
LLMC_API llmc_status llmc_step_destroy(llmc_step *step);

/* One training step (forward, backward, optimizer) on `inputs[0..n)` in
 * the order llmc_step_input_info gives. `lr` < 0 uses the schedule of the
 * options (lr, warmup). `loss` NULL: return once the step is queued,
 * without waiting for the GPU (host inputs are copied and device inputs
 * ordered by then); llmc_step_last_loss waits and reads it. */
LLMC_API llmc_status llmc_step_run(llmc_step *step, const llmc_tensor *inputs,
                                   size_t n, double lr, double *loss);
/* The loss of the last run or evaluate; waits for the step to finish. */
LLMC_API llmc_status llmc_step_last_loss(llmc_step *step, double *loss);
/* The loss at the current parameters; nothing is updated. */
LLMC_API llmc_status llmc_step_evaluate(llmc_step *step,
                                        const llmc_tensor *inputs, size_t n,
                                        double *loss);

/* Inputs and parameters: count, then name, dtype, rank and shape of item i.
 * `name` stays valid while the step lives; `shape` receives up to
 * `shape_capacity` dims (rank is always set). */
LLMC_API llmc_status llmc_step_num_inputs(llmc_step *step, size_t *n);
LLMC_API llmc_status llmc_step_input_info(llmc_step *step, size_t i,
                                          const char **name, int32_t *dtype,
                                          int32_t *rank, int64_t *shape,
                                          int32_t shape_capacity);
LLMC_API llmc_status llmc_step_num_parameters(llmc_step *step, size_t *n);
LLMC_API llmc_status llmc_step_parameter_info(llmc_step *step, size_t i,
                                              const char **name,
                                              int32_t *dtype, int32_t *rank,
                                              int64_t *shape,
                                              int32_t shape_capacity);

/* Copies parameter `name` (f32, logical shape) into host memory `dst` of
 * `bytes` bytes, which must be its exact size. */
LLMC_API llmc_status llmc_step_get_parameter(llmc_step *step,
                                             const char *name, void *dst,
                                             size_t bytes);
/* Writes parameters by name; names[i] gets values[i]. strict != 0: every
 * parameter must be given. Nothing is written unless all are valid.
 * Optimizer state and the step count are kept. */
LLMC_API llmc_status llmc_step_load_parameters(llmc_step *step,
                                               const char *const *names,
                                               const llmc_tensor *values,
                                               size_t n, int strict);

/* Training steps taken so far. */
LLMC_API llmc_status llmc_step_steps_taken(llmc_step *step, int64_t *steps);
/* Milliseconds of the last run or evaluate: GPU time of the CUDA graph
 * replay (waits for it), or the evaluator's wall time on the CPU. */
LLMC_API llmc_status llmc_step_last_step_ms(llmc_step *step, double *ms);
/* The compile report as a JSON object; valid while the step lives. */
LLMC_API llmc_status llmc_step_report_json(llmc_step *step,
                                           const char **json);

#ifdef __cplusplus
}
#endif

#endif /* LLMC_INCLUDE_LLMC_LLMC_H */
