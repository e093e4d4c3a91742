//===- ArchMemoTest.cpp - The GPU's arch remembered per machine -----------===//
//
// compiler/ArchMemo.h on a fake sysfs: the fingerprint sees NVIDIA GPUs
// only (not NVSwitches or other vendors), refuses mixed GPUs, and the memo
// answers the second time without a detection, is rewritten when damaged,
// and is never written from a failed detection.
//
//===----------------------------------------------------------------------===//
#include "compiler/ArchMemo.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace llmc;
namespace fs = std::filesystem;

namespace {

class ArchMemo : public ::testing::Test {
protected:
  void SetUp() override {
    root = ::testing::TempDir() + "llmc-arch-memo-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root);
    fs::create_directories(root + "/sys/bus/pci/devices");
    fs::create_directories(root + "/sys/module/nvidia");
    write(root + "/sys/module/nvidia/version", "580.95.05\n");
  }
  static void write(const std::string &path, const std::string &text) {
    std::ofstream(path) << text;
  }
  void device(const std::string &slot, const char *vendor, const char *cls,
              const char *id) {
    std::string d = root + "/sys/bus/pci/devices/" + slot;
    fs::create_directories(d);
    write(d + "/vendor", std::string(vendor) + "\n");
    write(d + "/class", std::string(cls) + "\n");
    write(d + "/device", std::string(id) + "\n");
  }
  std::string sys() const { return root + "/sys"; }
  std::string root;
};

TEST_F(ArchMemo, FingerprintSeesOneKindOfNvidiaGpu) {
  EXPECT_EQ(gpuFingerprint(sys()), "") << "no GPU";
  device("0000:00:01.0", "0x8086", "0x030000", "0x1234"); // another vendor
  device("0000:00:02.0", "0x10de", "0x068000", "0x22a3"); // an NVSwitch
  EXPECT_EQ(gpuFingerprint(sys()), "");
  device("0000:18:00.0", "0x10de", "0x030200", "0x2330"); // H100 SXM
  device("0000:2a:00.0", "0x10de", "0x030200", "0x2330");
  std::string f = gpuFingerprint(sys());
  EXPECT_NE(f.find("gpu 0x2330 x2"), std::string::npos) << f;
  EXPECT_NE(f.find("driver 580.95.05"), std::string::npos) << f;
  device("0000:3a:00.0", "0x10de", "0x030200", "0x20b0"); // an A100 too
  EXPECT_EQ(gpuFingerprint(sys()), "") << "mixed GPUs must detect";
}

TEST_F(ArchMemo, RemembersADetectionAndRedetectsADamagedMemo) {
  std::string cache = root + "/cache";
  int detections = 0;
  auto detect = [&](std::string &arch) {
    ++detections;
    arch = "sm_90";
    return true;
  };
  bool remembered = true;
  EXPECT_EQ(rememberedArch(cache, "gpu x\n", detect, &remembered), "sm_90");
  EXPECT_FALSE(remembered);
  EXPECT_EQ(rememberedArch(cache, "gpu x\n", detect, &remembered), "sm_90");
  EXPECT_TRUE(remembered);
  EXPECT_EQ(detections, 1);
  // Another machine's fingerprint detects for itself.
  EXPECT_EQ(rememberedArch(cache, "gpu y\n", detect, &remembered), "sm_90");
  EXPECT_FALSE(remembered);
  EXPECT_EQ(detections, 2);
  // A damaged memo is detected again and rewritten.
  for (const fs::directory_entry &e : fs::directory_iterator(cache))
    write(e.path().string(), "garbage\n");
  EXPECT_EQ(rememberedArch(cache, "gpu x\n", detect, &remembered), "sm_90");
  EXPECT_FALSE(remembered);
  EXPECT_EQ(rememberedArch(cache, "gpu x\n", detect, &remembered), "sm_90");
  EXPECT_TRUE(remembered);
  EXPECT_EQ(detections, 3);
}

TEST_F(ArchMemo, NothingIsRememberedWithoutAGpuOrAFingerprint) {
  std::string cache = root + "/cache";
  int detections = 0;
  auto none = [&](std::string &arch) {
    ++detections;
    arch = "sm_90"; // detectArch's default when no GPU answers
    return false;
  };
  EXPECT_EQ(rememberedArch(cache, "gpu x\n", none), "sm_90");
  EXPECT_EQ(rememberedArch(cache, "gpu x\n", none), "sm_90");
  EXPECT_EQ(detections, 2);
  EXPECT_FALSE(fs::exists(cache) && !fs::is_empty(cache));
  auto real = [&](std::string &arch) {
    ++detections;
    arch = "sm_80";
    return true;
  };
  EXPECT_EQ(rememberedArch(cache, "", real), "sm_80"); // mixed: no memo
  EXPECT_EQ(rememberedArch(cache, "", real), "sm_80");
  EXPECT_EQ(detections, 4);
}

} // namespace
