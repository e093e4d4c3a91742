// The gate is f32: a bf16 result is refused rather than cast.
// RUN: not llmc-opt %s --llmc-inject-nan="op=llmc.cast#0" 2>&1 | FileCheck %s --check-prefix=BF16
// BF16: error: llmc-inject-nan: the op's result is 'tensor<2x8xbf16>'; the NaN gate needs an f32 tensor
func.func @forward(%x: tensor<2x8xf32> {llmc.input = "x"}) -> (tensor<2x8xbf16> {llmc.output = "y"}) {
  %0 = llmc.cast %x : tensor<2x8xf32> -> tensor<2x8xbf16>
  return %0 : tensor<2x8xbf16>
}
