//===- LlmcShapeOps.td - Data movement and reductions ------*- tablegen -*-===//
//
// Ops that move, select or reduce elements without arithmetic of their own:
// constants, iota, reshape, transpose, broadcast_to, slice, concat, split,
// gather, gather_elements and the reductions. Axes are non-negative here; the
// importers normalize ONNX's negative axes.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_SHAPE_OPS_TD
#define LLMC_SHAPE_OPS_TD

include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Llmc_ConstantOp : Llmc_Op<"constant", [ConstantLike, Pure,
                                          Llmc_PrecisionFollows,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "constant tensor";
  let description = [{
    A tensor given by a dense elements attribute (a splat or every value).
    Parameters are not constants: they are function arguments, so that
    autodiff and the optimizer can see them.

    ```mlir
    %zero = llmc.constant dense<0.0> : tensor<f32>
    %perm = llmc.constant dense<[0, 2, 1]> : tensor<3xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Llmc_IotaOp : Llmc_Op<"iota", [Pure, Llmc_PrecisionFollows]> {
  let summary = "start + step * index along one dimension";
  let description = [{
    Fills the result with `start + step * i`, where `i` is the element's index
    along `dimension`; the values repeat along the other dims. It is ONNX
    Range for a static length, and the position ids of an embedding.

    ```mlir
    %pos = llmc.iota dim 0 : tensor<1024xi64>
    %col = llmc.iota dim 1 {start = 0.5, step = 2.0} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Llmc_I64Attr:$dimension,
                       DefaultValuedAttr<F64Attr, "0.0">:$start,
                       DefaultValuedAttr<F64Attr, "1.0">:$step);
  let results = (outs Llmc_NumericTensor:$result);
  let assemblyFormat = "`dim` $dimension attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Llmc_ReshapeOp : Llmc_Op<"reshape", [Pure, Llmc_Differentiable,
                                          Llmc_PrecisionMovesData,
                                          Llmc_Paddable]> {
  let summary = "same elements, new shape (row-major)";
  let description = [{
    Reinterprets the row-major element sequence with the result's shape. The
    element types are equal and, where both shapes are static, so are the
    element counts. Reshape of reshape canonicalizes to one reshape, and a
    reshape to the operand's own type folds away.

    ```mlir
    %y = llmc.reshape %x : tensor<2x1024x768xf32> -> tensor<2x1024x12x64xf32>
    ```
  }];
  let arguments = (ins Llmc_Tensor:$input);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Llmc_TransposeOp : Llmc_Op<"transpose", [Pure, InferTypeOpAdaptor,
                                              Llmc_Differentiable,
                                              Llmc_PrecisionMovesData, Llmc_Paddable]> {
  let summary = "permutation of the dimensions";
  let description = [{
    Result dim `i` is operand dim `permutation[i]` (numpy.transpose). The
    permutation lists every dim once. Transposes compose and the identity
    permutation folds away.

    ```mlir
    %y = llmc.transpose %x [0, 2, 1, 3] : (tensor<2x8x12x64xf32>) -> tensor<2x12x8x64xf32>
    ```
  }];
  let arguments = (ins Llmc_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "$input $permutation attr-dict `:` "
                       "functional-type(operands, results)";
  let hasFolder = 1;
}

def Llmc_BroadcastToOp : Llmc_Op<"broadcast_to", [Pure,
                                                   Llmc_Differentiable,
                                                   Llmc_PrecisionMovesData, Llmc_Paddable]> {
  let summary = "numpy broadcast to the result shape";
  let description = [{
    Repeats the operand along dims of size 1 and along new leading dims so
    that it has the result's shape (numpy.broadcast_to; ONNX Expand).
    Shapes align at the right; each operand dim equals the result dim or
    is 1.

    ```mlir
    %y = llmc.broadcast_to %x : tensor<1x8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Llmc_Tensor:$input);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Llmc_SliceOp : Llmc_Op<"slice", [Pure, InferTypeOpAdaptor,
                                      Llmc_Differentiable,
                                      Llmc_PrecisionMovesData]> {
  let summary = "strided window, one [start, limit) per dimension";
  let description = [{
    Takes elements `start, start + stride, ...` below `limit` in every dim.
    `starts`, `limits` and `strides` have one entry per dim, with
    `0 <= start <= limit <= size` and `stride >= 1` (the importer clamps
    ONNX's negative and out-of-range bounds).

    ```mlir
    %q = llmc.slice %qkv starts [0, 0, 0] limits [2, 8, 64] strides [1, 1, 1] : (tensor<2x8x192xf32>) -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins Llmc_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "$input `starts` $starts `limits` $limits `strides` "
                       "$strides attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Llmc_ConcatOp : Llmc_Op<"concat", [Pure, InferTypeOpAdaptor,
                                        Llmc_Differentiable, Llmc_PrecisionFollows]> {
  let summary = "join tensors along one dimension";
  let description = [{
    Concatenates the operands along `axis`; all other dims and the element
    type agree.

    ```mlir
    %y = llmc.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Llmc_Tensor>:$inputs, Llmc_I64Attr:$axis);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "$inputs `axis` $axis attr-dict `:` "
                       "functional-type($inputs, $result)";
  let hasFolder = 1;
}

def Llmc_SplitOp : Llmc_Op<"split", [Pure, InferTypeOpAdaptor,
                                      Llmc_Differentiable, Llmc_PrecisionFollows]> {
  let summary = "cut a tensor into pieces along one dimension";
  let description = [{
    Cuts the operand along `axis` into pieces of the given `sizes`, which sum
    to the dim's size. This is how q, k and v come out of a fused projection.

    ```mlir
    %q, %k, %v = llmc.split %qkv axis 2 sizes [64, 64, 64] : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
    ```
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_I64Attr:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Llmc_Tensor>:$results);
  let assemblyFormat = "$input `axis` $axis `sizes` $sizes attr-dict `:` "
                       "functional-type($input, $results)";
}

def Llmc_GatherOp : Llmc_Op<"gather", [Pure, InferTypeOpAdaptor,
                                        Llmc_Differentiable, Llmc_PrecisionFollows,
                                        Llmc_PaddableMasked]> {
  let summary = "take slices of data at integer indices (embedding lookup)";
  let description = [{
    ONNX Gather: the result shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`, and each result element is data at the index
    found in `indices` for `axis`. With `axis = 0` on a `[vocab, d]` table
    this is an embedding lookup. Indices are `i32` or `i64`, in range.

    `bound` (set by `llmc-pad-shapes` on a padded table): the real size
    along `axis`. Indices are checked against it and negative ones count
    back from it, so the padding rows past it are never read and a token
    id of the real vocabulary or above stays an error.

    ```mlir
    %e = llmc.gather %wte, %idx axis 0 : (tensor<50257x768xf32>, tensor<8x1024xi64>) -> tensor<8x1024x768xf32>
    %p = llmc.gather %wte_padded, %idx axis 0 {bound = 50257 : i64} : (tensor<50304x768xf32>, tensor<8x1024xi64>) -> tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins Llmc_Tensor:$data, Llmc_IndexTensor:$indices,
                       Llmc_I64Attr:$axis, OptionalAttr<Llmc_I64Attr>:$bound);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `axis` $axis attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The size that indices are checked against: `bound` or the data's
    /// size along the axis.
    int64_t getIndexBound();
  }];
}

def Llmc_GatherElementsOp : Llmc_Op<"gather_elements",
    [Pure, InferTypeOpAdaptor, Llmc_Differentiable, Llmc_PrecisionFollows]> {
  let summary = "pick one element per index along an axis";
  let description = [{
    ONNX GatherElements (torch.gather): `indices` has the operand's rank and
    the result has the indices' shape; `result[i][j] = data[i][indices[i][j]]`
    for `axis = 1`. Exporters use it to pick the target logit in a
    cross-entropy.

    ```mlir
    %t = llmc.gather_elements %logp, %tgt axis 1 : (tensor<16x512xf32>, tensor<16x1xi64>) -> tensor<16x1xf32>
    ```
  }];
  let arguments = (ins Llmc_Tensor:$data, Llmc_IndexTensor:$indices,
                       Llmc_I64Attr:$axis);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `axis` $axis attr-dict `:` "
                       "functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Llmc_ReduceOp<string mnemonic, string what,
                    Trait precision = Llmc_PrecisionPolicy> :
    Llmc_Op<mnemonic, [Pure, InferTypeOpAdaptor, Llmc_Differentiable,
                       Llmc_Paddable, precision]> {
  let summary = what # " over the given axes";
  let description = "Reduces the operand over `axes` (distinct, in range) to "
    # "its " # what # ". Reduced dims are dropped, or kept with size 1 under "
    # "`keepdims`.\n\n```mlir\n%m = llmc." # mnemonic # " %x axes [2] "
    # "keepdims : (tensor<2x8x768xf32>) -> tensor<2x8x1xf32>\n```";
  let arguments = (ins Llmc_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdims);
  let results = (outs Llmc_NumericTensor:$result);
  let assemblyFormat = "$input `axes` $axes (`keepdims` $keepdims^)? "
                       "attr-dict `:` functional-type(operands, results)";
}

def Llmc_ReduceSumOp : Llmc_ReduceOp<"reduce_sum", "sum">;
def Llmc_ReduceMeanOp : Llmc_ReduceOp<"reduce_mean", "mean">;
// The maximum of rounded values is exact: it follows its operand.
def Llmc_ReduceMaxOp : Llmc_ReduceOp<"reduce_max", "maximum",
                                     Llmc_PrecisionFollows>;

#endif // LLMC_SHAPE_OPS_TD
