//===- PublishedScalar.h - A graph's scalar, read without a driver call -*- C++ -*-===//
//
// Reading a replay's loss used to be one cuEventSynchronize on the graph's
// completion event: 17 us on an H100 for a step that had finished long
// before (issue 17's per-call overhead). Instead, the graph's last kernel
// (a one-thread kernel from hand-written PTX, loaded with the executor)
// writes the slot's bytes and then, after a system-scope fence, a sequence
// number into pinned host memory mapped into the device:
//
//   host[0] = the slot's bytes (up to 8)      membar.sys      host[1] = ++n
//
// `n` is a global of the kernel's module, so it counts the kernel's
// launches on the device; the host counts the launches it queued. A read
// spins on host[1] (an acquire load of host memory, no driver call) until
// it reaches the launch it wants, then reads host[0]; queued launches
// cannot be mistaken for each other, since each has its own number.
//
// A step that faults never publishes, and a long step should not burn a
// core: after `spinLimit` the read waits on the graph's completion event
// instead (which reports a fault), and then the number must be there.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_PUBLISHEDSCALAR_H
#define LLMC_RUNTIME_PUBLISHEDSCALAR_H

#include "runtime/CudaApi.h"

#include <chrono>
#include <cstdint>

namespace llmc {

class PublishedScalar {
public:
  PublishedScalar() = default;
  PublishedScalar(const PublishedScalar &) = delete;
  PublishedScalar &operator=(const PublishedScalar &) = delete;
  ~PublishedScalar();

  /// Loads the kernel (the driver compiles its PTX) and maps the host
  /// words; the current context must be the one the graph runs in.
  Status init(const cuda::DriverApi &cu);
  bool ready() const { return function_ != nullptr; }

  /// Queues the kernel that publishes `bytes` (<= 8) bytes at `source`
  /// (inside a stream capture: it becomes a node of the graph).
  Status enqueue(CUstream stream, CUdeviceptr source, unsigned bytes);
  /// A graph holding the kernel was launched: the next read waits for it.
  void launched() { ++expected_; }

  /// The bytes the last launched kernel published, waiting for them: a
  /// spin of at most `spinLimit`, then cuEventSynchronize(`done`) (an
  /// event recorded after the kernel).
  Status read(CUevent done, unsigned char out[8]);

  /// The sequence number the host waits for next (tests).
  uint64_t expected() const { return expected_; }
  /// Reads that fell back to the event (tests, profiles).
  uint64_t eventWaits() const { return eventWaits_; }

  /// PTX of the kernel, for tests that assemble it without a GPU.
  static const char *ptx();

  std::chrono::microseconds spinLimit{2000};

private:
  const cuda::DriverApi *cu_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  volatile uint64_t *host_ = nullptr; // [0] value, [1] sequence number
  CUdeviceptr hostOnDevice_ = 0;
  uint64_t expected_ = 0;
  uint64_t eventWaits_ = 0;
};

} // namespace llmc

#endif // LLMC_RUNTIME_PUBLISHEDSCALAR_H
