//===- VerifyCompare.cpp - `llmc verify`'s rows and tolerances ------------===//
//
// The comparisons behind `llmc verify`'s rows; VerifyCompare.h and
// docs/verify.md say why zero gradients get their own bound.
//
//===----------------------------------------------------------------------===//
#include "compiler/VerifyCompare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace llmc {

namespace {

/// Rounding noise of a cancelling sum, in units of roundoff x the norm of
/// its terms: measured 0.14-0.23 for llmc's fp16 key-bias gradients of the
/// BERT exports and 0.43-0.63 for PyTorch's fp32 ones (docs/verify.md); 8
/// leaves more than 10x over the largest.
constexpr double kNoiseUnits = 8;
// Without the layer's weight the terms' norm is unknown, and the largest
// norm of the model stands in for it at the strength of the rule this one
// replaced: 1e-6 of the largest norm at fp32's 1e-4 tolerance, an absolute
// 1e-10 of it, which is 2^-9 fp32 roundoffs (1.16e-10) to within 17%.
constexpr double kLargestNormUnits = 1.0 / 512;

std::string bound(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2g", v);
  return text;
}

} // namespace

VerifyRow compareValue(std::string check, double value, double reference,
                       double tol) {
  double scale = std::max(std::fabs(reference), 1e-12);
  VerifyRow r{std::move(check), value, reference,
              std::fabs(value - reference) / scale};
  r.pass = std::isfinite(value) && r.relError <= tol;
  return r;
}

double unitRoundoff(const std::string &precision) {
  if (precision == "fp32")
    return std::ldexp(1.0, -24);
  if (precision == "tf32" || precision == "fp16")
    return std::ldexp(1.0, -11);
  if (precision == "bf16")
    return std::ldexp(1.0, -8);
  if (precision == "float64")
    return std::ldexp(1.0, -53);
  return 0;
}

double zeroGradientBound(const std::string &name,
                         const std::map<std::string, double> &norms,
                         double roundoff) {
  const std::string suffix = ".bias";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    auto weight =
        norms.find(name.substr(0, name.size() - suffix.size()) + ".weight");
    if (weight != norms.end())
      return kNoiseUnits * roundoff * weight->second;
  }
  double largest = 0;
  for (auto &[other, norm] : norms)
    largest = std::max(largest, norm);
  return kLargestNormUnits * roundoff * largest;
}

void compareGradNorms(const std::map<std::string, double> &byGraphName,
                      const std::map<std::string, double> &theirs, double tol,
                      double roundoff, std::vector<VerifyRow> &rows) {
  std::map<std::string, double> ours, zeroBound;
  // PyTorch names parameters without the exported module's "m." prefix.
  for (auto &[name, norm] : byGraphName)
    ours[name.rfind("m.", 0) == 0 ? name.substr(2) : name] = norm;
  for (auto &[name, norm] : theirs)
    zeroBound[name] = zeroGradientBound(name, theirs, roundoff);
  auto compare = [&](std::string check, double value,
                     const std::string &refName) {
    double reference = theirs.at(refName), noise = zeroBound.at(refName);
    if (std::fabs(reference) >= noise)
      return compareValue(std::move(check), value, reference, tol);
    // Zero up to rounding: the error is measured against the noise bound.
    VerifyRow r{std::move(check), value, reference,
                std::fabs(value - reference) / noise};
    r.pass = std::isfinite(value) && r.relError <= 1;
    r.note = "numerically zero: rel.err is the error over the rounding "
             "bound " +
             bound(noise);
    return r;
  };
  auto close = [&](double value, const std::string &refName) {
    return compare("", value, refName).pass;
  };
  std::set<std::string> matched;
  for (auto &[name, norm] : ours)
    if (theirs.count(name)) {
      rows.push_back(compare("grad norm " + name, norm, name));
      matched.insert(name);
    }
  // A tied weight is one initializer named after one of its PyTorch names,
  // and PyTorch may list it under another: pair the rest by value.
  for (auto &[name, norm] : ours) {
    if (theirs.count(name))
      continue;
    std::string twin;
    for (auto &[other, value] : theirs)
      if (!matched.count(other) && close(norm, other))
        twin = other;
    if (twin.empty()) {
      rows.push_back({"grad norm " + name, norm, 0, 0, false,
                      "not a parameter of the PyTorch model"});
      continue;
    }
    VerifyRow r = compare("grad norm " + name, norm, twin);
    r.note = "tied: PyTorch's " + twin;
    rows.push_back(r);
    matched.insert(twin);
  }
  // PyTorch lists a tied weight under each of its names; the graph has it
  // once. A name left over must be such a twin.
  for (auto &[name, value] : theirs) {
    if (matched.count(name))
      continue;
    bool twin = false;
    for (auto &[mine, norm] : ours)
      twin |= close(norm, name);
    if (!twin)
      rows.push_back({"grad norm " + name, 0, value, 1, false,
                      "missing: no parameter of the graph has it"});
  }
}

double ampStepTolerance(double tol, double amp, double exact) {
  double own = std::fabs(amp - exact) / std::max(std::fabs(amp), 1e-12);
  return std::isfinite(own) ? std::max(tol, 2 * own) : tol;
}

} // namespace llmc
