//===- NormGradGpuTest.cpp - The norm-gradient warp kernel's variants -----===//
//
// The layer_norm_grad warp kernel of GPT-2 124M's step (NormGradWarpKernel.cpp,
// docs/codegen.md "norm grads"): ln_2's gradient with its residual epilogue
// (dres + dx, f32, and its bf16 cast for the projection's weight gradient),
// dweight, dbias and, with `colsum`, the projection's bias gradient summed in
// the same launch (docs/fusion.md "Column sums in the norm-gradient kernel").
// The kernel variants of LLMC_NORM_GRAD_KERNEL (NormGradWarpKernel.cpp,
// warpGradVariant; unset: the default; `session7`: the kernel before the
// tail's unrolling; `prefetch`: an L2 prefetch of each warp's next row;
// `early`: the epilogue's row inputs loaded with x and dy) add in the same
// order, so their results must be bitwise equal; `smem` (the column sums in
// shared memory, 16 warps an SM, 2048 warps) splits the rows among more
// warps, so its sums differ in the last bits. Each is checked against the
// CPU reference (1000 and 515 rows, and GPT-2's 16384), and timed at
// [16384, 768] (the best of 20 graph replays) against the device's measured
// copy bandwidth on the bytes the kernel must move (each row tensor read or
// written once; the parameter vectors and the partials, about 1%, are not
// counted). Without a GPU only the NVRTC checks run.
//
//===----------------------------------------------------------------------===//
#include "test/gpu/codegen/GpuHarness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace llmc::test;

