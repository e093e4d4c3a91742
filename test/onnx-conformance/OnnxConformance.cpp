//===- OnnxConformance.cpp - ONNX's backend test cases through llmc -------===//
//
// Runs the test cases ONNX ships with its backend test runner (Debian's
// libonnx-testdata: data/{node,pytorch-converted,pytorch-operator,simple}/
// CASE/model.onnx + test_data_set_N/{input,output}_K.pb) through the same
// path `llmc run` takes: import (with raising), then the CPU reference
// evaluator. Inputs and expected outputs are read with llmc's own ONNX
// protobuf classes and its initializer decoder.
//
// Each case ends in one of three outcomes:
//   pass     every output of every data set matches at ONNX's tolerances
//            (rtol 1e-3, atol 1e-7, the backend runner's assert_allclose;
//            dtypes and shapes exactly)
//   refused  llmc declined with a message (unsupported op, opset, type...)
//   WRONG    llmc computed an answer and it differs: never allowed
//
// The refused cases are checked in (refused.txt: "suite/case<TAB>reason").
// The run fails on any WRONG case, on a refused case missing from that
// list (a regression or a new case) and on a listed case that now passes
// (the list is kept exact, so that docs/onnx-conformance.md tells the
// truth); `--update FILE` rewrites the list.
//
// usage: llmc-onnx-conformance DATA_DIR --expected refused.txt
//            [--update refused.txt] [--filter SUBSTRING] [-v]
//
//===----------------------------------------------------------------------===//
#include "compiler/ModelLoader.h"
#include "compiler/eval/Evaluator.h"
#include "compiler/eval/ModelArguments.h"
#include "frontends/onnx/OnnxTensor.h"
#include "frontends/onnx/onnx.pb.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace llmc;
using namespace llmc::onnximport;

namespace {

constexpr double kRtol = 1e-3, kAtol = 1e-7;
const char *const kSuites[] = {"node", "pytorch-converted", "pytorch-operator",
                               "simple"};

enum class Outcome { Pass, Refused, Wrong };

struct Result {
  Outcome outcome = Outcome::Pass;
  std::string detail; // the refusal message, or what is wrong
};

Result refused(std::string why) { return {Outcome::Refused, std::move(why)}; }
Result wrong(std::string why) { return {Outcome::Wrong, std::move(why)}; }

/// One line: newlines folded, the case directory cut from paths so that
/// the list does not depend on where the data is installed.
std::string oneLine(std::string s, const std::string &caseDir) {
  for (size_t p; (p = s.find(caseDir + "/")) != std::string::npos;)
    s.erase(p, caseDir.size() + 1);
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\t', ' ');
  if (s.size() > 300)
    s = s.substr(0, 297) + "...";
  return s;
}

bool readProto(const std::string &path, google::protobuf::MessageLite &msg) {
  auto buffer = llvm::MemoryBuffer::getFile(path, false, false);
  if (!buffer)
    return false;
  llvm::StringRef bytes = (*buffer)->getBuffer();
  return msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

std::optional<ElementKind> kindOfDType(DType t) {
  switch (t) {
  case DType::Float: return ElementKind::F32;
  case DType::Float16: return ElementKind::F16;
  case DType::BFloat16: return ElementKind::BF16;
  case DType::Double: return ElementKind::F64;
  case DType::Int64: return ElementKind::I64;
  case DType::Int32: return ElementKind::I32;
  case DType::Bool: return ElementKind::I1;
  default: return std::nullopt;
  }
}

/// Reads a TensorProto file into a RefTensor; an error names the file.
std::optional<RefTensor> readTensor(const std::string &path,
                                    const std::string &caseDir,
                                    std::string &error) {
  onnx::TensorProto proto;
  if (!readProto(path, proto)) {
    error = "cannot parse " + oneLine(path, caseDir) + " as a TensorProto";
    return std::nullopt;
  }
  auto data = decodeTensor(proto, caseDir, "test tensor");
  if (!data) {
    error = llvm::toString(data.takeError());
    return std::nullopt;
  }
  auto kind = kindOfDType(data->dtype());
  if (!kind) {
    error = "test data of type " + dtypeName(int32_t(data->dtype()));
    return std::nullopt;
  }
  std::vector<int64_t> shape(data->shape().begin(), data->shape().end());
  int64_t n = data->numElements();
  if (isFloatKind(*kind)) {
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i)
      v[i] = data->getDouble(i);
    return RefTensor::fromFloats(*kind, shape, std::move(v));
  }
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = data->getInt(i);
  return RefTensor::fromInts(*kind, shape, std::move(v));
}

/// assert_allclose at ONNX's tolerances (NaN equals NaN, infinities must
/// agree); dtype and shape must be the same.
std::string compare(const RefTensor &got, const RefTensor &want) {
  if (got.kind != want.kind || got.shape != want.shape)
    return "gives " + got.typeString() + ", ONNX expects " + want.typeString();
  for (int64_t i = 0, n = want.numElements(); i < n; ++i) {
    double g = got.getDouble(i), w = want.getDouble(i);
    bool ok = want.isFloat()
                  ? (std::isnan(w) ? std::isnan(g)
                     : std::isinf(w)
                         ? g == w
                         : std::fabs(g - w) <= kAtol + kRtol * std::fabs(w))
                  : got.ints[i] == want.ints[i];
    if (!ok) {
      std::ostringstream os;
      os.precision(9);
      os << "element " << i << " of " << want.typeString() << " is " << g
         << ", ONNX expects " << w;
      return os.str();
    }
  }
  return "";
}

/// For outputs of a random op (training-mode Dropout) whose mask comes from
/// another generator: same dtype and shape; an element llmc keeps must
/// equal ONNX's where ONNX kept it too (the scale), and a dropped one is 0.
/// Boolean masks cannot be compared. The keep rate is tested with
/// statistics in test/unit/EvalDropoutTest.cpp.
std::string compareRandom(const RefTensor &got, const RefTensor &want) {
  if (got.kind != want.kind || got.shape != want.shape)
    return "gives " + got.typeString() + ", ONNX expects " + want.typeString();
  if (!want.isFloat())
    return "";
  for (int64_t i = 0, n = want.numElements(); i < n; ++i) {
    double g = got.floats[i], w = want.floats[i];
    if (g == 0 || w == 0)
      continue;
    if (std::fabs(g - w) > kAtol + kRtol * std::fabs(w)) {
      std::ostringstream os;
      os.precision(9);
      os << "element " << i << " of " << want.typeString()
         << " is kept as " << g << ", ONNX keeps it as " << w;
      return os.str();
    }
  }
  return "";
}

std::vector<std::string> sortedEntries(const std::string &dir,
                                       llvm::StringRef prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name.starts_with(prefix))
      out.push_back(name.str());
  }
  // input_10 after input_9.
  std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return out;
}

