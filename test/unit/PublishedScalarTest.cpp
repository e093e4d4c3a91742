//===- PublishedScalarTest.cpp - The loss-publishing kernel's PTX ---------===//
//
// The executor loads PublishedScalar's PTX on the GPU (the driver compiles
// it there); this assembles the same text with the toolkit's ptxas for the
// archs llmc targets, so that a PTX error shows on a machine without a GPU.
// Skips when the toolkit has no ptxas. test/gpu/PublishedScalarGpuTest.cpp
// runs the kernel.
//
//===----------------------------------------------------------------------===//
#include "runtime/PublishedScalar.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace llmc;

namespace {

std::string findPtxas() {
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(var); dir && *dir) {
      std::string p = std::string(dir) + "/bin/ptxas";
      if (access(p.c_str(), X_OK) == 0)
        return p;
    }
  const char *fixed = "/usr/local/cuda/bin/ptxas";
  return access(fixed, X_OK) == 0 ? fixed : "";
}

TEST(PublishedScalar, PtxAssemblesForEveryTargetArch) {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    GTEST_SKIP() << "no ptxas (set CUDA_HOME to the CUDA toolkit)";
  std::string dir = ::testing::TempDir();
  std::string source = dir + "llmc-publish.ptx";
  {
    std::ofstream out(source);
    out << PublishedScalar::ptx();
  }
  for (const char *arch : {"sm_80", "sm_90", "sm_100"}) {
    std::string cubin = dir + "llmc-publish-" + arch + ".cubin";
    std::string log = dir + "llmc-publish-" + arch + ".log";
    std::string cmd = ptxas + " -arch=" + arch + " " + source + " -o " +
                      cubin + " > " + log + " 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    if (rc != 0 && text.find("not defined for option") != std::string::npos)
      continue; // an older toolkit that does not know the arch yet
    EXPECT_EQ(rc, 0) << cmd << "\n" << text;
  }
  // The check can fail: a broken copy (an undeclared register) is refused.
  std::string broken = PublishedScalar::ptx();
  size_t at = broken.find("%rd5, %rd5, 1;");
  ASSERT_NE(at, std::string::npos);
  broken.replace(at, 4, "%rd9");
  std::string bad = dir + "llmc-publish-broken.ptx";
  {
    std::ofstream out(bad);
    out << broken;
  }
  std::string cmd = ptxas + " -arch=sm_90 " + bad + " -o " + dir +
                    "llmc-publish-broken.cubin > /dev/null 2>&1";
  EXPECT_NE(std::system(cmd.c_str()), 0) << "ptxas took a broken PTX";
}

TEST(PublishedScalar, ReadsBeforeInitAreRefused) {
  PublishedScalar p;
  EXPECT_FALSE(p.ready());
  Status s = p.enqueue(nullptr, 0, 4);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("before init"), std::string::npos) << s.message();
  unsigned char bytes[8];
  s = p.read(nullptr, bytes);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("before init"), std::string::npos) << s.message();
  EXPECT_EQ(p.expected(), 0u);
}

} // namespace
