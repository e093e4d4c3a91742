//===- Bundle.h - The .llmc bundle file -------------------------*- C++ -*-===//
//
// One file holds everything a run needs, so a bundle built on a CPU machine
// runs on a GPU machine with only the runtime installed:
//
//   offset 0   "LLMCBNDL"              8-byte magic
//          8   u32 version             kBundleVersion; other versions are
//          refused
//         12   u32 flags               0
//         16   u64 header bytes        H: length of the JSON header
//         24   u64 blob bytes          B: length of the blob section
//         32   u64 header checksum     checksum64 of the JSON bytes
//         40   24 bytes                zero
//         64   JSON header             the plan (PlanJson.h) + "blobs" table
//  align 256   blob section            blob i at its "offset" from here, each
//                                      256-aligned, with size and checksum
//
// All integers are little-endian. The file is exactly 64 + H, padded to 256,
// + B bytes long: anything shorter is reported as truncated. Every blob is
// checksummed, so a flipped bit in a weight is an error, not a silent NaN.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_BUNDLE_H
#define LLMC_RUNTIME_BUNDLE_H

#include "runtime/Plan.h"
#include "runtime/Status.h"

#include <string>

namespace llmc {

constexpr char kBundleMagic[8] = {'L', 'L', 'M', 'C', 'B', 'N', 'D', 'L'};
// 2: each step carries its phase (forward, backward, optimizer).
constexpr uint32_t kBundleVersion = 2;
constexpr uint64_t kBundlePrefixBytes = 64;
constexpr uint64_t kBundleBlobAlignment = 256;

/// Validates `plan` and writes it to `path` (via a temporary file and a
/// rename, so a crash never leaves a half-written bundle under that name).
/// With `unchanged`: when `path` already holds this very bundle, byte for
/// byte, it is left as it is (no write, no fsync) and *unchanged is set; a
/// compile cache hit that recompiles into the same file costs a compare of
/// the weights against the page cache instead of a 500 MB write.
Status writeBundle(const std::string &path, const Plan &plan,
                   bool *unchanged = nullptr);

/// Reads and validates a bundle. Errors name the file and say what is wrong:
/// not a bundle, another version, truncated, corrupt header or blob.
Status readBundle(const std::string &path, Plan &plan);

} // namespace llmc

#endif // LLMC_RUNTIME_BUNDLE_H
