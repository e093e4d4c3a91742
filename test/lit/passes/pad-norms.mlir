// RUN: llmc-opt %s --split-input-file --llmc-pad-shapes | FileCheck %s
// RUN: llmc-opt %s --split-input-file --llmc-pad-shapes=dims=200:256,80:96 | FileCheck %s --check-prefix=FORCED

// Intermediate size 200 (odd_gpt2's MLP): a multiple of 8, so its GEMMs
// use the same tiles at 256 and the cost model leaves it alone, unlisted.
// Forced (dims=200:256, how the tests check the padded graph): c_fc's
// columns, its bias and c_proj's rows are zero-padded; gelu(0) = 0 keeps
// the padding zero, and c_proj contracts over it exactly.
// CHECK-LABEL: module attributes {llmc.padding = []}
// CHECK:         tensor<64x200xf32> {llmc.param = "fc"}
// FORCED-LABEL: module attributes {llmc.padding = [{extra_flops = {{[0-9]+}} : i64, from = 200 : i64, params = ["fc[1]", "proj[0]", "fc_b[0]"], to = 256 : i64, why = "padded on request (dims=200:256); GEMMs {{.*}}"}]}
// FORCED:        %[[FC:.+]]: tensor<64x256xf32> {llmc.param = "fc", llmc.real_shape = array<i64: 64, 200>}
// FORCED-SAME:   %[[B:.+]]: tensor<256xf32> {llmc.param = "fc_b", llmc.real_shape = array<i64: 200>}
// FORCED-SAME:   %[[P:.+]]: tensor<256x64xf32> {llmc.param = "proj", llmc.real_shape = array<i64: 200, 64>}
// FORCED:        llmc.gelu tanh {{.*}} : tensor<32x256xf32>
// FORCED:        llmc.matmul {{.*}}, %[[P]] : (tensor<32x256xf32>, tensor<256x64xf32>) -> tensor<32x64xf32>
func.func @forward(%x: tensor<32x64xf32> {llmc.input = "x"},
                   %fc: tensor<64x200xf32> {llmc.param = "fc"},
                   %fc_b: tensor<200xf32> {llmc.param = "fc_b"},
                   %proj: tensor<200x64xf32> {llmc.param = "proj"}) -> tensor<f32> {
  %h = llmc.matmul %x, %fc : (tensor<32x64xf32>, tensor<64x200xf32>) -> tensor<32x200xf32>
  %hb = llmc.add %h, %fc_b : (tensor<32x200xf32>, tensor<200xf32>) -> tensor<32x200xf32>
  %a = llmc.gelu tanh %hb : tensor<32x200xf32>
  %y = llmc.matmul %a, %proj : (tensor<32x200xf32>, tensor<200x64xf32>) -> tensor<32x64xf32>
  %s = llmc.reduce_sum %y axes [0, 1] : (tensor<32x64xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Hidden size 80 -> 96 (forced): the embedding's columns, the layer norm's
// weight and bias and the lm_head's rows are one dim. The norm is masked:
// it normalizes the 80 real columns (slice, the norm at 80, zeros after),
// so its mean and variance never count the padding, its output is zero
// there, and its padded weight and bias columns get a zero gradient.
// CHECK-LABEL: module attributes {llmc.padding = []}
// CHECK:         llmc.layer_norm {{.*}} -> tensor<4x8x80xf32>
// FORCED-LABEL: module attributes {llmc.padding = [{{.*}}from = 80 : i64, params = ["wte[1]", "ln_b[0]", "ln_w[0]", "head[0]"], to = 96 : i64, why = "padded on request (dims=80:96){{.*}}"}]}
// FORCED:        %[[WTE:.+]]: tensor<64x96xf32> {llmc.param = "wte", llmc.real_shape = array<i64: 64, 80>}
// FORCED-SAME:   %[[W:.+]]: tensor<96xf32> {llmc.param = "ln_w", llmc.real_shape = array<i64: 80>}
// FORCED-SAME:   %[[B:.+]]: tensor<96xf32> {llmc.param = "ln_b", llmc.real_shape = array<i64: 80>}
// FORCED:        %[[E:.+]] = llmc.gather %[[WTE]]
// FORCED:        %[[X:.+]] = llmc.slice %[[E]] starts [0, 0, 0] limits [4, 8, 80] strides [1, 1, 1] : (tensor<4x8x96xf32>) -> tensor<4x8x80xf32>
// FORCED:        %[[WR:.+]] = llmc.slice %[[W]] starts [0] limits [80] strides [1] : (tensor<96xf32>) -> tensor<80xf32>
// FORCED:        %[[BR:.+]] = llmc.slice %[[B]] starts [0] limits [80] strides [1] : (tensor<96xf32>) -> tensor<80xf32>
// FORCED:        %[[N:.+]] = llmc.layer_norm %[[X]] weight %[[WR]] bias %[[BR]]{{.*}} : (tensor<4x8x80xf32>, tensor<80xf32>, tensor<80xf32>) -> tensor<4x8x80xf32>
// FORCED:        %[[Z:.+]] = llmc.constant dense<0.000000e+00> : tensor<4x8x16xf32>
// FORCED:        %[[H:.+]] = llmc.concat %[[N]], %[[Z]] axis 2 : (tensor<4x8x80xf32>, tensor<4x8x16xf32>) -> tensor<4x8x96xf32>
// FORCED:        llmc.matmul %[[H]], %{{.+}} : (tensor<4x8x96xf32>, tensor<96x64xf32>) -> tensor<4x8x64xf32>
// FORCED-NOT:    llmc.layer_norm
func.func @forward(%wte: tensor<64x80xf32> {llmc.param = "wte"},
                   %ln_w: tensor<80xf32> {llmc.param = "ln_w"},
                   %ln_b: tensor<80xf32> {llmc.param = "ln_b"},
                   %head: tensor<80x64xf32> {llmc.param = "head"},
                   %ids: tensor<4x8xi64> {llmc.input = "idx"},
                   %t: tensor<4x8xi64> {llmc.input = "targets"}) -> tensor<f32> {
  %e = llmc.gather %wte, %ids axis 0 : (tensor<64x80xf32>, tensor<4x8xi64>) -> tensor<4x8x80xf32>
  %n = llmc.layer_norm %e weight %ln_w bias %ln_b : (tensor<4x8x80xf32>, tensor<80xf32>, tensor<80xf32>) -> tensor<4x8x80xf32>
  %l = llmc.matmul %n, %head : (tensor<4x8x80xf32>, tensor<80x64xf32>) -> tensor<4x8x64xf32>
  %loss = llmc.cross_entropy mean %l, %t : (tensor<4x8x64xf32>, tensor<4x8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// rms_norm (Llama) over a forced hidden 80 -> 96, without bias; the norm's
// output returned by @forward is sliced back to its declared type.
// FORCED-LABEL: module attributes {llmc.padding = [{{.*}}from = 80 : i64, params = ["x_w[1]", "rms_w[0]"], to = 96 : i64
// FORCED:        %[[X:.+]] = llmc.slice %{{.+}} starts [0, 0] limits [32, 80] strides [1, 1] : (tensor<32x96xf32>) -> tensor<32x80xf32>
// FORCED:        %[[N:.+]] = llmc.rms_norm %[[X]] weight %{{.+}} : (tensor<32x80xf32>, tensor<80xf32>) -> tensor<32x80xf32>
// FORCED:        %[[H:.+]] = llmc.concat %[[N]], %{{.+}} axis 1
// FORCED:        %[[R:.+]] = llmc.slice %[[H]] starts [0, 0] limits [32, 80] strides [1, 1] : (tensor<32x96xf32>) -> tensor<32x80xf32>
// FORCED:        return %[[R]] : tensor<32x80xf32>
func.func @forward(%x: tensor<32x16xf32> {llmc.input = "x"},
                   %x_w: tensor<16x80xf32> {llmc.param = "x_w"},
                   %rms_w: tensor<80xf32> {llmc.param = "rms_w"}) -> tensor<32x80xf32> {
  %h = llmc.matmul %x, %x_w : (tensor<32x16xf32>, tensor<16x80xf32>) -> tensor<32x80xf32>
  %n = llmc.rms_norm %h weight %rms_w : (tensor<32x80xf32>, tensor<80xf32>) -> tensor<32x80xf32>
  return %n : tensor<32x80xf32>
}

// -----

// A norm over two dims, the padded one among them: masking one of several
// normalized dims is not built, so the forced size is refused and listed.
// FORCED-LABEL: module attributes {llmc.padding = [{extra_flops = 0 : i64, from = 80 : i64, params = ["ln[1]"], to = 80 : i64, why = "cannot pad: 'llmc.layer_norm': layer_norm normalizes over several dims with the padded one (only a single one is masked)"}]}
// FORCED:        tensor<4x80xf32> {llmc.param = "ln"}
func.func @forward(%x: tensor<8x4x80xf32> {llmc.input = "x"},
                   %g: tensor<4x80xf32> {llmc.param = "ln"}) -> tensor<8x4x80xf32> {
  %y = llmc.layer_norm %x weight %g {axis = 1 : i64} : (tensor<8x4x80xf32>, tensor<4x80xf32>) -> tensor<8x4x80xf32>
  return %y : tensor<8x4x80xf32>
}
