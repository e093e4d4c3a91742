//===- OnnxScan.h - An ONNX file's structure without its weights -*- C++ -*-===//
//
// The compile cache (compiler/CompileCache.h) must know, before importing,
// whether a model is the one it compiled before: same graph, shapes and
// constants, whatever the trained weights hold. Hashing 500 MB of GPT-2
// weights would take longer than the warm compile may, and parsing the
// protobuf copies them. This scanner walks the protobuf wire format of the
// mapped file instead, touching only field headers, and returns
//
//   - a 128-bit hash of every byte of the file except the contents of the
//     floating-point initializers of the main graph, which the importer
//     makes parameters whose values no pass reads (their lengths are
//     hashed: a weight whose size changes changes the key);
//   - where those initializers' bytes lie: in this file (inline raw_data)
//     or in an external data file (location, offset, length), so that a
//     cache hit copies them straight from there.
//
// Everything else is hashed whole: the nodes, Constant tensors, integer and
// bool initializers (the importer folds them), float initializers stored in
// the typed fields rather than raw_data. A model
// whose compile could depend on bytes the hash leaves out is reported as not
// cacheable, with the reason: an external-data tensor that is not a float
// initializer of the main graph, or wire data the scanner does not know.
//
// MLIR-free and protobuf-free: it reads the wire format directly
// (https://protobuf.dev/programming-guides/encoding/), with every length
// checked against the bytes that remain, so a damaged file is "not
// cacheable", never a crash (the importer then reports what is wrong).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_FRONTENDS_ONNX_ONNXSCAN_H
#define LLMC_FRONTENDS_ONNX_ONNXSCAN_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

/// A float initializer whose value the structure hash leaves out.
struct OnnxWeight {
  std::string name;
  int32_t dataType = 0; // ONNX TensorProto.DataType (1 f32, 10 f16, 16 bf16)
  std::string file;     // "" = the model file itself; else the external
                        // data file as written (relative to the model's dir)
  uint64_t offset = 0;  // bytes into that file
  uint64_t size = 0;    // bytes
};

struct OnnxScan {
  bool cacheable = false;
  std::string whyNot;        // when not cacheable
  std::string structureHash; // 32 hex digits
  std::vector<OnnxWeight> weights;
};

/// Scans the `size` bytes of an ONNX model at `data`.
OnnxScan scanOnnx(const uint8_t *data, size_t size);

} // namespace llmc

#endif // LLMC_FRONTENDS_ONNX_ONNXSCAN_H
