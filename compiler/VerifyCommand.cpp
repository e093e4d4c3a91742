//===- VerifyCommand.cpp - `llmc verify`: llmc against PyTorch ------------===//
//
// Reads a reference file (the format of test/models/README.md: the batch,
// PyTorch's loss, every parameter's gradient norm and the losses of ten
// AdamW steps) and checks llmc's training step against it, one row per
// check. This is how anyone confirms that llmc trains their model the way
// PyTorch does: docs/verify.md shows how to make a reference file. The
// step runs on a VerifyBackend (VerifyBackend.h): the reference evaluator
// (--device cpu) or the compiled GPU plan (--device cuda); the checks and
// the report here are the same for both.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "compiler/Driver.h"
#include "compiler/VerifyBackend.h"
#include "compiler/VerifyCompare.h"

#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>

namespace llmc {

namespace {

using Json = nlohmann::json;

/// Relative tolerances of the three kinds of check.
struct Tolerances {
  double loss, grad, adamw;
};
// fp32: the acceptance tolerances, loss to 1e-5, gradient norms and
// the AdamW trajectory to 1e-4.
constexpr Tolerances kFp32Tol{1e-5, 1e-4, 1e-4};
// bf16 against PyTorch AMP: docs/precision.md shows how they were chosen
// (llmc's evaluator and PyTorch round at the same places, but GEMM and
// attention accumulate in different orders, which moves a few bf16
// roundings by one ulp) and that each planted policy mistake exceeds them.
constexpr Tolerances kBf16Tol{5e-6, 3e-3, 1.5e-4};
// tf32 and fp16 against the fp32 (or float64) reference: PyTorch has no
// TF32 or fp16 reference here, so these measure how far the lowered step
// strays from exact arithmetic; docs/precision.md has the measurements
// they were chosen from.
constexpr Tolerances kTf32Tol{1e-5, 1e-3, 1e-4};
constexpr Tolerances kFp16Tol{1e-5, 1e-3, 1e-4};

int fail(const std::string &msg, int code = 1) {
  llvm::errs() << "llmc verify: error: " << msg << "\n";
  return code;
}

const char *kUsage = "usage: llmc verify MODEL --ref MODEL.ref.json [--device "
                     "cpu|cuda] [--precision fp32|bf16|fp16|tf32] "
                     "[--attention-backend auto|generated|cudnn] [--json] "
                     "[--memory-budget SIZE | --recompute all] "
                     "[model options]\n";

/// The batch of the reference file, typed like the step's inputs.
bool readBatch(const Json &ref, const std::vector<StepInput> &inputs,
               std::map<std::string, RefTensor> &batch, std::string &error) {
  const Json *given = ref.contains("inputs") ? &ref["inputs"] : nullptr;
  for (const StepInput &in : inputs) {
    if (!given || !given->contains(in.name)) {
      error = "the reference has no input '" + in.name + "'";
      return false;
    }
    std::vector<int64_t> ints;
    std::vector<double> floats;
    std::vector<int64_t> shape;
    // Flatten the nested lists and record the shape from the nesting.
    std::function<bool(const Json &, size_t)> walk = [&](const Json &j,
                                                         size_t dim) {
      if (j.is_array()) {
        if (shape.size() == dim)
          shape.push_back(static_cast<int64_t>(j.size()));
        else if (shape[dim] != static_cast<int64_t>(j.size()))
          return false;
        for (const Json &e : j)
          if (!walk(e, dim + 1))
            return false;
        return true;
      }
      if (!j.is_number())
        return false;
      if (in.type.isFloat())
        floats.push_back(j.get<double>());
      else
        ints.push_back(j.get<int64_t>());
      return true;
    };
    if (!walk((*given)[in.name], 0)) {
      error = "the reference's input '" + in.name +
              "' is not a rectangular list of numbers";
      return false;
    }
    if (shape != in.type.shape) {
      error = "the reference's input '" + in.name + "' has shape " +
              shapeString(shape) + " but the model expects " +
              shapeString(in.type.shape) +
              " (pass --batch/--seq or --shape to specialize the model)";
      return false;
    }
    batch[in.name] = in.type.isFloat()
                         ? RefTensor::fromFloats(in.type.kind, shape, floats)
                         : RefTensor::fromInts(in.type.kind, shape, ints);
  }
  return true;
}

/// The reference's gradient norms by PyTorch name; false and `error` when
/// one is not a number.
bool referenceNorms(const Json &ref, std::map<std::string, double> &norms,
                    std::string &error, const std::string &key = "grad_norms") {
  const Json given = ref.value(key, Json::object());
  if (!given.is_object()) {
    error = "\"" + key + "\" is not an object of parameter names";
    return false;
  }
  for (auto &[name, value] : given.items()) {
    if (!value.is_number()) {
      error = "\"" + key + "\" of '" + name + "' is " + value.dump() +
              ", not a number";
      return false;
    }
    norms[name] = value.get<double>();
  }
  return true;
}

/// The arithmetic the reference was computed in: its "precision" (fp32
/// unless it says bf16), or float64 where the exporter says so
/// (`reference_dtype`, the odd models).
std::string referenceArithmetic(const Json &ref) {
  if (ref.value("reference_dtype", std::string()) == "float64")
    return "float64";
  return ref.value("precision", std::string("fp32"));
}

void printRows(const std::vector<VerifyRow> &rows, bool json) {
  if (json) {
    Json out = Json::array();
    for (const VerifyRow &r : rows)
      out.push_back({{"check", r.check},
                     {"value", r.value},
                     {"reference", r.reference},
                     {"rel_error", r.relError},
                     {"pass", r.pass},
                     {"note", r.note}});
    llvm::outs() << out.dump(1) << "\n";
    return;
  }
  std::printf("%-58s %14s %14s %10s  %s\n", "check", "llmc", "pytorch",
              "rel.err", "result");
  for (const VerifyRow &r : rows) {
    if (r.note.rfind("skipped", 0) == 0) {
      std::printf("%-58s %14s %14s %10s  %s\n", r.check.c_str(), "-", "-", "-",
                  r.note.c_str());
      continue;
    }
    std::printf("%-58s %14.8g %14.8g %10.2e  %s%s%s\n", r.check.c_str(),
                r.value, r.reference, r.relError, r.pass ? "pass" : "FAIL",
                r.note.empty() ? "" : "  ", r.note.c_str());
  }
  std::fflush(stdout);
}

} // namespace

int runVerify(const Args &args) {
  std::string model, refPath, device = "cpu";
  bool json = false;
  ModelOptions options;
  PrecisionConfig precision;
  RecomputeConfig recompute;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    std::string error;
    if (parseModelOption(args, i, options, error)) {
      if (!error.empty())
        return fail(error, 2);
    } else if (parsePrecisionOption(args, i, precision, error)) {
      if (!error.empty())
        return fail(error, 2);
    } else if (parseRecomputeOption(args, i, recompute, error)) {
      if (!error.empty())
        return fail(error, 2);
    } else if (a == "--help" || a == "-h") {
      llvm::outs() << kUsage
                   << "\nChecks llmc's training step against a PyTorch "
                      "reference (docs/verify.md): the\nloss (1e-5 "
                      "relative), every parameter's gradient norm (1e-4) and "
                      "the losses\nof 10 AdamW steps on the same batch "
                      "(1e-4). Exits 0 only when every check\npasses.\n\n"
                      "  --ref FILE        the reference file\n"
                      "  --device cpu|cuda where llmc runs: the reference "
                      "evaluator (default) or the\n                    "
                      "training step compiled for the GPU\n  --json            "
                      "print the rows as "
                      "JSON\n"
                   << kPrecisionOptionsHelp
                   << "                    (bf16 compares with a "
                      "*.bf16.ref.json of PyTorch AMP, at the\n"
                      "                    tolerances of docs/precision.md)\n"
                   << kRecomputeOptionsHelp << "model options:\n"
                   << kModelOptionsHelp;
      return 0;
    } else if ((a == "--ref" || a == "--device") && i + 1 < args.size()) {
      (a == "--ref" ? refPath : device) = args[++i];
    } else if (a == "--json") {
      json = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return fail("unknown option or missing value '" + a + "'; " + kUsage, 2);
    } else if (model.empty()) {
      model = a;
    } else {
      return fail("expected one model, got '" + model + "' and '" + a + "'", 2);
    }
  }
  if (model.empty() || refPath.empty())
    return fail(std::string("expected a model and --ref; ") + kUsage, 2);
  if (device != "cpu" && device != "cuda")
    return fail("--device '" + device + "': expected cpu or cuda", 2);

