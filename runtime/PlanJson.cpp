//===- PlanJson.cpp - The plan as JSON, binary payloads as blobs ----------===//
//
// Reading goes through a Reader that remembers where in the document it is,
// so a bad field is reported as "kernels[2].entry: expected a string" rather
// than nlohmann's bare "type must be string".
//
//===----------------------------------------------------------------------===//
#include "runtime/PlanJson.h"
#include "runtime/PlanAttention.h"

#include <limits>

namespace llmc {

using nlohmann::json;

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

json argToJson(const KernelArg &arg) {
  switch (arg.kind) {
  case KernelArg::Kind::Buffer: {
    json j = {{"buffer", arg.name}};
    if (arg.offset)
      j["offset"] = arg.offset;
    return j;
  }
  case KernelArg::Kind::Scalar:
    return {{"scalar", arg.name}};
  case KernelArg::Kind::I32:
    return {{"i32", arg.intValue}};
  case KernelArg::Kind::I64:
    return {{"i64", arg.intValue}};
  case KernelArg::Kind::F32:
    return {{"f32", arg.floatValue}};
  }
  return {};
}

json stepToJson(const Step &step) {
  json j;
  if (const auto *launch = std::get_if<LaunchStep>(&step.op)) {
    j = {{"kind", "launch"},
         {"kernel", launch->kernel},
         {"grid", launch->grid},
         {"block", launch->block},
         {"sharedBytes", launch->sharedBytes}};
    json args = json::array();
    for (const KernelArg &arg : launch->args)
      args.push_back(argToJson(arg));
    j["args"] = args;
  } else if (const auto *mm = std::get_if<MatmulStep>(&step.op)) {
    j = {{"kind", "matmul"},
         {"m", mm->m},
         {"n", mm->n},
         {"k", mm->k},
         {"batch", mm->batch},
         {"transA", mm->transA},
         {"transB", mm->transB},
         {"typeA", dtypeName(mm->typeA)},
         {"typeB", dtypeName(mm->typeB)},
         {"typeC", dtypeName(mm->typeC)},
         {"typeD", dtypeName(mm->typeD)},
         {"alpha", mm->alpha},
         {"beta", mm->beta},
         {"tf32", mm->tf32},
         {"a", mm->a},
         {"b", mm->b},
         {"c", mm->c},
         {"d", mm->d},
         {"bias", mm->bias},
         {"epilogue", matmulEpilogueName(mm->epilogue)},
         {"aux", mm->aux},
         {"biasGrad", mm->biasGrad},
         {"strideA", mm->strideA},
         {"strideB", mm->strideB},
         {"strideC", mm->strideC},
         {"strideD", mm->strideD}};
  } else if (const auto *a = std::get_if<AttentionStep>(&step.op)) {
    j = {{"kind", "attention"},
         {"direction", a->backward ? "backward" : "forward"},
         {"dtype", dtypeName(a->dtype)},
         {"causal", a->causal},
         {"deterministic", a->deterministic},
         {"scale", a->scale},
         {"b", a->b},
         {"hq", a->hq},
         {"hkv", a->hkv},
         {"sq", a->sq},
         {"skv", a->skv},
         {"d", a->d}};
    for (auto [role, view] : attentionViews(*a))
      j[role] = {{"buffer", view->buffer},
                 {"offset", view->offset},
                 {"strides", view->strides}};
  } else {
    const auto &memset = std::get<MemsetStep>(step.op);
    j = {
        {"kind", "memset"}, {"buffer", memset.buffer}, {"value", memset.value}};
  }
  if (!step.label.empty())
    j["label"] = step.label;
  j["phase"] = phaseName(step.phase);
  if (!step.origin.empty())
    j["origin"] = step.origin;
  if (step.bytes != 0)
    j["bytes"] = step.bytes;
  return j;
}

} // namespace

