//===- Checkpoint.cpp - Saving and loading the training state -------------===//
#include "runtime/Checkpoint.h"
#include "runtime/AtomicFile.h"
#include "runtime/Hash.h"
#include "runtime/Safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace llmc {

using Json = nlohmann::json;

namespace {

constexpr const char *kFormat = "llmc-checkpoint";
constexpr int kVersion = 1;
constexpr const char *kModelFile = "model.safetensors";
constexpr const char *kOptimizerFile = "optimizer.safetensors";
constexpr const char *kManifest = "manifest.json";
constexpr const char *kPrefix = "step-";

const char *safetensorsDtype(DType type) {
  switch (type) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::F8E4M3:
    return "F8_E4M3";
  case DType::F8E5M2:
    return "F8_E5M2";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  case DType::U8:
    return "U8";
  case DType::U16:
    return "U16";
  }
  return "U8";
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> entries(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (struct dirent *e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..")
        names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// The step of a folder named `step-NNNNNNNN`, or -1.
int64_t folderStep(const std::string &name) {
  if (name.rfind(kPrefix, 0) != 0 || name.size() == std::strlen(kPrefix))
    return -1;
  int64_t step = 0;
  for (size_t i = std::strlen(kPrefix); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (INT64_MAX - 9) / 10)
      return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

/// The pid in an AtomicFile temporary's name (`<target>.tmp.<pid>.<n>`), or
/// 0 when `name` is not one.
pid_t temporaryOwner(const std::string &name) {
  size_t at = name.rfind(".tmp.");
  if (at == std::string::npos)
    return 0;
  char *end = nullptr;
  long pid = std::strtol(name.c_str() + at + 5, &end, 10);
  if (pid <= 0 || *end != '.')
    return 0;
  return static_cast<pid_t>(pid);
}

bool processAlive(pid_t pid) {
  return pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH;
}

/// Removes a checkpoint folder: the manifest first, so that a removal cut
/// short leaves an incomplete folder (ignored), never a corrupt one.
void removeFolder(const std::string &folder) {
  ::unlink((folder + "/" + kManifest).c_str());
  syncDirectory(folder);
  for (const std::string &n : entries(folder))
    if (n == kModelFile || n == kOptimizerFile || temporaryOwner(n) != 0)
      ::unlink((folder + "/" + n).c_str());
  ::rmdir(folder.c_str()); // fails, harmlessly, when a stranger's file is in it
}

/// The model's identity over its state tensors. `ordered` hashes them in the
/// engine's order, as checkpoints before 2026-11-25 did; the canonical hash
/// takes them in name order, because the engines list the same tensors in
/// different orders (a GPU plan with padded parameters orders its buffers
/// otherwise than the CPU evaluator) while loading goes by name.
uint64_t modelHash(std::vector<StateTensor> tensors, bool ordered = false) {
  if (!ordered)
    std::sort(tensors.begin(), tensors.end(),
              [](const StateTensor &a, const StateTensor &b) {
                return a.name < b.name;
              });
  std::string text;
  for (const StateTensor &t : tensors)
    text += t.name + "|" + dtypeName(t.dtype) + "|" + shapeText(t.shape) +
            (t.optimizer ? "|o;" : "|p;");
  return fnv1a(text.data(), text.size());
}

Status makeDirectory(const std::string &dir) {
  if (isDirectory(dir))
    return Status::ok();
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0)
    LLMC_RETURN_IF_ERROR(makeDirectory(dir.substr(0, slash)));
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return Status::error("cannot create the checkpoint folder '" + dir +
                         "': " + std::strerror(errno));
  return Status::ok();
}

Json scheduleJson(const LrSchedule &s, int64_t position) {
  return {{"lr", s.lr},
          {"warmup", s.warmup},
          {"decay", decayName(s.decay)},
          {"decay_steps", s.decaySteps},
          {"min_lr", s.minLr},
          {"position", position}};
}

} // namespace

uint64_t StateTensor::bytes() const {
  uint64_t n = dtypeSize(dtype);
  for (int64_t d : shape)
    n *= static_cast<uint64_t>(d);
  return n;
}

std::string checkpointFolder(const std::string &dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "%s%08lld", kPrefix,
                static_cast<long long>(step));
  return dir + "/" + name;
}

std::vector<std::string> listCheckpoints(const std::string &dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  for (const std::string &n : entries(dir)) {
    int64_t step = folderStep(n);
    std::string folder = dir + "/" + n;
    if (step >= 0 && exists(folder + "/" + kManifest))
      found.push_back({step, folder});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto &f : found)
    out.push_back(f.second);
  return out;
}

void cleanCheckpointDir(const std::string &dir) {
  for (const std::string &n : entries(dir)) {
    std::string folder = dir + "/" + n;
    if (folderStep(n) < 0 || !isDirectory(folder))
      continue;
    bool live = false;
    for (const std::string &f : entries(folder))
      if (pid_t pid = temporaryOwner(f)) {
        if (processAlive(pid))
          live = true;
        else
          ::unlink((folder + "/" + f).c_str());
      }
    if (!live && !exists(folder + "/" + kManifest))
      removeFolder(folder);
  }
}

Status saveCheckpoint(const std::string &dir, const CheckpointInfo &info,
                      StepEngine &engine, int64_t keep, std::string &written) {
  LLMC_RETURN_IF_ERROR(makeDirectory(dir));
  std::string folder = checkpointFolder(dir, info.state.step);
  LLMC_RETURN_IF_ERROR(makeDirectory(folder));
  // Saving again into a complete folder: it stops being complete first.
  if (::unlink((folder + "/" + kManifest).c_str()) == 0)
    syncDirectory(folder);
  syncDirectory(dir);

  std::vector<StateTensor> tensors = engine.stateTensors();
  std::vector<SafeTensor> model, optimizer;
  Json list = Json::array();
  for (const StateTensor &t : tensors) {
    SafeTensor st;
    st.name = t.name;
    st.dtype = safetensorsDtype(t.dtype);
    st.shape = t.shape;
    LLMC_RETURN_IF_ERROR(engine.readState(t, st.data));
    if (st.data.size() != t.bytes())
      return Status::error("state tensor '" + t.name + "' read " +
                           std::to_string(st.data.size()) + " bytes, " +
                           std::to_string(t.bytes()) + " expected");
    list.push_back({{"name", t.name},
                    {"file", t.optimizer ? kOptimizerFile : kModelFile},
                    {"dtype", dtypeName(t.dtype)},
                    {"shape", t.shape},
                    {"checksum", hex64(checksum64(st.data.data(),
                                                  st.data.size()))}});
    (t.optimizer ? optimizer : model).push_back(std::move(st));
  }
  LLMC_RETURN_IF_ERROR(writeSafetensors(folder + "/" + kModelFile, model));
  LLMC_RETURN_IF_ERROR(
      writeSafetensors(folder + "/" + kOptimizerFile, optimizer));

  const TrainState &s = info.state;
  Json manifest = {
      {"format", kFormat},
      {"version", kVersion},
      {"model", info.modelName},
      {"model_hash", hex64(modelHash(tensors))},
      {"step", s.step},
      {"optimizer_step", s.updates},
      {"data_position", s.dataPosition},
      // The loop draws no random numbers (data is read in order): the seed,
      // which fixed the initial parameters, is the whole RNG state.
      {"rng", {{"seed", info.seed}}},
      {"nan",
       {{"steps", s.nanSteps},
        {"in_a_row", s.badInARow},
        {"rollbacks", s.rollbacks},
        {"lr_scale", s.lrScale}}},
      {"schedule", scheduleJson(info.schedule, s.step)},
      {"tensors", list}};
  LLMC_RETURN_IF_ERROR(writeFileAtomically(folder + "/" + kManifest,
                                           manifest.dump(1) + "\n"));
  written = folder;
  if (keep > 0) {
    std::vector<std::string> all = listCheckpoints(dir);
    for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i)
      if (all[i] != folder)
        removeFolder(all[i]);
    syncDirectory(dir);
  }
  return Status::ok();
}