namespace {

constexpr const char *kVariantVar = "LLMC_NORM_GRAD_KERNEL";

struct NormGradCase {
  const char *name;
  const char *type; // of dy and the cast results: bf16 or f32
  bool residual;    // the epilogue dres + dx (else dx itself)
  bool colsum;      // the bias gradient of the row value in the kernel
};
void PrintTo(const NormGradCase &c, std::ostream *os) { *os << c.name; }

/// `rows` x 768: x f32, dy of the case's type (cast to f32 for the norm),
/// f32 weight; results the row value (f32, and its cast for bf16), dweight,
/// dbias and the column sum of the row value as the matmul reads it.
std::string normGradGraph(const NormGradCase &c, int64_t rows) {
  std::string R = std::to_string(rows), t = c.type;
  std::string f = "tensor<" + R + "x768xf32>", a = "tensor<" + R + "x768x" + t + ">";
  std::string vec = "tensor<768xf32>", sumT = "tensor<768x" + t + ">";
  bool bf16 = t != "f32";
  std::string args = "%x: " + f + ", %dy: " + a + ", %w: " + vec;
  if (c.residual)
    args += ", %dres: " + f;
  std::string body;
  std::string dy = "%dy";
  if (bf16) {
    body += "  %c = llmc.cast %dy : " + a + " -> " + f + "\n";
    dy = "%c";
  }
  body += "  %g:3 = llmc.layer_norm_grad %x, " + dy +
          " weight %w {axis = 1 : i64, bias_grad} : (" + f + ", " + f + ", " +
          vec + ") -> (" + f + ", " + vec + ", " + vec + ")\n";
  std::string row = "%g#0";
  if (c.residual) {
    body += "  %r = llmc.add %dres, %g#0 : (" + f + ", " + f + ") -> " + f + "\n";
    row = "%r";
  }
  std::string rets, types;
  auto ret = [&](const std::string &v, const std::string &ty) {
    rets += (rets.empty() ? "" : ", ") + v;
    types += (types.empty() ? "" : ", ") + ty;
  };
  std::string stored = row;
  if (bf16) {
    body += "  %rc = llmc.cast " + row + " : " + f + " -> " + a + "\n";
    stored = "%rc";
    // ln_2's residual gradient flows on in f32; a plain dx only as bf16.
    if (c.residual)
      ret(row, f);
    ret("%rc", a);
  } else {
    ret(row, f);
  }
  ret("%g#1", vec);
  ret("%g#2", vec);
  if (c.colsum) {
    body += "  %s = llmc.reduce_sum " + stored + " axes [0] : (" + a + ") -> " +
            sumT + "\n";
    ret("%s", sumT);
  }
  return "func.func @forward(" + args + ") -> (" + types + ") {\n" + body +
         "  return " + rets + " : " + types + "\n}\n";
}

/// Bytes per element of the row tensors the kernel must move.
double rowBytes(const NormGradCase &c) {
  double low = std::string(c.type) == "f32" ? 4 : 2;
  double read = 4 + low + (c.residual ? 4 : 0);
  double written = (c.residual ? 4 : 0) + (low == 2 || !c.residual ? low : 0);
  return read + written;
}

const std::vector<NormGradCase> &cases() {
  static const std::vector<NormGradCase> all = {
      // GPT-2 124M bf16: ln_2's gradient with the attention projection's
      // bias gradient (16 bytes an element), and without it.
      {"ResidualColSumBf16", "bf16", true, true},
      {"ResidualBf16", "bf16", true, false},
      // The f32 step: the same in f32 (16 bytes an element).
      {"ResidualColSumF32", "f32", true, true},
      {"ResidualF32", "f32", true, false},
      // ln_f's gradient: dx cast to bf16, the last projection's bias sum.
      {"CastColSumBf16", "bf16", false, true},
  };
  return all;
}

/// Sets LLMC_NORM_GRAD_KERNEL for its lifetime (null: unset), then puts the
/// old value back.
class VariantScope {
public:
  explicit VariantScope(const char *value) {
    const char *old = std::getenv(kVariantVar);
    had_ = old != nullptr;
    if (had_)
      old_ = old;
    if (value)
      setenv(kVariantVar, value, 1);
    else
      unsetenv(kVariantVar);
  }
  ~VariantScope() {
    if (had_)
      setenv(kVariantVar, old_.c_str(), 1);
    else
      unsetenv(kVariantVar);
  }

private:
  bool had_ = false;
  std::string old_;
};

const char *const kVariants[] = {nullptr, "session7", "prefetch", "early",
                                 "smem"};
const char *variantName(const char *v) { return v ? v : "default"; }

class NormGradGpu : public ::testing::TestWithParam<NormGradCase> {};

// 1000 rows: 1000 warps, 125 blocks, 16 ticket runs and a last one of 5;
// 515: fewer rows than warps (idle warps add zeros); 16384: 16 rows a warp
// (8 for `smem`), the prefetch crossing them.
TEST_P(NormGradGpu, MatchesReference) {
  LLMC_REQUIRE_GPU();
  for (const char *v : kVariants) {
    VariantScope scope(v);
    SCOPED_TRACE(variantName(v));
    for (int64_t rows : {1000, 515, 16384})
      checkAgainstReference(normGradGraph(GetParam(), rows));
  }
}

// The variants change where the loads come from and how the tail's loads
// are issued, never an addition's order: bitwise equal results, also at
// GPT-2's size (16 rows per warp, the prefetch crossing the rows).
TEST_P(NormGradGpu, VariantsBitwiseEqual) {
  LLMC_REQUIRE_GPU();
  for (int64_t rows : {1000, 16384}) {
    std::string mlir = normGradGraph(GetParam(), rows);
    for (const char *v : {"session7", "prefetch", "early"})
      checkEnvVariantsBitwiseEqual(mlir, kVariantVar, nullptr, v);
  }
}

TEST_P(NormGradGpu, CompilesWithNvrtc) {
  for (const char *v : kVariants) {
    VariantScope scope(v);
    SCOPED_TRACE(variantName(v));
    checkCompiles(normGradGraph(GetParam(), 1000));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormGradGpu, ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

/// Every case at [16384, 768] with every variant: ms, GB/s and % of the
/// measured copy bandwidth. The plan must be the one norm kernel.
TEST(NormGradGpuTiming, Gpt2) {
  LLMC_REQUIRE_GPU();
  double copy = measuredCopyGBs();
  ASSERT_GT(copy, 0.0) << "the copy bandwidth was not measured";
  std::printf("[ norm grad ] device copy %.0f GB/s\n", copy);
  for (const NormGradCase &c : cases()) {
    std::string mlir = normGradGraph(c, 16384);
    double bytes = 16384.0 * 768 * rowBytes(c);
    for (const char *v : kVariants) {
      VariantScope scope(v);
      auto steps = stepReplayMs(mlir, 20);
      ASSERT_EQ(steps.size(), 1u) << c.name << ": not one launch";
      double ms = steps[0].second;
      double gbs = bytes / (ms * 1e-3) / 1e9;
      std::printf("[ norm grad ] %-20s %-8s %.1f MB in %.4f ms = %.0f GB/s, "
                  "%.1f%% of copy\n",
                  c.name, variantName(v), bytes / 1e6, ms, gbs,
                  100.0 * gbs / copy);
    }
  }
}

} // namespace
