//===- OnnxEinsum.cpp - Einsum as transposes, reshapes and one matmul -----===//
//
// Einsum of one or two operands, as exports write it ("bhqd,bhkd->bhqk",
// "i,j->ij" for rotary tables, "...ij,...jk->...ik"):
//   1. each operand sums the labels that neither the other operand nor the
//      output has (reduce_sum);
//   2. two operands are transposed to [batch, free, contracted] and
//      [batch, contracted, free], reshaped to [batch, M, K] and [batch, K, N]
//      and multiplied (llmc.matmul; batch dims of size 1 broadcast, as the
//      ellipsis does);
//   3. the result is reshaped to its labels and transposed to the output's
//      order.
// Everything is an existing llmc op, so autodiff and the code generator
// need nothing new. Diagonals (a label twice in one term) and three or more
// operands are refused by name.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include "dialects/llmc/LlmcOps.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cctype>
#include <map>

using namespace mlir;
namespace ll = mlir::llmc;

namespace llmc::onnximport {
namespace {

/// One label per dim: a letter's character code, or kEllipsis + j for the
/// j-th dim of the broadcast block (right-aligned across the operands).
using Labels = std::vector<int>;
constexpr int kEllipsis = 256;

/// Parses `term` for an operand of rank `rank` (-1: the output, whose
/// ellipsis covers `ellipsisRank` dims). Emits an error and returns
/// failure on a malformed term.
FailureOr<Labels> parseTerm(OnnxNode &n, llvm::StringRef term, int64_t rank,
                            int64_t ellipsisRank) {
  Labels letters;
  int64_t ellipsisAt = -1;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == ' ')
      continue;
    if (term.substr(i).starts_with("...") && ellipsisAt < 0) {
      ellipsisAt = letters.size();
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c))) {
      n.emitError() << "has the equation term '" << term
                    << "'; einsum labels are letters and one '...'";
      return failure();
    }
    letters.push_back(c);
  }
  int64_t block = 0;
  if (rank >= 0) {
    block = rank - int64_t(letters.size());
    if (block < 0 || (block > 0 && ellipsisAt < 0)) {
      n.emitError() << "has the term '" << term << "' for an operand of rank "
                    << rank;
      return failure();
    }
  } else if (ellipsisAt >= 0) {
    block = ellipsisRank;
  }
  Labels labels(letters.begin(), letters.end());
  if (ellipsisAt >= 0) {
    Labels dots;
    for (int64_t j = ellipsisRank - block; j < ellipsisRank; ++j)
      dots.push_back(kEllipsis + int(j));
    labels.insert(labels.begin() + ellipsisAt, dots.begin(), dots.end());
  }
  for (size_t i = 0; i < labels.size(); ++i)
    if (std::count(labels.begin(), labels.end(), labels[i]) > 1) {
      n.emitError() << "repeats label '" << char(labels[i]) << "' in '"
                    << term
                    << "' (a diagonal), which llmc does not import";
      return failure();
    }
  return labels;
}

Value transposeTo(OnnxNode &n, Value v, const Labels &from, Labels &to) {
  SmallVector<int64_t> perm;
  for (int l : to)
    perm.push_back(llvm::find(from, l) - from.begin());
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return v;
  auto r = n.create<ll::TransposeOp>(
      {v}, {n.b.getNamedAttr("permutation", n.b.getDenseI64ArrayAttr(perm))});
  return failed(r) ? Value() : *r;
}

/// Sums `v` (labels `labels`) over the labels not in `keep`; `labels`
/// becomes the remaining ones.
Value sumAway(OnnxNode &n, Value v, Labels &labels, const Labels &keep) {
  SmallVector<int64_t> axes;
  Labels rest;
  for (auto [i, l] : llvm::enumerate(labels))
    if (llvm::is_contained(keep, l))
      rest.push_back(l);
    else
      axes.push_back(i);
  labels = rest;
  if (axes.empty())
    return v;
  auto r = n.create<ll::ReduceSumOp>(
      {v}, {n.b.getNamedAttr("axes", n.b.getDenseI64ArrayAttr(axes))});
  return failed(r) ? Value() : *r;
}

