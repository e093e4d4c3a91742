//===- AtomicFile.cpp - The one way llmc writes a file --------------------===//
//
// The signal handler may run at any point of any thread, so the registry of
// in-flight temporaries is a fixed array of path buffers guarded by atomic
// states, and the handler only calls async-signal-safe functions (unlink,
// sigaction, raise).
//
//===----------------------------------------------------------------------===//
#include "runtime/AtomicFile.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace llmc {

namespace {

/// Writes all `size` bytes at `offset` (-1: the file position), retrying
/// short writes and EINTR; 0, or the errno that stopped it.
int writeFully(int fd, const void *data, size_t size, off_t offset) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = offset < 0 ? ::write(fd, p, size) : ::pwrite(fd, p, size, offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno;
    if (n == 0)
      return EIO;
    p += n;
    size -= static_cast<size_t>(n);
    if (offset >= 0)
      offset += n;
  }
  return 0;
}

// A slot is free (0), being filled or emptied (1), or names a temporary the
// handler must remove (2).
constexpr int kFree = 0, kBusy = 1, kLive = 2;
// Enough for every shard of a large corpus in flight at once.
constexpr int kSlots = 1024;

struct Slot {
  std::atomic<int> state{kFree};
  pid_t owner; // a forked child that inherits the table must not unlink
  char path[PATH_MAX];
};

Slot gSlots[kSlots];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);
struct sigaction gPrevious[kNumSignals];

extern "C" void removeTemporariesAndReraise(int sig) {
  int saved = errno;
  pid_t self = ::getpid();
  for (Slot &slot : gSlots)
    if (slot.state.load() == kLive && slot.owner == self)
      ::unlink(slot.path);
  for (int i = 0; i < kNumSignals; ++i)
    if (kSignals[i] == sig)
      ::sigaction(sig, &gPrevious[i], nullptr);
  errno = saved;
  // Delivered once this handler returns (the signal is blocked while it
  // runs): the default action ends the process with the signal's status,
  // as if we had never caught it; a previous handler runs instead.
  ::raise(sig);
}

/// Takes a registry slot for `path`; -1 when all are taken (or the path is
/// too long), in which case a signal leaves this one temporary behind.
int registerTemporary(const std::string &path) {
  if (path.size() >= PATH_MAX)
    return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (gSlots[i].state.compare_exchange_strong(expected, kBusy)) {
      std::memcpy(gSlots[i].path, path.c_str(), path.size() + 1);
      gSlots[i].owner = ::getpid();
      gSlots[i].state.store(kLive);
      return i;
    }
  }
  return -1;
}

void unregisterTemporary(int slot) {
  if (slot >= 0)
    gSlots[slot].state.store(kFree);
}

std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// fsync of the folder makes a rename durable; file systems that cannot
/// sync a folder (EINVAL) lose nothing a reader could see, so errors are
/// not reported.
void syncFolder(const std::string &path) {
  int fd = ::open(folderOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  (void)::fsync(fd);
  ::close(fd);
}

} // namespace

void installAtomicFileSignalHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Past RLIMIT_FSIZE, write() must fail with EFBIG so that the writer
    // can report it and clean up; SIGXFSZ's default action is a core dump.
    struct sigaction current;
    if (::sigaction(SIGXFSZ, nullptr, &current) == 0 &&
        current.sa_handler == SIG_DFL)
      ::signal(SIGXFSZ, SIG_IGN);
    for (int i = 0; i < kNumSignals; ++i) {
      if (::sigaction(kSignals[i], nullptr, &gPrevious[i]) != 0 ||
          gPrevious[i].sa_handler == SIG_IGN)
        continue; // nohup and friends: an ignored signal stays ignored
      struct sigaction action = {};
      action.sa_handler = removeTemporariesAndReraise;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESTART;
      ::sigaction(kSignals[i], &action, nullptr);
    }
  });
}

AtomicFile::~AtomicFile() { discard(); }

Status AtomicFile::fail(const std::string &what, int err) {
  error_ = Status::error(what + " '" + path_ + "': " + std::strerror(err));
  discard();
  return error_;
}