  std::ifstream in(refPath);
  if (!in)
    return fail("cannot open the reference file '" + refPath + "'");
  Json ref = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (ref.is_discarded() || !ref.is_object() || !ref.contains("loss") ||
      !ref["loss"].is_number())
    return fail("'" + refPath +
                "' is not a reference file: it needs at "
                "least \"inputs\" and \"loss\" (docs/verify.md)");
  // A model with symbolic dims takes the reference's batch shape.
  options.batchSeqAreDefaults = !options.batch && !options.seq;
  for (const char *key : {"B", "T"}) {
    std::optional<int64_t> &dst = key[0] == 'B' ? options.batch : options.seq;
    if (dst || !ref.contains(key))
      continue;
    // A reference file is user input: its batch is range-checked like
    // --batch, never wrapped from a uint64.
    if (!ref[key].is_number_unsigned() || ref[key].get<uint64_t>() < 1 ||
        ref[key].get<uint64_t>() > (uint64_t(1) << 40))
      return fail("'" + refPath + "': \"" + key + "\" is " +
                  ref[key].dump() + "; expected an integer in [1, 2^40]");
    dst = ref[key].get<int64_t>();
  }

  // The reference says how PyTorch computed it; a mismatch compares two
  // different computations, whatever the tolerances.
  std::string refPrecision = ref.value("precision", std::string("fp32"));
  // tf32 and fp16 are checked against the exact (fp32/float64) reference.
  bool againstExact = refPrecision == "fp32" && (precision.precision == "tf32" ||
                                                 precision.precision == "fp16");
  if (refPrecision != precision.precision && !againstExact)
    return fail("'" + refPath + "' was computed by PyTorch in " +
                    refPrecision + (refPrecision == "bf16" ? " (autocast)" : "") +
                    ", and llmc runs " + precision.precision +
                    ": pass --precision " + refPrecision,
                2);
  const Tolerances &tol = precision.precision == "bf16"   ? kBf16Tol
                          : precision.precision == "tf32" ? kTf32Tol
                          : precision.precision == "fp16" ? kFp16Tol
                                                          : kFp32Tol;
  const char *how = precision.precision == "tf32"
                        ? "TF32 matmuls against the fp32 reference"
                    : precision.precision == "fp16"
                        ? "autocast with loss scaling against the fp32 "
                          "reference"
                        : "autocast";
  if (!json && precision.precision != "fp32")
    std::printf("precision %s (%s, docs/precision.md)%s%s\n",
                precision.precision.c_str(), how,
                precision.mutation.empty() ? "" : "; planted mistake: ",
                precision.mutation.c_str());

