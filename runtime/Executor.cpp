//===- Executor.cpp - Runs a plan on one GPU ------------------------------===//
#include "runtime/Executor.h"
#include "runtime/ExecutorAttention.h"
#include "runtime/KernelCache.h"
#include "runtime/Matmul.h"
#include "runtime/Nvrtc.h"

#include <cstdio>
#include <cstring>

namespace llmc {

bool gpuAvailable(std::string &why) {
  const cuda::DriverApi *cu = nullptr;
  if (Status status = cuda::loadDriver(cu); !status) {
    why = status.message();
    return false;
  }
  CUresult result = cu->cuInit(0);
  if (result != CUDA_SUCCESS) {
    why = cuda::driverError(result, "cuInit(0)", __FILE__, __LINE__, "")
              .message();
    return false;
  }
  int count = 0;
  if (cu->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    why = "the CUDA driver reports no GPU";
    return false;
  }
  return true;
}

std::string Executor::context() const {
  std::string text = "bundle '" +
                     (options_.source.empty() ? plan_.name : options_.source) +
                     "'";
  return text;
}

std::string Executor::stepContext(size_t index) const {
  return plan_.describeStep(index) + " of " + context();
}

Status Executor::create(Plan plan, const ExecutorOptions &options,
                        std::unique_ptr<Executor> &out) {
  out.reset();
  std::unique_ptr<Executor> executor(new Executor());
  executor->plan_ = std::move(plan);
  executor->options_ = options;
  LoadPhases &t = executor->loadTimes_;
  t.restart();
  LLMC_RETURN_IF_ERROR(
      validatePlan(executor->plan_)
          .withContext("invalid plan in " + executor->context()));
  t.mark("plan validation");
  LLMC_RETURN_IF_ERROR(executor->init());
  t.mark("driver, context, streams");
  // Before the arena: the largest plan's workspace is allocated with it.
  LLMC_RETURN_IF_ERROR(executor->prepareAttention());
  if (const PreparedAttention *a = executor->attention_.get())
    t.mark("cuDNN attention plans (" + std::to_string(a->fromCache) +
           " of " + std::to_string(a->distinct) + " from the cache)");
  LLMC_RETURN_IF_ERROR(executor->checkFits());
  LLMC_RETURN_IF_ERROR(executor->allocateArena());
  t.mark("arena");
  // The weights go up on other threads while this one loads the modules
  // and prepares cuBLASLt (ExecutorLoad.cpp).
  executor->startUpload();
  LLMC_RETURN_IF_ERROR(executor->loadKernels());
  t.mark("modules");
  // Not fatal: without it the graph copies the loss and a read waits on an
  // event, as before (publishesLoss() says which).
  executor->published_ = std::make_unique<PublishedScalar>();
  if (!executor->published_->init(*executor->cu_))
    executor->published_.reset();
  t.mark("loss kernel");
  LLMC_RETURN_IF_ERROR(executor->prepareSteps());
  t.mark("cuBLASLt");
  LLMC_RETURN_IF_ERROR(executor->finishUpload());
  t.mark("weights to the GPU (the rest)");
  out = std::move(executor);
  return Status::ok();
}

Executor::~Executor() {
  upload_.reset(); // joins its threads, which use the context
  if (!cu_)
    return;
  if (context_)
    cu_->cuCtxSetCurrent(context_);
  // The last replay may be running on a caller's stream: wait for it by its
  // own event (the stream may be gone), then for the executor's stream.
  if (tailIsReplay_)
    cu_->cuEventSynchronize(stop_);
  else if (work_ != stream_)
    cu_->cuStreamSynchronize(work_);
  if (stream_)
    cu_->cuStreamSynchronize(stream_);
  destroyProfiled();
  destroyAccumulate();
  destroyGraph();
  published_.reset(); // its module and host memory, in the context
  matmuls_.clear();
  attention_.reset(); // cuDNN handles, in the context
  if (ltHandle_)
    lt_->cublasLtDestroy(ltHandle_);
  for (CUmodule module : modules_)
    if (module)
      cu_->cuModuleUnload(module);
  for (CUevent event : scalarCopied_)
    if (event)
      cu_->cuEventDestroy(event);
  if (pinned_)
    cu_->cuMemFreeHost(pinned_);
  if (start_)
    cu_->cuEventDestroy(start_);
  if (stop_)
    cu_->cuEventDestroy(stop_);
  if (switched_)
    cu_->cuEventDestroy(switched_);
  if (stream_)
    cu_->cuStreamDestroy(stream_);
  if (arena_)
    cu_->cuMemFree(arena_);
  if (context_)
    cu_->cuDevicePrimaryCtxRelease(device_);
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

Status Executor::init() {
  std::string ctx = context();
  LLMC_RETURN_IF_ERROR(cuda::loadDriver(cu_));
  LLMC_CU(cu_->cuInit(0), ctx);
  int count = 0;
  LLMC_CU(cu_->cuDeviceGetCount(&count), ctx);
  if (options_.device < 0 || options_.device >= count)
    return Status::error("GPU " + std::to_string(options_.device) +
                         " does not exist: the driver reports " +
                         std::to_string(count) + " GPU(s)");
  LLMC_CU(cu_->cuDeviceGet(&device_, options_.device), ctx);
  char name[256] = {};
  LLMC_CU(cu_->cuDeviceGetName(name, sizeof(name), device_), ctx);
  deviceName_ = name;
  int major = 0, minor = 0;
  LLMC_CU(cu_->cuDeviceGetAttribute(
              &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
          ctx);
  LLMC_CU(cu_->cuDeviceGetAttribute(
              &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
          ctx);
  arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
  // The primary context is the one the CUDA runtime (and so cuBLASLt) uses;
  // sharing it avoids a second context per process.
  LLMC_CU(cu_->cuDevicePrimaryCtxRetain(&context_, device_), ctx);
  LLMC_CU(cu_->cuCtxSetCurrent(context_), ctx);
  LLMC_CU(cu_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), ctx);
  work_ = stream_;
  LLMC_CU(cu_->cuEventCreate(&start_, CU_EVENT_DEFAULT), ctx);
  LLMC_CU(cu_->cuEventCreate(&stop_, CU_EVENT_DEFAULT), ctx);
  LLMC_CU(cu_->cuEventCreate(&switched_, CU_EVENT_DISABLE_TIMING), ctx);
  void *pinned = nullptr;
  LLMC_CU(cu_->cuMemHostAlloc(&pinned, (kScalarRing + 2) * 8, 0), ctx);
  pinned_ = static_cast<unsigned char *>(pinned);
  for (CUevent &event : scalarCopied_)
    LLMC_CU(cu_->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), ctx);
  return Status::ok();
}

Status Executor::loadKernels() {
  // Kernels whose cubin was built for another arch (or that have none) are
  // recompiled from source for this GPU, in parallel and through the cache.
  std::vector<CompileRequest> requests;
  std::vector<size_t> requestKernel;
  for (size_t i = 0; i < plan_.kernels.size(); ++i) {
    const KernelInfo &kernel = plan_.kernels[i];
    if (!kernel.cubin.empty() && kernel.arch == arch_)
      continue;
    if (kernel.source.empty())
      return Status::error("kernel '" + kernel.name + "' in " + context() +
                           " was compiled for " + kernel.arch + " but GPU " +
                           std::to_string(options_.device) + " is " + arch_ +
                           ", and the bundle has no source to recompile it");
    CompileRequest request;
    request.name = kernel.name;
    request.source = kernel.source;
    request.options.arch = arch_;
    request.options.fastMath = kernel.fastMath;
    request.options.extra = kernel.options;
    requests.push_back(std::move(request));
    requestKernel.push_back(i);
  }
  if (!requests.empty()) {
    KernelCache cache(options_.cacheDir.empty() ? KernelCache::defaultDir()
                                                : options_.cacheDir);
    std::vector<CompileResult> results = compileAll(requests, &cache);
    for (size_t r = 0; r < results.size(); ++r) {
      if (!results[r].warning.empty())
        std::fprintf(stderr, "llmc: warning: %s\n", results[r].warning.c_str());
      if (!results[r].status)
        return results[r].status.withContext(context());
      KernelInfo &kernel = plan_.kernels[requestKernel[r]];
      kernel.cubin = std::move(results[r].cubin);
      kernel.arch = arch_;
    }
    recompiled_ = requests.size();
  }

  moduleBytes_ = moduleFootprint(plan_);
  modules_.assign(plan_.kernels.size(), nullptr);
  functions_.assign(plan_.kernels.size(), nullptr);
  for (size_t i = 0; i < plan_.kernels.size(); ++i) {
    KernelInfo &kernel = plan_.kernels[i];
    std::string ctx = "kernel '" + kernel.name + "' in " + context();
    LLMC_CU(cu_->cuModuleLoadData(&modules_[i], kernel.cubin.data()), ctx);
    LLMC_CU(cu_->cuModuleGetFunction(&functions_[i], modules_[i],
                                     kernel.entry.c_str()),
            ctx + ", entry '" + kernel.entry + "'");
    std::vector<uint8_t>().swap(kernel.cubin);
    int local = 0;
    LLMC_CU(cu_->cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                    functions_[i]),
            ctx);
    facts_.localBytesPerThread =
        std::max<uint64_t>(facts_.localBytesPerThread, uint64_t(local));
  }
  return loadFacts();
}

// What the device adds to the plan's memory (DeviceMemory.h): the driver
// grows every SM's local memory to the largest kernel's need beyond the
// stack it reserved with the context.
Status Executor::loadFacts() {
  int sms = 0, threads = 0;
  LLMC_CU(cu_->cuDeviceGetAttribute(
              &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_),
          context());
  LLMC_CU(cu_->cuDeviceGetAttribute(
              &threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
              device_),
          context());
  size_t stack = 0;
  LLMC_CU(cu_->cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE), context());
  facts_.stackBytesPerThread = stack;
  facts_.residentThreads = uint64_t(sms) * uint64_t(threads);
  facts_.cudnnWorkspaceBytes = cudnnWorkspaceBytes_;
  facts_.loaded = true;
  return Status::ok();
}

