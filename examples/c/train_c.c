/*===- train_c.c - The C ABI from C: compile, train, read weights --------===//
 *
 *   train_c MODEL.onnx [cpu|cuda]
 *
 * Compiles the tiny GPT at 2 x 16, trains 5 steps on a fixed batch, shows
 * what a mistake returns (an i32 batch for i64 inputs), reads a weight
 * back, and frees the step. Exit status 0 when the loss fell.
 *
 *===----------------------------------------------------------------------===*/
#include "llmc/llmc.h"

#include <stdio.h>
#include <stdlib.h>

#define B 2
#define T 16

static int check(llmc_status s, const char *what) {
  if (s != LLMC_OK)
    fprintf(stderr, "train_c: %s: status %d: %s\n", what, (int)s,
            llmc_last_error());
  return s == LLMC_OK;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: train_c MODEL [cpu|cuda]\n");
    return 2;
  }
  char options[128];
  snprintf(options, sizeof options,
           "{\"batch\": %d, \"seq\": %d, \"device\": \"%s\"}", B, T,
           argc > 2 ? argv[2] : "cpu");
  printf("llmc %s\n", llmc_version());

  llmc_step *step = NULL;
  if (!check(llmc_compile(argv[1], options, &step), "compiling"))
    return 1;

  int64_t idx[B * T], tgt[B * T];
  for (int i = 0; i < B * T; ++i) {
    idx[i] = (i * 37 + 11) % 512;
    tgt[i] = (i * 91 + 5) % 512;
  }
  const int64_t shape[2] = {B, T};
  llmc_tensor inputs[2] = {
      {idx, LLMC_I64, LLMC_CPU, 2, shape, LLMC_NO_STREAM},
      {tgt, LLMC_I64, LLMC_CPU, 2, shape, LLMC_NO_STREAM}};

  double first = 0, loss = 0;
  int ok = check(llmc_step_evaluate(step, inputs, 2, &first), "evaluating");
  for (int k = 0; ok && k < 5; ++k) {
    ok = check(llmc_step_run(step, inputs, 2, 3e-3, &loss), "training");
    if (ok)
      printf("step %d | loss %.4f\n", k + 1, loss);
  }

  /* A mistake: the status and the message, and the step stays usable. */
  llmc_tensor wrong = inputs[0];
  wrong.dtype = LLMC_I32;
  llmc_tensor bad[2] = {wrong, inputs[1]};
  llmc_status s = llmc_step_run(step, bad, 2, 3e-3, &loss);
  printf("an i32 batch: status %d: %s\n", (int)s, llmc_last_error());

  float bias[64];
  ok = ok && check(llmc_step_get_parameter(step, "m.lnf.bias", bias,
                                           sizeof bias),
                   "reading m.lnf.bias");
  double last = 0;
  ok = ok && check(llmc_step_evaluate(step, inputs, 2, &last), "evaluating");
  if (ok)
    printf("loss %.4f -> %.4f; m.lnf.bias[0] = %g\n", first, last, bias[0]);
  check(llmc_step_destroy(step), "destroying");
  return ok && s == LLMC_ERROR_INVALID_ARGUMENT && last < first ? 0 : 1;
}
