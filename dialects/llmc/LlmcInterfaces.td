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

#endif // LLMC_INTERFACES_TD