namespace {

/// Picks the checkpoint folder `path` names (itself, or its newest
/// checkpoint).
Status resolveCheckpoint(const std::string &path, std::string &folder) {
  if (!exists(path))
    return Status::error("cannot resume from '" + path +
                         "': " + std::strerror(ENOENT));
  if (!isDirectory(path))
    return Status::error("cannot resume from '" + path +
                         "': it is not a folder (name a checkpoint folder, or "
                         "the --checkpoint-dir that holds them)");
  if (exists(path + "/" + kManifest)) {
    folder = path;
    return Status::ok();
  }
  std::vector<std::string> all = listCheckpoints(path);
  if (all.empty())
    return Status::error("cannot resume from '" + path +
                         "': it holds no checkpoint (no manifest.json in it "
                         "or in a step-* folder)");
  folder = all.back();
  return Status::ok();
}

template <typename T>
bool field(const Json &j, const char *key, T &out) {
  auto it = j.find(key);
  if (it == j.end())
    return false;
  try {
    out = it->get<T>();
  } catch (const Json::exception &) {
    return false;
  }
  return true;
}

Status parseManifest(const std::string &folder, Json &manifest,
                     CheckpointInfo &info) {
  std::string where = "checkpoint '" + folder + "'";
  std::ifstream in(folder + "/" + kManifest, std::ios::binary);
  if (!in)
    return Status::error(where + ": cannot read manifest.json: " +
                         std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  manifest = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object())
    return Status::error(where + ": manifest.json is not valid JSON "
                                 "(the file is damaged)");
  std::string format;
  int version = 0;
  if (!field(manifest, "format", format) || format != kFormat)
    return Status::error(where + ": manifest.json is not an llmc checkpoint "
                                 "manifest");
  if (!field(manifest, "version", version) || version != kVersion)
    return Status::error(where + ": checkpoint format version " +
                         std::to_string(version) + ", but this llmc reads "
                         "version " + std::to_string(kVersion));
  TrainState &s = info.state;
  Json nan = manifest.value("nan", Json::object());
  Json schedule = manifest.value("schedule", Json::object());
  Json rng = manifest.value("rng", Json::object());
  std::string decay;
  bool ok = field(manifest, "step", s.step) &&
            field(manifest, "optimizer_step", s.updates) &&
            field(manifest, "data_position", s.dataPosition) &&
            field(manifest, "model", info.modelName) &&
            field(rng, "seed", info.seed) && field(nan, "steps", s.nanSteps) &&
            field(nan, "in_a_row", s.badInARow) &&
            field(nan, "rollbacks", s.rollbacks) &&
            field(nan, "lr_scale", s.lrScale) &&
            field(schedule, "lr", info.schedule.lr) &&
            field(schedule, "warmup", info.schedule.warmup) &&
            field(schedule, "decay", decay) &&
            parseDecay(decay, info.schedule.decay) &&
            field(schedule, "decay_steps", info.schedule.decaySteps) &&
            field(schedule, "min_lr", info.schedule.minLr) &&
            manifest.contains("tensors") && manifest["tensors"].is_array();
  if (!ok || s.step < 0 || s.updates < 0 || s.updates > s.step)
    return Status::error(where + ": manifest.json lacks a field or has a bad "
                                 "value (step, optimizer_step, data_position, "
                                 "rng, nan, schedule or tensors)");
  return Status::ok();
}

} // namespace

