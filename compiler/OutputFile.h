//===- OutputFile.h - raw_ostream onto the atomic writer ----------*- C++
//-*-===//
//
// The compiler prints IR and JSON through llvm::raw_ostream; this adaptor
// sends those bytes to runtime/AtomicFile.h, the one writer of every file
// llmc produces, so that a failed or interrupted write leaves nothing behind
// and its error names the path and the OS reason instead of LLVM's
// "IO failure on output stream".
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_OUTPUTFILE_H
#define LLMC_COMPILER_OUTPUTFILE_H

#include "runtime/AtomicFile.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace llmc {

/// Writes `path` ("-": standard output) with what `print` prints, atomically.
Status writeOutput(const std::string &path,
                   llvm::function_ref<void(llvm::raw_ostream &)> print);

} // namespace llmc

#endif // LLMC_COMPILER_OUTPUTFILE_H
