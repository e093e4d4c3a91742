// A bigram language model over bytes (vocab 256, batch 4, seq 32) written
// with elementwise ops, matmul and reductions only: one-hot tokens times a
// [V, V] table give the logits, and the loss is a log-softmax cross-entropy
// spelled out. Its gradient needs no fused backward op, so with SGD it runs
// the whole GPU pipeline on the forward emitters alone (test/gpu/train,
// test/lit/pipeline/compile.mlir).

func.func @forward(
    %w: tensor<256x256xf32> {llmc.param = "w", llmc.init_rule = "normal(0.02)"},
    %b: tensor<256xf32> {llmc.param = "b", llmc.init_rule = "zeros"},
    %idx: tensor<4x32xi64> {llmc.input = "idx"},
    %tgt: tensor<4x32xi64> {llmc.input = "targets"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  %classes = llmc.iota dim 0 : tensor<256xi64>
  %idx3 = llmc.reshape %idx : tensor<4x32xi64> -> tensor<4x32x1xi64>
  %hot1 = llmc.compare eq, %idx3, %classes : (tensor<4x32x1xi64>, tensor<256xi64>) -> tensor<4x32x256xi1>
  %hot = llmc.cast %hot1 : tensor<4x32x256xi1> -> tensor<4x32x256xf32>
  %z0 = llmc.matmul %hot, %w : (tensor<4x32x256xf32>, tensor<256x256xf32>) -> tensor<4x32x256xf32>
  %z = llmc.add %z0, %b : (tensor<4x32x256xf32>, tensor<256xf32>) -> tensor<4x32x256xf32>
  %e = llmc.exp %z : tensor<4x32x256xf32>
  %s = llmc.reduce_sum %e axes [2] keepdims : (tensor<4x32x256xf32>) -> tensor<4x32x1xf32>
  %ls = llmc.log %s : tensor<4x32x1xf32>
  %logp = llmc.sub %z, %ls : (tensor<4x32x256xf32>, tensor<4x32x1xf32>) -> tensor<4x32x256xf32>
  %tgt3 = llmc.reshape %tgt : tensor<4x32xi64> -> tensor<4x32x1xi64>
  %thot1 = llmc.compare eq, %tgt3, %classes : (tensor<4x32x1xi64>, tensor<256xi64>) -> tensor<4x32x256xi1>
  %thot = llmc.cast %thot1 : tensor<4x32x256xi1> -> tensor<4x32x256xf32>
  %picked = llmc.mul %logp, %thot : (tensor<4x32x256xf32>, tensor<4x32x256xf32>) -> tensor<4x32x256xf32>
  %total = llmc.reduce_sum %picked axes [0, 1, 2] : (tensor<4x32x256xf32>) -> tensor<f32>
  %scale = llmc.constant dense<-0.0078125> : tensor<f32>
  %loss = llmc.mul %total, %scale : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}
