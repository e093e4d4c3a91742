// The smallest masked-diffusion LM (docs/trainer.md, "Data modes"): bytes
// (vocab 256) plus a mask token 256, batch 4 x seq 32, inputs as in
// test/models/export_llada.py (clean tokens, mask, p_mask). Each position's
// logits are a row of a table picked by its noisy token, so a masked
// position (token 256) can only learn the byte frequencies: enough for the
// masked-token loss to fall, in milliseconds a step on the CPU.
//   loss = sum(mask * CE(w[where(mask, 256, idx)], idx) / p_mask) / (B * T)
func.func @forward(
    %w: tensor<257x257xf32> {llmc.param = "w", llmc.init_rule = "normal(0.02)"},
    %idx: tensor<4x32xi64> {llmc.input = "idx"},
    %mask: tensor<4x32xi64> {llmc.input = "mask"},
    %p: tensor<4x32xf32> {llmc.input = "p_mask"})
    -> (tensor<f32> {llmc.output = "loss"}) {
  %zero = llmc.constant dense<0> : tensor<i64>
  %maskid = llmc.constant dense<256> : tensor<i64>
  %masked = llmc.compare ne, %mask, %zero : (tensor<4x32xi64>, tensor<i64>) -> tensor<4x32xi1>
  %noisy = llmc.where %masked, %maskid, %idx : (tensor<4x32xi1>, tensor<i64>, tensor<4x32xi64>) -> tensor<4x32xi64>
  %logits = llmc.gather %w, %noisy axis 0 : (tensor<257x257xf32>, tensor<4x32xi64>) -> tensor<4x32x257xf32>
  %ce = llmc.cross_entropy none %logits, %idx : (tensor<4x32x257xf32>, tensor<4x32xi64>) -> tensor<4x32xf32>
  %m = llmc.cast %masked : tensor<4x32xi1> -> tensor<4x32xf32>
  %weight = llmc.div %m, %p : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %wce = llmc.mul %ce, %weight : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %total = llmc.reduce_sum %wce axes [0, 1] : (tensor<4x32xf32>) -> tensor<f32>
  %scale = llmc.constant dense<0.0078125> : tensor<f32>
  %loss = llmc.mul %total, %scale : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}
