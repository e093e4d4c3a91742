"""Writes the IR of an attention whose causal mask is one folded constant of
[5, 1, 1024, 1024] (5.2M values, above the 4M-value limit for evaluating a
chain of ops): what the ONNX importer makes of HF GPT-2's mask at batch 16.
With `--upper`, the mask keeps the upper triangle instead (not causal)."""
import sys

B, T, D = 5, 1024, 8
upper = "--upper" in sys.argv
# i1 hex data is bit-packed, element 0 in the low bit of byte 0.
rows = []
for t in range(T):
    bits = 0
    for s in range(T):
        if (s >= t) if upper else (s <= t):
            bits |= 1 << s
    rows.append(bits.to_bytes(T // 8, "little"))
blob = b"".join(rows) * B
q = f"tensor<{B}x1x{T}x{D}xf32>"
sc = f"tensor<{B}x1x{T}x{T}xf32>"
print(f"""func.func @big_folded_mask(%q: {q}, %k: {q}, %v: {q}) -> {q} {{
  %mask = llmc.constant dense<"0x{blob.hex().upper()}"> : tensor<{B}x1x{T}x{T}xi1>
  %ninf = llmc.constant dense<0xFF800000> : tensor<f32>
  %sc = llmc.matmul %q, %k {{transpose_rhs}} : ({q}, {q}) -> {sc}
  %m = llmc.where %mask, %sc, %ninf : (tensor<{B}x1x{T}x{T}xi1>, {sc}, tensor<f32>) -> {sc}
  %p = llmc.softmax %m : {sc}
  %o = llmc.matmul %p, %v : ({sc}, {q}) -> {q}
  return %o : {q}
}}""")
