//===- GradCheckUtils.cpp - Gradient checks against finite differences ----===//
#include "GradCheckUtils.h"

#include "dialects/llmc/LlmcDialect.h"
#include "passes/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace mlir;

namespace llmc::test {

std::string param(const std::string &name, const std::string &type) {
  return "%" + name + ": " + type + " {llmc.param = \"" + name +
         "\", llmc.init_rule = \"zeros\"}";
}

std::string input(const std::string &name, const std::string &type) {
  return "%" + name + ": " + type + " {llmc.input = \"" + name + "\"}";
}

std::string lossOf(const std::vector<std::string> &args,
                   const std::string &body, const std::string &yType) {
  // The rank of yType: count the dims of "tensor<AxBxf64>".
  size_t open = yType.find('<'), close = yType.rfind('>');
  std::string dims = yType.substr(open + 1, close - open - 1);
  int rank = static_cast<int>(std::count(dims.begin(), dims.end(), 'x'));
  std::string axes;
  for (int d = 0; d < rank; ++d)
    axes += (d ? ", " : "") + std::to_string(d);
  std::string ir = "func.func @forward(";
  for (const std::string &a : args)
    ir += a + ", ";
  ir += input("r", yType) + ") -> (tensor<f64> {llmc.output = \"loss\"}) {\n";
  ir += body + "\n";
  ir += "  %yr = llmc.mul %y, %r : (" + yType + ", " + yType + ") -> " + yType +
        "\n";
  if (rank == 0)
    ir += "  return %yr : tensor<f64>\n}\n";
  else
    ir += "  %loss = llmc.reduce_sum %yr axes [" + axes + "] : (" + yType +
          ") -> tensor<f64>\n  return %loss : tensor<f64>\n}\n";
  return ir;
}

GradCheck::GradCheck() {
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
}

OwningOpRef<ModuleOp> GradCheck::differentiate(const std::string &ir) {
  auto module = parseSourceString<ModuleOp>(ir, &context);
  if (!module) {
    ADD_FAILURE() << "IR does not parse:\n" << diagnostics << ir;
    return nullptr;
  }
  PassManager pm(&context);
  pm.addPass(mlir::llmc::createAutodiffPass());
  if (failed(pm.run(*module))) {
    ADD_FAILURE() << "llmc-autodiff failed:\n" << diagnostics << ir;
    return nullptr;
  }
  return module;
}

/// Name of argument `i` (llmc.param or llmc.input).
static std::string argName(func::FuncOp f, unsigned i) {
  for (StringRef key : {"llmc.param", "llmc.input"})
    if (auto name = f.getArgAttrOfType<StringAttr>(i, key))
      return name.getValue().str();
  return "";
}

/// Evaluates `f`, failing the test (and returning {}) on an error.
static std::vector<RefTensor> run(func::FuncOp f,
                                  const std::vector<RefTensor> &args,
                                  const std::string &diagnostics) {
  auto results = evaluate(f, args);
  if (failed(results)) {
    ADD_FAILURE() << "evaluation of @" << f.getName().str() << " failed:\n"
                  << diagnostics;
    return {};
  }
  return *results;
}

int GradCheck::check(const std::string &ir,
                     const std::map<std::string, RefTensor> &fixed,
                     GradCheckOptions opt) {
  diagnostics.clear();
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
  auto module = differentiate(ir);
  if (!module)
    return 0;
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  auto train = module->lookupSymbol<func::FuncOp>("train_step");

  // Arguments: fixed ones by name, random floats otherwise.
  std::mt19937_64 gen(1234);
  std::uniform_real_distribution<double> dist(opt.lo, opt.hi);
  std::vector<RefTensor> args;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto it = fixed.find(argName(forward, i));
    if (it != fixed.end()) {
      args.push_back(it->second);
      continue;
    }
    auto type = cast<RankedTensorType>(forward.getArgument(i).getType());
    auto kind = kindOf(type.getElementType());
    if (!kind || !isFloatKind(*kind)) {
      ADD_FAILURE() << "argument '" << argName(forward, i)
                    << "' is not a float; give it in `fixed`";
      return 0;
    }
    RefTensor t(*kind, std::vector<int64_t>(type.getShape()));
    for (double &v : t.floats)
      v = roundToKind(dist(gen), *kind);
    args.push_back(std::move(t));
  }

  std::vector<RefTensor> trained = run(train, args, diagnostics);
  std::vector<RefTensor> base = run(forward, args, diagnostics);
  if (trained.empty() || base.empty())
    return 0;
  EXPECT_EQ(trained[0].floats[0], base[0].floats[0])
      << "@train_step's loss differs from @forward's";

  int compared = 0;
  for (unsigned r = 1; r < train.getNumResults(); ++r) {
    std::string of =
        train.getResultAttrOfType<StringAttr>(r, "llmc.grad_of").str();
    unsigned p = 0;
    while (p < forward.getNumArguments() && argName(forward, p) != of)
      ++p;
    const RefTensor &grad = trained[r];
    int64_t n = grad.numElements();
    int64_t count = std::min<int64_t>(n, opt.maxPerParam);
    for (int64_t s = 0; s < count; ++s) {
      int64_t e = count == n ? s : s * n / count;
      std::vector<RefTensor> plus = args, minus = args;
      plus[p].floats[e] += opt.h;
      minus[p].floats[e] -= opt.h;
      std::vector<RefTensor> lp = run(forward, plus, diagnostics);
      std::vector<RefTensor> lm = run(forward, minus, diagnostics);
      if (lp.empty() || lm.empty())
        return compared;
      double fd = (lp[0].floats[0] - lm[0].floats[0]) / (2 * opt.h);
      double got = grad.floats[e];
      double tol =
          opt.atol + opt.rtol * std::max(std::fabs(fd), std::fabs(got));
      EXPECT_NEAR(got, fd, tol) << "d loss / d " << of << "[" << e << "]";
      ++compared;
    }
  }
  return compared;
}

std::vector<RefTensor>
GradCheck::gradients(const std::string &ir,
                     const std::map<std::string, RefTensor> &named) {
  diagnostics.clear();
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
  auto module = differentiate(ir);
  if (!module)
    return {};
  auto train = module->lookupSymbol<func::FuncOp>("train_step");
  std::vector<RefTensor> args;
  for (unsigned i = 0; i < train.getNumArguments(); ++i) {
    auto it = named.find(argName(train, i));
    if (it == named.end()) {
      ADD_FAILURE() << "no value for argument '" << argName(train, i) << "'";
      return {};
    }
    args.push_back(it->second);
  }
  std::vector<RefTensor> results = run(train, args, diagnostics);
  if (!results.empty())
    results.erase(results.begin()); // the loss
  return results;
}

} // namespace llmc::test