Status loadCheckpoint(const std::string &path, const std::string &modelName,
                      StepEngine &engine, CheckpointInfo &info,
                      std::string &loaded) {
  std::string folder;
  LLMC_RETURN_IF_ERROR(resolveCheckpoint(path, folder));
  std::string where = "checkpoint '" + folder + "'";
  Json manifest;
  LLMC_RETURN_IF_ERROR(parseManifest(folder, manifest, info));
  (void)modelName; // informational: a renamed model file still resumes

  // The model's identity: the same state tensors, dtypes and shapes. The
  // first difference is named.
  std::vector<StateTensor> tensors = engine.stateTensors();
  std::map<std::string, const Json *> listed;
  for (const Json &t : manifest["tensors"]) {
    std::string name;
    if (!t.is_object() || !field(t, "name", name))
      return Status::error(where + ": manifest.json has a tensor without a "
                                   "name");
    listed[name] = &t;
  }
  std::string other = where + " is not of this model: ";
  for (const StateTensor &t : tensors) {
    auto it = listed.find(t.name);
    if (it == listed.end())
      return Status::error(other + "it has no tensor '" + t.name + "'");
    std::string dtype;
    std::vector<int64_t> shape;
    field(*it->second, "dtype", dtype);
    field(*it->second, "shape", shape);
    if (shape != t.shape)
      return Status::error(other + "its tensor '" + t.name + "' has shape " +
                           shapeText(shape) + ", the model's has " +
                           shapeText(t.shape));
    if (dtype != dtypeName(t.dtype))
      return Status::error(other + "its tensor '" + t.name + "' is " + dtype +
                           ", the model's is " + dtypeName(t.dtype));
  }
  if (listed.size() != tensors.size()) {
    std::map<std::string, bool> ours;
    for (const StateTensor &t : tensors)
      ours[t.name] = true;
    for (auto &[name, j] : listed)
      if (!ours.count(name))
        return Status::error(other + "it has a tensor '" + name +
                             "' the model lacks");
  }
  std::string hash;
  if (!field(manifest, "model_hash", hash) ||
      (hash != hex64(modelHash(tensors)) &&
       hash != hex64(modelHash(tensors, /*ordered=*/true))))
    return Status::error(other + "its model hash does not match (the state "
                                 "tensors differ in kind)");

  // Every byte read and checked before any is written.
  std::map<std::string, SafeTensor> data;
  for (const char *file : {kModelFile, kOptimizerFile}) {
    std::vector<SafeTensor> read;
    if (Status s = readSafetensors(folder + "/" + file, read); !s)
      return Status::error(where + ": " + s.message());
    for (SafeTensor &t : read)
      data[t.name] = std::move(t);
  }
  for (const StateTensor &t : tensors) {
    const char *file = t.optimizer ? kOptimizerFile : kModelFile;
    auto it = data.find(t.name);
    if (it == data.end())
      return Status::error(where + ": " + file + " has no tensor '" + t.name +
                           "'");
    const SafeTensor &st = it->second;
    if (st.shape != t.shape || st.dtype != safetensorsDtype(t.dtype) ||
        st.data.size() != t.bytes())
      return Status::error(where + ": tensor '" + t.name + "' in " + file +
                           " is " + st.dtype + shapeText(st.shape) +
                           ", the manifest says " +
                           safetensorsDtype(t.dtype) + shapeText(t.shape));
    std::string sum;
    field(*listed[t.name], "checksum", sum);
    if (sum != hex64(checksum64(st.data.data(), st.data.size())))
      return Status::error(where + ": tensor '" + t.name + "' in " + file +
                           " does not match its checksum in manifest.json "
                           "(the file is damaged or from another checkpoint)");
  }
  for (const StateTensor &t : tensors)
    LLMC_RETURN_IF_ERROR(engine.writeState(t, data[t.name].data));
  loaded = folder;
  return Status::ok();
}

} // namespace llmc
