//===- Status.h - Error values for the runtime --------------------*- C++ -*-===//
//
// The runtime is a library: it returns a Status instead of aborting, so that an
// embedding trainer can report the error and keep its checkpoints. A Status is
// either ok or carries one human-readable message that names the file, kernel
// or call that failed and what to do about it.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_STATUS_H
#define LLMC_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace llmc {

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    return s;
  }

  bool isOk() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string &message() const { return message_; }

  /// Prefixes the message with context ("loading model.llmc: ...").
  Status withContext(const std::string &context) const;

private:
  bool failed_ = false;
  std::string message_;
};

} // namespace llmc

/// Returns the Status of `expr` from the enclosing function when it failed.
#define LLMC_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    ::llmc::Status llmcStatus_ = (expr);                                       \
    if (!llmcStatus_)                                                          \
      return llmcStatus_;                                                      \
  } while (0)

#endif // LLMC_RUNTIME_STATUS_H
