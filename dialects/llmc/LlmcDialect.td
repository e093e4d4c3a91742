//===- LlmcDialect.td - The llmc graph dialect -------------*- tablegen -*-===//
//
// The dialect definition, the op base class and the tensor type constraints
// shared by every op file.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_TD
#define LLMC_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Llmc_Dialect : Dialect {
  let name = "llmc";
  let summary = "Transformer training graphs with value semantics";
  let description = [{
    The `llmc` dialect holds the graphs that llmc imports, differentiates and
    optimizes: elementwise arithmetic with numpy broadcasting, shape ops, and
    the composite ops of transformer models (layer/rms norm, attention, rotary
    embedding, cross-entropy) that the passes raise decomposed exporter output
    to. Every op works on builtin ranked tensors and infers or verifies its
    result type. docs/dialect.md describes the semantics.
  }];
  let cppNamespace = "::mlir::llmc";
  let hasConstantMaterializer = 1;
}

class Llmc_Op<string mnemonic, list<Trait> traits = []> :
    Op<Llmc_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Tensor constraints
//===----------------------------------------------------------------------===//

// f64 is for reference computations (the evaluator, gradient checks);
// code generation rejects it.
defvar Llmc_FloatElements = [F32, F16, BF16, F8E4M3FN, F8E5M2, F64];
defvar Llmc_IntElements = [I32, I64];

def Llmc_Tensor : RankedTensorOf<!listconcat(Llmc_FloatElements,
                                             Llmc_IntElements, [I1])>;
def Llmc_NumericTensor : RankedTensorOf<!listconcat(Llmc_FloatElements,
                                                    Llmc_IntElements)>;
def Llmc_FloatTensor : RankedTensorOf<Llmc_FloatElements>;
def Llmc_IndexTensor : RankedTensorOf<Llmc_IntElements>;
def Llmc_BoolTensor : RankedTensorOf<[I1]>;
def Llmc_FloatScalar : 0DTensorOf<Llmc_FloatElements>;

/// i64 attributes read back as int64_t: axes and ignore_index are signed,
/// and ODS's I64Attr hands out uint64_t.
def Llmc_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                                "64-bit integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

#endif // LLMC_DIALECT_TD