/// The model with its integer and rank-0 graph inputs turned into Constant
/// nodes holding the data set's values, written to a temporary file:
/// llmc specializes shapes at import, so a Reshape target or Slice bounds
/// that the test feeds as inputs are what a user would export as constants.
/// Empty on failure.
std::string bindIntegerInputs(onnx::ModelProto proto,
                              const std::string &setDir) {
  std::set<std::string> initializers;
  for (const auto &init : proto.graph().initializer())
    initializers.insert(init.name());
  auto *inputs = proto.mutable_graph()->mutable_input();
  int k = 0;
  bool bound = false;
  for (auto it = inputs->begin(); it != inputs->end();) {
    if (initializers.count(it->name())) {
      ++it;
      continue;
    }
    const auto &tensorType = it->type().tensor_type();
    int32_t type = tensorType.elem_type();
    bool scalar = tensorType.has_shape() && tensorType.shape().dim_size() == 0;
    if (type != int32_t(DType::Int64) && type != int32_t(DType::Int32) &&
        !scalar) {
      ++it, ++k;
      continue;
    }
    onnx::TensorProto value;
    if (!readProto(setDir + "/input_" + std::to_string(k) + ".pb", value))
      return "";
    // A Constant node, not an initializer: float initializers are
    // parameters for llmc, Constant outputs are known at import.
    auto *nodes = proto.mutable_graph()->mutable_node();
    onnx::NodeProto *constant = nodes->Add();
    constant->set_op_type("Constant");
    constant->add_output(it->name());
    auto *attr = constant->add_attribute();
    attr->set_name("value");
    attr->set_type(onnx::AttributeProto::TENSOR);
    *attr->mutable_t() = std::move(value);
    for (int j = nodes->size() - 1; j > 0; --j)
      nodes->SwapElements(j, j - 1);
    it = inputs->erase(it);
    ++k;
    bound = true;
  }
  llvm::SmallString<128> path;
  int fd = -1;
  if (!bound || llvm::sys::fs::createTemporaryFile("llmc-conformance", "onnx",
                                                   fd, path))
    return "";
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
  std::string bytes;
  proto.SerializeToString(&bytes);
  out << bytes;
  return path.str().str();
}

