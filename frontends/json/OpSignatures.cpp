//===- OpSignatures.cpp - How JSON nodes map onto llmc ops ----------------===//
//
// The table is written as one line per op: operand names ("x?" optional,
// "xs*" variadic) and attribute names ("a?" optional or defaulted). It
// mirrors the `arguments` of dialects/llmc/*.td; OpSignaturesTest checks it
// against the registered ops' attribute names.
//
//===----------------------------------------------------------------------===//
#include "frontends/json/OpSignatures.h"
#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

namespace llmc::json {

namespace {
struct Row {
  const char *op, *operands, *attrs;
  bool variadicResults = false;
};
} // namespace

// clang-format off
static const Row kRows[] = {
    // Elementwise (LlmcElementwiseOps.td).
    {"neg", "input", ""}, {"abs", "input", ""}, {"exp", "input", ""},
    {"log", "input", ""}, {"sqrt", "input", ""}, {"rsqrt", "input", ""},
    {"reciprocal", "input", ""}, {"tanh", "input", ""}, {"erf", "input", ""},
    {"sigmoid", "input", ""}, {"relu", "input", ""}, {"cos", "input", ""},
    {"sin", "input", ""}, {"isnan", "input", ""}, {"cast", "input", ""},
    {"add", "lhs rhs", ""}, {"sub", "lhs rhs", ""}, {"mul", "lhs rhs", ""},
    {"div", "lhs rhs", ""}, {"pow", "lhs rhs", ""}, {"max", "lhs rhs", ""},
    {"min", "lhs rhs", ""},
    {"compare", "lhs rhs", "predicate"},
    {"where", "condition on_true on_false", ""},
    // Data movement and reductions (LlmcShapeOps.td).
    {"constant", "", "value"},
    {"iota", "", "dimension start? step?"},
    {"reshape", "input", ""},
    {"transpose", "input", "permutation"},
    {"broadcast_to", "input", ""},
    {"slice", "input", "starts limits strides"},
    {"concat", "inputs*", "axis"},
    {"split", "input", "axis sizes", /*variadicResults=*/true},
    {"gather", "data indices", "axis bound?"},
    {"gather_elements", "data indices", "axis"},
    {"reduce_sum", "input", "axes keepdims?"},
    {"reduce_mean", "input", "axes keepdims?"},
    {"reduce_max", "input", "axes keepdims?"},
    // Matmul and composite ops (LlmcNNOps.td).
    {"matmul", "lhs rhs", "transpose_lhs? transpose_rhs?"},
    {"gelu", "input", "approximation"},
    {"silu", "input", ""},
    {"layer_norm", "input weight? bias?", "axis? epsilon?"},
    {"rms_norm", "input weight?", "axis? epsilon?"},
    {"softmax", "input", "axis?"},
    {"log_softmax", "input", "axis?"},
    {"attention", "query key value mask?", "causal? scale? seq_major? qkv_heads?"},
    {"rotary", "input cos sin", "interleaved?"},
    {"cross_entropy", "logits targets", "reduction ignore_index? classes?"},
    {"dropout_mask", "step?", "ratio seed offset"},
    // Backward ops and the optimizer update (LlmcGradOps.td), so that a
    // training step can be written (or dumped and re-read) as JSON too.
    {"layer_norm_grad", "input grad weight?", "axis? epsilon? bias_grad?",
     /*variadicResults=*/true},
    {"rms_norm_grad", "input grad weight?", "axis? epsilon?",
     /*variadicResults=*/true},
    {"softmax_grad", "output grad", "axis?"},
    {"log_softmax_grad", "output grad", "axis?"},
    {"gelu_grad", "input grad", "approximation"},
    {"silu_grad", "input grad", ""},
    {"attention_lse", "query key value mask?", "causal? scale? seq_major? qkv_heads?"},
    {"attention_grad", "query key value output lse grad mask?",
     "causal? scale? seq_major? qkv_heads?"},
    {"cross_entropy_grad", "logits targets grad", "reduction ignore_index? classes?"},
    {"gather_grad", "grad indices", "axis bound?"},
    {"gather_elements_grad", "grad indices", "axis"},
    {"slice_grad", "grad", "starts limits strides"},
    {"adamw_update", "param grad m v lr step",
     "beta1? beta2? epsilon? weight_decay?"},
    {"global_norm", "inputs*", ""},
    // multi_adamw_update has no row: llmc-batch-adamw builds it from
    // adamw_update nodes (four variadic groups and a list of floats have no
    // JSON spelling); OpSignaturesTest lists it as the one exception.
};
// clang-format on

std::optional<AttrKind> attrKindOf(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<AttrKind>>(name)
      .Cases("axis", "dimension", "ignore_index", "seed", "offset",
             AttrKind::Int)
      .Cases("bound", "classes", AttrKind::Int)
      .Cases("start", "step", "epsilon", "scale", AttrKind::Float)
      .Cases("beta1", "beta2", "weight_decay", "ratio", AttrKind::Float)
      .Cases("keepdims", "transpose_lhs", "transpose_rhs", "causal",
             "interleaved", "bias_grad", "seq_major", AttrKind::Unit)
      .Cases("permutation", "starts", "limits", "strides", "sizes", "axes",
             "qkv_heads",
             AttrKind::IntList)
      .Case("approximation", AttrKind::GeluApproximation)
      .Case("predicate", AttrKind::ComparePredicate)
      .Case("reduction", AttrKind::LossReduction)
      .Case("value", AttrKind::Elements)
      .Default(std::nullopt);
}

std::vector<std::string> enumSpellings(AttrKind kind) {
  using namespace mlir::llmc;
  std::vector<std::string> result;
  switch (kind) {
  case AttrKind::GeluApproximation:
    for (uint32_t i = 0; i <= getMaxEnumValForGeluApproximation(); ++i)
      result.push_back(
          stringifyGeluApproximation(static_cast<GeluApproximation>(i)).str());
    break;
  case AttrKind::ComparePredicate:
    for (uint32_t i = 0; i <= getMaxEnumValForComparePredicate(); ++i)
      result.push_back(
          stringifyComparePredicate(static_cast<ComparePredicate>(i)).str());
    break;
  case AttrKind::LossReduction:
    for (uint32_t i = 0; i <= getMaxEnumValForLossReduction(); ++i)
      result.push_back(
          stringifyLossReduction(static_cast<LossReduction>(i)).str());
    break;
  default:
    break;
  }
  return result;
}

std::string describeAttrKind(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int:
    return "an integer";
  case AttrKind::Float:
    return "a number";
  case AttrKind::Unit:
    return "true or false";
  case AttrKind::IntList:
    return "a list of integers";
  case AttrKind::Elements:
    return "a number, a bool or a (nested) list of them";
  default: {
    std::string s = "one of";
    for (const std::string &e : enumSpellings(kind))
      s += (s.size() > 6 ? ", \"" : " \"") + e + "\"";
    return s;
  }
  }
}

