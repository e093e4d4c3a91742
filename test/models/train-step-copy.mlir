// A hand-written @train_step whose updates cannot happen in place, so the
// plan copies them into the parameters' buffers at the end of the step
// (llmc-mark-in-place leaves them unmarked, docs/kernel-ir.md):
//   w' = transpose(w)        reads w across elements
//   v' = v - lr * v          defined before the loss reads v
// The loss, mean(v^2), shrinks by (1 - lr)^2 per step. The token inputs
// are unused; they make the step look like a language model to the trainer.

func.func @train_step(
    %w: tensor<8x8xf32> {llmc.param = "w", llmc.init_rule = "normal(0.5)"},
    %v: tensor<64xf32> {llmc.param = "v", llmc.init_rule = "normal(0.5)"},
    %idx: tensor<2x4xi64> {llmc.input = "idx"},
    %tgt: tensor<2x4xi64> {llmc.input = "targets"},
    %lr: tensor<f32> {llmc.input = "lr"})
    -> (tensor<f32> {llmc.output = "loss"},
        tensor<8x8xf32> {llmc.next = 0 : i64},
        tensor<64xf32> {llmc.next = 1 : i64}) {
  %w1 = llmc.transpose %w [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %d = llmc.mul %v, %lr : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
  %v1 = llmc.sub %v, %d : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %sq = llmc.mul %v, %v : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %loss = llmc.reduce_mean %sq axes [0] : (tensor<64xf32>) -> tensor<f32>
  return %loss, %w1, %v1 : tensor<f32>, tensor<8x8xf32>, tensor<64xf32>
}
