//===- FuzzFile.h - Hand a fuzz input to a reader that takes a path -*- C++ -*-===//
//
// The token and bundle readers open files by path, as users call them. The
// fuzz targets keep them that way: the input goes into an in-memory file
// (memfd) and the reader opens /proc/self/fd/N, so nothing touches the disk
// and the reader's own file handling (sizes, short reads) is exercised too.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_FUZZ_FUZZFILE_H
#define LLMC_TEST_FUZZ_FUZZFILE_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace llmc::fuzz {

class MemFile {
public:
  MemFile(const void *data, size_t size) {
    fd_ = ::memfd_create("llmc-fuzz", 0);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    const char *bytes = static_cast<const char *>(data);
    for (size_t done = 0; done < size;) {
      ssize_t n = ::write(fd_, bytes + done, size - done);
      if (n <= 0) {
        std::perror("write to memfd");
        std::abort();
      }
      done += static_cast<size_t>(n);
    }
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile &) = delete;
  MemFile &operator=(const MemFile &) = delete;

  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
  int fd_ = -1;
};

} // namespace llmc::fuzz

#endif // LLMC_TEST_FUZZ_FUZZFILE_H