static std::vector<std::string> words(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ' ', -1, /*KeepEmpty=*/false);
  std::vector<std::string> result;
  for (llvm::StringRef p : parts)
    result.push_back(p.str());
  return result;
}

static std::vector<OpSignature> buildSignatures() {
  std::vector<OpSignature> result;
  for (const Row &row : kRows) {
    OpSignature sig;
    sig.op = row.op;
    sig.variadicResults = row.variadicResults;
    for (std::string w : words(row.operands)) {
      OperandSpec spec;
      if (w.back() == '?' || w.back() == '*') {
        spec.arity = w.back() == '?' ? OperandSpec::Arity::Optional
                                     : OperandSpec::Arity::Variadic;
        w.pop_back();
      }
      spec.name = w;
      sig.operands.push_back(spec);
    }
    for (std::string w : words(row.attrs)) {
      bool required = w.back() != '?';
      if (!required)
        w.pop_back();
      // Every name in the table has a kind; OpSignaturesTest checks it.
      sig.attrs.push_back({w, attrKindOf(w).value_or(AttrKind::Int), required});
    }
    result.push_back(std::move(sig));
  }
  return result;
}

const std::vector<OpSignature> &opSignatures() {
  static const std::vector<OpSignature> table = buildSignatures();
  return table;
}

const OpSignature *lookupOpSignature(llvm::StringRef op) {
  for (const OpSignature &sig : opSignatures())
    if (sig.op == op)
      return &sig;
  return nullptr;
}

const AttrSpec *OpSignature::findAttr(llvm::StringRef name) const {
  for (const AttrSpec &a : attrs)
    if (a.name == name)
      return &a;
  return nullptr;
}

bool OpSignature::hasOptionalOperands() const {
  return llvm::any_of(operands, [](const OperandSpec &o) {
    return o.arity == OperandSpec::Arity::Optional;
  });
}

} // namespace llmc::json
