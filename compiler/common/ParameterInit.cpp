//===- ParameterInit.cpp - How a parameter's initial value is drawn -------===//
#include "compiler/common/ParameterInit.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace llmc {

std::string argumentName(func::FuncOp func, unsigned index) {
  for (StringRef attr : {"llmc.input", "llmc.param"})
    if (auto name = func.getArgAttrOfType<StringAttr>(index, attr))
      return name.getValue().str();
  return "#" + std::to_string(index);
}

std::optional<std::vector<int64_t>> realShapeOf(func::FuncOp func,
                                                unsigned index) {
  auto real =
      func.getArgAttrOfType<DenseI64ArrayAttr>(index, "llmc.real_shape");
  if (!real)
    return std::nullopt;
  return std::vector<int64_t>(real.asArrayRef().begin(),
                              real.asArrayRef().end());
}

std::optional<InitRule> parseInitRule(StringRef text) {
  if (text == "zeros")
    return InitRule{InitRule::Kind::Zeros, 0};
  if (text == "ones")
    return InitRule{InitRule::Kind::Ones, 0};
  double stddev = 0;
  if (text.consume_front("normal(") && text.consume_back(")") &&
      !text.trim().getAsDouble(stddev) && stddev >= 0)
    return InitRule{InitRule::Kind::Normal, stddev};
  return std::nullopt;
}

std::string unknownInitRuleError(const std::string &name, StringRef text) {
  return "parameter '" + name + "': unknown llmc.init_rule \"" + text.str() +
         "\" (expected \"normal(STD)\", \"zeros\" or \"ones\")";
}

uint64_t detail::fnv1a64(const std::string &s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001B3ull;
  return h;
}

void normalSampleRange(uint64_t seed, const std::string &name, int64_t begin,
                       int64_t count, double *out) {
  forEachNormalSample(seed, name, begin, count,
                      [&](int64_t i, double x) { out[i - begin] = x; });
}

std::vector<double> normalSamples(uint64_t seed, const std::string &name,
                                  int64_t n) {
  std::vector<double> out(n);
  normalSampleRange(seed, name, 0, n, out.data());
  return out;
}

} // namespace llmc
