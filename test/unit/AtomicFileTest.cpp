//===- AtomicFileTest.cpp - The one writer of llmc's files ----------------===//
//
// Failures are made real: RLIMIT_FSIZE (as `ulimit -f`) makes write() fail
// with EFBIG, and a child process is killed with SIGTERM/SIGINT in the middle
// of a write. Both run in forked children so the test process keeps its
// limits and its signal dispositions.
//
//===----------------------------------------------------------------------===//
#include "runtime/AtomicFile.h"

#include <gtest/gtest.h>

#include <csignal>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace llmc;

namespace {

/// A fresh empty folder per test.
std::string freshDir(const char *name) {
  std::string dir = ::testing::TempDir() + "atomic-" + name + "-" +
                    std::to_string(::getpid());
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        names.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AtomicFile, WritesAndLeavesOnlyTheTarget) {
  std::string dir = freshDir("ok");
  ASSERT_TRUE(writeFileAtomically(dir + "/x.txt", "hello\n").isOk());
  EXPECT_EQ(readAll(dir + "/x.txt"), "hello\n");
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"x.txt"});
}

TEST(AtomicFile, TargetKeepsItsOldContentUntilCommit) {
  std::string dir = freshDir("replace");
  std::string path = dir + "/x.txt";
  ASSERT_TRUE(writeFileAtomically(path, "old").isOk());
  AtomicFile file;
  ASSERT_TRUE(file.open(path).isOk());
  ASSERT_TRUE(file.write("new content").isOk());
  // A reader sees the whole old file while the new one is written ...
  EXPECT_EQ(readAll(path), "old");
  EXPECT_EQ(listDir(dir).size(), 2u); // x.txt and the temporary
  ASSERT_TRUE(file.commit().isOk());
  // ... and the whole new one after.
  EXPECT_EQ(readAll(path), "new content");
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"x.txt"});
}

TEST(AtomicFile, ReplacedFileKeepsItsPermissions) {
  std::string dir = freshDir("mode");
  std::string path = dir + "/run.sh";
  ASSERT_TRUE(writeFileAtomically(path, "#!/bin/sh\n").isOk());
  ASSERT_EQ(::chmod(path.c_str(), 0750), 0);
  ASSERT_TRUE(writeFileAtomically(path, "#!/bin/sh\necho hi\n").isOk());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
}

TEST(AtomicFile, UncommittedFileLeavesNothing) {
  std::string dir = freshDir("drop");
  {
    AtomicFile file;
    ASSERT_TRUE(file.open(dir + "/x.bin").isOk());
    ASSERT_TRUE(file.write("partial").isOk());
  }
  EXPECT_TRUE(listDir(dir).empty());
}

TEST(AtomicFile, WriteAtPatchesAHeader) {
  std::string dir = freshDir("patch");
  AtomicFile file;
  ASSERT_TRUE(file.open(dir + "/x.bin").isOk());
  ASSERT_TRUE(file.write("0000body").isOk());
  ASSERT_TRUE(file.writeAt(0, "1234", 4).isOk());
  EXPECT_FALSE(file.writeAt(6, "xyz", 3).isOk()); // past the end
  file.discard();
  AtomicFile again;
  ASSERT_TRUE(again.open(dir + "/y.bin").isOk());
  ASSERT_TRUE(again.write("0000body").isOk());
  ASSERT_TRUE(again.writeAt(0, "1234", 4).isOk());
  ASSERT_TRUE(again.commitAs(dir + "/z.bin").isOk());
  EXPECT_EQ(readAll(dir + "/z.bin"), "1234body");
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"z.bin"});
}

TEST(AtomicFile, MissingFolderNamesThePathAndReason) {
  Status s = writeFileAtomically("/nonexistent-llmc-dir/x.json", "{}");
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "cannot create '/nonexistent-llmc-dir/x.json': No "
                         "such file or directory");
}

TEST(AtomicFile, DevicesAreWrittenInPlace) {
  // Renaming over /dev/null would replace the device; it is written to.
  ASSERT_TRUE(writeFileAtomically("/dev/null", "discarded").isOk());
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(AtomicFile, SymlinkIsFollowed) {
  std::string dir = freshDir("link");
  ASSERT_TRUE(writeFileAtomically(dir + "/real.txt", "old").isOk());
  ASSERT_EQ(::symlink((dir + "/real.txt").c_str(), (dir + "/link.txt").c_str()),
            0);
  ASSERT_TRUE(writeFileAtomically(dir + "/link.txt", "new").isOk());
  struct stat st;
  ASSERT_EQ(::lstat((dir + "/link.txt").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(readAll(dir + "/real.txt"), "new");
}

/// Runs `body` in a child; returns its wait status.
template <typename F> int inChild(F body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(AtomicFile, FileSizeLimitFailsCleanly) {
  std::string dir = freshDir("fsize");
  std::string path = dir + "/big.bin";
  int status = inChild([&] {
    installAtomicFileSignalHandlers(); // SIGXFSZ ignored: EFBIG instead
    struct rlimit limit = {4096, 4096};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
      ::_exit(10);
    std::string data(1 << 20, 'x');
    Status s = writeFileAtomically(path, data);
    if (s.isOk())
      ::_exit(11);
    if (s.message() != "cannot write '" + path + "': File too large")
      ::_exit(12);
  });
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(listDir(dir).empty());
}

/// A child that is in the middle of writing `path` when `sig` arrives.
void killMidWrite(int sig, const char *name) {
  struct sigaction current;
  ASSERT_EQ(::sigaction(sig, nullptr, &current), 0);
  if (current.sa_handler == SIG_IGN)
    GTEST_SKIP() << "signal " << sig << " is ignored in this process (a "
                 << "background job); AtomicFile leaves ignored signals alone";
  std::string dir = freshDir(name);
  std::string path = dir + "/bundle.llmc";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    AtomicFile file;
    if (!file.open(path).isOk() ||
        !file.write(std::string(1 << 16, 'x')).isOk())
      ::_exit(20);
    char c = 1;
    if (::write(ready[1], &c, 1) != 1)
      ::_exit(21);
    for (;;)
      ::pause();
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(listDir(dir).size(), 1u); // the temporary exists
  ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  // The signal still ends the process as it would have without the handler.
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), sig);
  EXPECT_TRUE(listDir(dir).empty());
}

TEST(AtomicFile, ForkedChildLeavesTheParentsTemporaryAlone) {
  // A child inherits the handler and the table of temporaries; its SIGTERM
  // must not remove a file its parent is still writing.
  std::string dir = freshDir("fork");
  AtomicFile file;
  ASSERT_TRUE(file.open(dir + "/x.bin").isOk());
  ASSERT_TRUE(file.write("parent").isOk());
  pid_t pid = ::fork();
  if (pid == 0) {
    for (;;)
      ::pause();
  }
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(listDir(dir).size(), 1u);
  ASSERT_TRUE(file.commit().isOk());
  EXPECT_EQ(readAll(dir + "/x.bin"), "parent");
}

TEST(AtomicFile, SigtermRemovesTheTemporary) { killMidWrite(SIGTERM, "term"); }
TEST(AtomicFile, SigintRemovesTheTemporary) { killMidWrite(SIGINT, "int"); }

} // namespace
