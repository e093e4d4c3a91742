//===- Checkpoint.h - Saving and loading the training state -------*- C++ -*-===//
//
// A checkpoint is a folder `DIR/step-00000040/` holding
//   model.safetensors      the parameters, named and shaped as the model's
//                          (PyTorch's load_state_dict reads it)
//   optimizer.safetensors  the optimizer state (AdamW m and v, step count)
//   manifest.json          the loop's counters (TrainState), the schedule,
//                          the seed, the model's identity, and every
//                          tensor's dtype, shape and checksum
// Each file is written through AtomicFile, the manifest last: a folder
// without a manifest is incomplete (a run killed while saving) and is never
// loaded; older checkpoints are removed only after the new manifest is on
// disk, so the previous checkpoint stays loadable whatever moment the
// process dies at. Loading reads and checks everything (format, model
// identity, shapes, dtypes, checksums) before it writes a single byte into
// the engine: a bad checkpoint is refused whole, never half-loaded.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHECKPOINT_H
#define LLMC_RUNTIME_CHECKPOINT_H

#include "runtime/Trainer.h"

#include <string>
#include <vector>

namespace llmc {

/// What the manifest holds besides the tensors.
struct CheckpointInfo {
  TrainState state;
  LrSchedule schedule;
  uint64_t seed = 0;
  std::string modelName;
};

/// The folder of the checkpoint taken after `step` steps.
std::string checkpointFolder(const std::string &dir, int64_t step);

/// Writes a checkpoint of `engine`'s state into checkpointFolder(dir,
/// info.state.step) (creating `dir` if needed), then keeps only the last
/// `keep` complete checkpoints of `dir` (0: all). `written` is the folder.
Status saveCheckpoint(const std::string &dir, const CheckpointInfo &info,
                      StepEngine &engine, int64_t keep, std::string &written);

/// Loads a checkpoint into `engine`: `path` is a checkpoint folder, or a
/// folder of them (the newest complete one is taken). `loaded` is the
/// folder read.
Status loadCheckpoint(const std::string &path, const std::string &modelName,
                      StepEngine &engine, CheckpointInfo &info,
                      std::string &loaded);

/// The complete checkpoints of `dir`, oldest first.
std::vector<std::string> listCheckpoints(const std::string &dir);

/// Removes what a killed run left in `dir`: AtomicFile temporaries of
/// processes that no longer run, and incomplete checkpoint folders.
void cleanCheckpointDir(const std::string &dir);

} // namespace llmc

#endif // LLMC_RUNTIME_CHECKPOINT_H
