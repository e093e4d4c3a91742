//===- LlmcInterfaces.td - Op interfaces of the llmc dialect -*- tablegen -*-===//
//
// Behaviour that passes query through interfaces instead of switching on op
// kinds (docs/STYLE: Toy's ShapeInferenceOpInterface). Autodiff asks each op
// for its vector-Jacobian product through DifferentiableOpInterface.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_INTERFACES_TD
#define LLMC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Llmc_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::llmc";
  let description = [{
    An op that reverse-mode autodiff (`llmc-autodiff`) can differentiate: it
    builds its vector-Jacobian product, i.e. the cotangents of its operands
    given the cotangents of its results. Each op has exactly one rule; the
    rules live in dialects/llmc/Llmc*Vjps.cpp.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, at the builder's insertion point, the cotangent of every
        operand `i` with `wanted[i]` set, and stores it in `operandGrads[i]`
        (the vector has one slot per operand, null on entry). `resultGrads`
        has one cotangent per result, of the result's type (autodiff
        materializes zeros for results that received none). A cotangent has
        its operand's exact type: broadcast operands are summed back to
        their shape. Operands that are not wanted, or not differentiable
        (integer indices, masks), are left null. Returns failure, after
        emitting an error on the op, when the gradient cannot be built
        (for instance a gradient through an attention mask).
      }],
      "::mlir::LogicalResult", "buildVjp",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::ArrayRef<bool>":$wanted,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

/// The trait forward ops list to declare their gradient rule.
defvar Llmc_Differentiable =
    DeclareOpInterfaceMethods<Llmc_DifferentiableOpInterface>;

// Ops that read elementwise: for every result r and every operand of r's
// type, the element of r at index k is computed from that operand's element
// k only, by the thread that writes it (the elementwise emitters; adamw's
// param, grad, m, v). Broadcast operands are not covered (they have another
// type). llmc-mark-in-place relies on it to write a result over an operand.
def Llmc_ReadsElementwise : NativeOpTrait<"ReadsElementwise"> {
  let cppNamespace = "::mlir::llmc";
}

def Llmc_PrecisionPolicyOpInterface : OpInterface<"PrecisionPolicyOpInterface"> {
  let cppNamespace = "::mlir::llmc";
  let description = [{
    What `llmc-lower-precision` does with an op under a mixed-precision
    policy (docs/precision.md), as PyTorch's autocast lists say it:
    `LowerOperands` ops (matmul, attention) take their float operands in
    the low type (attention's float mask too, as autocast casts it) and
    yield it; the `Fp32*` ops (norms, softmax,
    the loss, sums, exp/log/pow) take f32 operands and yield f32; `Follow`
    ops run in the widest type of their dimensioned float operands (torch's
    type promotion); `Explicit` ops (cast) keep the types they name. The
    per-op answers live in dialects/llmc/LlmcPrecisionPolicies.cpp.
  }];
  let methods = [
    InterfaceMethod<[{
        The op's precision class. The `Fp32*` classes differ only in the
        reason they stay in f32 (what `--explain` will print, and what a
        planted mistake of the mutation test targets).
      }],
      "::mlir::llmc::PrecisionPolicy", "getPrecisionPolicy", (ins), "",
      [{ return ::mlir::llmc::PrecisionPolicy::Follow; }]>,
    InterfaceMethod<[{
        True for pure data movement, where casting the result equals
        moving the cast operand bit for bit: the pass hoists a weight's
        cast above these ops, to right after the parameter.
      }],
      "bool", "commutesWithCast", (ins), "", [{ return false; }]>
  ];
}

/// Ops that run in their operands' (promoted) type: every default.
defvar Llmc_PrecisionFollows = Llmc_PrecisionPolicyOpInterface;
/// Ops with their own precision class.
defvar Llmc_PrecisionPolicy =
    DeclareOpInterfaceMethods<Llmc_PrecisionPolicyOpInterface,
                              ["getPrecisionPolicy"]>;
/// Data movement: follows its operand, and a cast commutes with it.
defvar Llmc_PrecisionMovesData =
    DeclareOpInterfaceMethods<Llmc_PrecisionPolicyOpInterface,
                              ["commutesWithCast"]>;

def Llmc_PaddableOpInterface : OpInterface<"PaddableOpInterface"> {
  let cppNamespace = "::mlir::llmc";
  let description = [{
    How an op takes part in nice-number padding (`llmc-pad-shapes`,
    docs/padding.md). The pass pads one dim of a parameter (vocab 50257 ->
    50304) and follows it through the graph: every op that holds a value
    with a padded dim says which other dims of its operands and results are
    the same dim (they are padded together), or why it cannot be padded.

    The contract an op promises when it ties dims: if every tied operand
    dim is padded with zeros, every tied result dim is padded with zeros
    and everything else it computes is unchanged. An op that reduces or
    normalizes over the padded dim either does so exactly on zeros (a sum,
    a contraction) or masks the padding itself (`cross_entropy`'s
    `classes`, `gather`'s `bound`), recorded by `notePadding`.
    The per-op answers live in dialects/llmc/LlmcPadRules.cpp.
  }];
  let methods = [
    InterfaceMethod<[{
        `value` (one of this op's operands or results) has its dim `dim`
        padded. Appends the other (value, dim) pairs of this op that must
        be padded with it to `ties`, or returns failure with `reason` set
        (a phrase: "normalizes over it", ...).
      }],
      "::mlir::LogicalResult", "getPadTies",
      (ins "::mlir::Value":$value, "int64_t":$dim,
           "::llvm::SmallVectorImpl<::mlir::llmc::PadTie> &":$ties,
           "std::string &":$reason)>,
    InterfaceMethod<[{
        Called once the op's types are padded, for each operand dim that
        was padded from `realSize`: ops that must not read the padding
        (gather, cross_entropy) record the real size in an attribute.
      }],
      "void", "notePadding",
      (ins "::mlir::Value":$operand, "int64_t":$dim, "int64_t":$realSize),
      "", [{ return; }]>
  ];
}

/// Ops that declare their padding rules in LlmcPadRules.cpp.
defvar Llmc_Paddable = DeclareOpInterfaceMethods<Llmc_PaddableOpInterface>;
/// The same, with their own notePadding.
defvar Llmc_PaddableMasked =
    DeclareOpInterfaceMethods<Llmc_PaddableOpInterface, ["notePadding"]>;

#endif // LLMC_INTERFACES_TD
