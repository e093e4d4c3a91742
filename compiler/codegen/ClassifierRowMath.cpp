//===- ClassifierRowMath.cpp - The cross-entropy row's per-logit code ------===//
//
// ClassifierRowMath.h. The ex2 forms and the per-vector fold are measured in
// docs/fusion.md ("Cheaper exponentials", "One branch a vector, not a
// logit").
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/ClassifierRowMath.h"

#include <cstdlib>

namespace llmc::codegen {

/// Every cross-entropy row kernel (fused or not, every row cache, so they
/// stay bitwise equal to each other) takes exp(a - b) per element as
/// 2^(a log2 e - b log2 e): one FMA and ex2.approx, where expf is about
/// ten instructions. A row kernel spends two exponentials per element, and
/// with expf its arithmetic cost about as much issue time as the memory
/// floor: on an H100 at [16384, 50304] bf16 the classifier took 1.87 ms
/// with expf and 1.26 ms (88% of the floor) with ex2
/// (ClassifierGpuBandwidth, docs/fusion.md "Cheaper exponentials").
/// ex2.approx is within 2 ulp; rounding b log2 e and the FMA add a relative
/// error of at most about (|b| + |a - b|) 2^-24 (1e-6 for logits near 20),
/// far under bf16's resolution and the reference tests' tolerance.
/// LLMC_CE_EXP=expf keeps expf (the kernels before, for comparisons).
bool ex2Exp() {
  const char *v = std::getenv("LLMC_CE_EXP");
  return !(v && std::string(v) == "expf");
}

/// The ex2 forms of expf(a - b) and onlineAdd: the same -inf and NaN cases
/// (ex2(-inf) = 0, ex2(NaN) = NaN).
std::string ex2Helpers() {
  return R"(__device__ __forceinline__ float exp2Diff(float a, float b) {
  const float l = 1.4426950408889634f;
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(fmaf(a, l, -(b * l))));
  return r;
}
__device__ __forceinline__ void onlineAddEx2(float &m, float &s, float x) {
  if (x > m) {
    s = s * exp2Diff(m, x) + 1.0f;
    m = x;
  } else if (x != -INFINITY) {
    s += exp2Diff(x, m);
  }
}
// A vector's max first, then one rescale at most and a branch-free sum:
// per element a max, an FMA, ex2 and an add (onlineAddEx2 per element
// compares, branches and recomputes m log2 e). Padding enters as -inf. A
// vector of only -inf and NaN adds nothing but the NaN (x - m would be
// -inf + inf while m is -inf).
__device__ __forceinline__ void onlineAddVecEx2(float &m, float &s,
                                                const float (&x)[kVec]) {
  float mv = x[0];
  for (int e = 1; e < kVec; ++e)
    mv = fmaxf(mv, x[e]);
  if (mv > m) {
    s = s * exp2Diff(m, mv);
    m = mv;
  }
  if (m == -INFINITY) {
    for (int e = 0; e < kVec; ++e)
      if (x[e] != x[e])
        s = NAN;
    return;
  }
  const float ml = m * 1.4426950408889634f;
  for (int e = 0; e < kVec; ++e) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;"
        : "=f"(r)
        : "f"(fmaf(x[e], 1.4426950408889634f, -ml)));
    s += r;
  }
}
)";
}

/// ex2: vectors wholly of real classes (all but the last) skip the
/// per-element padding test, which enters padding as -inf.
std::string rowFold(bool ex2, const std::string &load) {
  if (!ex2)
    return "        for (int e = 0; e < kVec; ++e)\n"
           "          if (v * kVec + e < kClasses)\n"
           "            onlineAdd(m, s, " + load + ");\n";
  return "        {\n"
         "          float xs[kVec];\n"
         "          if (v < kFullVecs)\n"
         "            for (int e = 0; e < kVec; ++e)\n"
         "              xs[e] = " + load + ";\n"
         "          else\n"
         "            for (int e = 0; e < kVec; ++e)\n"
         "              xs[e] = v * kVec + e < kClasses ? " + load +
         " : -INFINITY;\n"
         "          onlineAddVecEx2(m, s, xs);\n"
         "        }\n";
}

/// ex2: only the vector holding the target, or padding, tests the one-hot
/// per element; the others store w * (ex2(...) * inv), the same bits as
/// w * (p - 0).
std::string rowGrads(bool ex2, const std::string &load,
                     const std::function<std::string(const std::string &)> &store) {
  std::string exact =
      "            const index_t j = v * kVec + e;\n"
      "            const float p = j >= kClasses ? 0.0f : " +
      (ex2 ? "exp2Diff(" + load + ", m)" : "expf(" + load + " - m)") +
      " * inv;\n"
      "            o.v[e] = " +
      store("w * (p - (j == target ? 1.0f : 0.0f))") + ";\n";
  if (!ex2)
    return "        OutVec o;\n"
           "        for (int e = 0; e < kVec; ++e) {\n" +
           exact +
           "        }\n"
           "        d[v] = o;\n";
  return "        OutVec o;\n"
         "        if (v < kFullVecs && (target < v * kVec || target >= v * kVec + "
         "kVec)) {\n"
         "          const float ml = m * 1.4426950408889634f;\n"
         "          for (int e = 0; e < kVec; ++e) {\n"
         "            float r;\n"
         "            asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(fmaf(" +
         load + ", 1.4426950408889634f, -ml)));\n"
         "            o.v[e] = " + store("w * (r * inv)") + ";\n"
         "          }\n"
         "        } else {\n"
         "          for (int e = 0; e < kVec; ++e) {\n" +
         exact +
         "          }\n"
         "        }\n"
         "        d[v] = o;\n";
}

} // namespace llmc::codegen
