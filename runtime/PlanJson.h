//===- PlanJson.h - The plan as JSON, binary payloads as blobs --*- C++ -*-===//
//
// The JSON header of a bundle. Binary payloads (cubins, initial weights) are
// not inlined: the JSON names them by index into the bundle's blob table
// ("cubin": 3), and the bundle stores the bytes after the header. Key names
// and the step kinds are documented in docs/runtime.md.
//
// Only Bundle.cpp and PlanJson.cpp include this (nlohmann/json is heavy).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_PLANJSON_H
#define LLMC_RUNTIME_PLANJSON_H

#include "runtime/Plan.h"

#include <nlohmann/json.hpp>

#include <functional>

namespace llmc {

/// Bytes a plan holds (a cubin, a buffer's initial data), not copied.
struct BlobRef {
  const uint8_t *data = nullptr;
  size_t size = 0;
};

/// Builds the JSON of `plan`. Each non-empty cubin and initial data is
/// appended to `blobs` (kernels first, then buffers, in plan order) and
/// referenced by its index.
nlohmann::json planToJson(const Plan &plan, std::vector<BlobRef> &blobs);

/// Fills blob `index` into `bytes`; errors name the blob.
using BlobLoader =
    std::function<Status(uint64_t index, std::vector<uint8_t> &bytes)>;

/// Rebuilds a Plan from its JSON. Missing keys, wrong types and unknown
/// names are errors that say where ("steps[4].args[1]: ...").
Status planFromJson(const nlohmann::json &json, const BlobLoader &loadBlob,
                    Plan &plan);

} // namespace llmc

#endif // LLMC_RUNTIME_PLANJSON_H