Status Executor::prepareSteps() {
  launches_.resize(plan_.steps.size());
  matmuls_.resize(plan_.steps.size());
  std::vector<uint32_t> maxShared(plan_.kernels.size(), 0);
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    const Step &step = plan_.steps[i];
    if (const auto *launch = std::get_if<LaunchStep>(&step.op)) {
      // Argument values are fixed for the life of the executor: compute them
      // once, in the 8-byte slots cuLaunchKernel reads from (little-endian,
      // so a 4-byte argument is the low half of its slot).
      ResolvedLaunch &resolved = launches_[i];
      resolved.function = functions_[launch->kernel];
      resolved.values.resize(launch->args.size(), 0);
      for (size_t a = 0; a < launch->args.size(); ++a) {
        const KernelArg &arg = launch->args[a];
        uint64_t &slot = resolved.values[a];
        switch (arg.kind) {
        case KernelArg::Kind::Buffer:
          slot = arena_ + plan_.findBuffer(arg.name)->offset + arg.offset;
          break;
        case KernelArg::Kind::Scalar:
          slot = arena_ + plan_.findScalar(arg.name)->offset;
          break;
        case KernelArg::Kind::I32: {
          int32_t value = static_cast<int32_t>(arg.intValue);
          std::memcpy(&slot, &value, sizeof(value));
          break;
        }
        case KernelArg::Kind::I64:
          std::memcpy(&slot, &arg.intValue, sizeof(arg.intValue));
          break;
        case KernelArg::Kind::F32:
          std::memcpy(&slot, &arg.floatValue, sizeof(arg.floatValue));
          break;
        }
      }
      for (uint64_t &value : resolved.values)
        resolved.params.push_back(&value);
      maxShared[launch->kernel] =
          std::max(maxShared[launch->kernel], launch->sharedBytes);
    } else if (const auto *a = std::get_if<AttentionStep>(&step.op)) {
      auto at = [&](const AttentionView &v) -> CUdeviceptr {
        return v.buffer.empty()
                   ? 0
                   : arena_ + plan_.findBuffer(v.buffer)->offset + v.offset;
      };
      CudnnAttentionArgs &args = attention_->args[i];
      args.q = at(a->q), args.k = at(a->k), args.v = at(a->v);
      args.o = at(a->o), args.stats = at(a->stats);
      if (a->backward)
        args.dO = at(a->dO), args.dQ = at(a->dQ), args.dK = at(a->dK),
        args.dV = at(a->dV);
      args.workspace = cudnnWorkspace_;
    } else if (const auto *mm = std::get_if<MatmulStep>(&step.op)) {
      if (!lt_) {
        LLMC_RETURN_IF_ERROR(cuda::loadCublasLt(lt_));
        LLMC_CUBLASLT(lt_->cublasLtCreate(&ltHandle_), context());
      }
      auto pointer = [&](const std::string &name) -> CUdeviceptr {
        return name.empty() ? 0 : arena_ + plan_.findBuffer(name)->offset;
      };
      MatmulPointers pointers{pointer(mm->a), pointer(mm->b), pointer(mm->c),
                              pointer(mm->d), pointer(mm->bias),
                              pointer(mm->aux), pointer(mm->biasGrad)};
      matmuls_[i] = std::make_unique<PreparedMatmul>();
      LLMC_RETURN_IF_ERROR(matmuls_[i]->prepare(*lt_, ltHandle_, *mm, pointers,
                                                plan_.workspaceBytes,
                                                stepContext(i)));
    }
  }
  LLMC_RETURN_IF_ERROR(tuneMatmuls());
  // Dynamic shared memory above 48 KiB must be opted into per function.
  for (size_t k = 0; k < plan_.kernels.size(); ++k)
    if (maxShared[k] > 48 * 1024)
      LLMC_CU(cu_->cuFuncSetAttribute(
                  functions_[k],
                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                  static_cast<int>(maxShared[k])),
              "kernel '" + plan_.kernels[k].name + "' in " + context());
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

