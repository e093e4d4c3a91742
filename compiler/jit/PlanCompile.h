//===- PlanCompile.h - The JIT's GPU plan, through the compile cache -*- C++ -*-===//
//
// Device cuda compiles the plan `llmc compile` would write. A model file
// goes through compileModelFile (compiler/CompileCache.h), so a second
// process compiling the same ONNX model with the same options reads the
// cached plan and maps the weights from the model file instead of
// importing, running the pipeline and codegen (issue 17's warm start). A
// JSON graph given as text is compiled every time (the cache keys files).
//
// No GPU is needed here (NVRTC runs without one), so the cache path is
// tested on the CPU (JitApiTest); CudaBackend loads the result.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_JIT_PLANCOMPILE_H
#define LLMC_COMPILER_JIT_PLANCOMPILE_H

#include "llmc/Step.h"

#include "runtime/Plan.h"

namespace llmc::jit {

/// Compiles `path` (or `jsonText` when non-null) for the GPU into `plan`
/// and fills the report's compile fields, `cache` included. Errors carry
/// the importer's and compiler's diagnostics.
Status compileGpuPlan(const std::string &path, const std::string *jsonText,
                      const Options &options, Plan &plan,
                      CompileReport &report);

} // namespace llmc::jit

#endif // LLMC_COMPILER_JIT_PLANCOMPILE_H
