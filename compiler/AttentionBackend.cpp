//===- AttentionBackend.cpp - generated or cuDNN attention ----------------===//
//
// The measurement builds, per distinct shape and layout, the attention_lse +
// attention_grad pair as its own small function with dense [B, H, T, D]
// operands and runs its generated kernels through the runtime's executor,
// and runs cuDNN's plans on views with the op's own strides (a packed qkv's
// strided heads), and keeps the faster. The generated kernels' time changes
// by a few percent between the layouts (StridedAttentionGpuTest), cuDNN's
// not at all at GPT-2's shape (0.449 ms packed, 0.450 dense on an H100).
//
//===----------------------------------------------------------------------===//
#include "compiler/AttentionBackend.h"
#include "compiler/Pipeline.h"
#include "compiler/codegen/AttentionCudnn.h"
#include "compiler/codegen/FunctionLowering.h"
#include "compiler/codegen/PlanBuilder.h"
#include "dialects/llmc/LlmcDialect.h"
#include "dialects/llmc/LlmcOps.h"
#include "runtime/CudnnAttention.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Executor.h"

#include "mlir/Parser/Parser.h"

#include <cstdio>
#include <map>

using namespace mlir;

namespace llmc {

namespace {

struct AttentionShape {
  int64_t b, hq, hkv, t, s, d;
  bool causal, bf16;
  double scale;
  // The op's layout (cudnnViewStrides): q, k, v, o. cuDNN is timed in the
  // layout the step has, in case its speed depends on it.
  std::array<int64_t, 4> q, k, v, o;
  bool operator<(const AttentionShape &x) const {
    return std::tie(b, hq, hkv, t, s, d, causal, bf16, scale, q, k, v, o) <
           std::tie(x.b, x.hq, x.hkv, x.t, x.s, x.d, x.causal, x.bf16, x.scale,
                    x.q, x.k, x.v, x.o);
  }
  std::string text() const {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "[%lld, %lld/%lld, %lldx%lld, %lld] %s%s, q row stride %lld",
                  (long long)b, (long long)hq, (long long)hkv, (long long)t,
                  (long long)s, (long long)d, bf16 ? "bf16" : "f16",
                  causal ? " causal" : "", (long long)q[2]);
    return buf;
  }
};

codegen::AttentionParts partsOf(Operation *op) {
  if (auto f = dyn_cast<mlir::llmc::AttentionLseOp>(op))
    return {f.getQuery(),  f.getKey(),    f.getValue(),
            f.getMask(),   f.getResult(), f.getLse(),
            f.getCausal(), f.getScaleOrDefault(), f.getSeqMajor(), op};
  auto g = cast<mlir::llmc::AttentionGradOp>(op);
  return {g.getQuery(),  g.getKey(), g.getValue(),
          g.getMask(),   Value(),    Value(),
          g.getCausal(), g.getScaleOrDefault(), g.getSeqMajor(), op};
}

AttentionShape shapeOf(const codegen::AttentionParts &a) {
  codegen::Shape q = a.qShape(), k = a.kShape();
  return {q[0],
          q[1],
          k[1],
          q[2],
          k[2],
          q[3],
          a.causal,
          cast<RankedTensorType>(a.query.getType()).getElementType().isBF16(),
          a.scale,
          codegen::cudnnViewStrides(a, 0),
          codegen::cudnnViewStrides(a, 1),
          codegen::cudnnViewStrides(a, 2),
          codegen::cudnnViewStrides(a, 3)};
}

std::string pairFunction(const AttentionShape &s) {
  auto t = [](std::initializer_list<int64_t> dims, const char *e) {
    std::string r = "tensor<";
    for (int64_t d : dims)
      r += std::to_string(d) + "x";
    return r + e + ">";
  };
  const char *e = s.bf16 ? "bf16" : "f16";
  std::string q = t({s.b, s.hq, s.t, s.d}, e), kv = t({s.b, s.hkv, s.s, s.d}, e),
              lse = t({s.b, s.hq, s.t}, "f32");
  char scale[64];
  std::snprintf(scale, sizeof scale, "scale = %.17g : f64", s.scale);
  std::string attrs = std::string(" {") + (s.causal ? "causal, " : "") +
                      scale + "}";
  return "func.func @forward(%q: " + q + ", %k: " + kv + ", %v: " + kv +
         ", %dy: " + q + ") -> (" + q + ", " + q + ", " + kv + ", " + kv +
         ") {\n  %o, %lse = llmc.attention_lse %q, %k, %v" + attrs + " : (" +
         q + ", " + kv + ", " + kv + ") -> (" + q + ", " + lse +
         ")\n  %dq, %dk, %dv = llmc.attention_grad %q, %k, %v, %o, %lse, %dy" +
         attrs + " : (" + q + ", " + kv + ", " + kv + ", " + q + ", " + lse +
         ", " + q + ") -> (" + q + ", " + kv + ", " + kv + ")\n  return %o, "
         "%dq, %dk, %dv : " + q + ", " + q + ", " + kv + ", " + kv + "\n}\n";
}

constexpr int kReplays = 5;

/// The generated kernels' forward + backward: best replay in ms.
Status timeGenerated(const AttentionShape &s, double &ms,
                     std::unique_ptr<Executor> &exec) {
  MLIRContext context;
  context.loadDialect<mlir::llmc::LlmcDialect, func::FuncDialect>();
  auto module = parseSourceString<ModuleOp>(pairFunction(s), &context);
  if (!module)
    return Status::error("the timing function does not parse");
  auto func = module->lookupSymbol<func::FuncOp>("forward");
  if (failed(runKernelPipeline(*module)))
    return Status::error("the timing function's pipeline failed");
  auto lowered = codegen::lowerFunction(func, codegen::CodegenOptions());
  if (failed(lowered))
    return Status::error("the timing function's codegen failed");
  auto plan = codegen::buildUnplannedPlan(func, *lowered);
  if (failed(plan))
    return Status::error("the timing function's plan failed");
  ExecutorOptions eo;
  eo.source = "attention backend timing";
  LLMC_RETURN_IF_ERROR(Executor::create(plan->plan, eo, exec));
  ms = -1;
  for (int i = 0; i < kReplays; ++i) {
    float run = 0;
    LLMC_RETURN_IF_ERROR(exec->replay());
    LLMC_RETURN_IF_ERROR(exec->lastRunMs(run));
    if (ms < 0 || run < ms)
      ms = run;
  }
  return Status::ok();
}

/// cuDNN's forward + backward on the executor's context: best of a few;
/// `workspace` is what their plans need and `modelled` the memory plan's
/// model of it (CudnnAttention.h), which must agree.
Status timeCudnn(const AttentionShape &s, bool deterministic, Executor &exec,
                 double &ms, uint64_t &workspace, uint64_t &modelled) {
  CudnnAttentionDesc f;
  f.bf16 = s.bf16, f.causal = s.causal, f.scale = s.scale;
  f.b = s.b, f.hq = s.hq, f.hkv = s.hkv, f.sq = s.t, f.skv = s.s, f.d = s.d;
  f.q = s.q, f.k = s.k, f.v = s.v, f.o = s.o;
  f.dO = s.o, f.dQ = s.q, f.dK = s.k, f.dV = s.v;
  CudnnAttentionDesc g = f;
  g.backward = true;
  g.deterministic = deterministic;
  const cuda::DriverApi &cu = exec.driver();
  LLMC_CU(cu.cuCtxSetCurrent(exec.cudaContext()), "attention timing");
  std::unique_ptr<CudnnAttention> fwd, bwd;
  LLMC_RETURN_IF_ERROR(CudnnAttention::create(f, fwd));
  LLMC_RETURN_IF_ERROR(CudnnAttention::create(g, bwd));
  // Each view in a buffer of its own that spans its strides (the packed
  // qkv's three windows read the same memory pattern as one buffer would).
  auto span = [](std::array<int64_t, 4> dims, std::array<int64_t, 4> st) {
    uint64_t last = 0;
    for (int i = 0; i < 4; ++i)
      last += static_cast<uint64_t>((dims[i] - 1) * st[i]);
    return (last + 1) * 2;
  };
  uint64_t qBytes = span({s.b, s.hq, s.t, s.d}, s.q),
           kBytes = span({s.b, s.hkv, s.s, s.d}, s.k),
           vBytes = span({s.b, s.hkv, s.s, s.d}, s.v),
           oBytes = span({s.b, s.hq, s.t, s.d}, s.o);
  uint64_t statsBytes = s.b * s.hq * s.t * 4;
  uint64_t ws = std::max(fwd->workspaceBytes(), bwd->workspaceBytes());
  workspace = ws;
  modelled = std::max(modelledWorkspaceBytes(f), modelledWorkspaceBytes(g));
  uint64_t sizes[] = {qBytes, kBytes, vBytes, oBytes, statsBytes,
                      oBytes, qBytes, kBytes, vBytes, ws};
  std::vector<CUdeviceptr> p(10, 0);
  Status status = Status::ok();
  for (size_t i = 0; i < p.size() && status; ++i) {
    CUresult r = cu.cuMemAlloc(&p[i], (sizes[i] + 255) / 256 * 256 + 256);
    if (r != CUDA_SUCCESS)
      status = cuda::driverError(r, "cuMemAlloc", __FILE__, __LINE__,
                                 "attention timing");
    else
      cu.cuMemsetD8Async(p[i], 0, sizes[i], exec.stream());
  }
  CUevent start = nullptr, stop = nullptr;
  if (status) {
    cu.cuEventCreate(&start, CU_EVENT_DEFAULT);
    cu.cuEventCreate(&stop, CU_EVENT_DEFAULT);
  }
  CudnnAttentionArgs args{p[0], p[1], p[2], p[3], p[4],
                          p[5], p[6], p[7], p[8], p[9]};
  ms = -1;
  for (int i = 0; i <= kReplays && status; ++i) {
    cu.cuEventRecord(start, exec.stream());
    status = fwd->run(exec.stream(), args);
    if (status)
      status = bwd->run(exec.stream(), args);
    cu.cuEventRecord(stop, exec.stream());
    cu.cuEventSynchronize(stop);
    float run = 0;
    cu.cuEventElapsedTime(&run, start, stop);
    if (i > 0 && (ms < 0 || run < ms)) // the first run binds and warms up
      ms = run;
  }
  cu.cuCtxSynchronize();
  if (start)
    cu.cuEventDestroy(start);
  if (stop)
    cu.cuEventDestroy(stop);
  for (CUdeviceptr x : p)
    if (x)
      cu.cuMemFree(x);
  return status;
}

/// What the memory plan (plannedPeak, the compile report) needs to know
/// before codegen: this op runs on cuDNN, and how its backward computes dQ,
/// whose workspace differs by the B x H x T x T scores (CudnnAttention.h).
void markCudnn(Operation *op, bool deterministic) {
  Attribute mode = deterministic
                       ? Attribute(UnitAttr::get(op->getContext()))
                       : StringAttr::get(op->getContext(), "atomic");
  op->setAttr(kCudnnAttentionAttr, mode);
}

} // namespace