Status Executor::enqueueStep(size_t index) {
  const Step &step = plan_.steps[index];
  if (const auto *launch = std::get_if<LaunchStep>(&step.op)) {
    ResolvedLaunch &resolved = launches_[index];
    LLMC_CU(cu_->cuLaunchKernel(resolved.function, launch->grid[0],
                                launch->grid[1], launch->grid[2],
                                launch->block[0], launch->block[1],
                                launch->block[2], launch->sharedBytes, stream_,
                                resolved.params.data(), nullptr),
            stepContext(index));
  } else if (std::holds_alternative<MatmulStep>(step.op)) {
    LLMC_RETURN_IF_ERROR(matmuls_[index]->run(ltHandle_, stream_, workspace_,
                                              plan_.workspaceBytes));
  } else if (std::holds_alternative<AttentionStep>(step.op)) {
    LLMC_RETURN_IF_ERROR(
        attention_->plans[index]
            ->run(stream_, attention_->args[index])
            .withContext(stepContext(index)));
  } else {
    const auto &memset = std::get<MemsetStep>(step.op);
    const BufferInfo *buffer = plan_.findBuffer(memset.buffer);
    LLMC_CU(cu_->cuMemsetD8Async(arena_ + buffer->offset, memset.value,
                                 buffer->bytes, stream_),
            stepContext(index));
  }
  return Status::ok();
}

