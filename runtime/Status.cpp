//===- Status.cpp - Error values for the runtime --------------------------===//
#include "runtime/Status.h"

namespace llmc {

Status Status::withContext(const std::string &context) const {
  if (isOk())
    return *this;
  return Status::error(context + ": " + message_);
}

} // namespace llmc
