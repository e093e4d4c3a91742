// RUN: llmc run %s --inputs %S/Inputs/tiny-lm.json | FileCheck %s
// RUN: llmc run %s --inputs %S/Inputs/tiny-lm.safetensors | FileCheck %s
// RUN: llmc run %s --inputs %S/Inputs/tiny-lm.json -o %t.json && FileCheck %s --check-prefix=JSON < %t.json

// A one-layer language model on a vocabulary of 3 with an embedding of
// width 2: embedding, causal attention (q = k = v = x), tied output matrix,
// cross-entropy with one ignored target.
//
// Position 0 attends to itself only, so its output is its embedding and its
// logits are x . wte rows. For idx 0 = (1, 0): logits (1, 0, 1); target 1:
// loss0 = log(2e + 1) - 0 = 1.86199480. Position 0 of batch 1 (idx 2 =
// (1, 1)): logits (1, 1, 2); target 0: log(2e + e^2) - 1 = 1.55144471.
// Position 1 of batch 0 (idx 1 = (0, 1)) scores keys (1, 0), (0, 1) as
// (0, 1/sqrt 2): weights (0.33024, 0.66976), logits (0.33024, 0.66976, 1);
// target 2: 0.80226. The mean is over the 5 targets that are not -100.

// CHECK: loss: f32[] = 1.279821{{[0-9]*}}
// CHECK-NEXT: per_token: f32[2, 3] = [1.8619948{{[0-9]*}}, 0.80226{{[0-9]*}}, 0, 1.5514447{{[0-9]*}}, {{.*}}]

// JSON: "loss":{"dtype":"f32","shape":[],"values":1.279821{{[0-9]*}}}
// JSON-SAME: "per_token":{"dtype":"f32","shape":[2,3],"values":{{\[\[}}1.8619948{{[0-9]*}},0.80226{{[0-9]*}},0.0],[1.5514447{{[0-9]*}},

func.func @forward(
    %wte: tensor<3x2xf32> {llmc.param = "wte",
                           llmc.init = dense<[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]> : tensor<3x2xf32>},
    %idx: tensor<2x3xi64> {llmc.input = "idx"},
    %tgt: tensor<2x3xi64> {llmc.input = "tgt"})
    -> (tensor<f32> {llmc.output = "loss"}, tensor<2x3xf32> {llmc.output = "per_token"}) {
  %x = llmc.gather %wte, %idx axis 0 : (tensor<3x2xf32>, tensor<2x3xi64>) -> tensor<2x3x2xf32>
  %h = llmc.reshape %x : tensor<2x3x2xf32> -> tensor<2x1x3x2xf32>
  %a = llmc.attention %h, %h, %h {causal} : (tensor<2x1x3x2xf32>, tensor<2x1x3x2xf32>, tensor<2x1x3x2xf32>) -> tensor<2x1x3x2xf32>
  %y = llmc.reshape %a : tensor<2x1x3x2xf32> -> tensor<2x3x2xf32>
  %logits = llmc.matmul %y, %wte {transpose_rhs} : (tensor<2x3x2xf32>, tensor<3x2xf32>) -> tensor<2x3x3xf32>
  %loss = llmc.cross_entropy mean %logits, %tgt : (tensor<2x3x3xf32>, tensor<2x3xi64>) -> tensor<f32>
  %each = llmc.cross_entropy none %logits, %tgt : (tensor<2x3x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  return %loss, %each : tensor<f32>, tensor<2x3xf32>
}
