//===- AtomicFile.h - The one way llmc writes a file --------------*- C++
//-*-===//
//
// Every file llmc writes (IR, recipes, token shards, bundles, kernel cache
// entries, dumped CUDA, safetensors, run outputs) goes through AtomicFile, so
// that a reader never sees a partial file and a failure never leaves one:
//
//   1. create a temporary file next to the target (same folder: the final
//      rename stays on one file system and is atomic);
//   2. write with checked writes (short writes retried, EINTR retried);
//   3. commit: fsync the data, close, rename over the target, fsync the
//      folder so that the rename itself survives a crash;
//   4. on any failure, or when the AtomicFile dies uncommitted, or when the
//      process gets SIGINT/SIGTERM/SIGHUP, the temporary file is removed.
//
// Errors name the target path and the OS reason (strerror), e.g.
// "cannot write 'x.json': File too large".
//
// A target that exists and is not a regular file (/dev/null, a FIFO) is
// written in place: renaming over a device would replace it. A symlink is
// followed, so the file it points at is replaced, not the link.
//
// Setup (once per process: on first use, or from main through
// installAtomicFileSignalHandlers):
// SIGXFSZ is ignored so that exceeding RLIMIT_FSIZE fails a write with EFBIG
// instead of killing the process; SIGINT/SIGTERM/SIGHUP get a handler that
// unlinks the in-flight temporaries and re-raises with the previous
// disposition (a signal that was ignored stays ignored).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ATOMICFILE_H
#define LLMC_RUNTIME_ATOMICFILE_H

#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmc {

class AtomicFile {
public:
  AtomicFile() = default;
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();

  /// Starts writing `path`: creates its temporary file.
  Status open(const std::string &path);

  /// Appends `size` bytes. After the first failure every later call returns
  /// the same error.
  Status write(const void *data, size_t size);
  Status write(std::string_view text) {
    return write(text.data(), text.size());
  }

  /// Overwrites bytes already written (e.g. a header whose count is known at
  /// the end). `offset + size` must not pass size().
  Status writeAt(uint64_t offset, const void *data, size_t size);

  /// Bytes written so far.
  uint64_t size() const { return size_; }

  /// Makes the file visible under its path (fsync, close, rename).
  Status commit();

  /// commit() under another name in the same folder as the path given to
  /// open() (a token shard learns its final name only at its end).
  Status commitAs(const std::string &path);

  /// Removes the temporary file now (also done by the destructor).
  void discard();

  const std::string &path() const { return path_; }

private:
  Status fail(const std::string &what, int err);

  std::string path_;   // the target as given (for messages)
  std::string target_; // where the rename goes (symlinks resolved)
  std::string temp_;   // empty when writing in place
  int fd_ = -1;
  int slot_ = -1; // index in the signal handler's registry
  uint64_t size_ = 0;
  Status error_;
};

/// Writes `contents` to `path` through an AtomicFile.
Status writeFileAtomically(const std::string &path, std::string_view contents);

/// The process-wide setup described above; safe to call more than once.
/// llmc's main calls it; AtomicFile::open calls it too.
void installAtomicFileSignalHandlers();

} // namespace llmc

#endif // LLMC_RUNTIME_ATOMICFILE_H