json planToJson(const Plan &plan, std::vector<BlobRef> &blobs) {
  auto addBlob = [&](const uint8_t *data, size_t size) {
    blobs.push_back({data, size});
    return blobs.size() - 1;
  };
  json kernels = json::array();
  for (const KernelInfo &k : plan.kernels) {
    json j = {{"name", k.name},      {"entry", k.entry},
              {"arch", k.arch},      {"origin", k.origin},
              {"source", k.source},  {"fastMath", k.fastMath},
              {"options", k.options}};
    if (!k.cubin.empty())
      j["cubin"] = addBlob(k.cubin.data(), k.cubin.size());
    kernels.push_back(j);
  }
  json buffers = json::array();
  for (const BufferInfo &b : plan.buffers) {
    json j = {{"name", b.name},
              {"role", roleName(b.role)},
              {"dtype", dtypeName(b.dtype)},
              {"shape", b.shape},
              {"offset", b.offset},
              {"bytes", b.bytes},
              {"alignment", b.alignment}};
    if (b.hasInit())
      j["init"] = addBlob(b.initData(), b.initBytes());
    if (!b.realShape.empty())
      j["real_shape"] = b.realShape;
    buffers.push_back(j);
  }
  json scalars = json::array();
  for (const ScalarSlot &s : plan.scalars)
    scalars.push_back({{"name", s.name},
                       {"dtype", dtypeName(s.dtype)},
                       {"offset", s.offset},
                       {"init", s.init}});
  json steps = json::array();
  for (const Step &step : plan.steps)
    steps.push_back(stepToJson(step));
  return {{"name", plan.name},
          {"arenaBytes", plan.arenaBytes},
          {"workspaceBytes", plan.workspaceBytes},
          {"vocab", plan.vocab},
          {"accumulateSteps", plan.accumulateSteps},
          {"buffers", buffers},
          {"scalars", scalars},
          {"kernels", kernels},
          {"steps", steps}};
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// A JSON object together with its path in the document, for messages.
class Reader {
public:
  Reader(const json &j, std::string path) : j_(j), path_(std::move(path)) {}

  const std::string &path() const { return path_; }
  bool has(const char *key) const { return j_.is_object() && j_.contains(key); }
  Status fail(const std::string &what) const {
    return Status::error(path_ + ": " + what);
  }

  Status object() const {
    return j_.is_object() ? Status::ok() : fail("expected an object");
  }
  Status array(const char *key, const json *&out) const {
    if (!has(key) || !j_[key].is_array())
      return fail(std::string("expected an array '") + key + "'");
    out = &j_[key];
    return Status::ok();
  }
  Status string(const char *key, std::string &out,
                bool optional = false) const {
    if (!has(key))
      return optional ? Status::ok()
                      : fail(std::string("missing '") + key + "'");
    if (!j_[key].is_string())
      return fail(std::string("'") + key + "' must be a string");
    out = j_[key].get<std::string>();
    return Status::ok();
  }
  /// An integer that fits T; JSON numbers outside T's range are errors, not
  /// silently truncated.
  template <typename T>
  Status integer(const char *key, T &out, bool optional = false) const {
    if (!has(key))
      return optional ? Status::ok()
                      : fail(std::string("missing '") + key + "'");
    const json &v = j_[key];
    using Limits = std::numeric_limits<T>;
    bool fits = false;
    if (v.is_number_unsigned())
      fits = v.get<uint64_t>() <= static_cast<uint64_t>(Limits::max());
    else if (v.is_number_integer())
      fits = v.get<int64_t>() >= static_cast<int64_t>(Limits::min()) &&
             (v.get<int64_t>() < 0 || static_cast<uint64_t>(v.get<int64_t>()) <=
                                          static_cast<uint64_t>(Limits::max()));
    if (!fits)
      return fail(std::string("'") + key + "' must be an integer in [" +
                  std::to_string(Limits::min()) + ", " +
                  std::to_string(Limits::max()) + "]");
    out = v.get<T>();
    return Status::ok();
  }
  template <typename T>
  Status number(const char *key, T &out, bool optional = false) const {
    if (!has(key))
      return optional ? Status::ok()
                      : fail(std::string("missing '") + key + "'");
    if (!j_[key].is_number())
      return fail(std::string("'") + key + "' must be a number");
    out = j_[key].get<T>();
    return Status::ok();
  }
  Status boolean(const char *key, bool &out, bool optional = false) const {
    if (!has(key))
      return optional ? Status::ok()
                      : fail(std::string("missing '") + key + "'");
    if (!j_[key].is_boolean())
      return fail(std::string("'") + key + "' must be true or false");
    out = j_[key].get<bool>();
    return Status::ok();
  }
  Status dtype(const char *key, DType &out) const {
    std::string name;
    LLMC_RETURN_IF_ERROR(string(key, name));
    if (!parseDType(name, out))
      return fail("unknown dtype '" + name + "'");
    return Status::ok();
  }
  Status dims(const char *key, std::array<uint32_t, 3> &out) const {
    if (!has(key) || !j_[key].is_array() || j_[key].size() != 3)
      return fail(std::string("'") + key + "' must be an array of 3 integers");
    for (int i = 0; i < 3; ++i) {
      const json &v = j_[key][i];
      if (!v.is_number_unsigned() || v.get<uint64_t>() > 0xffffffffull)
        return fail(std::string("'") + key +
                    "' must be an array of 3 integers");
      out[i] = v.get<uint32_t>();
    }
    return Status::ok();
  }

private:
  const json &j_;
  std::string path_;
};

std::string at(const std::string &path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

Status readBuffer(const Reader &r, const BlobLoader &loadBlob, BufferInfo &b) {
  LLMC_RETURN_IF_ERROR(r.object());
  std::string role;
  LLMC_RETURN_IF_ERROR(r.string("name", b.name));
  LLMC_RETURN_IF_ERROR(r.string("role", role));
  if (!parseRole(role, b.role))
    return r.fail("unknown role '" + role + "'");
  LLMC_RETURN_IF_ERROR(r.dtype("dtype", b.dtype));
  const json *shape = nullptr;
  LLMC_RETURN_IF_ERROR(r.array("shape", shape));
  for (const json &dim : *shape) {
    if (!dim.is_number_integer())
      return r.fail("'shape' must hold integers");
    b.shape.push_back(dim.get<int64_t>());
  }
  if (r.has("real_shape")) {
    const json *real = nullptr;
    LLMC_RETURN_IF_ERROR(r.array("real_shape", real));
    for (const json &dim : *real) {
      if (!dim.is_number_integer())
        return r.fail("'real_shape' must hold integers");
      b.realShape.push_back(dim.get<int64_t>());
    }
  }
  LLMC_RETURN_IF_ERROR(r.integer("offset", b.offset));
  LLMC_RETURN_IF_ERROR(r.integer("bytes", b.bytes));
  LLMC_RETURN_IF_ERROR(r.integer("alignment", b.alignment, true));
  if (r.has("init")) {
    uint64_t blob = 0;
    LLMC_RETURN_IF_ERROR(r.integer("init", blob));
    LLMC_RETURN_IF_ERROR(loadBlob(blob, b.init).withContext(r.path()));
  }
  return Status::ok();
}

Status readKernel(const Reader &r, const BlobLoader &loadBlob, KernelInfo &k) {
  LLMC_RETURN_IF_ERROR(r.object());
  LLMC_RETURN_IF_ERROR(r.string("name", k.name));
  LLMC_RETURN_IF_ERROR(r.string("entry", k.entry));
  LLMC_RETURN_IF_ERROR(r.string("arch", k.arch, true));
  LLMC_RETURN_IF_ERROR(r.string("origin", k.origin, true));
  LLMC_RETURN_IF_ERROR(r.string("source", k.source, true));
  LLMC_RETURN_IF_ERROR(r.boolean("fastMath", k.fastMath, true));
  if (r.has("options")) {
    const json *options = nullptr;
    LLMC_RETURN_IF_ERROR(r.array("options", options));
    for (const json &option : *options) {
      if (!option.is_string())
        return r.fail("'options' must hold strings");
      k.options.push_back(option.get<std::string>());
    }
  }
  if (r.has("cubin")) {
    uint64_t blob = 0;
    LLMC_RETURN_IF_ERROR(r.integer("cubin", blob));
    LLMC_RETURN_IF_ERROR(loadBlob(blob, k.cubin).withContext(r.path()));
  }
  return Status::ok();
}

Status readArg(const json &j, const std::string &path, KernelArg &arg) {
  Reader r(j, path);
  LLMC_RETURN_IF_ERROR(r.object());
  if (r.has("buffer")) {
    arg.kind = KernelArg::Kind::Buffer;
    LLMC_RETURN_IF_ERROR(r.string("buffer", arg.name));
    return r.integer("offset", arg.offset, true);
  }
  if (r.has("scalar")) {
    arg.kind = KernelArg::Kind::Scalar;
    return r.string("scalar", arg.name);
  }
  if (r.has("i32")) {
    arg.kind = KernelArg::Kind::I32;
    int32_t value = 0;
    LLMC_RETURN_IF_ERROR(r.integer("i32", value));
    arg.intValue = value;
    return Status::ok();
  }
  if (r.has("i64")) {
    arg.kind = KernelArg::Kind::I64;
    return r.integer("i64", arg.intValue);
  }
  if (r.has("f32")) {
    arg.kind = KernelArg::Kind::F32;
    return r.number("f32", arg.floatValue);
  }
  return r.fail("an argument needs one of buffer, scalar, i32, i64, f32");
}

Status readView(const json &j, const std::string &path, AttentionView &view) {
  Reader r(j, path);
  LLMC_RETURN_IF_ERROR(r.object());
  LLMC_RETURN_IF_ERROR(r.string("buffer", view.buffer));
  LLMC_RETURN_IF_ERROR(r.integer("offset", view.offset, true));
  if (!r.has("strides") || !j["strides"].is_array() ||
      j["strides"].size() != 4)
    return r.fail("'strides' must be an array of 4 integers");
  for (size_t i = 0; i < 4; ++i) {
    if (!j["strides"][i].is_number_integer())
      return r.fail("'strides' must be an array of 4 integers");
    view.strides[i] = j["strides"][i].get<int64_t>();
  }
  return Status::ok();
}

Status readAttention(const Reader &r, const json &j, AttentionStep &a) {
  std::string direction;
  LLMC_RETURN_IF_ERROR(r.string("direction", direction));
  if (direction != "forward" && direction != "backward")
    return r.fail("'direction' must be forward or backward, not '" +
                  direction + "'");
  a.backward = direction == "backward";
  LLMC_RETURN_IF_ERROR(r.dtype("dtype", a.dtype));
  LLMC_RETURN_IF_ERROR(r.boolean("causal", a.causal, true));
  LLMC_RETURN_IF_ERROR(r.boolean("deterministic", a.deterministic, true));
  LLMC_RETURN_IF_ERROR(r.number("scale", a.scale));
  LLMC_RETURN_IF_ERROR(r.integer("b", a.b));
  LLMC_RETURN_IF_ERROR(r.integer("hq", a.hq));
  LLMC_RETURN_IF_ERROR(r.integer("hkv", a.hkv));
  LLMC_RETURN_IF_ERROR(r.integer("sq", a.sq));
  LLMC_RETURN_IF_ERROR(r.integer("skv", a.skv));
  LLMC_RETURN_IF_ERROR(r.integer("d", a.d));
  for (auto [role, view] : attentionViews(a)) {
    if (!r.has(role))
      return r.fail(std::string("missing '") + role + "' (a " + direction +
                    " attention step's view)");
    LLMC_RETURN_IF_ERROR(readView(j[role], r.path() + "." + role,
                                  const_cast<AttentionView &>(*view)));
  }
  return Status::ok();
}

Status readStep(const Reader &r, const json &j, Step &step) {
  LLMC_RETURN_IF_ERROR(r.object());
  std::string kind;
  LLMC_RETURN_IF_ERROR(r.string("kind", kind));
  LLMC_RETURN_IF_ERROR(r.string("label", step.label, true));
  // Optional: a hand-written plan (tests, docs/runtime.md) may leave it out.
  std::string phase = phaseName(StepPhase::Forward);
  LLMC_RETURN_IF_ERROR(r.string("phase", phase, true));
  LLMC_RETURN_IF_ERROR(r.string("origin", step.origin, true));
  LLMC_RETURN_IF_ERROR(r.integer("bytes", step.bytes, true));
  if (!parsePhase(phase, step.phase))
    return r.fail("unknown phase '" + phase +
                  "' (forward, backward or optimizer)");
  if (kind == "launch") {
    LaunchStep launch;
    LLMC_RETURN_IF_ERROR(r.integer("kernel", launch.kernel));
    LLMC_RETURN_IF_ERROR(r.dims("grid", launch.grid));
    LLMC_RETURN_IF_ERROR(r.dims("block", launch.block));
    LLMC_RETURN_IF_ERROR(r.integer("sharedBytes", launch.sharedBytes, true));
    const json *args = nullptr;
    LLMC_RETURN_IF_ERROR(r.array("args", args));
    for (size_t i = 0; i < args->size(); ++i) {
      KernelArg arg;
      LLMC_RETURN_IF_ERROR(readArg((*args)[i], at(r.path() + ".args", i), arg));
      launch.args.push_back(std::move(arg));
    }
    step.op = std::move(launch);
    return Status::ok();
  }
  if (kind == "matmul") {
    MatmulStep mm;
    LLMC_RETURN_IF_ERROR(r.integer("m", mm.m));
    LLMC_RETURN_IF_ERROR(r.integer("n", mm.n));
    LLMC_RETURN_IF_ERROR(r.integer("k", mm.k));
    LLMC_RETURN_IF_ERROR(r.integer("batch", mm.batch, true));
    LLMC_RETURN_IF_ERROR(r.boolean("transA", mm.transA, true));
    LLMC_RETURN_IF_ERROR(r.boolean("transB", mm.transB, true));
    LLMC_RETURN_IF_ERROR(r.dtype("typeA", mm.typeA));
    LLMC_RETURN_IF_ERROR(r.dtype("typeB", mm.typeB));
    LLMC_RETURN_IF_ERROR(r.dtype("typeC", mm.typeC));
    LLMC_RETURN_IF_ERROR(r.dtype("typeD", mm.typeD));
    LLMC_RETURN_IF_ERROR(r.number("alpha", mm.alpha, true));
    LLMC_RETURN_IF_ERROR(r.number("beta", mm.beta, true));
    LLMC_RETURN_IF_ERROR(r.boolean("tf32", mm.tf32, true));
    LLMC_RETURN_IF_ERROR(r.string("a", mm.a));
    LLMC_RETURN_IF_ERROR(r.string("b", mm.b));
    LLMC_RETURN_IF_ERROR(r.string("c", mm.c, true));
    LLMC_RETURN_IF_ERROR(r.string("d", mm.d));
    LLMC_RETURN_IF_ERROR(r.string("bias", mm.bias, true));
    std::string epilogue = "none";
    LLMC_RETURN_IF_ERROR(r.string("epilogue", epilogue, true));
    if (!matmulEpilogueFromName(epilogue, mm.epilogue))
      return r.fail("epilogue '" + epilogue +
                    "' is not none, gelu, gelu_grad, bias_grad_a or "
                    "bias_grad_b");
    LLMC_RETURN_IF_ERROR(r.string("aux", mm.aux, true));
    LLMC_RETURN_IF_ERROR(r.string("biasGrad", mm.biasGrad, true));
    LLMC_RETURN_IF_ERROR(r.integer("strideA", mm.strideA, true));
    LLMC_RETURN_IF_ERROR(r.integer("strideB", mm.strideB, true));
    LLMC_RETURN_IF_ERROR(r.integer("strideC", mm.strideC, true));
    LLMC_RETURN_IF_ERROR(r.integer("strideD", mm.strideD, true));
    step.op = std::move(mm);
    return Status::ok();
  }
  if (kind == "attention") {
    AttentionStep attention;
    LLMC_RETURN_IF_ERROR(readAttention(r, j, attention));
    step.op = std::move(attention);
    return Status::ok();
  }
  if (kind == "memset") {
    MemsetStep memset;
    LLMC_RETURN_IF_ERROR(r.string("buffer", memset.buffer));
    LLMC_RETURN_IF_ERROR(r.integer("value", memset.value, true));
    step.op = std::move(memset);
    return Status::ok();
  }
  return r.fail("unknown step kind '" + kind +
                "' (expected launch, matmul, memset or attention)");
}

} // namespace

Status planFromJson(const json &j, const BlobLoader &loadBlob, Plan &plan) {
  Reader r(j, "plan");
  LLMC_RETURN_IF_ERROR(r.object());
  LLMC_RETURN_IF_ERROR(r.string("name", plan.name, true));
  LLMC_RETURN_IF_ERROR(r.integer("arenaBytes", plan.arenaBytes));
  LLMC_RETURN_IF_ERROR(r.integer("workspaceBytes", plan.workspaceBytes, true));
  LLMC_RETURN_IF_ERROR(r.integer("vocab", plan.vocab, true));
  if (plan.vocab < 0)
    return r.fail("vocab must not be negative, got " +
                  std::to_string(plan.vocab));
  LLMC_RETURN_IF_ERROR(
      r.integer("accumulateSteps", plan.accumulateSteps, true));
  const json *section = nullptr;
  LLMC_RETURN_IF_ERROR(r.array("buffers", section));
  for (size_t i = 0; i < section->size(); ++i) {
    BufferInfo b;
    LLMC_RETURN_IF_ERROR(
        readBuffer(Reader((*section)[i], at("buffers", i)), loadBlob, b));
    plan.buffers.push_back(std::move(b));
  }
  LLMC_RETURN_IF_ERROR(r.array("scalars", section));
  for (size_t i = 0; i < section->size(); ++i) {
    Reader s((*section)[i], at("scalars", i));
    ScalarSlot slot;
    LLMC_RETURN_IF_ERROR(s.object());
    LLMC_RETURN_IF_ERROR(s.string("name", slot.name));
    LLMC_RETURN_IF_ERROR(s.dtype("dtype", slot.dtype));
    LLMC_RETURN_IF_ERROR(s.integer("offset", slot.offset));
    LLMC_RETURN_IF_ERROR(s.number("init", slot.init, true));
    plan.scalars.push_back(std::move(slot));
  }
  LLMC_RETURN_IF_ERROR(r.array("kernels", section));
  for (size_t i = 0; i < section->size(); ++i) {
    KernelInfo k;
    LLMC_RETURN_IF_ERROR(
        readKernel(Reader((*section)[i], at("kernels", i)), loadBlob, k));
    plan.kernels.push_back(std::move(k));
  }
  LLMC_RETURN_IF_ERROR(r.array("steps", section));
  for (size_t i = 0; i < section->size(); ++i) {
    Step step;
    LLMC_RETURN_IF_ERROR(readStep(Reader((*section)[i], at("steps", i)), (*section)[i], step));
    plan.steps.push_back(std::move(step));
  }
  return Status::ok();
}

} // namespace llmc
