//===- CudaApi.cpp - CUDA driver, NVRTC and cuBLASLt loaded at run time ---===//
//
// Each library is searched for in this order: the LLMC_LIB* environment
// variable, the versioned soname through the dynamic loader's path, the
// unversioned name, then $CUDA_HOME/lib64 and /usr/local/cuda/lib64 (the
// toolkit is often not on the loader's path). The first library that opens
// wins, except that a set LLMC_LIB* variable is the only candidate; a missing function is an error that names the symbol and suggests a
// newer driver or toolkit.
//
//===----------------------------------------------------------------------===//
#include "runtime/CudaApi.h"
#include "runtime/LibraryPreload.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <vector>

namespace llmc::cuda {
namespace {

#define LLMC_STRINGIFY_EXPANDED(x) LLMC_STRINGIFY(x)
#define LLMC_STRINGIFY(x) #x

struct Library {
  const char *what;   // "CUDA driver", for messages
  const char *envVar; // path override
  const char *hint;   // what to install when it is missing
  std::vector<std::string> names;
};

/// Tries each candidate in order. Returns the handle or, in `error`, every
/// reason a candidate did not open (the first is usually the useful one).
void *openLibrary(const Library &lib, std::string &error) {
  // An override is the user's explicit choice: when it does not open, say
  // so, naming the path, rather than quietly loading some other library.
  if (const char *env = std::getenv(lib.envVar); env && *env) {
    if (void *handle = dlopen(env, RTLD_NOW | RTLD_LOCAL))
      return handle;
    const char *why = dlerror();
    error = std::string(lib.envVar) + "=" + env + " cannot be loaded: " +
            (why ? why : "dlopen failed") + " (unset " + lib.envVar +
            " to search the default locations)";
    return nullptr;
  }
  std::vector<std::string> candidates;
  for (const std::string &name : lib.names)
    candidates.push_back(name);
  std::vector<std::string> dirs;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    dirs.push_back(std::string(home) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  // The driver is installed by the NVIDIA driver package, never the toolkit
  // (whose lib64/stubs/libcuda.so must not be picked up by accident).
  if (std::string(lib.what) != "CUDA driver")
    for (const std::string &dir : dirs)
      for (const std::string &name : lib.names)
        candidates.push_back(dir + name);

  std::string reasons;
  for (const std::string &candidate : candidates) {
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
    const char *why = dlerror();
    if (reasons.empty())
      reasons = why ? why : candidate + ": cannot open";
  }
  error = reasons + " (" + lib.hint + ")";
  return nullptr;
}

template <typename Api>
using Resolver = Status (*)(void *handle, const std::string &soname, Api &api);

#define LLMC_RESOLVE_MEMBER(name)                                              \
  api.name = reinterpret_cast<decltype(api.name)>(                             \
      dlsym(handle, LLMC_STRINGIFY_EXPANDED(name)));                           \
  if (!api.name)                                                               \
    return Status::error(soname + " has no function " +                        \
                         LLMC_STRINGIFY_EXPANDED(name) + newerHint);

Status resolveDriver(void *handle, const std::string &soname, DriverApi &api) {
  const char *newerHint = ": the NVIDIA driver is too old for this llmc "
                          "(CUDA 12.4 or newer is needed)";
  LLMC_DRIVER_FUNCTIONS(LLMC_RESOLVE_MEMBER)
  return Status::ok();
}

Status resolveNvrtc(void *handle, const std::string &soname, NvrtcApi &api) {
  const char *newerHint = ": install NVRTC 12 or newer";
  LLMC_NVRTC_FUNCTIONS(LLMC_RESOLVE_MEMBER)
  return Status::ok();
}

Status resolveCublasLt(void *handle, const std::string &soname,
                       CublasLtApi &api) {
  const char *newerHint = ": install cuBLASLt 12 or newer";
  LLMC_CUBLASLT_FUNCTIONS(LLMC_RESOLVE_MEMBER)
  return Status::ok();
}

/// Loads `lib` into `table` once per process; later calls return the first
/// outcome (a missing library does not appear while the process runs).
template <typename Api>
Status loadOnce(const Library &lib, Resolver<Api> resolve, const char *prefix,
                const Api *&out) {
  static std::once_flag once;
  static Api table;
  static Status outcome;
  std::call_once(once, [&] {
    std::string error;
    void *handle = openLibrary(lib, error);
    if (!handle) {
      outcome = Status::error(std::string(prefix) + error);
      return;
    }
    outcome = resolve(handle, lib.names.front(), table);
    if (!outcome)
      outcome = outcome.withContext(prefix);
  });
  out = outcome ? &table : nullptr;
  return outcome;
}

const Library kDriver = {"CUDA driver",
                         "LLMC_LIBCUDA",
                         "install the NVIDIA driver, or run on a machine "
                         "with an NVIDIA GPU",
                         {"libcuda.so.1", "libcuda.so"}};
const Library kNvrtc = {"NVRTC",
                        "LLMC_LIBNVRTC",
                        "install the CUDA toolkit's NVRTC, or set "
                        "LLMC_LIBNVRTC to the path of libnvrtc.so",
                        {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}};
const Library kCublasLt = {
    "cuBLASLt",
    "LLMC_LIBCUBLASLT",
    "install the CUDA toolkit's cuBLAS, or set "
    "LLMC_LIBCUBLASLT to the path of libcublasLt.so",
    {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}};

/// Shortens an absolute __FILE__ to the path from the repository root.
std::string shortFile(const char *file) {
  std::string path = file;
  size_t pos = path.rfind("runtime/");
  return pos == std::string::npos ? path : path.substr(pos);
}

Status callError(const char *expr, const std::string &name,
                 const std::string &text, const char *file, int line,
                 const std::string &context) {
  std::string message = calleeName(expr) + " failed: " + name;
  if (!text.empty() && text != name)
    message += " (" + text + ")";
  message += " at " + shortFile(file) + ":" + std::to_string(line);
  if (!context.empty())
    message += " [" + context + "]";
  return Status::error(message);
}

} // namespace

Status loadDriver(const DriverApi *&api) {
  return loadOnce<DriverApi>(kDriver, resolveDriver,
                             "no CUDA driver found: ", api);
}

Status loadNvrtc(const NvrtcApi *&api) {
  return loadOnce<NvrtcApi>(kNvrtc, resolveNvrtc, "NVRTC not found: ", api);
}

Status loadCublasLt(const CublasLtApi *&api) {
  return loadOnce<CublasLtApi>(kCublasLt, resolveCublasLt,
                               "cuBLASLt not found: ", api);
}

std::thread preloadLibraries() {
  return std::thread([] {
    const NvrtcApi *nvrtc = nullptr;
    const CublasLtApi *cublasLt = nullptr;
    // Failures are reported by the callers' own loads (the same outcome).
    (void)loadNvrtc(nvrtc);
    (void)loadCublasLt(cublasLt);
  });
}

Status checkLibraryOverrides() {
  auto set = [](const Library &lib) {
    const char *env = std::getenv(lib.envVar);
    return env && *env;
  };
  const DriverApi *driver = nullptr;
  const NvrtcApi *nvrtc = nullptr;
  const CublasLtApi *cublasLt = nullptr;
  if (set(kDriver))
    LLMC_RETURN_IF_ERROR(loadDriver(driver));
  if (set(kNvrtc))
    LLMC_RETURN_IF_ERROR(loadNvrtc(nvrtc));
  if (set(kCublasLt))
    LLMC_RETURN_IF_ERROR(loadCublasLt(cublasLt));
  return Status::ok();
}

Status loadDriverFrom(const std::string &path, DriverApi &api) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return Status::error(std::string("no CUDA driver found: ") +
                         (why ? why : path));
  }
  return resolveDriver(handle, path, api);
}

