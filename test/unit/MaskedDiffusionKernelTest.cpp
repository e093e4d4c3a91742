//===- MaskedDiffusionKernelTest.cpp - The GPU draw kernel compiles -------===//
//
// runtime/MaskedDiffusionDevice.h's kernel compiles with NVRTC for the
// architectures llmc targets (NVRTC needs no GPU; skips, visibly, without
// libnvrtc). That it draws drawMasking's masks bit for bit is checked on a
// GPU: test/gpu/MaskedDiffusionGpuTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/CudaApi.h"
#include "runtime/MaskedDiffusionDevice.h"
#include "runtime/Nvrtc.h"

#include <gtest/gtest.h>

using namespace llmc;

TEST(MaskedDiffusionKernel, CompilesForTheTargetArchs) {
  const cuda::NvrtcApi *api = nullptr;
  if (Status s = cuda::loadNvrtc(api); !s)
    GTEST_SKIP() << "libnvrtc is not installed: " << s.message();
  for (const char *arch : {"sm_80", "sm_90"}) {
    CompileRequest request;
    request.name = "masked_diffusion_draw";
    request.source = maskedDiffusionKernelSource();
    request.options.arch = arch;
    std::vector<uint8_t> cubin;
    Status s = compileToCubin(request, cubin);
    EXPECT_TRUE(s.isOk()) << arch << ": " << s.message();
    EXPECT_GT(cubin.size(), 4u) << arch;
  }
}