Status Executor::enqueueAll() {
  return enqueueRange(0, plan_.steps.size());
}

Status Executor::enqueueRange(size_t first, size_t last) {
  for (size_t i = first; i < last; ++i)
    LLMC_RETURN_IF_ERROR(enqueueStep(i));
  return Status::ok();
}

Status Executor::runPlain() {
  mirrorCurrent_ = false;
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  LLMC_RETURN_IF_ERROR(useStream(stream_));
  tailIsReplay_ = false;
  LLMC_CU(cu_->cuEventRecord(start_, stream_), context());
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    LLMC_RETURN_IF_ERROR(enqueueStep(i));
    if (options_.syncEachStep)
      LLMC_CU(cu_->cuStreamSynchronize(stream_),
              "after " + stepContext(i) + " (a kernel fault surfaces here)");
  }
  LLMC_CU(cu_->cuEventRecord(stop_, stream_), context());
  ran_ = true;
  return Status::ok();
}

Status Executor::useStream(CUstream s) {
  if (s == work_)
    return Status::ok();
  CUevent last = stop_;
  if (!tailIsReplay_) {
    last = switched_;
    LLMC_CU(cu_->cuEventRecord(switched_, work_),
            "ordering a new stream after the last work of " + context());
  }
  LLMC_CU(cu_->cuStreamWaitEvent(s, last, 0),
          "ordering a new stream after the last work of " + context());
  work_ = s;
  return Status::ok();
}

Status Executor::synchronize() {
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  LLMC_RETURN_IF_ERROR(useStream(stream_));
  LLMC_CU(cu_->cuStreamSynchronize(stream_), context());
  return Status::ok();
}