std::string calleeName(const char *expr) {
  std::string text = expr;
  size_t paren = text.find('(');
  if (paren != std::string::npos)
    text.resize(paren);
  size_t start = text.find_last_of(".>:");
  if (start != std::string::npos)
    text = text.substr(start + 1);
  while (!text.empty() && text.back() == ' ')
    text.pop_back();
  return text;
}

Status driverError(CUresult result, const char *expr, const char *file,
                   int line, const std::string &context) {
  std::string name = "CUresult " + std::to_string(static_cast<int>(result));
  std::string text;
  const DriverApi *api = nullptr;
  if (loadDriver(api)) {
    const char *str = nullptr;
    if (api->cuGetErrorName(result, &str) == CUDA_SUCCESS && str)
      name = str;
    if (api->cuGetErrorString(result, &str) == CUDA_SUCCESS && str)
      text = str;
  }
  return callError(expr, name, text, file, line, context);
}

Status nvrtcError(nvrtcResult result, const char *expr, const char *file,
                  int line, const std::string &context) {
  std::string name = "nvrtcResult " + std::to_string(static_cast<int>(result));
  const NvrtcApi *api = nullptr;
  if (loadNvrtc(api))
    if (const char *str = api->nvrtcGetErrorString(result))
      name = str;
  return callError(expr, name, "", file, line, context);
}

Status cublasLtError(cublasStatus_t result, const char *expr, const char *file,
                     int line, const std::string &context) {
  std::string name =
      "cublasStatus_t " + std::to_string(static_cast<int>(result));
  std::string text;
  const CublasLtApi *api = nullptr;
  if (loadCublasLt(api)) {
    if (const char *str = api->cublasLtGetStatusName(result))
      name = str;
    if (const char *str = api->cublasLtGetStatusString(result))
      text = str;
  }
  return callError(expr, name, text, file, line, context);
}

} // namespace llmc::cuda
