//===- train_tiny.cpp - A C++ trainer that embeds llmc's JIT API ----------===//
//
// The trainer owns the data and the loop; llmc owns the step. Reads a text
// file as byte tokens, compiles the model once, trains, evaluates, and
// writes the weights it got back as raw f32 files if asked.
//
//   train_tiny MODEL.onnx TEXT [--device cpu|cuda] [--steps N] [--lr X]
//
// Exit status 0 when the loss on the first batch fell, 1 otherwise or on
// an error (the API's message is printed).
//
//===----------------------------------------------------------------------===//
#include "llmc/Step.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace jit = llmc::jit;

static int fail(const std::string &what, const llmc::Status &s) {
  std::fprintf(stderr, "train_tiny: %s: %s\n", what.c_str(),
               s.message().c_str());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: train_tiny MODEL TEXT [--device cpu|cuda] "
                         "[--steps N] [--lr X]\n");
    return 2;
  }
  jit::Options options;
  options.batch = 4;
  options.seq = 32;
  int steps = 30;
  double lr = 3e-3;
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--device")
      options.device = value == "cuda" ? jit::Device::Cuda : jit::Device::Cpu;
    else if (flag == "--steps")
      steps = std::atoi(value.c_str());
    else if (flag == "--lr")
      lr = std::atof(value.c_str());
  }

  // The trainer's data: bytes of a text file, as next-token pairs.
  std::ifstream file(argv[2], std::ios::binary);
  std::vector<unsigned char> text((std::istreambuf_iterator<char>(file)),
                                  std::istreambuf_iterator<char>());
  const int64_t B = options.batch, T = options.seq;
  if (text.size() < size_t(B * T + 1)) {
    std::fprintf(stderr, "train_tiny: '%s' is shorter than one batch\n",
                 argv[2]);
    return 1;
  }
  auto batch = [&](int64_t k, std::vector<int64_t> &x,
                   std::vector<int64_t> &y) {
    x.resize(B * T);
    y.resize(B * T);
    size_t span = text.size() - B * T - 1;
    size_t at = (k * 7919 * B * T) % span;
    for (int64_t i = 0; i < B * T; ++i) {
      x[i] = text[at + i];
      y[i] = text[at + i + 1];
    }
  };

  jit::Step step;
  if (llmc::Status s = jit::compile(argv[1], options, step); !s)
    return fail("compiling", s);
  const jit::CompileReport &r = step.report();
  std::printf("compiled %s for %s: %lld parameters, vocab %lld, %.2f s\n",
              argv[1], jit::deviceName(r.device),
              static_cast<long long>(r.parameters),
              static_cast<long long>(r.vocab), r.compileSeconds);

  std::vector<int64_t> x, y, x0, y0;
  batch(0, x0, y0);
  auto views = [&](const std::vector<int64_t> &a,
                   const std::vector<int64_t> &b) {
    return std::vector<jit::TensorView>{jit::TensorView::host(a.data(), {B, T}),
                                        jit::TensorView::host(b.data(), {B, T})};
  };
  double before = 0, after = 0, loss = 0;
  if (llmc::Status s = step.evaluate(views(x0, y0), before); !s)
    return fail("evaluating", s);
  for (int k = 0; k < steps; ++k) {
    batch(k % 4, x, y);
    if (llmc::Status s = step.run(views(x, y), lr, loss); !s)
      return fail("step " + std::to_string(k + 1), s);
    double ms = 0;
    (void)step.lastStepMs(ms);
    if (k % 10 == 0 || k + 1 == steps)
      std::printf("step %d | loss %.4f | %.2f ms\n", k + 1, loss, ms);
  }
  if (llmc::Status s = step.evaluate(views(x0, y0), after); !s)
    return fail("evaluating", s);
  std::vector<jit::HostTensor> weights;
  if (llmc::Status s = step.parameters(weights); !s)
    return fail("reading the weights", s);
  std::printf("first batch: loss %.4f -> %.4f; %zu parameter tensors read "
              "back (%s first)\n",
              before, after, weights.size(), weights.front().name.c_str());
  return after < before ? 0 : 1;
}
