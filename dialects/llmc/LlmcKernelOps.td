//===- LlmcKernelOps.td - Kernel groups ---------------------*- tablegen -*-===//
//
// The kernel-level IR (docs/kernel-ir.md): `llmc.kernel` groups the ops that
// become one kernel launch or one library call, and `llmc.yield` ends the
// group. llmc-form-kernels puts every compute op in a group of its own;
// fusion passes (llmc-fuse-epilogues) merge groups; the CUDA backend lowers
// one group at a time.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_KERNEL_OPS_TD
#define LLMC_KERNEL_OPS_TD

include "mlir/Interfaces/SideEffectInterfaces.td"

def Llmc_KernelOp : Llmc_Op<"kernel", [RecursiveMemoryEffects,
    SingleBlock]> {
  let summary = "a group of ops that runs as one kernel launch or library call";
  let description = [{
    The region holds the ops of one launch: a generated kernel or one
    cuBLASLt call (later cuDNN). It has one block without arguments, ended
    by `llmc.yield`, whose operands are the group's results. The region is
    not isolated from above: its ops read values of the enclosing function
    directly (IREE's `flow.dispatch.region` is the model), so that a group
    is formed and merged without rewriting its operands. Values defined in
    the region are visible only through the yield.

    Before codegen every compute op of a function sits in a group of its
    own (`llmc-form-kernels`); `llmc.reshape` (an alias of its operand's
    buffer) and `llmc.constant` (a buffer with initial data) stay outside,
    because they launch nothing. A fused group holds several ops, e.g. a
    matmul and the bias add of its cuBLASLt epilogue (`llmc-fuse-epilogues`):

    ```mlir
    %y = llmc.kernel -> (tensor<32x96xf32>) {
      %0 = llmc.matmul %x, %w : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
      %1 = llmc.add %0, %b : (tensor<32x96xf32>, tensor<96xf32>) -> tensor<32x96xf32>
      llmc.yield %1 : tensor<32x96xf32>
    }
    ```

    `in_place` (set by `llmc-mark-in-place`) has one entry per result: the
    index of the function argument whose buffer the result is written into
    (the argument its `llmc.next` result replaces), or -1. The group reads
    that argument element for element and is its last reader, so the step
    needs no copy at its end.
  }];
  let arguments = (ins OptionalAttr<DenseI64ArrayAttr>:$in_place);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
    "(`->` `(` type($results)^ `)`)? attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The group's ops in order, the yield excluded.
    auto getGroupOps() { return getBody().front().without_terminator(); }
    /// The yield that ends the group.
    ::mlir::Operation *getYield() { return getBody().front().getTerminator(); }
  }];
}

def Llmc_YieldOp : Llmc_Op<"yield", [Pure, Terminator,
    HasParent<"KernelOp">]> {
  let summary = "the results of an llmc.kernel group";
  let description = [{
    Ends the block of an `llmc.kernel`; its operands become the group's
    results, in order and of the same types.

    ```mlir
    llmc.yield %1, %2 : tensor<8xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // LLMC_KERNEL_OPS_TD
