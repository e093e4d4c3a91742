//===- LlmcAttrs.td - Enum attributes of the llmc dialect --*- tablegen -*-===//
#ifndef LLMC_ATTRS_TD
#define LLMC_ATTRS_TD

include "mlir/IR/EnumAttr.td"

def Llmc_GeluErf : I32EnumAttrCase<"erf", 0>;
def Llmc_GeluTanh : I32EnumAttrCase<"tanh", 1>;
def Llmc_GeluApproximationAttr : I32EnumAttr<"GeluApproximation",
    "GELU form: exact (erf) or the tanh approximation",
    [Llmc_GeluErf, Llmc_GeluTanh]> {
  let cppNamespace = "::mlir::llmc";
}

def Llmc_CmpEq : I32EnumAttrCase<"eq", 0>;
def Llmc_CmpNe : I32EnumAttrCase<"ne", 1>;
def Llmc_CmpLt : I32EnumAttrCase<"lt", 2>;
def Llmc_CmpLe : I32EnumAttrCase<"le", 3>;
def Llmc_CmpGt : I32EnumAttrCase<"gt", 4>;
def Llmc_CmpGe : I32EnumAttrCase<"ge", 5>;
def Llmc_ComparePredicateAttr : I32EnumAttr<"ComparePredicate",
    "elementwise comparison predicate",
    [Llmc_CmpEq, Llmc_CmpNe, Llmc_CmpLt, Llmc_CmpLe, Llmc_CmpGt, Llmc_CmpGe]> {
  let cppNamespace = "::mlir::llmc";
}

def Llmc_ReduceMean : I32EnumAttrCase<"mean", 0>;
def Llmc_ReduceSum : I32EnumAttrCase<"sum", 1>;
def Llmc_ReduceNone : I32EnumAttrCase<"none", 2>;
def Llmc_LossReductionAttr : I32EnumAttr<"LossReduction",
    "how a per-token loss is reduced",
    [Llmc_ReduceMean, Llmc_ReduceSum, Llmc_ReduceNone]> {
  let cppNamespace = "::mlir::llmc";
}

#endif // LLMC_ATTRS_TD
