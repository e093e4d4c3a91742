//===- OnnxTorchMetadata.cpp - What the dynamo exporter says about values -===//
#include "frontends/onnx/OnnxTorchMetadata.h"
#include "frontends/onnx/onnx.pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace llmc::onnximport {

namespace {

using google::protobuf::internal::WireFormatLite;

/// The metadata_props entries (repeated StringStringEntryProto in field
/// `field`) of a message's unknown fields.
std::vector<std::pair<std::string, std::string>>
unknownMetadata(const std::string &unknown, int field) {
  std::vector<std::pair<std::string, std::string>> entries;
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const uint8_t *>(unknown.data()),
      static_cast<int>(unknown.size()));
  while (uint32_t tag = in.ReadTag()) {
    if (WireFormatLite::GetTagFieldNumber(tag) == field &&
        WireFormatLite::GetTagWireType(tag) ==
            WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      std::string bytes;
      uint32_t size;
      if (!in.ReadVarint32(&size) || !in.ReadString(&bytes, size))
        break;
      onnx::StringStringEntryProto entry;
      if (entry.ParseFromString(bytes))
        entries.emplace_back(entry.key(), entry.value());
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      break;
    }
  }
  return entries;
}

constexpr int kValueInfoMetadata = 4; // ValueInfoProto.metadata_props
constexpr int kGraphMetadata = 16;    // GraphProto.metadata_props

/// The signature's input lines, `p_m_wte_weight: PARAMETER target='m.wte.weight'`
/// (and ` persistent=False` after a buffer's target): target -> kind.
void parseSignature(llvm::StringRef text,
                    llvm::StringMap<std::string> &targetKinds) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    auto [name, rest] = line.split(": ");
    if (rest.empty())
      continue;
    auto [kind, tail] = rest.split(' ');
    size_t at = tail.find("target='");
    if (at == llvm::StringRef::npos)
      continue;
    llvm::StringRef target = tail.drop_front(at + 8);
    target = target.take_until([](char c) { return c == '\''; });
    if (!target.empty())
      targetKinds[target] = kind.str();
  }
}

} // namespace

std::vector<std::string> parsePythonStringList(llvm::StringRef text) {
  std::vector<std::string> out;
  text = text.trim();
  if (!text.consume_front("[") || !text.consume_back("]"))
    return out;
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    item = item.trim();
    if (item.size() >= 2 && (item.front() == '\'' || item.front() == '"') &&
        item.back() == item.front())
      item = item.drop_front().drop_back();
    if (!item.empty())
      out.push_back(item.str());
  }
  return out;
}

TorchMetadata readTorchMetadata(const onnx::GraphProto &graph) {
  TorchMetadata md;
  auto scan = [&](const onnx::ValueInfoProto &info) {
    for (auto &[key, value] :
         unknownMetadata(info.unknown_fields(), kValueInfoMetadata)) {
      if (key == "pkg.torch.export.graph_signature.InputSpec.kind")
        md.valueKinds[info.name()] = value;
      else if (key == "pkg.onnxscript.optimizer.folded_from")
        md.foldedFrom[info.name()] = parsePythonStringList(value);
    }
  };
  for (const auto &info : graph.value_info())
    scan(info);
  for (const auto &info : graph.input())
    scan(info);
  for (auto &[key, value] :
       unknownMetadata(graph.unknown_fields(), kGraphMetadata))
    if (key == "pkg.torch.export.ExportedProgram.graph_signature")
      parseSignature(value, md.targetKinds);
  return md;
}

std::vector<std::string>
TorchMetadata::foldedParameters(llvm::StringRef name) const {
  llvm::StringSet<> seen, params;
  std::vector<llvm::StringRef> work = {name};
  seen.insert(name);
  while (!work.empty()) {
    llvm::StringRef v = work.back();
    work.pop_back();
    auto it = foldedFrom.find(v);
    if (it == foldedFrom.end())
      continue;
    for (const std::string &src : it->second) {
      if (!seen.insert(src).second)
        continue;
      const std::string *kind = nullptr;
      if (auto t = targetKinds.find(src); t != targetKinds.end())
        kind = &t->second;
      else if (auto k = valueKinds.find(src); k != valueKinds.end())
        kind = &k->second;
      if (kind ? *kind == "PARAMETER" : llvm::StringRef(src).contains('.'))
        params.insert(src);
      work.push_back(src);
    }
  }
  std::vector<std::string> out;
  for (const auto &p : params)
    out.push_back(p.getKey().str());
  llvm::sort(out);
  return out;
}

} // namespace llmc::onnximport
