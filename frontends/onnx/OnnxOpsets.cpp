//===- OnnxOpsets.cpp - The oldest opset each imported op is read from ----===//
//
// The handlers read the ops as opsets 13 to 25 define them. A model of an
// older opset means, for each op, the newest version of it at or below that
// opset; where that version differs from the one of opset 13 only in the
// element types it allows (most changes before 13), the handler reads it
// right, and where an attribute or the semantics changed, the handler
// either reads the old form too (Squeeze, Unsqueeze, Split, the reductions:
// axes and sizes as attributes; Softmax, LogSoftmax, Hardmax: the 2-D
// coercion) or the op is refused below the version it reads. The versions
// are ONNX's schema history (onnx/defs, ONNX 1.12); docs/onnx.md lists the
// refusals.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

namespace llmc::onnximport {

const char *const kUnclassified =
    "has a version that llmc has not compared with opset 13's";

OldestOpset oldestOpset(llvm::StringRef op) {
  static const llvm::StringMap<OldestOpset> table = [] {
    llvm::StringMap<OldestOpset> t;
    // Version 1 of these only adds `consumed_inputs`, a legacy attribute
    // that opset 6 removed; llmc does not read files that old.
    for (const char *unary :
         {"Abs", "Ceil", "Exp", "Floor", "Log", "Neg", "Reciprocal", "Relu",
          "Sigmoid", "Sqrt", "Tanh", "LeakyRelu", "HardSigmoid", "Elu",
          "Selu"})
      t[unary] = {6, "takes the legacy attribute consumed_inputs"};
    // Before 7 a second operand broadcast only with the `broadcast` and
    // `axis` attributes (aligned at `axis`, not at the trailing dims).
    for (const char *binary : {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or",
                               "Xor", "Equal", "Less", "Greater", "PRelu",
                               "Gemm"})
      t[binary] = {7, "broadcasts with the legacy 'broadcast' and 'axis' "
                      "attributes"};
    for (const char *variadic : {"Max", "Min", "Sum", "Mean"})
      t[variadic] = {8, "does not broadcast its inputs"};
    t["Cast"] = {6, "names its target type with a string"};
    t["Concat"] = {4, "has a default axis of 1"};
    t["Reshape"] = {5, "takes the shape as an attribute"};
    t["Tile"] = {6, "takes 'tiles' and 'axis' inputs"};
    t["Slice"] = {10, "takes starts, ends and axes as attributes"};
    t["Clip"] = {11, "takes min and max as attributes"};
    t["Pad"] = {11, "takes the pads and the value as attributes"};
    t["Dropout"] = {12, "takes the ratio as an attribute and has no "
                        "training_mode input"};
    // Ops that do not exist before the version named: a model that uses
    // one at an older opset is not valid ONNX.
    for (auto [name, since] : std::initializer_list<
             std::pair<const char *, int64_t>>{
             {"Sin", 7},
             {"Cos", 7},
             {"Expand", 8},
             {"Erf", 9},
             {"Sign", 9},
             {"Shrink", 9},
             {"IsNaN", 9},
             {"Where", 9},
             {"ConstantOfShape", 9},
             {"Mod", 10},
             {"IsInf", 10},
             {"ThresholdedRelu", 10},
             {"Range", 11},
             {"CumSum", 11},
             {"GatherElements", 11},
             {"GatherND", 11},
             {"SplitToSequence", 11},
             {"SequenceAt", 11},
             {"LessOrEqual", 12},
             {"Celu", 12},
             {"Einsum", 12},
             {"GreaterOrEqual", 12},
             {"NegativeLogLikelihoodLoss", 12},
             {"SoftmaxCrossEntropyLoss", 12},
             {"Trilu", 14},
             {"HardSwish", 14},
             {"CastLike", 15},
             {"LayerNormalization", 17},
             {"Gelu", 20}})
      t[name] = {since, ""};
    // Every version reads as opset 13's: later versions only added element
    // types, negative axes or attributes whose default is the old
    // behaviour; the axes and split sizes as attributes and the old
    // Softmax rows are read too.
    for (const char *same :
         {"Constant", "Identity", "Shape", "Size", "Transpose", "Flatten",
          "Gather", "MatMul", "Not", "Squeeze", "Unsqueeze", "Split", "ArgMax",
          "ArgMin", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
          "ReduceProd", "ReduceSumSquare", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "Softmax", "LogSoftmax",
          "Hardmax", "Softplus", "Softsign"})
      t[same] = {1, ""};
    return t;
  }();
  auto it = table.find(op);
  // An op nobody compared with its older versions is read from 13 on
  // only: a new handler cannot silently misread an old model
  // (OnnxOpsetsTest lists the unclassified ones).
  return it == table.end() ? OldestOpset{13, kUnclassified} : it->second;
}

} // namespace llmc::onnximport
