// RUN: llmc-opt %s --split-input-file --llmc-lower-precision=precision=bf16 | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-lower-precision=precision=fp16 | FileCheck %s --check-prefix=F16

// DeBERTa-v2 fills masked scores with torch.finfo(scores.dtype).min, which
// the f32 export bakes in as -FLT_MAX. Under bf16 the scores are bf16 and
// the fill joins them as bf16's own finfo.min (-3.39e38), as in the model
// run under autocast; a cast would round it to -inf, and softmax of a
// padded query row, every score masked, to NaN.
// CHECK-LABEL: func.func @forward
// CHECK: %[[MIN:.+]] = llmc.constant dense<-3.389530e+38> : tensor<bf16>
// CHECK-NOT: llmc.cast %{{.+}} : tensor<f32> -> tensor<bf16>
// CHECK: llmc.where %{{[^ ]+}}, %[[MIN]], %{{[^ ]+}} : (tensor<1x4x4xi1>, tensor<bf16>, tensor<1x4x4xbf16>)
// F16-LABEL: func.func @forward
// F16: %[[MIN:.+]] = llmc.constant dense<-6.550400e+04> : tensor<f16>
// F16: llmc.where %{{[^ ]+}}, %[[MIN]], %{{[^ ]+}} : (tensor<1x4x4xi1>, tensor<f16>, tensor<1x4x4xf16>)
func.func @forward(%q: tensor<1x4x8xf32>, %k: tensor<1x8x4xf32>, %masked: tensor<1x4x4xi1>) -> tensor<1x4x4xf32> {
  %min = llmc.constant dense<-3.40282347E+38> : tensor<f32>
  %s = llmc.matmul %q, %k : (tensor<1x4x8xf32>, tensor<1x8x4xf32>) -> tensor<1x4x4xf32>
  %w = llmc.where %masked, %min, %s : (tensor<1x4x4xi1>, tensor<f32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %p = llmc.softmax %w {axis = -1 : i64} : tensor<1x4x4xf32>
  return %p : tensor<1x4x4xf32>
}

// -----

// Any other value is cast (rounded) as before: -1e38 is no finfo idiom.
// (@forward: the pass lowers the forward graph only.)
// CHECK-LABEL: func.func @forward
// CHECK: %[[C:.+]] = llmc.constant dense<-9.99999968E+37> : tensor<f32>
// CHECK: llmc.cast %[[C]] : tensor<f32> -> tensor<bf16>
func.func @forward(%q: tensor<1x4x8xf32>, %k: tensor<1x8x4xf32>, %masked: tensor<1x4x4xi1>) -> tensor<1x4x4xf32> {
  %fill = llmc.constant dense<-1.0e38> : tensor<f32>
  %s = llmc.matmul %q, %k : (tensor<1x4x8xf32>, tensor<1x8x4xf32>) -> tensor<1x4x4xf32>
  %w = llmc.where %masked, %fill, %s : (tensor<1x4x4xi1>, tensor<f32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %p = llmc.softmax %w {axis = -1 : i64} : tensor<1x4x4xf32>
  return %p : tensor<1x4x4xf32>
}
