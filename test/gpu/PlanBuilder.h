//===- PlanBuilder.h - Hand-built plans for the GPU tests -------*- C++ -*-===//
//
// The compiler's memory planner lays buffers out by lifetime; these tests
// just stack them, 256-aligned, and put the scalar slots after them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_GPU_PLANBUILDER_H
#define LLMC_TEST_GPU_PLANBUILDER_H

#include "runtime/Executor.h"
#include "runtime/Plan.h"

#include <gtest/gtest.h>

#include <cstring>

namespace llmc::test {

class PlanBuilder {
public:
  explicit PlanBuilder(std::string name) { plan_.name = std::move(name); }

  PlanBuilder &buffer(const std::string &name, BufferRole role,
                      std::vector<int64_t> shape, DType type = DType::F32,
                      const std::vector<float> &init = {}) {
    BufferInfo b;
    b.name = name;
    b.role = role;
    b.dtype = type;
    b.shape = std::move(shape);
    b.offset = next_;
    b.bytes = b.elementCount() * dtypeSize(type);
    if (!init.empty()) {
      b.init.resize(init.size() * 4);
      std::memcpy(b.init.data(), init.data(), b.init.size());
    }
    next_ = (b.offset + b.bytes + 255) / 256 * 256;
    plan_.buffers.push_back(std::move(b));
    return *this;
  }

  /// A buffer whose initial contents are raw bytes (bf16 bits, say).
  PlanBuilder &rawBuffer(const std::string &name, BufferRole role,
                         std::vector<int64_t> shape, DType type,
                         std::vector<uint8_t> init) {
    buffer(name, role, std::move(shape), type);
    plan_.buffers.back().init = std::move(init);
    return *this;
  }

  PlanBuilder &scalar(const std::string &name, DType type, double init) {
    plan_.scalars.push_back({name, type, 0, init});
    return *this;
  }

  uint32_t kernel(const std::string &name, const std::string &source) {
    KernelInfo k;
    k.name = name;
    k.entry = name;
    k.source = source;
    plan_.kernels.push_back(std::move(k));
    return static_cast<uint32_t>(plan_.kernels.size() - 1);
  }

  PlanBuilder &launch(uint32_t kernel, uint32_t grid, uint32_t block,
                      std::vector<KernelArg> args, uint32_t shared = 0) {
    LaunchStep step;
    step.kernel = kernel;
    step.grid = {grid, 1, 1};
    step.block = {block, 1, 1};
    step.sharedBytes = shared;
    step.args = std::move(args);
    plan_.steps.push_back({std::move(step), ""});
    return *this;
  }

  PlanBuilder &matmul(const MatmulStep &mm) {
    plan_.steps.push_back({mm, ""});
    return *this;
  }

  Plan &plan() { return plan_; }

  /// Places the scalar slots after the buffers and sizes the arena.
  Plan build() {
    for (ScalarSlot &slot : plan_.scalars) {
      slot.offset = next_;
      next_ += 8;
    }
    plan_.arenaBytes = (next_ + 255) / 256 * 256;
    return plan_;
  }

private:
  Plan plan_;
  uint64_t next_ = 0;
};

inline std::vector<float> toFloats(const std::vector<uint8_t> &bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

/// Skips the test, visibly, on machines without a GPU.
class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!gpuAvailable(why))
      GTEST_SKIP() << "no CUDA GPU: " << why;
  }
};

} // namespace llmc::test

#endif // LLMC_TEST_GPU_PLANBUILDER_H
