//===- OnnxTorchMetadata.h - What the dynamo exporter says about values -*- C++ -*-===//
//
// The dynamo exporter (torch.onnx.export(dynamo=True)) records torch.export's
// signature in metadata_props, and its optimizer (optimize=True) records,
// for every initializer it computed by constant folding, the values it was
// folded from. The importer reads both to tell three kinds of initializer
// apart:
//   - a parameter or buffer of the PyTorch module (in the signature);
//   - a folded copy of parameters (a pre-transposed weight): trainable, but
//     PyTorch trains the original, so the importer warns;
//   - a folded constant of the model (a causal mask, RoPE's cos/sin tables
//     from the inv_freq buffer): no parameter in its sources, so it is an
//     import-time constant that raising sees, as in the plain export.
// metadata_props is newer than the onnx.proto llmc is built from (and that
// proto is LITE_RUNTIME), so the fields are decoded from the raw unknown
// fields.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_ONNX_ONNXTORCHMETADATA_H
#define LLMC_FRONTENDS_ONNX_ONNXTORCHMETADATA_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace onnx {
class GraphProto;
} // namespace onnx

namespace llmc::onnximport {

struct TorchMetadata {
  /// torch.export's kind of each graph value ("PARAMETER", "BUFFER",
  /// "CONSTANT_TENSOR", "USER_INPUT"), from ValueInfoProto.metadata_props
  /// ("pkg.torch.export.graph_signature.InputSpec.kind"). Empty for files
  /// that are not dynamo exports.
  llvm::StringMap<std::string> valueKinds;
  /// The kind of each state target (the parameter's or buffer's name in
  /// the module), from the graph's "pkg.torch.export.ExportedProgram.
  /// graph_signature" text: it still lists the parameters that the
  /// optimizer folded or merged away.
  llvm::StringMap<std::string> targetKinds;
  /// For each value the exporter's optimizer folded, the values it came
  /// from ("pkg.onnxscript.optimizer.folded_from").
  llvm::StringMap<std::vector<std::string>> foldedFrom;

  bool isDynamoExport() const { return !valueKinds.empty(); }
  /// The parameters that `name`, a folded value, was computed from
  /// (through other folded values too), sorted. A source the signature does
  /// not know and whose name looks like module state (a dotted name) counts
  /// as a parameter: when in doubt, keep training it.
  std::vector<std::string> foldedParameters(llvm::StringRef name) const;
};

TorchMetadata readTorchMetadata(const onnx::GraphProto &graph);

/// Parses a Python list literal of strings ("['a', 'b']").
std::vector<std::string> parsePythonStringList(llvm::StringRef text);

} // namespace llmc::onnximport

#endif // LLMC_FRONTENDS_ONNX_ONNXTORCHMETADATA_H
