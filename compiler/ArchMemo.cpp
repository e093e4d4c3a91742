//===- ArchMemo.cpp - The GPU's arch without initializing CUDA ------------===//
#include "compiler/ArchMemo.h"

#include "compiler/Compile.h"
#include "runtime/AtomicFile.h"
#include "runtime/Hash.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

namespace llmc {

namespace {

std::string firstLine(const std::filesystem::path &p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

} // namespace

std::string gpuFingerprint(const std::string &sysRoot) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> ids;
  for (const fs::directory_entry &d :
       fs::directory_iterator(sysRoot + "/bus/pci/devices", ec)) {
    if (firstLine(d.path() / "vendor") != "0x10de")
      continue;
    std::string cls = firstLine(d.path() / "class");
    if (cls.rfind("0x0300", 0) != 0 && cls.rfind("0x0302", 0) != 0)
      continue; // NVSwitches, audio functions
    ids.push_back(firstLine(d.path() / "device"));
  }
  if (ec || ids.empty() || ids.front().empty() ||
      std::any_of(ids.begin(), ids.end(),
                  [&](const std::string &id) { return id != ids.front(); }))
    return "";
  const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return "gpu " + ids.front() + " x" + std::to_string(ids.size()) +
         "\ndriver " + firstLine(sysRoot + "/module/nvidia/version") +
         "\nvisible " + (visible ? visible : "(unset)") + "\n";
}

std::string rememberedArch(const std::string &cacheDir,
                           const std::string &fingerprint,
                           const std::function<bool(std::string &)> &detect,
                           bool *remembered) {
  if (remembered)
    *remembered = false;
  std::string memo;
  if (!cacheDir.empty() && !fingerprint.empty())
    memo = cacheDir + "/arch-" +
           hex64(fnv1a(fingerprint.data(), fingerprint.size(), kFnvOffset));
  std::string error;
  if (!memo.empty()) {
    std::string arch = firstLine(memo);
    if (!arch.empty() && isValidArch(arch, error)) {
      if (remembered)
        *remembered = true;
      return arch;
    }
  }
  std::string arch;
  bool found = detect(arch);
  if (found && !memo.empty() && isValidArch(arch, error)) {
    std::error_code ec;
    std::filesystem::create_directories(cacheDir, ec);
    (void)writeFileAtomically(memo, arch + "\n"); // a cache: best effort
  }
  return arch;
}

} // namespace llmc
