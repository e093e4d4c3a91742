//===- OnnxScan.cpp - An ONNX file's structure without its weights -------===//
//
// Field numbers are onnx.proto's: ModelProto.graph 7; GraphProto.node 1,
// initializer 5, sparse_initializer 15; NodeProto.attribute 5;
// AttributeProto.t 5, g 6, tensors 10, graphs 11, sparse_tensor 22,
// sparse_tensors 23; TensorProto.data_type 2, name 8, raw_data 9,
// external_data 13, data_location 14; StringStringEntryProto key 1, value 2;
// SparseTensorProto values 1, indices 2.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxScan.h"
#include "runtime/Hash.h"
#include "runtime/ParseInteger.h"

#include <algorithm>
#include <set>
#include <utility>

namespace llmc {

namespace {

enum Wire { Varint = 0, I64 = 1, Len = 2, I32 = 5 };

struct Field {
  uint32_t number = 0;
  int wire = 0;
  uint64_t value = 0;   // Varint
  size_t payload = 0;   // Len: where the bytes start
  uint64_t length = 0;  // Len
};

class Scanner {
public:
  Scanner(const uint8_t *data, size_t size) : data_(data), size_(size) {}

  OnnxScan run();

private:
  bool fail(std::string why) {
    if (whyNot_.empty())
      whyNot_ = std::move(why);
    return false;
  }
  bool varint(size_t &pos, size_t end, uint64_t &v);
  /// Reads the field at `pos` (< end) and moves past it.
  bool next(size_t &pos, size_t end, Field &f);
  /// Calls `visit(field)` on each field of the message in [begin, end), in
  /// order, until it returns false; false when a field is malformed or a
  /// visit fails.
  template <typename Fn> bool fields(size_t begin, size_t end, Fn visit);
  bool model(size_t begin, size_t end);
  bool graph(size_t begin, size_t end, bool main);
  bool node(size_t begin, size_t end);
  bool attribute(size_t begin, size_t end);
  bool sparse(size_t begin, size_t end);
  bool tensor(size_t begin, size_t end, bool mainInitializer);

  const uint8_t *data_;
  size_t size_;
  std::string whyNot_;
  std::vector<std::pair<size_t, uint64_t>> skipped_; // raw_data left out
  std::vector<OnnxWeight> weights_;
  std::set<std::string> names_;
};

bool Scanner::varint(size_t &pos, size_t end, uint64_t &v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= end)
      return fail("the file ends inside a varint");
    uint8_t b = data_[pos++];
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80))
      return true;
  }
  return fail("a varint is longer than 10 bytes");
}

bool Scanner::next(size_t &pos, size_t end, Field &f) {
  uint64_t tag = 0;
  if (!varint(pos, end, tag))
    return false;
  f.number = static_cast<uint32_t>(tag >> 3);
  f.wire = static_cast<int>(tag & 7);
  switch (f.wire) {
  case Varint:
    return varint(pos, end, f.value);
  case I64:
  case I32: {
    size_t n = f.wire == I64 ? 8 : 4;
    if (end - pos < n)
      return fail("the file ends inside a fixed-width field");
    pos += n;
    return true;
  }
  case Len:
    if (!varint(pos, end, f.length))
      return false;
    if (f.length > end - pos)
      return fail("a field is longer than the message that holds it");
    f.payload = pos;
    pos += static_cast<size_t>(f.length);
    return true;
  default:
    return fail("wire type " + std::to_string(f.wire) +
                " (protobuf groups) is not ONNX");
  }
}

template <typename Fn>
bool Scanner::fields(size_t begin, size_t end, Fn visit) {
  for (size_t pos = begin; pos < end;) {
    Field f;
    if (!next(pos, end, f) || !visit(f))
      return false;
  }
  return true;
}

bool Scanner::model(size_t begin, size_t end) {
  bool sawGraph = false;
  if (!fields(begin, end, [&](const Field &f) {
        if (f.number != 7 || f.wire != Len)
          return true;
        if (sawGraph)
          return fail("the model has two graph fields");
        sawGraph = true;
        return graph(f.payload, f.payload + f.length, /*main=*/true);
      }))
    return false;
  return sawGraph || fail("the model has no graph");
}

bool Scanner::graph(size_t begin, size_t end, bool main) {
  return fields(begin, end, [&](const Field &f) {
    if (f.wire != Len)
      return true;
    size_t b = f.payload, e = f.payload + f.length;
    return (f.number != 1 || node(b, e)) &&
           (f.number != 5 || tensor(b, e, main)) &&
           (f.number != 15 || sparse(b, e));
  });
}

