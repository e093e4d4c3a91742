//===- BinaryIdentity.cpp - The binary that holds this code ---------------===//
#include "runtime/BinaryIdentity.h"

#include <climits>
#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>

namespace llmc {

std::string binaryIdentity() {
  Dl_info info{};
  std::string path;
  char resolved[PATH_MAX];
  // The main program's name is as it was invoked (maybe relative);
  // /proc/self/exe is the file itself.
  if (dladdr(reinterpret_cast<void *>(&binaryIdentity), &info) &&
      info.dli_fname && realpath(info.dli_fname, resolved))
    path = resolved;
  else if (realpath("/proc/self/exe", resolved))
    path = resolved;
  struct stat st{};
  if (path.empty() || stat(path.c_str(), &st) != 0)
    return "";
  return path + " " + std::to_string(st.st_size) + " " +
         std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

} // namespace llmc
