//===- ModelPathTest.cpp - Files a model names stay inside its folder -----===//
//
// frontends/ModelPath.h, on a real folder with real symbolic links: the
// importers' lit tests show the messages, these pin the rule's edge cases.
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelPath.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using llmc::resolveModelPath;
namespace fs = std::filesystem;

namespace {

class ModelPath : public ::testing::Test {
protected:
  void SetUp() override {
    root = fs::path(::testing::TempDir()) /
           ("llmc-modelpath-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "model" / "weights");
    fs::create_directories(root / "outside");
    std::ofstream(root / "model" / "weights" / "w.bin") << "w";
    std::ofstream(root / "outside" / "secret") << "s";
    model = (root / "model").string();
  }
  void TearDown() override { fs::remove_all(root); }
  fs::path root;
  std::string model, why;
};

TEST_F(ModelPath, PlainRelativePathsResolveInsideTheFolder) {
  auto p = resolveModelPath(model, "weights/w.bin", why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(*p, model + "/weights/w.bin");
  // A file that does not exist is for the reader to report.
  p = resolveModelPath(model, "missing.bin", why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(*p, model + "/missing.bin");
}

TEST_F(ModelPath, AbsoluteAndDotDotAreRefused) {
  EXPECT_FALSE(resolveModelPath(model, (root / "outside" / "secret").string(),
                                why));
  EXPECT_EQ(why, "which is not inside the model's directory");
  EXPECT_FALSE(resolveModelPath(model, "../outside/secret", why));
  EXPECT_FALSE(resolveModelPath(model, "weights/../../outside/secret", why));
  // ".." inside a name is not a parent reference.
  EXPECT_TRUE(resolveModelPath(model, "weights/w..bin", why)) << why;
}

TEST_F(ModelPath, SymbolicLinksAreFollowedToTheirRealPath) {
  fs::create_symlink(root / "outside" / "secret", root / "model" / "link");
  fs::create_directory_symlink(root / "outside", root / "model" / "dir");
  fs::create_symlink("weights/w.bin", root / "model" / "inside");
  EXPECT_FALSE(resolveModelPath(model, "link", why));
  EXPECT_NE(why.find("through a symbolic link, outside the model's directory"),
            std::string::npos)
      << why;
  EXPECT_FALSE(resolveModelPath(model, "dir/secret", why));
  EXPECT_TRUE(resolveModelPath(model, "inside", why)) << why;
  // A folder whose name starts like the model's is still outside it.
  fs::create_directories(root / "model2");
  std::ofstream(root / "model2" / "x") << "x";
  fs::create_symlink(root / "model2" / "x", root / "model" / "sibling");
  EXPECT_FALSE(resolveModelPath(model, "sibling", why));
  // The model's own folder may be reached through a link.
  fs::create_directory_symlink(root / "model", root / "linked");
  EXPECT_TRUE(resolveModelPath((root / "linked").string(), "inside", why))
      << why;
}

} // namespace
