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
// Without the layer's weight, S is the largest gradient of the module the
// parameter belongs to (its name less the last two parts: `layers.1.self_attn`
// for `layers.1.self_attn.q_proj.weight`; the whole model for a top-level
// name). Attention's q/k weight gradients vanish when its value rows are all
// equal (LLaDA at t = 1, every token the mask id): the softmax backward
// dS = P o (dO V^T - rowsum) cancels, and what cancels is of the size of
// dV = P^T dO, whose projection gradient is the v/o weights'. Measured
// (docs/verify.md): the H100's fp32 noise is 0.027-0.045 u S there, and the
// smallest real gradient of any reference in test/models is 1.29 u S
// (GPT-2's ln_1.weight under bf16); 1/4 sits 5x from both.
constexpr double kModuleUnits = 1.0 / 4;

/// `a.b.c.weight` -> `a.b`; a name of two parts or fewer -> "" (the model).
std::string parentModule(const std::string &name) {
  size_t last = name.rfind('.');
  if (last == std::string::npos || last == 0)
    return "";
  size_t second = name.rfind('.', last - 1);
  return second == std::string::npos ? "" : name.substr(0, second);
}

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
  std::string module = parentModule(name);
  double largest = 0;
  for (auto &[other, norm] : norms)
    if (module.empty() || other.rfind(module + ".", 0) == 0)
      largest = std::max(largest, norm);
  return kModuleUnits * roundoff * largest;
}

void compareGradNorms(const std::map<std::string, double> &byGraphName,
                      const std::map<std::string, double> &theirs, double tol,
                      double roundoff, std::vector<VerifyRow> &rows,
                      const std::map<std::string, double> *exact) {
  std::map<std::string, double> ours, zeroBound;
  // PyTorch names parameters without the exported module's "m." prefix.
  for (auto &[name, norm] : byGraphName)
    ours[name.rfind("m.", 0) == 0 ? name.substr(2) : name] = norm;
  for (auto &[name, norm] : theirs)
    zeroBound[name] = zeroGradientBound(name, theirs, roundoff);
  auto compare = [&](std::string check, double value,
                     const std::string &refName) {
    double reference = theirs.at(refName), noise = zeroBound.at(refName);
    if (std::fabs(reference) >= noise) {
      auto e = exact ? exact->find(refName) : theirs.end();
      double bar = exact && e != exact->end()
                       ? ampStepTolerance(tol, reference, e->second)
                       : tol;
      VerifyRow r = compareValue(std::move(check), value, reference, bar);
      if (bar > tol)
        r.note = "bar " + bound(bar) + ": AMP is " + bound(bar / 2) +
                 " from exact arithmetic here";
      return r;
    }
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

VerifyRow compareAmpStep(std::string check, double value,
                         const std::vector<double> &amp,
                         const std::vector<double> &exact, double tol) {
  double bar = tol, own = 0;
  for (size_t i = 0; i < amp.size() && i < exact.size(); ++i) {
    double b = ampStepTolerance(tol, amp[i], exact[i]);
    if (b > bar) {
      bar = b;
      own = b / 2;
    }
  }
  double reference = amp.back(), ideal = exact.back();
  VerifyRow r = compareValue(std::move(check), value, reference, bar);
  if (bar > tol)
    r.note = "bar " + bound(bar) + ": AMP is up to " + bound(own) +
             " from exact arithmetic by here";
  if (!r.pass && std::isfinite(value) &&
      compareValue("", value, ideal, bar).pass) {
    r.pass = true;
    r.note = "bar " + bound(bar) + ": " +
             bound(std::fabs(value - ideal) / std::fabs(ideal)) +
             " from exact arithmetic, within AMP's own error";
  }
  return r;
}

} // namespace llmc