Status Executor::lastRunMs(float &ms) {
  if (!ran_)
    return Status::error("lastRunMs: nothing has run yet");
  LLMC_CU(cu_->cuEventSynchronize(stop_), context());
  LLMC_CU(cu_->cuEventElapsedTime(&ms, start_, stop_), context());
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Host <-> device
//===----------------------------------------------------------------------===//

Status Executor::setScalar(const std::string &name, double value) {
  const ScalarSlot *slot = plan_.findScalar(name);
  if (!slot)
    return Status::error("setScalar: " + context() + " has no scalar slot '" +
                         name + "'");
  if (slot == mirrored_)
    mirrorCurrent_ = false;
  tailIsReplay_ = false;
  // A pinned ring entry: the copy is queued without staging, and the entry
  // is not rewritten before the copy that reads it has run.
  size_t entry = scalarNext_;
  scalarNext_ = (scalarNext_ + 1) % kScalarRing;
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  if (entry % kScalarGroup == 0)
    LLMC_CU(cu_->cuEventSynchronize(scalarCopied_[entry / kScalarGroup]),
            context());
  unsigned char *bytes = pinned_ + 8 * entry;
  std::memset(bytes, 0, 8);
  if (slot->dtype == DType::F32) {
    float f = static_cast<float>(value);
    std::memcpy(bytes, &f, 4);
  } else if (slot->dtype == DType::I32) {
    int32_t i = static_cast<int32_t>(value);
    std::memcpy(bytes, &i, 4);
  } else {
    int64_t i = static_cast<int64_t>(value);
    std::memcpy(bytes, &i, 8);
  }
  LLMC_CU(cu_->cuMemcpyHtoDAsync(arena_ + slot->offset, bytes,
                                 dtypeSize(slot->dtype), work_),
          "scalar slot '" + name + "' in " + context());
  // Entries of one group may be copied on different streams: a later
  // stream waits for the earlier one's work (useStream), so the event on
  // the last one covers them all.
  if (entry % kScalarGroup == kScalarGroup - 1)
    LLMC_CU(cu_->cuEventRecord(scalarCopied_[entry / kScalarGroup], work_),
            context());
  return Status::ok();
}

Status Executor::writeBuffer(const std::string &name, const void *data,
                             size_t bytes) {
  const BufferInfo *buffer = plan_.findBuffer(name);
  if (!buffer)
    return Status::error("writeBuffer: " + context() + " has no buffer '" +
                         name + "'");
  if (bytes > buffer->bytes)
    return Status::error("writeBuffer: " + std::to_string(bytes) +
                         " bytes do not fit buffer '" + name + "' (" +
                         std::to_string(buffer->bytes) + " bytes)");
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  tailIsReplay_ = false;
  LLMC_CU(cu_->cuMemcpyHtoDAsync(arena_ + buffer->offset, data, bytes, work_),
          "buffer '" + name + "' in " + context());
  return Status::ok();
}

Status Executor::readBuffer(const std::string &name,
                            std::vector<uint8_t> &bytes) {
  const BufferInfo *buffer = plan_.findBuffer(name);
  if (!buffer)
    return Status::error("readBuffer: " + context() + " has no buffer '" +
                         name + "'");
  LLMC_RETURN_IF_ERROR(synchronize());
  bytes.resize(buffer->bytes);
  LLMC_CU(
      cu_->cuMemcpyDtoH(bytes.data(), arena_ + buffer->offset, buffer->bytes),
      "buffer '" + name + "' in " + context());
  return Status::ok();
}

Status Executor::readScalar(const std::string &name, double &value) {
  const ScalarSlot *slot = plan_.findScalar(name);
  if (!slot)
    return Status::error("readScalar: " + context() + " has no scalar slot '" +
                         name + "'");
  unsigned char bytes[8] = {};
  LLMC_CU(cu_->cuCtxSetCurrent(context_), context());
  if (slot == mirrored_ && mirrorCurrent_ && graphPublishes_) {
    // Published by the replay's last kernel: a spin on host memory.
    LLMC_RETURN_IF_ERROR(published_->read(stop_, bytes).withContext(context()));
  } else if (slot == mirrored_ && mirrorCurrent_) {
    // The replay copied it before recording stop_: wait for that event (not
    // the stream, which may be a caller's with later work of its own) and
    // read the pinned mirror.
    LLMC_CU(cu_->cuEventSynchronize(stop_), context());
    std::memcpy(bytes, pinned_ + 8 * (kScalarRing + 1), dtypeSize(slot->dtype));
  } else {
    // Queued behind the stream's work into pinned memory, then one wait: a
    // pageable cuMemcpyDtoH after a synchronize is a second round trip.
    LLMC_RETURN_IF_ERROR(useStream(stream_));
    tailIsReplay_ = false;
    unsigned char *staged = pinned_ + 8 * kScalarRing;
    LLMC_CU(cu_->cuMemcpyDtoHAsync(staged, arena_ + slot->offset,
                                   dtypeSize(slot->dtype), stream_),
            "scalar slot '" + name + "' in " + context());
    LLMC_CU(cu_->cuStreamSynchronize(stream_), context());
    std::memcpy(bytes, staged, dtypeSize(slot->dtype));
  }
  if (slot->dtype == DType::F32) {
    float f;
    std::memcpy(&f, bytes, 4);
    value = f;
  } else if (slot->dtype == DType::I32) {
    int32_t i;
    std::memcpy(&i, bytes, 4);
    value = i;
  } else {
    int64_t i;
    std::memcpy(&i, bytes, 8);
    value = static_cast<double>(i);
  }
  return Status::ok();
}

} // namespace llmc
