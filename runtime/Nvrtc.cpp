//===- Nvrtc.cpp - CUDA C++ to cubin with NVRTC ---------------------------===//
#include "runtime/Nvrtc.h"
#include "runtime/CudaApi.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string_view>
#include <thread>

namespace llmc {
namespace {

std::string toolkitIncludeDir() {
  std::vector<std::string> dirs;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    dirs.push_back(std::string(home) + "/include");
  dirs.push_back("/usr/local/cuda/include");
  std::error_code ec;
  for (const std::string &dir : dirs)
    if (std::filesystem::exists(dir + "/cuda_bf16.h", ec))
      return dir;
  return "";
}

/// Runs NVRTC once. The program is destroyed on every path.
Status runNvrtc(const cuda::NvrtcApi &api, const CompileRequest &request,
                const std::vector<std::string> &options,
                std::vector<uint8_t> &cubin) {
  const std::string context = "kernel '" + request.name + "'";
  std::string fileName = request.name + ".cu";
  nvrtcProgram program = nullptr;
  LLMC_NVRTC(api.nvrtcCreateProgram(&program, request.source.c_str(),
                                    fileName.c_str(), 0, nullptr, nullptr),
             context);
  struct Destroy {
    const cuda::NvrtcApi &api;
    nvrtcProgram &program;
    ~Destroy() { api.nvrtcDestroyProgram(&program); }
  } destroy{api, program};

  std::vector<const char *> argv;
  for (const std::string &option : options)
    argv.push_back(option.c_str());
  nvrtcResult compiled = api.nvrtcCompileProgram(
      program, static_cast<int>(argv.size()), argv.data());

  size_t logSize = 0;
  std::string log;
  if (api.nvrtcGetProgramLogSize(program, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    log.resize(logSize);
    if (api.nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS)
      log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
  }
  if (compiled != NVRTC_SUCCESS)
    return Status::error("NVRTC failed to compile kernel '" + request.name +
                         "' for " + request.options.arch + " (" +
                         api.nvrtcGetErrorString(compiled) + "):\n" +
                         (log.empty() ? "(empty log)" : log));

  size_t size = 0;
  LLMC_NVRTC(api.nvrtcGetCUBINSize(program, &size), context);
  if (size == 0)
    return Status::error(
        "NVRTC produced no cubin for kernel '" + request.name + "': arch '" +
        request.options.arch +
        "' must be a real architecture (sm_XY, not compute_XY)");
  cubin.resize(size);
  LLMC_NVRTC(api.nvrtcGetCUBIN(program, reinterpret_cast<char *>(cubin.data())),
             context);
  return Status::ok();
}

} // namespace

std::vector<std::string> nvrtcOptions(const CompileOptions &options) {
  std::vector<std::string> flags = {"-arch=" + options.arch, "-std=c++17",
                                    "-default-device"};
  if (options.fastMath)
    flags.push_back("--use_fast_math");
  if (options.lineInfo)
    flags.push_back("-lineinfo");
  if (options.toolkitIncludes)
    if (std::string dir = toolkitIncludeDir(); !dir.empty())
      flags.push_back("-I" + dir);
  flags.insert(flags.end(), options.extra.begin(), options.extra.end());
  return flags;
}

Status nvrtcVersion(std::string &version) {
  const cuda::NvrtcApi *api = nullptr;
  LLMC_RETURN_IF_ERROR(cuda::loadNvrtc(api));
  int major = 0, minor = 0;
  LLMC_NVRTC(api->nvrtcVersion(&major, &minor), "");
  version = std::to_string(major) + "." + std::to_string(minor);
  return Status::ok();
}

Status checkArchSupported(const std::string &arch) {
  const cuda::NvrtcApi *api = nullptr;
  LLMC_RETURN_IF_ERROR(cuda::loadNvrtc(api));
  std::string version;
  LLMC_RETURN_IF_ERROR(nvrtcVersion(version));
  int count = 0;
  LLMC_NVRTC(api->nvrtcGetNumSupportedArchs(&count), "");
  std::vector<int> archs(static_cast<size_t>(std::max(count, 0)));
  if (count > 0)
    LLMC_NVRTC(api->nvrtcGetSupportedArchs(archs.data()), "");
  // "sm_90a" compiles wherever sm_90 does: the suffix selects features.
  std::string digits;
  if (arch.rfind("sm_", 0) == 0) {
    for (char c : arch.substr(3)) {
      if (c < '0' || c > '9')
        break;
      digits += c;
    }
  }
  if (!digits.empty() && digits.size() <= 4 &&
      std::find(archs.begin(), archs.end(), std::stoi(digits)) != archs.end())
    return Status::ok();
  std::string list;
  for (int a : archs)
    list += (list.empty() ? "sm_" : ", sm_") + std::to_string(a);
  return Status::error("NVRTC " + version + " cannot compile for " + arch +
                       "; it supports " + (list.empty() ? "none" : list) +
                       " (sm_90 for H100/H200, sm_80 for A100)");
}

std::string detectArch(bool *detected) {
  if (detected)
    *detected = false;
  const cuda::DriverApi *cu = nullptr;
  if (!cuda::loadDriver(cu) || cu->cuInit(0) != CUDA_SUCCESS)
    return kDefaultArch;
  CUdevice device;
  int major = 0, minor = 0;
  if (cu->cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cu->cuDeviceGetAttribute(&major,
                               CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                               device) != CUDA_SUCCESS ||
      cu->cuDeviceGetAttribute(&minor,
                               CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                               device) != CUDA_SUCCESS)
    return kDefaultArch;
  if (detected)
    *detected = true;
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

uint64_t detectTotalMemory() {
  const cuda::DriverApi *cu = nullptr;
  CUdevice device;
  size_t bytes = 0;
  if (!cuda::loadDriver(cu) || cu->cuInit(0) != CUDA_SUCCESS ||
      cu->cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cu->cuDeviceTotalMem(&bytes, device) != CUDA_SUCCESS)
    return 0;
  return bytes;
}

Status compileToCubin(const CompileRequest &request,
                      std::vector<uint8_t> &cubin, const KernelCache *cache,
                      bool *cacheHit, std::string *warning) {
  if (cacheHit)
    *cacheHit = false;
  const cuda::NvrtcApi *api = nullptr;
  LLMC_RETURN_IF_ERROR(cuda::loadNvrtc(api));
  std::string version;
  LLMC_RETURN_IF_ERROR(nvrtcVersion(version));
  std::vector<std::string> options = nvrtcOptions(request.options);

  std::string key;
  if (cache) {
    key = KernelCache::key(request.source, request.options.arch, options,
                           version);
    std::string problem;
    switch (cache->lookup(key, cubin, problem)) {
    case KernelCache::Entry::Valid:
      if (cacheHit)
        *cacheHit = true;
      return Status::ok();
    case KernelCache::Entry::Corrupt:
      if (warning)
        *warning = "kernel cache entry " + cache->pathFor(key) + " of kernel '" +
                   request.name + "' is corrupt (" + problem +
                   "): recompiled and replaced";
      break;
    case KernelCache::Entry::Missing:
      break;
    }
  }
  LLMC_RETURN_IF_ERROR(runNvrtc(*api, request, options, cubin));
  if (cache)
    LLMC_RETURN_IF_ERROR(cache->store(key, cubin));
  return Status::ok();
}

std::vector<CompileResult>
compileAll(const std::vector<CompileRequest> &requests,
           const KernelCache *cache, unsigned threads) {
  std::vector<CompileResult> results(requests.size());
  // Identical requests (same source and options) compile once: `unique`
  // holds the first of each, `firstOf` maps every request to it.
  std::vector<size_t> unique, firstOf(requests.size());
  std::map<std::pair<std::string_view, std::vector<std::string>>, size_t> seen;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto [it, inserted] = seen.try_emplace(
        {requests[i].source, nvrtcOptions(requests[i].options)}, i);
    firstOf[i] = it->second;
    if (inserted)
      unique.push_back(i);
  }
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, std::max<size_t>(1, unique.size()));

  // Workers take the next unique request until none is left; each result
  // slot is written by exactly one worker.
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t u = next++; u < unique.size(); u = next++) {
      CompileResult &result = results[unique[u]];
      result.status = compileToCubin(requests[unique[u]], result.cubin, cache,
                                     &result.cacheHit, &result.warning);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &thread : pool)
    thread.join();
  for (size_t i = 0; i < requests.size(); ++i)
    if (firstOf[i] != i) {
      results[i] = results[firstOf[i]];
      results[i].warning.clear(); // said once, for the first
    }
  return results;
}

} // namespace llmc
