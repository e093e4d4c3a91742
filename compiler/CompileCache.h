//===- CompileCache.h - Whole compiles, cached without their weights -*- C++ -*-===//
//
// The kernel cache (runtime/KernelCache.h) saves NVRTC; a warm compile still
// imported the model, ran the pipeline and codegen, and moved every weight
// through MLIR. This cache keeps whole compiles: the plan (buffers, steps,
// kernels with their cubins) and the report, keyed by everything that
// decides them and nothing that does not:
//
//   key = hash( the model's structure: every byte of the ONNX file except
//               the values of its float initializers (frontends/onnx/
//               OnnxScan.h); their sizes are in it
//             + the model file's name (kernel comments cite it)
//             + the model options (shapes, batch, seq, fold limit, raise)
//             + the compile options (arch, seed, optimizer, precision, eval)
//             + the toolchain: llmc's version and the binary that holds
//               this code (path, size, modification time: any rebuild
//               misses), NVRTC's version and options )
//
// The weights are not in the entry. When an entry is stored, every
// parameter buffer with initial data must be its initializer's bytes as
// they are in the file (optionally followed by zeros: padded rows), checked
// byte for byte; a compile that transforms a weight in any other way is not
// cached. A hit reads the plan and gives each parameter its weight from the
// model file: a view into the mapped file (BufferInfo::initView, no copy)
// when the weight is the whole buffer, else a copy (padded rows, external
// data files).
//
// Entries: <dir>/<key>.plan (a bundle, runtime/Bundle.h, without the
// weights: its checksums guard it) and <dir>/<key>.json (the report,
// argument and result locations, which buffer takes which weight, and the
// warnings the compile printed, shown again on a hit), written in that
// order, each atomically. An entry that fails any check is reported in one
// line, recompiled and replaced.
//
// Only ONNX models are cached: a JSON graph's weights come from init rules
// or safetensors files the key would have to cover, and llmc IR is small.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_COMPILECACHE_H
#define LLMC_COMPILER_COMPILECACHE_H

#include "compiler/Compile.h"
#include "compiler/ModelLoader.h"
#include "runtime/LoadPhases.h"

#include <string>

namespace llmc {

struct CompileCacheOutcome {
  enum Kind { Off, Hit, Stored, NotStored } kind = Off;
  std::string detail; // why it is off or was not stored; the entry's key
  /// The lookup's phases (map and scan, arch detection, key, entry,
  /// weights, ...): a warm start's split (`llmc compile`'s "warm phases").
  LoadPhases phases;
};

/// loadModel + compileModule, through the compile cache in `cacheDir` ("" =
/// KernelCache::defaultDir(); no directory = no cache) when the model is
/// ONNX and config.compileKernels is set. Diagnostics go through `context`
/// as loadModel's do; a corrupt entry is a warning there. report
/// .importSeconds covers reading the model (on a hit: the cache entry and
/// the weights).
mlir::FailureOr<CompiledModel>
compileModelFile(const std::string &path, const ModelOptions &modelOptions,
                 const CompileConfig &config, mlir::MLIRContext &context,
                 CompileCacheOutcome *outcome = nullptr);

/// One line for the compile report: "hit (key K)", "stored (key K)",
/// "not stored: WHY", "off: WHY".
std::string describeCacheOutcome(const CompileCacheOutcome &outcome);

} // namespace llmc

#endif // LLMC_COMPILER_COMPILECACHE_H