Result runModel(const std::string &caseDir, const std::string &modelPath,
                const onnx::ModelProto &proto,
                const std::vector<std::string> &sets);

Result runCase(const std::string &caseDir) {
  std::string modelPath = caseDir + "/model.onnx";
  onnx::ModelProto proto;
  if (!readProto(modelPath, proto))
    return refused("model.onnx does not parse");
  std::vector<std::string> sets = sortedEntries(caseDir, "test_data_set_");
  if (sets.empty())
    return refused("the case has no test data set");
  Result r = runModel(caseDir, modelPath, proto, sets);
  if (r.outcome != Outcome::Refused ||
      r.detail.find("computed at run time from data") == std::string::npos)
    return r;
  // Retry with the integer inputs bound, one data set at a time.
  for (const std::string &set : sets) {
    std::string bound = bindIntegerInputs(proto, caseDir + "/" + set);
    if (bound.empty())
      return r;
    // Input files keep the original model's numbering.
    Result b = runModel(caseDir, bound, proto, {set});
    llvm::sys::fs::remove(bound);
    if (b.outcome != Outcome::Pass)
      return {b.outcome, "with its integer inputs bound at import: " +
                             oneLine(b.detail, bound)};
  }
  return {};
}

Result runModel(const std::string &caseDir, const std::string &modelPath,
                const onnx::ModelProto &proto,
                const std::vector<std::string> &sets) {

  mlir::MLIRContext context;
  context.printOpOnDiagnostic(false);
  std::string firstError;
  mlir::ScopedDiagnosticHandler capture(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error &&
        firstError.empty())
      firstError = d.str();
    return mlir::success();
  });
  auto module = loadModel(modelPath, ModelOptions{}, context);
  if (!module)
    return refused(oneLine(firstError, caseDir));
  // Training-mode Dropout draws llmc's Philox mask, not numpy's.
  bool random = false;
  module->walk([&](mlir::Operation *op) {
    random |= op->getName().getStringRef() == "llmc.dropout_mask";
  });
  auto func = module->lookupSymbol<mlir::func::FuncOp>("forward");
  if (!func)
    return wrong("the import has no @forward");

  // input_K.pb belongs to the K-th graph input that is not an initializer.
  std::set<std::string> initializers;
  for (const auto &init : proto.graph().initializer())
    initializers.insert(init.name());
  std::vector<std::string> inputNames;
  for (const auto &in : proto.graph().input())
    if (!initializers.count(in.name())) {
      if (!in.type().has_tensor_type())
        return refused("graph input '" + in.name() +
                       "' is not a tensor (sequence, map or optional)");
      inputNames.push_back(in.name());
    }
  for (const auto &out : proto.graph().output())
    if (!out.type().has_tensor_type())
      return refused("graph output '" + out.name() + "' is not a tensor");

  for (const std::string &set : sets) {
    std::string setDir = caseDir + "/" + set;
    std::vector<std::string> ins = sortedEntries(setDir, "input_");
    std::vector<std::string> outs = sortedEntries(setDir, "output_");
    if (ins.size() != inputNames.size())
      return refused(set + " has " + std::to_string(ins.size()) +
                     " inputs for " + std::to_string(inputNames.size()) +
                     " graph inputs");
    std::string error;
    InputMap inputs;
    for (size_t k = 0; k < ins.size(); ++k) {
      auto t = readTensor(setDir + "/" + ins[k], caseDir, error);
      if (!t)
        return refused(error);
      inputs[inputNames[k]] = std::move(*t);
    }
    // A graph input the import folded away (unused) is not an argument.
    auto expected = expectedInputs(func, error);
    if (!expected)
      return refused(oneLine(error, caseDir));
    for (auto it = inputs.begin(); it != inputs.end();)
      it = expected->count(it->first) ? std::next(it) : inputs.erase(it);
    auto args = buildArguments(func, inputs, 0, error);
    if (!args)
      return refused(oneLine(error, caseDir));
    auto results = evaluate(func, *args);
    if (mlir::failed(results))
      return refused("evaluator: " + oneLine(firstError, caseDir));
    if (results->size() != outs.size())
      return wrong("gives " + std::to_string(results->size()) +
                   " outputs, ONNX expects " + std::to_string(outs.size()));
    for (size_t k = 0; k < outs.size(); ++k) {
      auto want = readTensor(setDir + "/" + outs[k], caseDir, error);
      if (!want)
        return refused(error);
      if (std::string diff = random ? compareRandom((*results)[k], *want)
                                    : compare((*results)[k], *want);
          !diff.empty())
        return wrong(set + " output " + std::to_string(k) + ": " + diff);
    }
  }
  return {};
}

