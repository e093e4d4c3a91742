//===- LlmcElementwiseOps.td - Elementwise ops -------------*- tablegen -*-===//
//
// Unary math, binary arithmetic with numpy broadcasting, comparisons, where,
// isnan and cast. Binary ops broadcast as numpy does: shapes are aligned at
// the right, and each dim pair must be equal or contain a 1. Operands share
// one element type; the importer inserts casts where ONNX mixes them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_ELEMENTWISE_OPS_TD
#define LLMC_ELEMENTWISE_OPS_TD

include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

class Llmc_UnaryOp<string mnemonic, TypeConstraint operandType,
                   string formula, Trait precision = Llmc_PrecisionFollows> :
    Llmc_Op<mnemonic, [Pure, SameOperandsAndResultType, Llmc_Differentiable,
                       Llmc_ReadsElementwise, Llmc_Paddable, precision]> {
  let summary = "elementwise " # formula;
  let description = "Computes `" # formula # "` for every element; the "
    # "result has the operand's type.\n\n```mlir\n%y = llmc." # mnemonic
    # " %x : tensor<4x8xf32>\n```";
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Llmc_NegOp : Llmc_UnaryOp<"neg", Llmc_NumericTensor, "-x">;
def Llmc_AbsOp : Llmc_UnaryOp<"abs", Llmc_NumericTensor, "|x|">;
def Llmc_ExpOp : Llmc_UnaryOp<"exp", Llmc_FloatTensor, "exp(x)",
                             Llmc_PrecisionPolicy>;
def Llmc_LogOp : Llmc_UnaryOp<"log", Llmc_FloatTensor, "log(x)",
                             Llmc_PrecisionPolicy>;
def Llmc_SqrtOp : Llmc_UnaryOp<"sqrt", Llmc_FloatTensor, "sqrt(x)">;
def Llmc_RsqrtOp : Llmc_UnaryOp<"rsqrt", Llmc_FloatTensor, "1 / sqrt(x)",
                               Llmc_PrecisionPolicy>;
def Llmc_ReciprocalOp : Llmc_UnaryOp<"reciprocal", Llmc_FloatTensor, "1 / x",
                                    Llmc_PrecisionPolicy>;
def Llmc_TanhOp : Llmc_UnaryOp<"tanh", Llmc_FloatTensor, "tanh(x)">;
def Llmc_ErfOp : Llmc_UnaryOp<"erf", Llmc_FloatTensor, "erf(x)">;
def Llmc_SigmoidOp : Llmc_UnaryOp<"sigmoid", Llmc_FloatTensor,
                                  "1 / (1 + exp(-x))">;
def Llmc_ReluOp : Llmc_UnaryOp<"relu", Llmc_FloatTensor, "max(x, 0)">;
def Llmc_CosOp : Llmc_UnaryOp<"cos", Llmc_FloatTensor, "cos(x)">;
def Llmc_SinOp : Llmc_UnaryOp<"sin", Llmc_FloatTensor, "sin(x)">;

def Llmc_IsNanOp : Llmc_Op<"isnan", [Pure, InferTypeOpAdaptor,
                                      Llmc_PrecisionFollows]> {
  let summary = "elementwise NaN test";
  let description = [{
    Yields an `i1` tensor of the operand's shape that is true where the
    operand is NaN. Exporters use it to guard softmax rows that are fully
    masked; the attention raising pattern absorbs it.

    ```mlir
    %m = llmc.isnan %x : tensor<4x8xf32> -> tensor<4x8xi1>
    ```
  }];
  let arguments = (ins Llmc_FloatTensor:$input);
  let results = (outs Llmc_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Llmc_CastOp : Llmc_Op<"cast", [Pure, Llmc_Differentiable,
                                    Llmc_PrecisionPolicy, Llmc_Paddable]> {
  let summary = "elementwise element-type conversion";
  let description = [{
    Converts every element to the result's element type; shapes are equal.
    Float to integer truncates toward zero, as ONNX Cast does; integer or
    float to `i1` tests for non-zero. Casting to the same type folds away.

    ```mlir
    %y = llmc.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins Llmc_Tensor:$input);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Binary ops (numpy broadcasting)
//===----------------------------------------------------------------------===//

class Llmc_BinaryOp<string mnemonic, TypeConstraint operandType,
                    string formula, list<Trait> traits = [],
                    Trait precision = Llmc_PrecisionFollows> :
    Llmc_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor,
                                          Llmc_Differentiable,
                                          Llmc_ReadsElementwise,
                                          Llmc_Paddable, precision])> {
  let summary = "elementwise " # formula # " with numpy broadcasting";
  let description = "Computes `" # formula # "` elementwise after "
    # "broadcasting both operands to a common shape (numpy rules: shapes "
    # "align at the right, each dim pair is equal or one of them is 1). "
    # "Both operands have the same element type.\n\n```mlir\n%z = llmc."
    # mnemonic # " %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> "
    # "tensor<4x8xf32>\n```";
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat =
    "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

// An add can be the bias of a linear layer, which autocast lowers with it.
def Llmc_AddOp : Llmc_BinaryOp<"add", Llmc_NumericTensor, "x + y",
                               [Commutative], Llmc_PrecisionPolicy>;
def Llmc_SubOp : Llmc_BinaryOp<"sub", Llmc_NumericTensor, "x - y">;
def Llmc_MulOp : Llmc_BinaryOp<"mul", Llmc_NumericTensor, "x * y",
                               [Commutative]>;
def Llmc_DivOp : Llmc_BinaryOp<"div", Llmc_NumericTensor,
                               "x / y (integers truncate toward zero)">;
def Llmc_PowOp : Llmc_BinaryOp<"pow", Llmc_FloatTensor, "x ^ y", [],
                               Llmc_PrecisionPolicy>;
def Llmc_MaxOp : Llmc_BinaryOp<"max", Llmc_NumericTensor, "max(x, y)",
                               [Commutative]>;
def Llmc_MinOp : Llmc_BinaryOp<"min", Llmc_NumericTensor, "min(x, y)",
                               [Commutative]>;

def Llmc_CompareOp : Llmc_Op<"compare", [Pure, InferTypeOpAdaptor,
                                          Llmc_PrecisionFollows]> {
  let summary = "elementwise comparison with numpy broadcasting";
  let description = [{
    Compares the broadcast operands with `predicate` (eq, ne, lt, le, gt, ge)
    and yields an `i1` tensor of the broadcast shape. Operands share one
    element type. Causal masks built from `range`/`compare` fold to constants
    once shapes are static.

    ```mlir
    %m = llmc.compare le, %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
    ```
  }];
  let arguments = (ins Llmc_ComparePredicateAttr:$predicate,
                       Llmc_Tensor:$lhs, Llmc_Tensor:$rhs);
  let results = (outs Llmc_BoolTensor:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` "
                       "functional-type(operands, results)";
  let hasFolder = 1;
}

def Llmc_WhereOp : Llmc_Op<"where", [Pure, InferTypeOpAdaptor,
                                      Llmc_Differentiable,
                                      Llmc_ReadsElementwise,
                                      Llmc_PrecisionFollows]> {
  let summary = "elementwise select with numpy broadcasting";
  let description = [{
    Yields `on_true` where `condition` is true and `on_false` elsewhere, after
    broadcasting all three operands to a common shape. The two value operands
    share one element type, which the result has.

    ```mlir
    %y = llmc.where %mask, %x, %ninf : (tensor<8x8xi1>, tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
    ```
  }];
  let arguments = (ins Llmc_BoolTensor:$condition, Llmc_Tensor:$on_true,
                       Llmc_Tensor:$on_false);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "$condition `,` $on_true `,` $on_false attr-dict `:` "
                       "functional-type(operands, results)";
  let hasFolder = 1;
}

#endif // LLMC_ELEMENTWISE_OPS_TD
