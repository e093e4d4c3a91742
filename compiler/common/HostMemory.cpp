//===- HostMemory.cpp - Host memory llmc may hold at once -----------------===//
#include "compiler/common/HostMemory.h"

#include "runtime/CheckedSize.h"
#include "runtime/ParseInteger.h"

#include <cstdlib>

namespace llmc {

int64_t hostMemoryLimit() {
  if (const char *env = std::getenv("LLMC_EVAL_MEMORY_LIMIT")) {
    int64_t limit = 0;
    if (parseInteger(env, 1, INT64_MAX, limit))
      return limit;
  }
  int64_t physical = physicalMemoryBytes();
  return physical > 0 ? physical : kMaxTensorBytes;
}

std::string hostAllocationError(llvm::ArrayRef<int64_t> shape,
                                int64_t elementBytes, int64_t heldBytes) {
  CheckedSize bytes = elementCount(shape) * CheckedSize(elementBytes);
  int64_t limit = hostMemoryLimit();
  if ((bytes + CheckedSize(heldBytes)).fitsIn(limit))
    return "";
  std::string s = "has shape " + shapeText(shape) + " (" +
                  countText(elementCount(shape)) + " elements, " +
                  bytesText(bytes.approx()) +
                  (elementBytes == 8 ? " as float64" : "") + " on the host)";
  s += ", more than the " + bytesText(double(limit)) +
       " of host memory llmc may use";
  if (heldBytes > 0)
    s += " (" + bytesText(double(heldBytes)) + " already held)";
  return s + "; use a smaller batch or model";
}

} // namespace llmc
