//===- ArchMemo.h - The GPU's arch without initializing CUDA -*- C++ -*-===//
//
// The compile cache's key names the target arch, and without --arch that
// is the GPU's: detectArch() calls cuInit, which on a GPU machine is a
// large part of a warm `llmc compile` (issue 19's warm <= 0.5 s). The arch
// is a property of the GPU model, so it is remembered per machine:
//
//   fingerprint = the PCI device ids of the NVIDIA GPUs in sysfs (class
//                 0x0300xx or 0x0302xx, vendor 0x10de), the driver version
//                 (/sys/module/nvidia/version), $CUDA_VISIBLE_DEVICES
//   <cache>/arch-<hash of the fingerprint>: "sm_90", written after a real
//                 detection
//
// Only when every NVIDIA GPU has the same device id: then whichever GPU
// CUDA calls 0 has that chip's arch. A machine with mixed GPUs, no sysfs,
// or no GPU in it detects every time (as before). A stale or damaged memo
// is detected again and rewritten.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_ARCHMEMO_H
#define LLMC_COMPILER_ARCHMEMO_H

#include <functional>
#include <string>

namespace llmc {

/// The fingerprint of the machine's GPUs under `sysRoot` ("/sys"), or ""
/// when there is none or the GPUs differ.
std::string gpuFingerprint(const std::string &sysRoot = "/sys");

/// The arch of GPU 0: from the memo in `cacheDir` when the fingerprint
/// matches, else from `detect` (true: a GPU answered), which is then
/// remembered. `remembered` (when given) says whether the memo answered.
std::string rememberedArch(
    const std::string &cacheDir, const std::string &fingerprint,
    const std::function<bool(std::string &arch)> &detect,
    bool *remembered = nullptr);

} // namespace llmc

#endif // LLMC_COMPILER_ARCHMEMO_H