bool Scanner::node(size_t begin, size_t end) {
  return fields(begin, end, [&](const Field &f) {
    return f.number != 5 || f.wire != Len ||
           attribute(f.payload, f.payload + f.length);
  });
}

bool Scanner::attribute(size_t begin, size_t end) {
  return fields(begin, end, [&](const Field &f) {
    if (f.wire != Len)
      return true;
    size_t b = f.payload, e = f.payload + f.length;
    if (f.number == 5 || f.number == 10)
      return tensor(b, e, false);
    if (f.number == 6 || f.number == 11)
      return graph(b, e, false);
    if (f.number == 22 || f.number == 23)
      return sparse(b, e);
    return true;
  });
}

bool Scanner::sparse(size_t begin, size_t end) {
  return fields(begin, end, [&](const Field &f) {
    return (f.number != 1 && f.number != 2) || f.wire != Len ||
           tensor(f.payload, f.payload + f.length, false);
  });
}

bool Scanner::tensor(size_t begin, size_t end, bool mainInitializer) {
  int64_t dataType = 0;
  bool external = false, hasRaw = false;
  std::string name, location;
  uint64_t rawAt = 0, rawLength = 0;
  bool hasOffset = false, hasLength = false;
  uint64_t offset = 0, length = 0;
  if (!fields(begin, end, [&](const Field &f) {
        if (f.number == 2 && f.wire == Varint)
          dataType = static_cast<int64_t>(f.value);
        else if (f.number == 14 && f.wire == Varint)
          external = f.value == 1;
        else if (f.number == 8 && f.wire == Len)
          name.assign(reinterpret_cast<const char *>(data_ + f.payload),
                      f.length);
        else if (f.number == 9 && f.wire == Len) {
          hasRaw = true;
          rawAt = f.payload;
          rawLength = f.length;
        } else if (f.number == 13 && f.wire == Len) {
          std::string key, value;
          if (!fields(f.payload, f.payload + f.length, [&](const Field &g) {
                if (g.wire == Len && (g.number == 1 || g.number == 2))
                  (g.number == 1 ? key : value)
                      .assign(reinterpret_cast<const char *>(data_ + g.payload),
                              g.length);
                return true;
              }))
            return false;
          if (key == "location")
            location = value;
          else if (key == "offset")
            hasOffset = parseUnsigned64(value, offset);
          else if (key == "length")
            hasLength = parseUnsigned64(value, length);
        }
        return true;
      }))
    return false;
  bool isFloat = dataType == 1 || dataType == 10 || dataType == 16;
  if (external) {
    // Bytes in another file are outside the hash: only a float initializer
    // of the main graph (a weight) may be there.
    if (!mainInitializer || !isFloat)
      return fail("tensor '" + name +
                  "' is stored in an external data file and is not a float "
                  "initializer of the main graph");
    if (location.empty() || !hasLength)
      return fail("initializer '" + name +
                  "' is external without a location and length");
    if (!names_.insert(name).second)
      return fail("initializer '" + name + "' is defined twice");
    weights_.push_back({name, static_cast<int32_t>(dataType), location,
                        hasOffset ? offset : 0, length});
    return true;
  }
  if (mainInitializer && isFloat && hasRaw) {
    if (!names_.insert(name).second)
      return fail("initializer '" + name + "' is defined twice");
    skipped_.push_back({static_cast<size_t>(rawAt), rawLength});
    weights_.push_back(
        {name, static_cast<int32_t>(dataType), "", rawAt, rawLength});
  }
  return true;
}

OnnxScan Scanner::run() {
  OnnxScan out;
  if (!model(0, size_)) {
    out.whyNot = whyNot_;
    return out;
  }
  // Two FNV-1a streams (as KernelCache::key) over the bytes outside the
  // weights, with each weight's length in its place.
  uint64_t a = kFnvOffset, b = kFnvOffset ^ 0x9e3779b97f4a7c15ull;
  auto add = [&](const void *p, size_t n) {
    a = fnv1a(p, n, a);
    b = fnv1a(p, n, b);
  };
  std::sort(skipped_.begin(), skipped_.end());
  size_t at = 0;
  for (auto [begin, length] : skipped_) {
    add(data_ + at, begin - at);
    add(&length, sizeof length);
    at = begin + static_cast<size_t>(length);
  }
  add(data_ + at, size_ - at);
  uint64_t total = size_;
  add(&total, sizeof total);
  out.cacheable = true;
  out.structureHash = hex64(a) + hex64(b);
  out.weights = std::move(weights_);
  return out;
}

} // namespace

OnnxScan scanOnnx(const uint8_t *data, size_t size) {
  return Scanner(data, size).run();
}

} // namespace llmc
