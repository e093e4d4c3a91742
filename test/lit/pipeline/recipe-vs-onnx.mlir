// A recipe's graph has the same structure as the matching PyTorch export
// after import and raising: the same composite ops, as many of each.
// GPT-2 tiny vs transformers GPT2LMHeadModel (2 layers, d 64, tied lm_head):
// the linear layers match too.
// RUN: llmc import %models/hf_gpt2_dynamo_loss.onnx -o %t.onnx.mlir
// RUN: llmc check %t.onnx.mlir | grep -E "[.](attention|layer_norm|gelu|cross_entropy|matmul) " > %t.onnx.ops
// RUN: llmc recipe gpt2 --size tiny | llmc import - -o %t.recipe.mlir
// RUN: llmc check %t.recipe.mlir | grep -E "[.](attention|layer_norm|gelu|cross_entropy|matmul) " > %t.recipe.ops
// RUN: diff %t.onnx.ops %t.recipe.ops
// RUN: FileCheck %s --check-prefix=GPT2 < %t.recipe.ops
//
// Llama tiny vs transformers LlamaForCausalLM. The export computes the RoPE
// angles with one extra matmul (inv_freq x positions), so linear layers are
// not compared.
// RUN: llmc import %models/hf_llama_dynamo_loss.onnx -o %t.llama.onnx.mlir
// RUN: llmc check %t.llama.onnx.mlir | grep -E "[.](attention|rms_norm|rotary|silu|cross_entropy) " > %t.llama.onnx.ops
// RUN: llmc recipe llama --size tiny | llmc import - -o %t.llama.recipe.mlir
// RUN: llmc check %t.llama.recipe.mlir | grep -E "[.](attention|rms_norm|rotary|silu|cross_entropy) " > %t.llama.recipe.ops
// RUN: diff %t.llama.onnx.ops %t.llama.recipe.ops
// RUN: FileCheck %s --check-prefix=LLAMA < %t.llama.recipe.ops

// GPT2: llmc.attention 2
// GPT2-NEXT: llmc.cross_entropy 1
// GPT2-NEXT: llmc.gelu 2
// GPT2-NEXT: llmc.layer_norm 5
// GPT2-NEXT: llmc.matmul 9

// LLAMA: llmc.attention 2
// LLAMA-NEXT: llmc.cross_entropy 1
// LLAMA-NEXT: llmc.rms_norm 5
// LLAMA-NEXT: llmc.rotary 4
// LLAMA-NEXT: llmc.silu 2