  std::vector<VerifyRow> rows;
  std::string error;
  bool optimized = ref.value("exporter_optimized", false);

  // An exporter-optimized graph (merged equal-valued initializers, masks and
  // constants folded into initializers) computes PyTorch's loss but cannot
  // train like it: only the loss is checked.
  auto backend =
      device == "cuda"
          ? openCudaVerifyBackend(model, options, optimized, precision,
                                  recompute)
          : openCpuVerifyBackend(model, options, optimized, precision,
                                 recompute);
  if (!backend)
    return 1;
  if (!json)
    for (const std::string &p : backend->paddedParameters())
      std::printf("padding %s (docs/padding.md)\n", p.c_str());
  VerifyBatch batch;
  if (!readBatch(ref, backend->inputs(), batch, error))
    return fail(error);

  // The GELU epilogue computes gelu on the unrounded product, one rounding
  // fewer than autocast: the loss may differ from AMP's by what that moves
  // it on this batch, computed on the evaluator (docs/precision.md). A
  // planted mistake still has to exceed the tolerance plus that shift.
  double lossTol = tol.loss;
  if (precision.precision == "bf16" || precision.precision == "fp16") {
    auto shift = geluRoundingShift(model, options, precision, batch);
    if (mlir::failed(shift))
      return 1;
    lossTol += *shift;
    if (*shift > 0 && !json)
      std::printf("gelu epilogue: gelu on the unrounded product moves the "
                  "loss %.2e (docs/precision.md); loss tolerance %.0e + "
                  "%.2e\n",
                  *shift, tol.loss, *shift);
    // Attention raised from a model's eager code is fused here; PyTorch ran
    // it as separate ops, rounding scores and probabilities: the loss may
    // differ by what that rounding moves it (docs/verify.md).
    auto eager = eagerAttentionShift(model, options, precision, batch);
    if (mlir::failed(eager))
      return 1;
    lossTol += *eager;
    if (*eager > 0 && !json)
      std::printf("eager attention: PyTorch's rounding of its scores and "
                  "probabilities moves the loss %.2e (docs/verify.md); loss "
                  "tolerance %.2e\n",
                  *eager, lossTol);
  }

