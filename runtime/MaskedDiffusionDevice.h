//===- MaskedDiffusionDevice.h - Masked diffusion's draws on the GPU -*- C++ -*-===//
//
// The masked-diffusion data mode (runtime/MaskedDiffusion.h) draws each
// batch's mask and p_mask with a kernel on the executor's stream, straight
// into the plan's input buffers: no host loop over B x T tokens and no
// upload beyond the token ids that plain training copies too (the mask takes
// the targets' buffer, which is not written). The kernel computes the host's
// drawMasking bit for bit: SplitMix64 over the same counter (seed, draw,
// index), the same double arithmetic with no contraction into fused
// multiply-adds, the same f32 rounding of p. So the CPU and the GPU still
// train on the same masks, and a resumed run draws what the uninterrupted
// one would have (docs/trainer.md, "Data modes").
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MASKEDDIFFUSIONDEVICE_H
#define LLMC_RUNTIME_MASKEDDIFFUSIONDEVICE_H

#include "runtime/Executor.h"

#include <cstdint>
#include <memory>
#include <string>

namespace llmc {

/// The draw kernel's CUDA C++ source (entry `masked_diffusion_draw`).
const char *maskedDiffusionKernelSource();

class DeviceMaskDrawer {
public:
  /// Compiles the kernel for the executor's device (through the kernel
  /// cache when one is configured) and binds the plan's [B, T] buffers:
  /// `mask` (i32 or i64) and `pMask` (f32). `exec` must outlive the drawer.
  static Status create(Executor &exec, const std::string &mask,
                       const std::string &pMask,
                       std::unique_ptr<DeviceMaskDrawer> &out);
  ~DeviceMaskDrawer();
  DeviceMaskDrawer(const DeviceMaskDrawer &) = delete;
  DeviceMaskDrawer &operator=(const DeviceMaskDrawer &) = delete;

  /// Queues the draw `draw` of stream `seed` on the executor's work stream,
  /// ahead of the replay that reads it. eps in (0, 1).
  Status draw(uint64_t seed, uint64_t draw, double eps);

private:
  explicit DeviceMaskDrawer(Executor &e) : exec_(e) {}

  Executor &exec_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUdeviceptr mask_ = 0, pMask_ = 0;
  bool wideMask_ = false; // i64 mask buffer (else i32)
  int64_t batch_ = 0, seq_ = 0;
};

} // namespace llmc

#endif // LLMC_RUNTIME_MASKEDDIFFUSIONDEVICE_H
