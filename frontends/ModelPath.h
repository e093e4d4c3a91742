//===- ModelPath.h - Files a model names, kept inside its folder -*- C++ -*-===//
//
// A model may name other files: an ONNX initializer's external data, a JSON
// parameter's safetensors file. llmc opens those only inside the model's
// folder (docs/trust-model.md), as onnx.checker does: a downloaded model must
// not make llmc read /etc/shadow or ~/.ssh into a weight. The check is done
// on the real path, so a symbolic link inside the folder cannot point out of
// it. Shared by both importers; header-only because they share no library.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_MODELPATH_H
#define LLMC_FRONTENDS_MODELPATH_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <optional>
#include <string>

namespace llmc {

/// The path of `location` (as the model wrote it) inside `modelDir`, or
/// nullopt with `why` set to the end of a sentence about the location
/// ("which is not inside the model's directory"). A location that does not
/// exist is not refused here: opening it reports that.
inline std::optional<std::string> resolveModelPath(llvm::StringRef modelDir,
                                                   llvm::StringRef location,
                                                   std::string &why) {
  if (llvm::sys::path::is_absolute(location) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                          llvm::sys::path::end(location)),
                         "..")) {
    why = "which is not inside the model's directory";
    return std::nullopt;
  }
  llvm::SmallString<256> path(modelDir.empty() ? "." : modelDir);
  llvm::sys::path::append(path, location);
  llvm::SmallString<256> realPath, realDir;
  if (!llvm::sys::fs::exists(path) ||
      llvm::sys::fs::real_path(path, realPath) ||
      llvm::sys::fs::real_path(modelDir.empty() ? "." : modelDir, realDir))
    return path.str().str();
  llvm::StringRef dir = realDir.str();
  llvm::StringRef real = realPath.str();
  bool inside = real.starts_with(dir) && real.size() > dir.size() &&
                (llvm::sys::path::is_separator(dir.back()) ||
                 llvm::sys::path::is_separator(real[dir.size()]));
  if (!inside) {
    why = "which resolves to '" + real.str() +
          "' through a symbolic link, outside the model's directory '" +
          dir.str() + "'";
    return std::nullopt;
  }
  return path.str().str();
}

} // namespace llmc

#endif // LLMC_FRONTENDS_MODELPATH_H
