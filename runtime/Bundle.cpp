//===- Bundle.cpp - The .llmc bundle file: plan + cubins + weights --------===//
#include "runtime/Bundle.h"
#include "runtime/AtomicFile.h"
#include "runtime/Hash.h"
#include "runtime/PlanJson.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace llmc {
namespace {

uint64_t alignUp(uint64_t x, uint64_t alignment) {
  return (x + alignment - 1) / alignment * alignment;
}

void putU32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void putU64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t getU32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}
uint64_t getU64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

std::string byteCount(uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%llu bytes",
                static_cast<unsigned long long>(bytes));
  return text;
}

} // namespace

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

/// A read-only mapping of a whole file; empty when it cannot be mapped.
class MappedFile {
public:
  explicit MappedFile(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return;
    struct stat st{};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void *p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ,
                       MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const unsigned char *>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_)
      ::munmap(const_cast<unsigned char *>(data_), size_);
  }
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  const unsigned char *data() const { return data_; }
  size_t size() const { return size_; }

private:
  const unsigned char *data_ = nullptr;
  size_t size_ = 0;
};

/// True when the file at `path` is already the bundle of `header` (the plan
/// without its blob table) and `blobs`, byte for byte. The blobs are
/// compared first, against the existing file, and only then its blob table
/// (offsets, sizes, checksums) is taken into `header` and the whole header
/// compared: so the 500 MB of weights are read once, not checksummed. The
/// checksums taken are those the writer computed over the same bytes (a
/// bundle is only ever written whole, through AtomicFile), and the header
/// that holds them must match its own checksum.
bool alreadyWritten(const std::string &path, nlohmann::json header,
                    const std::vector<BlobRef> &blobs) {
  MappedFile file(path);
  const unsigned char *p = file.data();
  if (!p || file.size() < kBundlePrefixBytes ||
      std::memcmp(p, kBundleMagic, 8) != 0 ||
      getU32(p + 8) != kBundleVersion || getU32(p + 12) != 0)
    return false;
  uint64_t headerBytes = getU64(p + 16), blobBytes = getU64(p + 24);
  if (headerBytes > file.size() - kBundlePrefixBytes)
    return false;
  uint64_t blobBase =
      alignUp(kBundlePrefixBytes + headerBytes, kBundleBlobAlignment);
  if (blobBase > file.size() || blobBytes != file.size() - blobBase)
    return false;
  const char *text = reinterpret_cast<const char *>(p + kBundlePrefixBytes);
  if (checksum64(text, headerBytes) != getU64(p + 32))
    return false;
  nlohmann::json existing = nlohmann::json::parse(
      text, text + headerBytes, nullptr, /*allow_exceptions=*/false);
  if (existing.is_discarded() || !existing.is_object() ||
      !existing.contains("blobs") || !existing["blobs"].is_array() ||
      existing["blobs"].size() != blobs.size())
    return false;
  const nlohmann::json &table = existing["blobs"];
  uint64_t offset = 0;
  // The table first; then the bytes, compared in 16 MiB pieces on up to 8
  // threads (a warm `llmc compile` of GPT-2 124M compares 500 MB, most of
  // it page faults of two mapped files, which threads take in parallel).
  struct Piece {
    const unsigned char *file;
    const uint8_t *ours;
    uint64_t size;
  };
  std::vector<Piece> pieces;
  constexpr uint64_t kPiece = 16ull << 20;
  for (size_t i = 0; i < blobs.size(); ++i) {
    offset = alignUp(offset, kBundleBlobAlignment);
    const nlohmann::json &e = table[i];
    if (!e.is_object() || !e.contains("offset") || !e.contains("size") ||
        e["offset"] != offset || e["size"] != blobs[i].size ||
        blobBytes < offset + blobs[i].size)
      return false;
    for (uint64_t at = 0; at < blobs[i].size; at += kPiece)
      pieces.push_back({p + blobBase + offset + at, blobs[i].data + at,
                        std::min(kPiece, blobs[i].size - at)});
    offset += blobs[i].size;
  }
  if (offset != blobBytes)
    return false;
  std::atomic<size_t> next{0};
  std::atomic<bool> differ{false};
  auto compare = [&] {
    for (size_t i = next++; i < pieces.size() && !differ; i = next++)
      if (std::memcmp(pieces[i].file, pieces[i].ours, pieces[i].size))
        differ = true;
  };
  unsigned threads = std::min<unsigned>(
      8, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads && t < pieces.size(); ++t)
    pool.emplace_back(compare);
  compare();
  for (std::thread &t : pool)
    t.join();
  if (differ)
    return false;
  header["blobs"] = table;
  std::string ours = header.dump(1);
  if (ours.size() != headerBytes || std::memcmp(ours.data(), text, headerBytes))
    return false;
  // The gaps between the header and the blobs, and between blobs, are zero.
  for (uint64_t i = kBundlePrefixBytes + headerBytes; i < blobBase; ++i)
    if (p[i])
      return false;
  offset = 0;
  for (const BlobRef &blob : blobs) {
    uint64_t start = alignUp(offset, kBundleBlobAlignment);
    for (uint64_t i = offset; i < start; ++i)
      if (p[blobBase + i])
        return false;
    offset = start + blob.size;
  }
  return true;
}

} // namespace