LogicalResult einsumOp(OnnxNode &n) {
  std::string eq = n.getString("equation", "");
  llvm::StringRef text(eq);
  auto [lhs, rhs] = text.split("->");
  rhs = rhs.trim();
  bool implicit = !text.contains("->");
  SmallVector<llvm::StringRef> terms;
  lhs.split(terms, ',');
  for (llvm::StringRef &t : terms)
    t = t.trim();
  if (terms.size() != n.numInputs())
    return n.emitError() << "has " << terms.size() << " terms in '" << eq
                         << "' for " << n.numInputs() << " operands";
  if (terms.size() > 2)
    return n.emitError() << "has " << terms.size()
                         << " operands; llmc imports Einsum of one or two";
  SmallVector<Value> xs;
  int64_t ellipsisRank = 0;
  for (unsigned i = 0; i < terms.size(); ++i) {
    if (failed(n.requireStaticShape(i, "Einsum")))
      return failure();
    auto x = n.value(i);
    if (failed(x))
      return failure();
    xs.push_back(*x);
    int64_t letters = llvm::count_if(terms[i], [](char c) {
      return std::isalpha(static_cast<unsigned char>(c));
    });
    ellipsisRank = std::max(ellipsisRank, n.rank(i) - letters);
  }
  std::vector<Labels> in;
  std::map<int, int64_t> size;
  for (unsigned i = 0; i < terms.size(); ++i) {
    auto labels = parseTerm(n, terms[i], n.rank(i), ellipsisRank);
    if (failed(labels))
      return failure();
    SmallVector<int64_t> shape = n.shape(i);
    for (auto [l, d] : llvm::zip(*labels, shape)) {
      auto [it, fresh] = size.try_emplace(l, d);
      // The ellipsis broadcasts; a letter names one size.
      if (!fresh && it->second != d) {
        if (l >= kEllipsis && (it->second == 1 || d == 1))
          it->second = std::max(it->second, d);
        else
          return n.emitError() << "gives label '"
                               << (l >= kEllipsis ? '.' : char(l))
                               << "' the sizes " << it->second << " and "
                               << d;
      }
    }
    in.push_back(*labels);
  }
  Labels out;
  if (implicit) {
    // numpy: the broadcast dims, then the letters used once, sorted.
    for (int64_t j = 0; j < ellipsisRank; ++j)
      out.push_back(kEllipsis + int(j));
    for (const auto &[l, d] : size)
      if (l < kEllipsis && llvm::count_if(in, [&](const Labels &t) {
                             return llvm::is_contained(t, l);
                           }) == 1)
        out.push_back(l);
  } else {
    auto labels = parseTerm(n, rhs, -1, ellipsisRank);
    if (failed(labels))
      return failure();
    out = *labels;
    for (int l : out)
      if (!size.count(l))
        return n.emitError() << "has output label '" << char(l)
                             << "', which no operand has";
  }

  if (in.size() == 1) {
    Value r = sumAway(n, xs[0], in[0], out);
    if (!r || !(r = transposeTo(n, r, in[0], out)))
      return failure();
    n.setOutput(0, r);
    return success();
  }

  // 1. Labels of one operand that nothing else needs are summed first.
  Labels keepA = out, keepB = out;
  keepA.insert(keepA.end(), in[1].begin(), in[1].end());
  keepB.insert(keepB.end(), in[0].begin(), in[0].end());
  Value a = sumAway(n, xs[0], in[0], keepA);
  Value b = a ? sumAway(n, xs[1], in[1], keepB) : Value();
  if (!b)
    return failure();
  // 2. [batch, free, contracted] x [batch, contracted, free].
  Labels batch, freeA, freeB, contracted;
  for (int l : in[0])
    (llvm::is_contained(in[1], l)
         ? (llvm::is_contained(out, l) ? batch : contracted)
         : freeA)
        .push_back(l);
  for (int l : in[1])
    if (!llvm::is_contained(in[0], l))
      freeB.push_back(l);
  auto dims = [&](const Labels &ls, const Labels &of, Value v) {
    SmallVector<int64_t> d;
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    for (int l : ls)
      d.push_back(shape[llvm::find(of, l) - of.begin()]);
    return d;
  };
  auto product = [&](const Labels &ls) {
    int64_t p = 1;
    for (int l : ls)
      p *= size[l];
    return p;
  };
  Labels orderA = batch, orderB = batch;
  orderA.insert(orderA.end(), freeA.begin(), freeA.end());
  orderA.insert(orderA.end(), contracted.begin(), contracted.end());
  orderB.insert(orderB.end(), contracted.begin(), contracted.end());
  orderB.insert(orderB.end(), freeB.begin(), freeB.end());
  // A contracted ellipsis dim of size 1 on one side would broadcast in
  // numpy; llmc asks for the sizes to agree.
  if (dims(contracted, in[0], a) != dims(contracted, in[1], b))
    return n.emitError() << "contracts dims of different sizes in '" << eq
                         << "'";
  SmallVector<int64_t> shapeA = dims(batch, in[0], a),
                       shapeB = dims(batch, in[1], b);
  a = transposeTo(n, a, in[0], orderA);
  b = a ? transposeTo(n, b, in[1], orderB) : Value();
  if (!b)
    return failure();
  int64_t m = product(freeA), k = product(contracted), nn = product(freeB);
  shapeA.append({m, k});
  shapeB.append({k, nn});
  auto r = n.create<ll::MatmulOp>({n.reshape(a, shapeA), n.reshape(b, shapeB)});
  if (failed(r))
    return failure();
  // 3. Back to labels, then to the output's order.
  Labels got = batch;
  got.insert(got.end(), freeA.begin(), freeA.end());
  got.insert(got.end(), freeB.begin(), freeB.end());
  SmallVector<int64_t> shape(
      cast<RankedTensorType>(r->getType()).getShape().take_front(batch.size()));
  for (const Labels *ls : {&freeA, &freeB})
    for (int l : *ls)
      shape.push_back(size[l]);
  Value y = transposeTo(n, n.reshape(*r, shape), got, out);
  if (!y)
    return failure();
  n.setOutput(0, y);
  return success();
}

} // namespace

void registerEinsumOp(OpRegistry &r) { r["Einsum"] = einsumOp; }

} // namespace llmc::onnximport
