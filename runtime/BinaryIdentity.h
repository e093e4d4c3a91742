//===- BinaryIdentity.h - Which llmc build wrote a cache entry --*- C++ -*-===//
//
// Cache entries that hold what this build of llmc made (the compile cache's
// plans, the cuDNN plans built from its graphs) must not outlive it: they
// are keyed by the binary that holds this code.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_BINARYIDENTITY_H
#define LLMC_RUNTIME_BINARYIDENTITY_H

#include <string>

namespace llmc {

/// The binary (executable or shared library) that holds this code, by path,
/// size and modification time: a rebuilt llmc misses every entry. Empty
/// when it cannot be found: then nothing is cached, since an entry could
/// outlive the build that made it.
std::string binaryIdentity();

} // namespace llmc

#endif // LLMC_RUNTIME_BINARYIDENTITY_H
