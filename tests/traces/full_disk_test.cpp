// A trace written to a full disk: `mimic run --trace` on a 256 KiB tmpfs that a first run has
// mostly filled. The second run must end with one error line (the io exit status) and the
// database must stay readable with the first run intact. Likewise a training checkpoint
// (`mimic train --save`) too large for the disk: one line, and the previous checkpoint loads.
// Mounting needs root (CAP_SYS_ADMIN); the test skips with the reason where that is not allowed
// (containers, unprivileged CI).
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "frontend/api/npz.h"

namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int sh(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("mimic_full_disk_" + std::to_string(getpid()))).string();
    fs::create_directories(dir_ + "/disk");
    if (mount("tmpfs", (dir_ + "/disk").c_str(), "tmpfs", 0, "size=256k") != 0) {
      std::string why = std::strerror(errno);
      fs::remove_all(dir_);
      GTEST_SKIP() << "cannot mount a small tmpfs (" << why << "; needs root with CAP_SYS_ADMIN)";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) umount((dir_ + "/disk").c_str());
    fs::remove_all(dir_);
  }
  std::string dir_;
  bool mounted_ = false;
};

TEST_F(FullDisk, RunFailsWithOneLineAndThePreviousRunStaysReadable) {
  std::string mimic = MIMIC_BIN, db = dir_ + "/disk/t.db", err = dir_ + "/stderr";
  ASSERT_EQ(sh(mimic + " run --model mlp --device cpu --trace " + db + " >/dev/null 2>" + err), 0)
      << slurp(err);
  int code = sh(mimic + " run --model resnet18 --device cpu --repeat 20 --trace " + db +
                " >/dev/null 2>" + err);
  std::string text = slurp(err);
  EXPECT_EQ(code, 6) << text;  // io
  EXPECT_EQ(text.rfind("mimic: error: trace '" + db + "'", 0), 0u) << text;
  EXPECT_NE(text.find("disk is full"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "not one line: " << text;
  std::string list = dir_ + "/list";
  ASSERT_EQ(sh(mimic + " trace list " + db + " >" + list + " 2>" + err), 0) << slurp(err);
  std::string runs = slurp(list);
  EXPECT_NE(runs.find("mlp"), std::string::npos) << runs;
  EXPECT_NE(runs.find("done"), std::string::npos) << runs;
  EXPECT_EQ(sh(mimic + " trace summary " + db + " --run 1 >/dev/null 2>" + err), 0) << slurp(err);
}

TEST_F(FullDisk, CheckpointFailsWithOneLineAndThePreviousOneStaysLoadable) {
  std::string mimic = MIMIC_BIN, ckpt = dir_ + "/disk/ck.npz", err = dir_ + "/stderr";
  std::string train = mimic + " train --device cpu --steps 1 --batch 2 --quiet --save " + ckpt;
  ASSERT_EQ(sh(train + " --model mlp --model-arg layers=1 >/dev/null 2>" + err), 0) << slurp(err);
  auto before = mimic::read_npz(ckpt);
  int code = sh(train + " --model mlp >/dev/null 2>" + err);  // 2.9 M parameters: 11.7 MB
  std::string text = slurp(err);
  EXPECT_EQ(code, 6) << text;  // io
  EXPECT_EQ(text.rfind("mimic: error: npz: writing '" + ckpt + "' failed", 0), 0u) << text;
  EXPECT_NE(text.find("the disk is full"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "not one line: " << text;
  auto after = mimic::read_npz(ckpt);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].first, before[i].first);
    EXPECT_EQ(after[i].second.nbytes(), before[i].second.nbytes()) << after[i].first;
    EXPECT_EQ(std::memcmp(after[i].second.raw(), before[i].second.raw(), after[i].second.nbytes()),
              0);
  }
  EXPECT_FALSE(fs::exists(ckpt + ".partial"));
}

}  // namespace
