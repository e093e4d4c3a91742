// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues --llmc-fuse-elementwise --split-input-file | FileCheck %s
// RUN: llmc-opt %s --llmc-form-kernels --llmc-fuse-epilogues --llmc-fuse-elementwise="norm-prologue=false norm-epilogue=false" --split-input-file | FileCheck %s --check-prefix=OFF

// Norm prologues and epilogues of llmc-fuse-elementwise (docs/fusion.md):
// a layer norm (or norm gradient) whose rows a warp row kernel takes joins
// the elementwise group that computes its row operand and the one that
// reads its row result.

// The bf16 residual add into the next layer norm: one group in the norm's
// place that yields the new f32 residual (read by two later groups) and
// the bf16 normalized output.
// CHECK-LABEL: func.func @residual_norm
// CHECK:       %[[K:.+]]:2 = llmc.kernel -> (tensor<2x4x8xf32>, tensor<2x4x8xbf16>) {
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %arg0 : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK-NEXT:    %[[A:.+]] = llmc.add %arg1, %[[C]]
// CHECK-NEXT:    %[[N:.+]] = llmc.layer_norm %[[A]] weight %arg2 bias %arg3
// CHECK-NEXT:    %[[Y:.+]] = llmc.cast %[[N]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK-NEXT:    llmc.yield %[[A]], %[[Y]]
// CHECK-NEXT:  }
// CHECK:       llmc.kernel
// CHECK-NEXT:    llmc.mul %[[K]]#0, %[[K]]#0
// OFF-LABEL:   func.func @residual_norm
// OFF:         llmc.kernel -> (tensor<2x4x8xf32>) {
// OFF-NEXT:      llmc.cast %arg0
// OFF-NEXT:      llmc.add
// OFF-NEXT:      llmc.yield
// OFF:         llmc.kernel -> (tensor<2x4x8xbf16>) {
// OFF-NEXT:      llmc.layer_norm
// OFF-NEXT:      llmc.cast
func.func @residual_norm(%mm: tensor<2x4x8xbf16>, %res: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %0 = llmc.cast %mm : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  %1 = llmc.add %res, %0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %2 = llmc.layer_norm %1 weight %w bias %b {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %3 = llmc.cast %2 : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  %4 = llmc.mul %1, %1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %3, %1, %4 : tensor<2x4x8xbf16>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// An f32 model has no cast: the add alone is the prologue; the norm over
// the two trailing axes (rows of 32) fuses the same way.
// CHECK-LABEL: func.func @f32_two_axes
// CHECK:       llmc.kernel -> (tensor<2x4x8xf32>) {
// CHECK-NEXT:    %[[A:.+]] = llmc.add %arg0, %arg1
// CHECK-NEXT:    %[[N:.+]] = llmc.layer_norm %[[A]] {axis = 1 : i64}
// CHECK-NEXT:    llmc.yield %[[N]]
// OFF-LABEL:   func.func @f32_two_axes
// OFF-COUNT-2: llmc.kernel
func.func @f32_two_axes(%x: tensor<2x4x8xf32>, %h: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = llmc.add %x, %h : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %1 = llmc.layer_norm %0 {axis = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %1 : tensor<2x4x8xf32>
}

// -----

// The backward of a bf16 block: the cotangent widened in the gradient's
// load, the residual-gradient add and its narrowing cast in its store; the
// group yields the parameter gradient, the f32 sum and its bf16 copy, not
// dx.
// CHECK-LABEL: func.func @norm_grad_epilogue
// CHECK:       llmc.kernel -> (tensor<8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xbf16>) {
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %arg1 : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK-NEXT:    %[[G:.+]]:2 = llmc.layer_norm_grad %arg0, %[[C]] weight %arg2
// CHECK-NEXT:    %[[A:.+]] = llmc.add %arg3, %[[G]]#0
// CHECK-NEXT:    %[[N:.+]] = llmc.cast %[[A]] : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK-NEXT:    llmc.yield %[[G]]#1, %[[A]], %[[N]]
// CHECK-NOT:   llmc.kernel
// OFF-LABEL:   func.func @norm_grad_epilogue
// OFF-COUNT-2: llmc.kernel
func.func @norm_grad_epilogue(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x8xbf16>, %w: tensor<8xf32>, %dres: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<8xf32>) {
  %0 = llmc.cast %dy : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  %1:2 = llmc.layer_norm_grad %x, %0 weight %w {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>)
  %2 = llmc.add %dres, %1#0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %3 = llmc.cast %2 : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  return %2, %3, %1#1 : tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<8xf32>
}

// -----

// dx read by two groups: the cast and the later add both join the
// gradient's group (the add's other operand exists there), and dx is not
// written at all.
// CHECK-LABEL: func.func @dx_two_readers
// CHECK:       llmc.kernel -> (tensor<2x4x8xbf16>, tensor<2x4x8xf32>) {
// CHECK-NEXT:    %[[G:.+]] = llmc.rms_norm_grad %arg0, %arg1
// CHECK-NEXT:    llmc.cast %[[G]]
// CHECK-NEXT:    llmc.add %arg2, %[[G]]
// CHECK-NEXT:    llmc.yield
// OFF-LABEL:   func.func @dx_two_readers
// OFF-COUNT-3: llmc.kernel
func.func @dx_two_readers(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>, %dres: tensor<2x4x8xf32>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xf32>) {
  %0 = llmc.rms_norm_grad %x, %dy : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %1 = llmc.cast %0 : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
  %2 = llmc.add %dres, %0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %1, %2 : tensor<2x4x8xbf16>, tensor<2x4x8xf32>
}

// -----

// Negative: the add broadcasts a row vector (the row kernel loads every
// operand at the row's offsets), and a layer norm over rows of 6 has no
// warp row kernel: three groups stay.
// CHECK-LABEL: func.func @not_row_shaped
// CHECK:       llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.add
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.layer_norm
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<4x6xf32>) {
// CHECK-NEXT:    llmc.add
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<4x6xf32>) {
// CHECK-NEXT:    llmc.layer_norm
// CHECK-NEXT:    llmc.yield
func.func @not_row_shaped(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %y: tensor<4x6xf32>) -> (tensor<4x8xf32>, tensor<4x6xf32>) {
  %0 = llmc.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = llmc.layer_norm %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = llmc.add %y, %y : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %3 = llmc.layer_norm %2 : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %1, %3 : tensor<4x8xf32>, tensor<4x6xf32>
}

// -----

// Negative: a group between the add and the norm reads the sum (the add
// would have to move down past it), for the layer norm and for the RMS
// norm after it.
// CHECK-LABEL: func.func @reader_between
// CHECK:       llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.add
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<8xf32>) {
// CHECK-NEXT:    llmc.reduce_sum
// CHECK:       llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.layer_norm
// CHECK:       llmc.kernel -> (tensor<4x8xf32>) {
// CHECK-NEXT:    llmc.rms_norm
// CHECK-NEXT:    llmc.yield
func.func @reader_between(%x: tensor<4x8xf32>, %h: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) {
  %0 = llmc.add %x, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = llmc.reduce_sum %0 axes [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %2 = llmc.layer_norm %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = llmc.rms_norm %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2, %1, %3 : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>
}

// -----

// A widened value also read by a reduce_sum and a norm output also read
// as f32: the norm's load computes the cast and stores the f32 copy once,
// its store writes both the f32 output and its bf16 cast (one kernel
// instead of three; nothing recomputed, nothing read twice).
// CHECK-LABEL: func.func @shared_values
// CHECK:       %[[K:.+]]:3 = llmc.kernel -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>) {
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %arg0 : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[N:.+]] = llmc.layer_norm %[[C]]
// CHECK-NEXT:    %[[Y:.+]] = llmc.cast %[[N]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT:    llmc.yield %[[C]], %[[N]], %[[Y]]
// CHECK:       llmc.reduce_sum %[[K]]#0
// OFF-LABEL:   func.func @shared_values
// OFF-COUNT-4: llmc.kernel
func.func @shared_values(%x: tensor<4x8xbf16>) -> (tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>) {
  %0 = llmc.cast %x : tensor<4x8xbf16> -> tensor<4x8xf32>
  %1 = llmc.layer_norm %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = llmc.reduce_sum %0 axes [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %3 = llmc.cast %1 : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %2, %1, %3 : tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>
}

// -----

// Llama's bf16 residual add into the next RMS norm, at Llama 1B's width
// (rows of 2048, the longest a warp keeps in registers): one group in the
// norm's place that yields the new f32 residual and the bf16 normalized
// output, as for GPT-2's layer norm.
// CHECK-LABEL: func.func @rms_residual_norm
// CHECK:       %[[K:.+]]:2 = llmc.kernel -> (tensor<3x2048xf32>, tensor<3x2048xbf16>) {
// CHECK-NEXT:    %[[C:.+]] = llmc.cast %arg0 : tensor<3x2048xbf16> -> tensor<3x2048xf32>
// CHECK-NEXT:    %[[A:.+]] = llmc.add %arg1, %[[C]]
// CHECK-NEXT:    %[[N:.+]] = llmc.rms_norm %[[A]] weight %arg2
// CHECK-NEXT:    %[[Y:.+]] = llmc.cast %[[N]] : tensor<3x2048xf32> -> tensor<3x2048xbf16>
// CHECK-NEXT:    llmc.yield %[[A]], %[[Y]]
// CHECK-NEXT:  }
// CHECK-NOT:   llmc.kernel
// OFF-LABEL:   func.func @rms_residual_norm
// OFF:         llmc.kernel -> (tensor<3x2048xf32>) {
// OFF-NEXT:      llmc.cast %arg0
// OFF-NEXT:      llmc.add
// OFF-NEXT:      llmc.yield
// OFF:         llmc.kernel -> (tensor<3x2048xbf16>) {
// OFF-NEXT:      llmc.rms_norm
// OFF-NEXT:      llmc.cast
func.func @rms_residual_norm(%mm: tensor<3x2048xbf16>, %res: tensor<3x2048xf32>, %w: tensor<2048xf32>) -> (tensor<3x2048xbf16>, tensor<3x2048xf32>) {
  %0 = llmc.cast %mm : tensor<3x2048xbf16> -> tensor<3x2048xf32>
  %1 = llmc.add %res, %0 : (tensor<3x2048xf32>, tensor<3x2048xf32>) -> tensor<3x2048xf32>
  %2 = llmc.rms_norm %1 weight %w {epsilon = 1.0e-05 : f64} : (tensor<3x2048xf32>, tensor<2048xf32>) -> tensor<3x2048xf32>
  %3 = llmc.cast %2 : tensor<3x2048xf32> -> tensor<3x2048xbf16>
  return %3, %1 : tensor<3x2048xbf16>, tensor<3x2048xf32>
}

// -----

// An f32 RMS norm over the two trailing axes (rows of 32) takes the add;
// its f32 result read by an elementwise group of the row's shape is an
// epilogue (stored once, as the norm's own result).
// CHECK-LABEL: func.func @rms_f32_prologue_epilogue
// CHECK:       llmc.kernel -> (tensor<2x4x8xf32>) {
// CHECK-NEXT:    %[[A:.+]] = llmc.add %arg0, %arg1
// CHECK-NEXT:    %[[N:.+]] = llmc.rms_norm %[[A]] {axis = 1 : i64}
// CHECK-NEXT:    %[[M:.+]] = llmc.mul %[[N]], %arg2
// CHECK-NEXT:    llmc.yield %[[M]]
// CHECK-NOT:   llmc.kernel
// OFF-LABEL:   func.func @rms_f32_prologue_epilogue
// OFF-COUNT-3: llmc.kernel
func.func @rms_f32_prologue_epilogue(%x: tensor<2x4x8xf32>, %h: tensor<2x4x8xf32>, %g: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = llmc.add %x, %h : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %1 = llmc.rms_norm %0 {axis = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %2 = llmc.mul %1, %g : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %2 : tensor<2x4x8xf32>
}

// -----

// Negative: RMS norms without a warp row kernel keep their block kernel
// and take no prologue: rows of 4100 (past the 2048 a warp holds in
// registers) and rows of 6 (not whole 4-element vectors).
// CHECK-LABEL: func.func @rms_no_warp_kernel
// CHECK:       llmc.kernel -> (tensor<2x4100xf32>) {
// CHECK-NEXT:    llmc.add
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<2x4100xf32>) {
// CHECK-NEXT:    llmc.rms_norm
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<4x6xf32>) {
// CHECK-NEXT:    llmc.add
// CHECK-NEXT:    llmc.yield
// CHECK:       llmc.kernel -> (tensor<4x6xf32>) {
// CHECK-NEXT:    llmc.rms_norm
// CHECK-NEXT:    llmc.yield
func.func @rms_no_warp_kernel(%x: tensor<2x4100xf32>, %y: tensor<4x6xf32>) -> (tensor<2x4100xf32>, tensor<4x6xf32>) {
  %0 = llmc.add %x, %x : (tensor<2x4100xf32>, tensor<2x4100xf32>) -> tensor<2x4100xf32>
  %1 = llmc.rms_norm %0 : (tensor<2x4100xf32>) -> tensor<2x4100xf32>
  %2 = llmc.add %y, %y : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %3 = llmc.rms_norm %2 : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %1, %3 : tensor<2x4100xf32>, tensor<4x6xf32>
}
