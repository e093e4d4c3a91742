//===- VerifyCompare.h - `llmc verify`'s rows and tolerances --*- C++ -*-===//
//
// One row per check of `llmc verify` (VerifyCommand.cpp): a value of llmc's
// step against PyTorch's, pass or fail at a relative tolerance. Gradient
// norms have one more rule: a gradient that is zero in exact arithmetic
// (attention's key bias) is rounding noise on both sides, and is compared
// against a bound on that noise derived from the precisions' unit roundoff
// and the norm of the gradients it comes from (docs/verify.md, "Zero
// gradients").
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_VERIFYCOMPARE_H
#define LLMC_COMPILER_VERIFYCOMPARE_H

#include <map>
#include <string>
#include <vector>

namespace llmc {

struct VerifyRow {
  std::string check;
  double value = 0, reference = 0, relError = 0;
  bool pass = false;
  std::string note;
};

/// |value - reference| / |reference| against `tol`; a non-finite value fails.
VerifyRow compareValue(std::string check, double value, double reference,
                       double tol);

/// The unit roundoff (half an ulp at 1) of the arithmetic a precision rounds
/// to: fp32 2^-24, tf32 and fp16 2^-11 (10 stored mantissa bits), bf16 2^-8,
/// float64 2^-53. 0 for a name it does not know.
double unitRoundoff(const std::string &precision);

/// How far from 0 rounding can leave the norm of a gradient that is zero in
/// exact arithmetic, computed in arithmetic of unit roundoff `roundoff` (the
/// coarser of llmc's and the reference's): 8 * roundoff * S, where S is the
/// norm of the gradients the zero one is a cancelling sum of. For `X.bias`
/// that is its layer's `X.weight` gradient (both are sums of the layer's
/// output gradient dY: 1^T dY and x^T dY). Any other parameter, or a bias
/// without X.weight in `norms`: roundoff * S / 4, S the largest norm of its
/// module's gradients (the name less its last two parts; the whole model
/// for a top-level name): attention's q/k weight gradients cancel to zero
/// when its value rows are all equal, and what cancels is of the size of
/// the v/o projections' gradients (docs/verify.md, "Zero gradients").
double zeroGradientBound(const std::string &name,
                         const std::map<std::string, double> &norms,
                         double roundoff);

/// One row per parameter: llmc's gradient norms (by graph name, `m.`
/// prefix dropped) against the reference's (by PyTorch name), pairing tied
/// weights by value. A reference norm under its zeroGradientBound is
/// "numerically zero": it passes when llmc's is within that bound of it
/// (rel.err shows the error over the bound, which must be at most 1); every
/// other norm passes within `tol` relative, or, given the exact run's
/// norms beside a PyTorch AMP reference (`fp32_grad_norms`), within
/// ampStepTolerance(tol, AMP's, exact): twice AMP's own distance where that
/// is larger, as for the AdamW rows.
void compareGradNorms(const std::map<std::string, double> &byGraphName,
                      const std::map<std::string, double> &reference,
                      double tol, double roundoff,
                      std::vector<VerifyRow> &rows,
                      const std::map<std::string, double> *exact = nullptr);

/// The bar of one AdamW-loss row against a PyTorch AMP reference whose file
/// also has the exact run's loss at that step (`fp32_adamw_losses`): the
/// base tolerance `tol`, or twice AMP's own relative distance from exact
/// arithmetic where that is larger. llmc and AMP round the same step in
/// different orders; each lands about as far from the exact trajectory as
/// the other, so they may differ by the sum of those distances, 2x AMP's if
/// llmc is no worse than AMP (docs/precision.md, odd_llama).
double ampStepTolerance(double tol, double amp, double exact);

/// One AdamW-loss row against an AMP reference that carries the exact run's
/// trajectory (`fp32_adamw_losses`). Rounding drift accumulates over the
/// steps, and AMP's distance from exact arithmetic at one step is one
/// sample of a walk that can cross zero by chance, so the bar of step s is
/// ampStepTolerance's at the largest distance of steps 1..s (the running
/// maximum). llmc passes within that bar of AMP's loss, or within it of the
/// exact loss: llmc no farther from exact arithmetic than twice AMP's own
/// distance is as good as AMP (docs/precision.md, "The AdamW bar and AMP's
/// own error"). `amp` and `exact` are the trajectories up to step s (s + 1
/// values). `note` says what widened the bar or passed the row.
VerifyRow compareAmpStep(std::string check, double value,
                         const std::vector<double> &amp,
                         const std::vector<double> &exact, double tol);

} // namespace llmc

#endif // LLMC_COMPILER_VERIFYCOMPARE_H
