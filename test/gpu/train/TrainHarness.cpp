//===- TrainHarness.cpp - Compiled steps on the GPU vs the reference ------===//
#include "test/gpu/train/TrainHarness.h"

#include "compiler/ModelLoader.h"
#include "compiler/codegen/FunctionLowering.h"
#include "compiler/eval/DeviceTensors.h"
#include "compiler/eval/Evaluator.h"
#include "compiler/eval/ModelArguments.h"

#include "mlir/IR/Diagnostics.h"

#include <cmath>
#include <cstdlib>
#include <random>

using namespace mlir;

namespace llmc::test {

std::string modelPath(const std::string &file) {
  if (const char *dir = std::getenv("LLMC_TEST_MODELS"))
    return std::string(dir) + "/" + file;
  return std::string(LLMC_TEST_MODELS_DIR) + "/" + file;
}

::testing::AssertionResult retainPrimaryContext(PrimaryContext &out) {
  if (!cuda::loadDriver(out.cu))
    return ::testing::AssertionFailure() << "no CUDA driver";
  auto failed = [](const char *what, CUresult r) {
    return ::testing::AssertionFailure() << what << " failed: " << r;
  };
  if (CUresult r = out.cu->cuInit(0); r != CUDA_SUCCESS)
    return failed("cuInit", r);
  if (CUresult r = out.cu->cuDeviceGet(&out.device, 0); r != CUDA_SUCCESS)
    return failed("cuDeviceGet", r);
  if (CUresult r = out.cu->cuDevicePrimaryCtxRetain(&out.context, out.device);
      r != CUDA_SUCCESS)
    return failed("cuDevicePrimaryCtxRetain", r);
  if (CUresult r = out.cu->cuCtxSetCurrent(out.context); r != CUDA_SUCCESS)
    return failed("cuCtxSetCurrent", r);
  return ::testing::AssertionSuccess();
}

func::FuncOp Fixture::train() {
  return module->lookupSymbol<func::FuncOp>("train_step");
}

func::FuncOp Fixture::step() {
  return module->lookupSymbol<func::FuncOp>(eval ? "forward" : "train_step");
}

bool compileFixture(const std::string &file, const OptimizerConfig &optimizer,
                    Fixture &out, std::string &error, bool eval) {
  out.eval = eval;
  out.context = std::make_unique<MLIRContext>();
  ScopedDiagnosticHandler handler(out.context.get(), [&](Diagnostic &d) {
    error += d.str() + "\n";
    return success();
  });
  out.module = loadModel(modelPath(file), ModelOptions(), *out.context);
  if (!out.module)
    return false;
  CompileConfig config;
  config.name = file;
  config.optimizer = optimizer;
  config.eval = eval;
  auto compiled = compileModule(*out.module, config);
  if (failed(compiled))
    return false;
  out.compiled = std::move(*compiled);
  return true;
}

std::vector<RefTensor> stepArguments(Fixture &f, uint64_t seed, double lr) {
  func::FuncOp train = f.step();
  std::mt19937_64 rng(seed);
  int64_t vocab = std::max<int64_t>(1, f.compiled.report.vocab);
  std::vector<RefTensor> args;
  for (unsigned i = 0; i < train.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(train.getArgument(i).getType());
    RefTensor t(*kindOf(type.getElementType()),
                {type.getShape().begin(), type.getShape().end()});
    auto input = train.getArgAttrOfType<StringAttr>(i, "llmc.input");
    std::string error;
    if (train.getArgAttr(i, "llmc.param")) {
      t = *initialParameter(train, i, /*seed=*/0, error);
    } else if (input && input.getValue() == "lr") {
      t.floats[0] = static_cast<float>(lr);
    } else if (input && !t.isFloat()) {
      for (int64_t &v : t.ints)
        v = static_cast<int64_t>(rng() % vocab);
    } else if (input) {
      std::normal_distribution<double> normal;
      for (double &v : t.floats)
        v = static_cast<float>(normal(rng));
    }
    args.push_back(std::move(t)); // state: zeros
  }
  return args;
}

Status writeInputs(Executor &exec, Fixture &f,
                   const std::vector<RefTensor> &args) {
  func::FuncOp train = f.step();
  const auto &locations = f.compiled.planned.arguments;
  for (unsigned i = 0; i < train.getNumArguments(); ++i) {
    if (!train.getArgAttr(i, "llmc.input"))
      continue;
    if (locations[i].scalar) {
      const RefTensor &t = args[i];
      double v = t.isFloat() ? t.floats[0] : static_cast<double>(t.ints[0]);
      LLMC_RETURN_IF_ERROR(exec.setScalar(locations[i].name, v));
      continue;
    }
    std::vector<uint8_t> bytes = toDeviceBytes(args[i]);
    LLMC_RETURN_IF_ERROR(
        exec.writeBuffer(locations[i].name, bytes.data(), bytes.size()));
  }
  return Status::ok();
}

Status readResults(Executor &exec, Fixture &f, std::vector<RefTensor> &out) {
  func::FuncOp train = f.step();
  out.clear();
  for (unsigned r = 0; r < train.getNumResults(); ++r) {
    auto type = cast<RankedTensorType>(train.getResultTypes()[r]);
    ElementKind kind = *kindOf(type.getElementType());
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    const codegen::ValueLocation &loc = f.compiled.planned.results[r];
    if (loc.scalar) {
      double v = 0;
      LLMC_RETURN_IF_ERROR(exec.readScalar(loc.name, v));
      RefTensor t(kind, shape);
      if (t.isFloat())
        t.floats[0] = v;
      else
        t.ints[0] = static_cast<int64_t>(v);
      out.push_back(std::move(t));
      continue;
    }
    std::vector<uint8_t> bytes;
    LLMC_RETURN_IF_ERROR(exec.readBuffer(loc.name, bytes));
    out.push_back(fromDeviceBytes(bytes, kind, shape));
  }
  return Status::ok();
}

double relativeError(const RefTensor &gpu, const RefTensor &ref) {
  if (!ref.isFloat())
    return gpu.ints == ref.ints ? 0.0 : INFINITY;
  double diff = 0, norm = 0;
  for (int64_t e = 0; e < ref.numElements(); ++e) {
    double d = gpu.floats[e] - ref.floats[e];
    diff += d * d;
    norm += ref.floats[e] * ref.floats[e];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

AdamWParamCheck checkAdamWParam(const RefTensor &gpu, const RefTensor &ref,
                                const RefTensor &before, const RefTensor &mRef,
                                const OptimizerConfig &opt, double lr) {
  AdamWParamCheck out;
  double gmax = 0;
  for (double m : mRef.floats)
    gmax = std::max(gmax, std::abs(m) / (1 - opt.beta1));
  double diff = 0, norm = 0;
  for (int64_t e = 0; e < ref.numElements(); ++e) {
    double g = std::abs(mRef.floats[e]) / (1 - opt.beta1);
    if (g < 1e-4 * gmax) {
      ++out.noiseElements;
      double bound = lr * (1 + opt.weightDecay * std::abs(before.floats[e]));
      out.noiseWithinLr &=
          std::abs(gpu.floats[e] - before.floats[e]) <= bound * 1.001;
      continue;
    }
    double d = gpu.floats[e] - ref.floats[e];
    diff += d * d;
    norm += ref.floats[e] * ref.floats[e];
  }
  out.error = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  return out;
}

std::string resultName(Fixture &f, unsigned i) {
  func::FuncOp train = f.step();
  if (auto next = train.getResultAttrOfType<IntegerAttr>(i, "llmc.next"))
    return "next " + f.compiled.planned.arguments[next.getInt()].name;
  if (auto n = train.getResultAttrOfType<StringAttr>(i, "llmc.output"))
    return n.getValue().str();
  return "#" + std::to_string(i);
}

} // namespace llmc::test