void AtomicFile::discard() {
  bool hadTemp = fd_ >= 0 && !temp_.empty();
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  if (hadTemp)
    ::unlink(temp_.c_str());
  unregisterTemporary(slot_);
  slot_ = -1;
}

Status AtomicFile::open(const std::string &path) {
  installAtomicFileSignalHandlers();
  discard();
  path_ = target_ = path;
  temp_.clear();
  size_ = 0;
  error_ = Status::ok();
  if (path.empty())
    return error_ = Status::error("cannot write a file with an empty name");

  struct stat st;
  bool replacing = false; // an existing regular file: keep its permissions
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      // Replace what the link points at and keep the link.
      char resolved[PATH_MAX];
      if (::realpath(path.c_str(), resolved)) {
        target_ = resolved;
        replacing = ::stat(resolved, &st) == 0 && S_ISREG(st.st_mode);
      }
    } else if (S_ISREG(st.st_mode)) {
      replacing = true;
    } else {
      fd_ = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
      if (fd_ < 0)
        return fail("cannot write", errno);
      return Status::ok();
    }
  }

  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = target_ + ".tmp." + std::to_string(::getpid()) + "." +
                       std::to_string(counter++);
    // Registered before it exists: a signal between open() and the
    // registration must not leave it behind (unlink of a missing file is
    // harmless).
    slot_ = registerTemporary(temp);
    fd_ = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      temp_ = temp;
      if (replacing)
        (void)::fchmod(fd_, st.st_mode & 07777);
      return Status::ok();
    }
    int err = errno;
    unregisterTemporary(slot_);
    slot_ = -1;
    if (err != EEXIST)
      return fail("cannot create", err);
  }
  return fail("cannot create", EEXIST);
}

Status AtomicFile::write(const void *data, size_t size) {
  if (!error_)
    return error_;
  if (fd_ < 0)
    return error_ = Status::error("cannot write '" + path_ +
                                  "': the file is not open");
  if (int err = writeFully(fd_, data, size, -1))
    return fail("cannot write", err);
  size_ += size;
  return Status::ok();
}

Status AtomicFile::writeAt(uint64_t offset, const void *data, size_t size) {
  if (!error_)
    return error_;
  if (fd_ < 0 || offset + size > size_)
    return error_ = Status::error("cannot write '" + path_ +
                                  "': overwrite past the end of the file");
  if (int err = writeFully(fd_, data, size, static_cast<off_t>(offset)))
    return fail("cannot write", err);
  return Status::ok();
}

Status AtomicFile::commit() { return commitAs(target_); }

Status AtomicFile::commitAs(const std::string &path) {
  if (!error_)
    return error_;
  if (fd_ < 0)
    return error_ = Status::error("cannot write '" + path_ +
                                  "': the file is not open");
  if (temp_.empty()) { // in place: a device or FIFO has nothing to sync
    int rc = ::close(fd_);
    int err = errno;
    fd_ = -1;
    return rc == 0 ? Status::ok() : fail("cannot write", err);
  }
  if (path != target_)
    path_ = path;
  if (::fsync(fd_) != 0)
    return fail("cannot write", errno);
  // close() can report a delayed write error (NFS); the descriptor is gone
  // either way.
  int rc = ::close(fd_);
  int err = errno;
  fd_ = -1;
  if (rc != 0) {
    ::unlink(temp_.c_str());
    return fail("cannot write", err);
  }
  if (::rename(temp_.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(temp_.c_str());
    return fail("cannot rename '" + temp_ + "' to", err);
  }
  unregisterTemporary(slot_);
  slot_ = -1;
  temp_.clear();
  syncFolder(path);
  return Status::ok();
}

Status writeFileAtomically(const std::string &path, std::string_view contents) {
  AtomicFile file;
  LLMC_RETURN_IF_ERROR(file.open(path));
  LLMC_RETURN_IF_ERROR(file.write(contents));
  return file.commit();
}

} // namespace llmc
