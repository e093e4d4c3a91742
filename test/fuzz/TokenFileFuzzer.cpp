//===- TokenFileFuzzer.cpp - libFuzzer target for the token-file reader ---===//
//
// Token shards are downloaded or produced by other tools (llm.c's format), so
// a damaged or hostile header must end in a message: never a crash, never an
// allocation the file's size does not back. The harness only hands the bytes
// to the reader's public entry point, readTokenFile.
//
//===----------------------------------------------------------------------===//
#include "runtime/TokenFile.h"
#include "test/fuzz/FuzzFile.h"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llmc::fuzz::MemFile file(data, size);
  std::vector<uint16_t> tokens;
  llmc::Status status = llmc::readTokenFile(file.path(), tokens);
  (void)status;
  return 0;
}
