// RUN: llmc-opt %s --split-input-file --llmc-lower-precision=precision=fp16 | FileCheck %s --check-prefix=FP16
// RUN: llmc-opt %s --split-input-file --llmc-lower-precision=precision=tf32 | FileCheck %s --check-prefix=TF32

// fp16 is bf16's policy with f16 as the low type: the weight cast once at
// the parameter, the linear layer and its bias in f16, the norm and the
// softmax back in f32. tf32 adds no cast at all: every tensor stays f32 and
// the module says that its f32 matmuls run in TF32.
// FP16-LABEL: func.func @forward
// FP16-NEXT:    %[[WH:.+]] = llmc.cast %{{.+}} : tensor<16x8xf32> -> tensor<16x8xf16>
// FP16-NEXT:    %[[BH:.+]] = llmc.cast %{{.+}} : tensor<16xf32> -> tensor<16xf16>
// FP16-NEXT:    %[[N:.+]] = llmc.layer_norm {{.*}} -> tensor<4x8xf32>
// FP16-NEXT:    %[[NH:.+]] = llmc.cast %[[N]] : tensor<4x8xf32> -> tensor<4x8xf16>
// FP16-NEXT:    %[[WT:.+]] = llmc.transpose %[[WH]] [1, 0] : (tensor<16x8xf16>) -> tensor<8x16xf16>
// FP16-NEXT:    %[[Y:.+]] = llmc.matmul %[[NH]], %[[WT]] : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
// FP16-NEXT:    %[[Z:.+]] = llmc.add %[[Y]], %[[BH]] : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
// FP16-NEXT:    %[[ZF:.+]] = llmc.cast %[[Z]] : tensor<4x16xf16> -> tensor<4x16xf32>
// FP16-NEXT:    llmc.softmax %[[ZF]]{{.*}}: tensor<4x16xf32>
// FP16-NOT:     bf16
// TF32:       module attributes {llmc.precision = "tf32"}
// TF32-LABEL: func.func @forward
// TF32-NOT:     llmc.cast
// TF32:         llmc.matmul {{.*}} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// TF32-NOT:     llmc.cast
// TF32:         return
func.func @forward(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {llmc.param = "w"},
                   %b: tensor<16xf32> {llmc.param = "b"}) -> tensor<4x16xf32> {
  %n = llmc.layer_norm %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %wt = llmc.transpose %w [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y = llmc.matmul %n, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %z = llmc.add %y, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %s = llmc.softmax %z {axis = -1 : i64} : tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

// Attention and the loss under fp16: q/k/v in f16, attention yields f16,
// the logits are cast back to f32 for cross-entropy, as in bf16. tf32 leaves
// attention in f32 (its kernels compute in f32 on CUDA cores).
// FP16-LABEL: func.func @forward
// FP16:         llmc.attention {{.*}} -> tensor<1x2x4x8xf16>
// FP16:         %[[L:.+]] = llmc.matmul {{.*}} -> tensor<1x4x32xf16>
// FP16:         %[[LF:.+]] = llmc.cast %[[L]] : tensor<1x4x32xf16> -> tensor<1x4x32xf32>
// FP16:         llmc.cross_entropy mean %[[LF]], {{.*}} -> tensor<f32>
// TF32-LABEL: func.func @forward
// TF32-NOT:     f16
// TF32:         llmc.attention {{.*}} -> tensor<1x2x4x8xf32>
// TF32:         llmc.cross_entropy mean {{.*}} -> tensor<f32>
func.func @forward(%q: tensor<1x2x4x8xf32> {llmc.param = "q"},
                   %w: tensor<16x32xf32> {llmc.param = "w"},
                   %tgt: tensor<1x4xi64> {llmc.input = "tgt"}) -> tensor<f32> {
  %a = llmc.attention %q, %q, %q {causal} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %t = llmc.transpose %a [0, 2, 1, 3] : (tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32>
  %r = llmc.reshape %t : tensor<1x4x2x8xf32> -> tensor<1x4x16xf32>
  %l = llmc.matmul %r, %w : (tensor<1x4x16xf32>, tensor<16x32xf32>) -> tensor<1x4x32xf32>
  %loss = llmc.cross_entropy mean %l, %tgt : (tensor<1x4x32xf32>, tensor<1x4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