Status writeBundle(const std::string &path, const Plan &plan,
                   bool *unchanged) {
  if (unchanged)
    *unchanged = false;
  LLMC_RETURN_IF_ERROR(validatePlan(plan).withContext("writing " + path));
  std::vector<BlobRef> blobs;
  nlohmann::json header = planToJson(plan, blobs);
  header["format"] = "llmc-bundle";
  if (unchanged && alreadyWritten(path, header, blobs)) {
    *unchanged = true;
    return Status::ok();
  }
  // Checksums of hundreds of megabytes of weights: one blob per task.
  std::vector<uint64_t> sums(blobs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < blobs.size(); i = next++)
      sums[i] = checksum64(blobs[i].data, blobs[i].size);
  };
  unsigned threads = std::min<unsigned>(
      8, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads && t < blobs.size(); ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
  nlohmann::json table = nlohmann::json::array();
  uint64_t blobBytes = 0;
  for (size_t i = 0; i < blobs.size(); ++i) {
    blobBytes = alignUp(blobBytes, kBundleBlobAlignment);
    table.push_back({{"offset", blobBytes},
                     {"size", blobs[i].size},
                     {"checksum", hex64(sums[i])}});
    blobBytes += blobs[i].size;
  }
  header["blobs"] = table;
  std::string text = header.dump(1);

  unsigned char prefix[kBundlePrefixBytes] = {};
  std::memcpy(prefix, kBundleMagic, 8);
  putU32(prefix + 8, kBundleVersion);
  putU64(prefix + 16, text.size());
  putU64(prefix + 24, blobBytes);
  putU64(prefix + 32, checksum64(text.data(), text.size()));

  // A killed or failing compile leaves neither a partial bundle nor its
  // temporary (runtime/AtomicFile.h).
  AtomicFile out;
  LLMC_RETURN_IF_ERROR(out.open(path));
  auto pad = [&](uint64_t to) {
    static const char zeros[kBundleBlobAlignment] = {};
    return out.write(zeros, static_cast<size_t>(to - out.size()));
  };
  LLMC_RETURN_IF_ERROR(out.write(prefix, sizeof(prefix)));
  LLMC_RETURN_IF_ERROR(out.write(text));
  uint64_t blobBase =
      alignUp(kBundlePrefixBytes + text.size(), kBundleBlobAlignment);
  LLMC_RETURN_IF_ERROR(pad(blobBase));
  for (size_t i = 0; i < blobs.size(); ++i) {
    LLMC_RETURN_IF_ERROR(pad(blobBase + table[i]["offset"].get<uint64_t>()));
    LLMC_RETURN_IF_ERROR(out.write(blobs[i].data, blobs[i].size));
  }
  return out.commit();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

Status readBundleImpl(const std::string &path, Plan &plan) {
  std::error_code ec;
  uint64_t fileSize = std::filesystem::file_size(path, ec);
  if (ec)
    return Status::error("cannot open: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(std::string("cannot open: ") + std::strerror(errno));
  if (fileSize < kBundlePrefixBytes)
    return Status::error(
        "truncated: the file has " + byteCount(fileSize) + ", less than the " +
        std::to_string(kBundlePrefixBytes) + "-byte bundle prefix");
  unsigned char prefix[kBundlePrefixBytes];
  in.read(reinterpret_cast<char *>(prefix), sizeof(prefix));
  if (std::memcmp(prefix, kBundleMagic, 8) != 0)
    return Status::error("not an llmc bundle (the file does not start with "
                         "\"LLMCBNDL\")");
  uint32_t version = getU32(prefix + 8);
  if (version != kBundleVersion)
    return Status::error("bundle format version " + std::to_string(version) +
                         ", but this runtime reads version " +
                         std::to_string(kBundleVersion) +
                         ": rebuild the bundle with a matching llmc");
  uint64_t headerBytes = getU64(prefix + 16);
  uint64_t blobBytes = getU64(prefix + 24);
  uint64_t headerSum = getU64(prefix + 32);
  if (headerBytes > fileSize - kBundlePrefixBytes)
    return Status::error("truncated: the header of " + byteCount(headerBytes) +
                         " does not fit in the file of " + byteCount(fileSize));
  uint64_t blobBase =
      alignUp(kBundlePrefixBytes + headerBytes, kBundleBlobAlignment);
  if (blobBase > fileSize || blobBytes != fileSize - blobBase)
    return Status::error("truncated or padded: the bundle should have " +
                         byteCount(blobBase + blobBytes) + ", the file has " +
                         byteCount(fileSize));

  std::string text(headerBytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(headerBytes));
  if (checksum64(text.data(), text.size()) != headerSum)
    return Status::error("corrupt: the JSON header does not match its "
                         "checksum");
  nlohmann::json header =
      nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded())
    return Status::error("corrupt: the header is not valid JSON");
  if (!header.is_object() || !header.contains("blobs") ||
      !header["blobs"].is_array())
    return Status::error("corrupt: the header has no blob table");
  const nlohmann::json &table = header["blobs"];

  BlobLoader loadBlob = [&](uint64_t index,
                            std::vector<uint8_t> &bytes) -> Status {
    std::string what = "blob " + std::to_string(index);
    if (index >= table.size())
      return Status::error(what + " is not in the blob table (" +
                           std::to_string(table.size()) + " blobs)");
    const nlohmann::json &entry = table[index];
    if (!entry.is_object() || !entry.contains("offset") ||
        !entry["offset"].is_number_unsigned() || !entry.contains("size") ||
        !entry["size"].is_number_unsigned() || !entry.contains("checksum") ||
        !entry["checksum"].is_string())
      return Status::error(what + ": malformed blob table entry");
    uint64_t offset = entry["offset"].get<uint64_t>();
    uint64_t size = entry["size"].get<uint64_t>();
    if (offset > blobBytes || size > blobBytes - offset)
      return Status::error(what + " lies outside the blob section (" +
                           byteCount(offset) + " + " + byteCount(size) + " > " +
                           byteCount(blobBytes) + "): truncated or corrupt");
    bytes.resize(size);
    in.seekg(static_cast<std::streamoff>(blobBase + offset));
    in.read(reinterpret_cast<char *>(bytes.data()),
            static_cast<std::streamsize>(size));
    if (!in)
      return Status::error(what + ": read failed (truncated?)");
    if (hex64(checksum64(bytes.data(), size)) !=
        entry["checksum"].get<std::string>())
      return Status::error(what + " is corrupt: its checksum does not match");
    return Status::ok();
  };
  LLMC_RETURN_IF_ERROR(planFromJson(header, loadBlob, plan));
  return validatePlan(plan);
}

} // namespace

Status readBundle(const std::string &path, Plan &plan) {
  plan = Plan();
  return readBundleImpl(path, plan).withContext("reading bundle " + path);
}

} // namespace llmc
