//===- LibraryPreload.h - CUDA libraries opened on a thread of their own -*- C++ -*-===//
#ifndef LLMC_RUNTIME_LIBRARYPRELOAD_H
#define LLMC_RUNTIME_LIBRARYPRELOAD_H

#include <thread>

namespace llmc::cuda {

/// Opens NVRTC and then cuBLASLt (runtime/CudaApi.h) on a thread of their
/// own, so that a warm start does other work meanwhile (libcublasLt's
/// dlopen alone is ~75 ms of CPU: 540 MB of relocations and initializers).
/// The loaders are once per process, so a later load* waits for this one
/// or returns at once. The caller joins the thread.
std::thread preloadLibraries();

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_LIBRARYPRELOAD_H