void chooseAttentionBackend(func::FuncOp func, const std::string &backend,
                            codegen::CodegenOptions &options,
                            std::vector<std::string> &lines) {
  std::vector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<mlir::llmc::AttentionLseOp, mlir::llmc::AttentionGradOp>(op))
      ops.push_back(op);
  });
  if (ops.empty())
    return;
  std::map<AttentionShape, std::vector<Operation *>> byShape;
  std::map<std::string, size_t> refused;
  for (Operation *op : ops) {
    codegen::AttentionParts a = partsOf(op);
    std::string why = codegen::cudnnAttentionRefusal(a);
    if (why.empty())
      byShape[shapeOf(a)].push_back(op);
    else
      ++refused[why];
  }
  auto refusals = [&] {
    for (const auto &[why, n] : refused)
      lines.push_back("  " + std::to_string(n) +
                      " attention op(s) keep the generated kernels: " + why);
  };
  // Nothing cuDNN could take: nothing to decide or report (f32 steps).
  if (byShape.empty() && backend != "cudnn")
    return;
  if (backend == "generated") {
    lines.push_back("generated kernels (--attention-backend generated)");
    return;
  }
  if (backend == "cudnn") {
    options.cudnnAttention = true;
    for (auto &[shape, shapeOps] : byShape)
      for (Operation *op : shapeOps)
        markCudnn(op, options.deterministicAttention);
    lines.push_back("cuDNN where it takes the op (--attention-backend cudnn): " +
                    std::to_string(ops.size() -
                                   [&] {
                                     size_t n = 0;
                                     for (auto &[w, c] : refused)
                                       n += c;
                                     return n;
                                   }()) +
                    " of " + std::to_string(ops.size()) + " ops" +
                    (options.deterministicAttention
                         ? ""
                         : "; backward with atomic dQ "
                           "(--attention-backward atomic)"));
    refusals();
    return;
  }
  // auto: measure, where there is something to measure with.
  std::string why;
  const cuda::CudnnApi *cudnn = nullptr;
  if (!gpuAvailable(why)) {
    lines.push_back("generated kernels (auto: no GPU to measure on: " + why +
                    ")");
    return;
  }
  if (Status s = cuda::loadCudnn(cudnn); !s) {
    lines.push_back("generated kernels (auto: " + s.message() + ")");
    return;
  }
  for (auto &[shape, shapeOps] : byShape) {
    std::unique_ptr<Executor> exec;
    double generated = -1, viaCudnn = -1;
    uint64_t workspace = 0, modelled = 0;
    Status s = timeGenerated(shape, generated, exec);
    if (s)
      s = timeCudnn(shape, options.deterministicAttention, *exec, viaCudnn,
                    workspace, modelled);
    char buf[512];
    if (!s) {
      lines.push_back("generated kernels for " + shape.text() +
                      " (auto: cuDNN could not be timed: " + s.message() + ")");
      continue;
    }
    bool pick = viaCudnn > 0 && viaCudnn < generated;
    // A model that disagrees with cuDNN (another cuDNN version's engine)
    // is said here: the memory plan and the budget count the model.
    std::string disagrees =
        workspace == modelled
            ? ""
            : ", but modelled " + formatMemoryBytes(modelled) +
                  " (the memory plan counts the model)";
    std::snprintf(buf, sizeof buf,
                  "%s for %s (auto: fwd+bwd cuDNN%s %.3f ms, generated %.3f "
                  "ms; %zu ops; cuDNN workspace %s%s)",
                  pick ? "cuDNN" : "generated kernels", shape.text().c_str(),
                  options.deterministicAttention ? "" : " (atomic dQ)",
                  viaCudnn, generated, shapeOps.size(),
                  formatMemoryBytes(workspace).c_str(), disagrees.c_str());
    lines.push_back(buf);
    if (pick)
      for (Operation *op : shapeOps)
        markCudnn(op, options.deterministicAttention);
  }
  refusals();
}

} // namespace llmc
