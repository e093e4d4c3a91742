//===- Philox.h - Philox4x32-10, the counter-based RNG of dropout C++ -*-===//
//
// Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC 2011),
// the generator of cuRAND's and PyTorch's CUDA dropout: ten rounds of two
// 32x32->64 multiplies on a 128-bit counter under a 64-bit key. It is a pure
// function of (counter, key), so any element of any step is drawn without
// the ones before it, on the host and on the device alike. The device copy
// of this code is in compiler/codegen/DropoutEmitter.cpp; the GPU test
// compares the two bit for bit. Free of MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_COMMON_PHILOX_H
#define LLMC_COMPILER_COMMON_PHILOX_H

#include <array>
#include <cmath>
#include <cstdint>

namespace llmc {

inline std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> ctr,
                                          std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kM0) * ctr[0], p1 = uint64_t(kM1) * ctr[2];
    ctr = {uint32_t(p1 >> 32) ^ ctr[1] ^ key[0], uint32_t(p1),
           uint32_t(p0 >> 32) ^ ctr[3] ^ key[1], uint32_t(p0)};
    key = {key[0] + kW0, key[1] + kW1};
  }
  return ctr;
}

/// The keep threshold of a dropout ratio: an element is kept when the top
/// 24 bits of its draw are at least ceil(ratio * 2^24).
inline uint32_t dropoutThreshold(double ratio) {
  return static_cast<uint32_t>(std::ceil(ratio * 16777216.0));
}

/// Whether element `index` of the dropout site `offset` is kept at `step`
/// (docs/training-ir.md, llmc.dropout_mask).
inline bool dropoutKeeps(uint64_t seed, uint32_t offset, uint64_t step,
                         uint32_t index, uint32_t threshold) {
  uint32_t w = philox4x32({index, offset, uint32_t(step), uint32_t(step >> 32)},
                          {uint32_t(seed), uint32_t(seed >> 32)})[0];
  return (w >> 8) >= threshold;
}

} // namespace llmc

#endif // LLMC_COMPILER_COMMON_PHILOX_H
