// `llmc compile` with nice-number padding (docs/padding.md): the report
// lists the padded dim, the parameter count and the plan's vocabulary stay
// the model's own, and the bundle records the table's real shape.
// RUN: llmc compile %s -o %t.llmc --arch sm_90 --pad-always | FileCheck %s
// RUN: %python %S/Inputs/bundle_field.py %t.llmc vocab | FileCheck %s --check-prefix=VOCAB
// RUN: %python -c "import json,struct,sys; d=open(sys.argv[1],'rb').read(); (n,)=struct.unpack('<Q',d[16:24]); print([(b['name'],b['shape'],b.get('real_shape')) for b in json.loads(d[64:64+n])['buffers'] if b['name'] in ('wte','adamw.m:wte')])" %t.llmc | FileCheck %s --check-prefix=SHAPES
// RUN: llmc compile %s -o %t.nopad.llmc --arch sm_90 --pad-always --no-pad | FileCheck %s --check-prefix=NOPAD
// The backward inherits the masks from autodiff: the loss's gradient has
// zero padding columns, the table's gradient never scatters past row 1001.
// RUN: llmc-opt %s --llmc-pipeline=pad-always=1 | FileCheck %s --check-prefix=IR
// RUN: llmc-opt %s "--llmc-pipeline=pad-always=1 no-pad=1" | FileCheck %s --check-prefix=IRNOPAD
// IR:      llmc.cross_entropy_grad mean {{.*}} {classes = 1001 : i64} : (tensor<32x1024xf32>, tensor<32xi64>, tensor<f32>) -> tensor<32x1024xf32>
// IR:      llmc.gather_grad {{.*}} axis 0 {bound = 1001 : i64} : (tensor<2x16x64xf32>, tensor<2x16xi64>) -> tensor<1024x64xf32>
// IRNOPAD-NOT: classes
// IRNOPAD-NOT: tensor<1024x64xf32>

// CHECK:      parameters      64064
// CHECK:      padding         1001 -> 1024, +{{.*}} FLOPs/step: padded on request (always); {{.*}} (wte[0])
// VOCAB:      1001
// SHAPES:     [('wte', [1024, 64], [1001, 64]), ('adamw.m:wte', [1024, 64], [1001, 64])]
// NOPAD:      parameters      64064
// NOPAD-NOT:  {{^}}padding
func.func @forward(%wte: tensor<1001x64xf32> {llmc.param = "wte", llmc.init_rule = "normal(0.02)"},
                   %idx: tensor<2x16xi64> {llmc.input = "idx"},
                   %tgt: tensor<32xi64> {llmc.input = "targets"}) -> (tensor<f32> {llmc.output = "loss"}) {
  %e = llmc.gather %wte, %idx axis 0 : (tensor<1001x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  %x = llmc.reshape %e : tensor<2x16x64xf32> -> tensor<32x64xf32>
  %wt = llmc.transpose %wte [1, 0] : (tensor<1001x64xf32>) -> tensor<64x1001xf32>
  %l = llmc.matmul %x, %wt : (tensor<32x64xf32>, tensor<64x1001xf32>) -> tensor<32x1001xf32>
  %loss = llmc.cross_entropy mean %l, %tgt : (tensor<32x1001xf32>, tensor<32xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
