//===- CudnnApi.cpp - cuDNN opened with dlopen ----------------------------===//
//
// Searched as the CUDA libraries are (CudaApi.cpp): LLMC_LIBCUDNN alone when
// set; else libcudnn.so.9 through the loader's path, then $CUDA_HOME/lib64
// and /usr/local/cuda/lib64. libcudnn.so.9 is a shim that opens its
// sub-libraries (libcudnn_graph, the engines) itself, from its own folder.
//
//===----------------------------------------------------------------------===//
#include "runtime/CudnnApi.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <vector>

namespace llmc::cuda {
namespace {

#define LLMC_CUDNN_STRINGIFY_EXPANDED(x) LLMC_CUDNN_STRINGIFY(x)
#define LLMC_CUDNN_STRINGIFY(x) #x

const char *kHint = "install cuDNN 9 (libcudnn.so.9), or set LLMC_LIBCUDNN "
                    "to its path; without it llmc uses its generated "
                    "attention kernels";

void *openCudnn(std::string &error) {
  if (const char *env = std::getenv("LLMC_LIBCUDNN"); env && *env) {
    if (void *handle = dlopen(env, RTLD_NOW | RTLD_LOCAL))
      return handle;
    const char *why = dlerror();
    error = std::string("LLMC_LIBCUDNN=") + env + " cannot be loaded: " +
            (why ? why : "dlopen failed") +
            " (unset LLMC_LIBCUDNN to search the default locations)";
    return nullptr;
  }
  std::vector<std::string> candidates = {"libcudnn.so.9"};
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    candidates.push_back(std::string(home) + "/lib64/libcudnn.so.9");
  candidates.push_back("/usr/local/cuda/lib64/libcudnn.so.9");
  std::string reasons;
  for (const std::string &candidate : candidates) {
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
    const char *why = dlerror();
    if (reasons.empty())
      reasons = why ? why : candidate + ": cannot open";
  }
  error = reasons + " (" + kHint + ")";
  return nullptr;
}

Status resolve(void *handle, CudnnApi &api) {
#define LLMC_RESOLVE_CUDNN(name)                                               \
  api.name = reinterpret_cast<decltype(api.name)>(                             \
      dlsym(handle, LLMC_CUDNN_STRINGIFY_EXPANDED(name)));                     \
  if (!api.name)                                                               \
    return Status::error(std::string("libcudnn.so.9 has no function ") +       \
                         LLMC_CUDNN_STRINGIFY_EXPANDED(name) +                 \
                         ": install cuDNN 9");
  LLMC_CUDNN_FUNCTIONS(LLMC_RESOLVE_CUDNN)
#undef LLMC_RESOLVE_CUDNN
  return Status::ok();
}

std::string shortFile(const char *file) {
  std::string path = file;
  size_t pos = path.rfind("runtime/");
  return pos == std::string::npos ? path : path.substr(pos);
}

} // namespace

Status loadCudnn(const CudnnApi *&api) {
  static std::once_flag once;
  static CudnnApi table;
  static Status outcome;
  std::call_once(once, [] {
    std::string error;
    void *handle = openCudnn(error);
    if (!handle) {
      outcome = Status::error("cuDNN not found: " + error);
      return;
    }
    outcome = resolve(handle, table);
    if (!outcome)
      outcome = outcome.withContext("cuDNN not found");
  });
  api = outcome ? &table : nullptr;
  return outcome;
}

Status cudnnError(cudnnStatus_t result, const char *expr, const char *file,
                  int line, const std::string &context) {
  std::string callee = expr;
  if (size_t paren = callee.find('('); paren != std::string::npos)
    callee.resize(paren);
  if (size_t start = callee.find_last_of(".>:"); start != std::string::npos)
    callee = callee.substr(start + 1);
  std::string message = callee + " failed: ";
  const CudnnApi *api = nullptr;
  std::string last;
  if (loadCudnn(api)) {
    const char *name = api->cudnnGetErrorString(result);
    message += name ? name : "cudnnStatus_t " + std::to_string(result);
    char buffer[1024] = {0};
    api->cudnnGetLastErrorString(buffer, sizeof(buffer));
    last = buffer;
  } else {
    message += "cudnnStatus_t " + std::to_string(static_cast<int>(result));
  }
  while (!last.empty() && (last.back() == '\n' || last.back() == ' '))
    last.pop_back();
  if (!last.empty())
    message += " (" + last + ")";
  message += " at " + shortFile(file) + ":" + std::to_string(line);
  if (!context.empty())
    message += " [" + context + "]";
  return Status::error(message);
}

} // namespace llmc::cuda