std::map<std::string, std::string> readExpected(const std::string &path,
                                                bool &ok) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  ok = bool(in);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    size_t tab = line.find('\t');
    out[line.substr(0, tab)] =
        tab == std::string::npos ? "" : line.substr(tab + 1);
  }
  return out;
}

int usage() {
  llvm::errs() << "usage: llmc-onnx-conformance DATA_DIR --expected FILE "
                  "[--update FILE] [--filter SUBSTRING] [-v]\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string dataDir, expectedPath, updatePath, filter;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool hasValue = i + 1 < argc;
    if (a == "--expected" && hasValue)
      expectedPath = argv[++i];
    else if (a == "--update" && hasValue)
      updatePath = argv[++i];
    else if (a == "--filter" && hasValue)
      filter = argv[++i];
    else if (a == "-v")
      verbose = true;
    else if (!a.empty() && a[0] != '-' && dataDir.empty())
      dataDir = a;
    else
      return usage();
  }
  if (dataDir.empty() || (expectedPath.empty() && updatePath.empty()))
    return usage();
  if (!llvm::sys::fs::is_directory(dataDir + "/node")) {
    // ctest's SKIP_RETURN_CODE: the data is a Debian package that
    // tools/scripts/common.sh installs; without it there is nothing to run.
    llvm::outs() << "SKIPPED: no ONNX test data in '" << dataDir
                 << "' (apt-get install libonnx-testdata)\n";
    return 77;
  }

  std::map<std::string, std::string> refusedNow;
  std::vector<std::string> wrongCases, allCases;
  int passed = 0;
  for (const char *suite : kSuites) {
    std::string suiteDir = dataDir + "/" + suite;
    for (const std::string &name : sortedEntries(suiteDir, "test_")) {
      std::string id = std::string(suite) + "/" + name;
      if (!filter.empty() && id.find(filter) == std::string::npos)
        continue;
      std::string caseDir = suiteDir + "/" + name;
      if (!llvm::sys::fs::exists(caseDir + "/model.onnx"))
        continue; // data/real: download links, no model
      allCases.push_back(id);
      Result r = runCase(caseDir);
      const char *tag = r.outcome == Outcome::Pass      ? "pass"
                        : r.outcome == Outcome::Refused ? "refused"
                                                        : "WRONG";
      if (verbose || r.outcome == Outcome::Wrong)
        llvm::outs() << tag << " " << id
                     << (r.detail.empty() ? "" : ": " + r.detail) << "\n";
      if (r.outcome == Outcome::Pass)
        ++passed;
      else if (r.outcome == Outcome::Refused)
        refusedNow[id] = r.detail;
      else
        wrongCases.push_back(id);
    }
  }

  if (!updatePath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream out(updatePath, ec);
    if (ec) {
      llvm::errs() << "cannot write '" << updatePath << "': " << ec.message()
                   << "\n";
      return 1;
    }
    out << "# ONNX backend test cases llmc refuses (test/onnx-conformance/,"
           " docs/onnx-conformance.md).\n# Regenerate with "
           "llmc-onnx-conformance DATA_DIR --update THIS_FILE.\n";
    for (const auto &[id, why] : refusedNow)
      out << id << "\t" << why << "\n";
  }

  int listFailures = 0;
  if (!expectedPath.empty()) {
    bool ok = false;
    auto expected = readExpected(expectedPath, ok);
    if (!ok) {
      llvm::errs() << "cannot read '" << expectedPath << "'\n";
      return 1;
    }
    for (const auto &[id, why] : refusedNow)
      if (!expected.count(id)) {
        llvm::outs() << "NEWLY REFUSED " << id << ": " << why << "\n";
        ++listFailures;
      }
    std::set<std::string> ran(allCases.begin(), allCases.end());
    for (const auto &[id, why] : expected)
      if (ran.count(id) && !refusedNow.count(id) &&
          std::find(wrongCases.begin(), wrongCases.end(), id) ==
              wrongCases.end()) {
        llvm::outs() << "NOW PASSES " << id
                     << " (remove it from the refused list)\n";
        ++listFailures;
      }
  }
  llvm::outs() << allCases.size() << " cases: " << passed << " pass, "
               << refusedNow.size() << " refused, " << wrongCases.size()
               << " wrong\n";
  if (listFailures)
    llvm::outs() << "to accept the refused list as it is now: "
                    "llmc-onnx-conformance "
                 << dataDir << " --expected " << expectedPath
                 << " --update " << expectedPath << "\n";
  return wrongCases.empty() && !listFailures ? 0 : 1;
}
