//===- OutputFile.cpp - raw_ostream onto the atomic writer ----------------===//
#include "compiler/OutputFile.h"

#include <cerrno>
#include <cstring>

namespace llmc {

namespace {

/// Buffers like raw_fd_ostream; the first failed write is kept by the
/// AtomicFile (which then drops its temporary) and reported by commit().
class AtomicOstream : public llvm::raw_ostream {
public:
  explicit AtomicOstream(AtomicFile &file) : file_(file) {
    SetBufferSize(1 << 16);
  }
  ~AtomicOstream() override { flush(); }

private:
  void write_impl(const char *ptr, size_t size) override {
    (void)file_.write(ptr, size);
  }
  uint64_t current_pos() const override { return file_.size(); }

  AtomicFile &file_;
};

} // namespace

Status writeOutput(const std::string &path,
                   llvm::function_ref<void(llvm::raw_ostream &)> print) {
  if (path == "-") {
    llvm::raw_fd_ostream &os = llvm::outs();
    print(os);
    os.flush();
    if (std::error_code ec = os.error()) {
      // Cleared so that raw_fd_ostream's destructor does not abort with
      // "IO failure on output stream".
      os.clear_error();
      return Status::error("cannot write to standard output: " + ec.message());
    }
    return Status::ok();
  }
  AtomicFile file;
  LLMC_RETURN_IF_ERROR(file.open(path));
  {
    AtomicOstream os(file);
    print(os);
  }
  return file.commit();
}

} // namespace llmc
