//===- CudnnPlanCache.h - cuDNN plans kept across loads -----*- C++ -*-===//
//
// Finalizing a cuDNN attention plan compiles its engine's kernels at run
// time: 0.10-0.18 s for GPT-2 124M's forward and backward pair on an H100,
// a quarter of issue 17's 0.5 s warm-start bar. cuDNN serializes a
// finalized plan (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION: the engine,
// its knobs and the compiled code), and a plan descriptor given that text
// and a handle finalizes without the heuristics or the compile. So the
// first load stores each plan in <cache dir>/cudnn-plan/<hash>, next to the
// matmul tuning (docs/runtime.md "cuDNN plan cache"), and later loads
// restore it.
//
// A file is trusted only as far as it checks out: its key line must be the
// key asked for (shape, strides, types, scale, cuDNN's version, the device,
// the llmc binary),
// its length must be whole, cuDNN must accept the text, and the restored
// plan must run the engine the file names. Anything else is a full build,
// which then replaces the file.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDNNPLANCACHE_H
#define LLMC_RUNTIME_CUDNNPLANCACHE_H

#include "runtime/CudnnAttention.h"

#include <cstdint>
#include <string>

namespace llmc {

/// One cache file's content.
struct CudnnPlanRecord {
  std::string key;          // cudnnPlanKey()
  int64_t engineIndex = -1; // the engine chosen when the plan was built
  bool noted = false;       // it carries the nondeterministic note
  std::string json;         // cuDNN's serialized plan, byte for byte
};

/// Everything a plan depends on but its buffers: the same text for steps
/// that may share one plan (a model's layers). The scale is written in full
/// so that two scales never share one plan's by-value scalar.
std::string attentionPlanKey(const CudnnAttentionDesc &desc);

/// attentionPlanKey() plus what makes a serialized plan usable: cuDNN's
/// version (cudnnGetVersion) and the device ("NVIDIA H100 80GB HBM3
/// sm_90"), so another library or GPU never restores it; and the llmc
/// binary (BinaryIdentity.h), since the text holds the graph this build
/// made: another build's graph may differ.
std::string cudnnPlanKey(const CudnnAttentionDesc &desc, int64_t cudnnVersion,
                         const std::string &device,
                         const std::string &llmcBinary);

/// <dir>/cudnn-plan/<16 hex digits of the key's hash>.
std::string cudnnPlanPath(const std::string &dir, const std::string &key);

/// The file's bytes:
///   llmc cudnn plan 1
///   key <key>
///   engine <index> <noted 0|1>
///   json <length>
///   <length bytes of cuDNN's text>
std::string encodeCudnnPlan(const CudnnPlanRecord &record);

/// Parses a whole file written for `key`; false with `why` ("the file is
/// truncated: ...", "written for another key: ...") for anything else.
bool decodeCudnnPlan(const std::string &bytes, const std::string &key,
                     CudnnPlanRecord &out, std::string &why);

/// Reads and decodes `path`; false with `why` = "absent" when there is no
/// file, else the reason it was rejected.
bool readCudnnPlan(const std::string &path, const std::string &key,
                   CudnnPlanRecord &out, std::string &why);

/// Writes the record atomically (AtomicFile.h), creating the folder.
Status writeCudnnPlan(const std::string &path, const CudnnPlanRecord &record);

} // namespace llmc

#endif // LLMC_RUNTIME_CUDNNPLANCACHE_H
