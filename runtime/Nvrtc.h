//===- Nvrtc.h - CUDA C++ to cubin with NVRTC -------------------*- C++ -*-===//
//
// The compiler emits CUDA C++ as strings; this file turns them into cubins for
// one GPU architecture. NVRTC needs no GPU, so kernels compile (and are
// tested) on machines without one. A failed compile returns the NVRTC log in
// the Status, as tinygrad's nvrtc_check does, because the log is the only
// useful part of a compile error.
//
// compileAll compiles many kernels on a pool of threads (NVRTC programs are
// independent) and consults a KernelCache first.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_NVRTC_H
#define LLMC_RUNTIME_NVRTC_H

#include "runtime/KernelCache.h"
#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

constexpr const char *kDefaultArch = "sm_90";

struct CompileOptions {
  std::string arch = kDefaultArch; // "sm_90", "sm_90a", "sm_80", ...
  bool fastMath = false;           // --use_fast_math changes numerics: opt-in
  bool lineInfo = false;           // -lineinfo, for profilers
  /// Adds the toolkit's include directory ($CUDA_HOME/include or
  /// /usr/local/cuda/include, when present): NVRTC has no built-in
  /// cuda_bf16.h / cuda_fp16.h.
  bool toolkitIncludes = true;
  std::vector<std::string> extra; // "-DNAME=1", "-I/path", ...
};

struct CompileRequest {
  std::string name;   // kernel name, for messages and NVRTC's file name
  std::string source; // CUDA C++
  CompileOptions options;
};

struct CompileResult {
  Status status;
  std::vector<uint8_t> cubin;
  bool cacheHit = false;
  /// One line when the cache held a corrupt entry for this kernel, which was
  /// recompiled and replaced; empty otherwise. The caller shows it.
  std::string warning;
};

/// The exact NVRTC option list for `options` (also part of the cache key).
std::vector<std::string> nvrtcOptions(const CompileOptions &options);

/// "13.0"; an error when NVRTC cannot be loaded.
Status nvrtcVersion(std::string &version);

/// OK when NVRTC can compile for `arch` ("sm_90"); otherwise one line that
/// names the arch and lists the ones this NVRTC supports. Checked once before
/// compiling a model's kernels, so that a bad --arch is one message rather
/// than one per kernel.
Status checkArchSupported(const std::string &arch);

/// The architecture to compile for: "sm_<major><minor>" of device 0 when a
/// driver and a GPU are present, else kDefaultArch.
std::string detectArch(bool *detected = nullptr);

/// The memory of GPU 0 in bytes (cuDeviceTotalMem), or 0 without a GPU:
/// what `--memory-budget 0.5` is a fraction of.
uint64_t detectTotalMemory();

/// Compiles one kernel. With a cache, a hit skips NVRTC and a miss stores the
/// result; a corrupt entry is recompiled and replaced, and `warning` (when
/// given) says so in one line. Errors look like:
///   NVRTC failed to compile kernel 'add' for sm_90:
///   add.cu(3): error: identifier "y" is undefined
Status compileToCubin(const CompileRequest &request,
                      std::vector<uint8_t> &cubin,
                      const KernelCache *cache = nullptr,
                      bool *cacheHit = nullptr,
                      std::string *warning = nullptr);

/// Compiles every request on `threads` threads (0: hardware concurrency).
/// Results are in request order; each carries its own Status. Requests with
/// the same source and options compile once and get the same result.
std::vector<CompileResult>
compileAll(const std::vector<CompileRequest> &requests,
           const KernelCache *cache = nullptr, unsigned threads = 0);

} // namespace llmc

#endif // LLMC_RUNTIME_NVRTC_H