  // 1. Loss and gradients of one step.
  std::map<std::string, double> ours;
  auto loss = backend->lossAndGradNorms(batch, ours);
  if (mlir::failed(loss))
    return 1;
  rows.push_back(
      compareValue("loss", *loss, ref["loss"].get<double>(), lossTol));
  if (optimized)
    rows.push_back({"gradient norms, adamw losses", 0, 0, 0, true,
                    "skipped: the exporter optimized the graph (equal-valued "
                    "initializers merged, parameters folded), so it does not "
                    "train like the PyTorch model; export with optimize=False "
                    "(docs/onnx.md)"});
  else {
    std::map<std::string, double> theirs, exact;
    if (!referenceNorms(ref, theirs, error))
      return fail("'" + refPath + "': " + error);
    // An AMP reference may carry the exact run's norms (the family sweep's
    // do): where AMP strays from them, the bar widens as for AdamW below.
    bool widenNorms = precision.precision == "bf16" &&
                      ref.contains("fp32_grad_norms");
    if (widenNorms &&
        !referenceNorms(ref, exact, error, "fp32_grad_norms"))
      return fail("'" + refPath + "': " + error);
    compareGradNorms(ours, theirs, tol.grad,
                     std::max(unitRoundoff(precision.precision),
                              unitRoundoff(referenceArithmetic(ref))),
                     rows, widenNorms ? &exact : nullptr);
  }

  // 2. Ten AdamW steps on the same batch (the reference's optimizer).
  const Json &adamw = ref.value("adamw_losses", Json::array());
  if (!optimized && !adamw.empty()) {
    auto losses = backend->adamwLosses(batch, adamw.size());
    if (mlir::failed(losses))
      return 1;
    // An AMP reference may carry the exact run's losses: where AMP itself
    // strays from them, the bar widens to match (compareAmpStep).
    const Json exact = ref.value("fp32_adamw_losses", Json::array());
    bool widen = precision.precision == "bf16" && !exact.empty();
    if (widen && (exact.size() != adamw.size() ||
                  !std::all_of(exact.begin(), exact.end(),
                               [](const Json &v) { return v.is_number(); })))
      return fail("'" + refPath + "': \"fp32_adamw_losses\" must be a list of " +
                  std::to_string(adamw.size()) +
                  " numbers, one per entry of \"adamw_losses\"");
    std::vector<double> ampSoFar, exactSoFar;
    for (size_t s = 0; s < adamw.size(); ++s) {
      double reference = adamw[s].get<double>();
      std::string check = "adamw loss before step " + std::to_string(s + 1);
      if (!widen) {
        rows.push_back(compareValue(check, (*losses)[s], reference,
                                    tol.adamw));
        continue;
      }
      ampSoFar.push_back(reference);
      exactSoFar.push_back(exact[s].get<double>());
      rows.push_back(compareAmpStep(check, (*losses)[s], ampSoFar,
                                    exactSoFar, tol.adamw));
    }
  }

  printRows(rows, json);
  int failed = 0;
  for (const VerifyRow &r : rows)
    failed += !r.pass;
  if (!json)
    std::printf("%zu checks, %d failed\n", rows.size(), failed);
  return failed ? 1 : 0;
}

} // namespace llmc
