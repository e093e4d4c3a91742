// RUN: llmc-opt %s --split-input-file --llmc-pad-shapes | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-pad-shapes=precision=bf16 | FileCheck %s --check-prefix=BF16

// GPT-2's tied vocabulary at its real size (B*T = 8192 tokens, d 768): the
// table is padded 50257 -> 50304 (the 128-wide tile; 50257 is not a
// multiple of 16 bytes), the gather keeps reading real rows only (`bound`:
// a token id >= 50257 is still out of range), and the loss masks the
// padding columns (`classes`): they never enter the logsumexp.
// CHECK-LABEL: module attributes {llmc.padding = [{extra_flops = {{.*}}, from = 50257 : i64, params = ["wte[0]"], to = 50304 : i64, why = "GEMMs {{.*}} per step on sm_90 (50257 is not a multiple of 4 elements){{.*}}"}]}
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    %[[W:.+]]: tensor<50304x768xf32> {llmc.param = "wte", llmc.real_shape = array<i64: 50257, 768>}
// CHECK:         llmc.gather %[[W]], %{{.+}} axis 0 {bound = 50257 : i64} : (tensor<50304x768xf32>, tensor<8x1024xi64>) -> tensor<8x1024x768xf32>
// CHECK:         %[[WT:.+]] = llmc.transpose %[[W]] [1, 0] : (tensor<50304x768xf32>) -> tensor<768x50304xf32>
// CHECK:         %[[L:.+]] = llmc.matmul %{{.+}}, %[[WT]] : (tensor<8192x768xf32>, tensor<768x50304xf32>) -> tensor<8192x50304xf32>
// CHECK:         llmc.cross_entropy mean %[[L]], %{{.+}} {classes = 50257 : i64} : (tensor<8192x50304xf32>, tensor<8192xi64>) -> tensor<f32>
// BF16-LABEL: func.func @forward
// BF16-SAME:    tensor<50304x768xf32>
// BF16:         llmc.cross_entropy mean {{.*}} {classes = 50257 : i64}
func.func @forward(%w: tensor<50257x768xf32> {llmc.param = "wte"},
                   %ids: tensor<8x1024xi64> {llmc.input = "idx"},
                   %t: tensor<8192xi64> {llmc.input = "targets"}) -> tensor<f32> {
  %e = llmc.gather %w, %ids axis 0 : (tensor<50257x768xf32>, tensor<8x1024xi64>) -> tensor<8x1024x768xf32>
  %x = llmc.reshape %e : tensor<8x1024x768xf32> -> tensor<8192x768xf32>
  %wt = llmc.transpose %w [1, 0] : (tensor<50257x768xf32>) -> tensor<768x50257xf32>
  %l = llmc.matmul %x, %wt : (tensor<8192x768xf32>, tensor<768x50257xf32>) -> tensor<8192x50257xf32>
  %loss = llmc.cross_entropy mean %l, %t : (tensor<8192x50257xf32>, tensor<8192xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// An untied lm_head with a bias, and logits that @forward also returns:
// weight rows and bias entries are padded together (8063 -> 8064, the
// textbook case: one 128-wide tile short), and the returned logits are
// sliced back to the model's 8063 columns.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    %{{.+}}: tensor<512x8064xf32> {llmc.param = "lm_head", llmc.real_shape = array<i64: 512, 8063>}
// CHECK-SAME:    %{{.+}}: tensor<8064xf32> {llmc.param = "bias", llmc.real_shape = array<i64: 8063>}
// CHECK-SAME:    -> (tensor<f32>, tensor<4096x8063xf32>)
// CHECK:         %[[Y:.+]] = llmc.matmul {{.*}} -> tensor<4096x8064xf32>
// CHECK:         %[[Z:.+]] = llmc.add %[[Y]], %{{.+}} : (tensor<4096x8064xf32>, tensor<8064xf32>) -> tensor<4096x8064xf32>
// CHECK:         %[[LOSS:.+]] = llmc.cross_entropy mean %[[Z]], %{{.+}} {classes = 8063 : i64}
// CHECK:         %[[S:.+]] = llmc.slice %[[Z]] starts [0, 0] limits [4096, 8063] strides [1, 1] : (tensor<4096x8064xf32>) -> tensor<4096x8063xf32>
// CHECK:         return %[[LOSS]], %[[S]]
func.func @forward(%x: tensor<4096x512xf32> {llmc.input = "x"},
                   %w: tensor<512x8063xf32> {llmc.param = "lm_head"},
                   %b: tensor<8063xf32> {llmc.param = "bias"},
                   %t: tensor<4096xi64> {llmc.input = "targets"}) -> (tensor<f32>, tensor<4096x8063xf32>) {
  %y = llmc.matmul %x, %w : (tensor<4096x512xf32>, tensor<512x8063xf32>) -> tensor<4096x8063xf32>
  %z = llmc.add %y, %b : (tensor<4096x8063xf32>, tensor<8063xf32>) -> tensor<4096x8063xf32>
  %loss = llmc.cross_entropy mean %z, %t : (tensor<4096x8063xf32>, tensor<4096xi64>) -> tensor<f32>
  return %loss, %z : tensor<f32>, tensor<4096x8063xf32>
}

// -----

// The intermediate size of an MLP (c_fc, its bias, gelu, c_proj): 100 is
// a multiple of 4 f32 elements (fp32: left alone, aligned already) but not
// of 8 bf16 ones (bf16: 100 -> 104, every tensor of the dim, the
// contraction of c_proj over zero rows included). 104 and 128 fill the
// same 128-wide tiles; 128 would move 28% more memory on this dim.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    tensor<768x100xf32> {llmc.param = "fc"}
// CHECK-NOT:     real_shape
// BF16-LABEL: module attributes {llmc.padding = [{extra_flops = {{[0-9]+}} : i64, from = 100 : i64, params = [{{.*}}"fc[1]"{{.*}}], to = 104 : i64, why = "GEMMs {{.*}} (100 is not a multiple of 8 elements){{.*}}"}]}
// BF16:         %[[FC:.+]]: tensor<768x104xf32> {llmc.param = "fc", llmc.real_shape = array<i64: 768, 100>}
// BF16-SAME:    %[[FB:.+]]: tensor<104xf32> {llmc.param = "fc_bias", llmc.real_shape = array<i64: 100>}
// BF16-SAME:    %[[PJ:.+]]: tensor<104x768xf32> {llmc.param = "proj", llmc.real_shape = array<i64: 100, 768>}
// BF16:         llmc.gelu tanh %{{.+}} : tensor<8192x104xf32>
// BF16:         llmc.matmul %{{.+}}, %[[PJ]] : (tensor<8192x104xf32>, tensor<104x768xf32>) -> tensor<8192x768xf32>
func.func @forward(%x: tensor<8192x768xf32> {llmc.input = "x"},
                   %fc: tensor<768x100xf32> {llmc.param = "fc"},
                   %fb: tensor<100xf32> {llmc.param = "fc_bias"},
                   %pj: tensor<100x768xf32> {llmc.param = "proj"}) -> tensor<f32> {
  %h = llmc.matmul %x, %fc : (tensor<8192x768xf32>, tensor<768x100xf32>) -> tensor<8192x100xf32>
  %hb = llmc.add %h, %fb : (tensor<8192x100xf32>, tensor<100xf32>) -> tensor<8192x100xf32>
  %g = llmc.gelu tanh %hb : tensor<8192x100xf32>
  %y = llmc.matmul %g, %pj : (tensor<8192x100xf32>, tensor<100x768xf32>) -> tensor<8192x768xf32>
  %s = llmc.reduce_sum %y axes [0, 1] : (tensor<8192x768xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
