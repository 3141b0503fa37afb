// `mimic run --onnx` on models users reported (tests/fuzz/regressions/onnx_import, written by
// tests/fuzz/make_onnx_regressions.py): on every device kind the answer is one error line and a
// nonzero exit. Each run is bounded by `timeout 5`: before the fixes they crashed, spun forever
// or allocated 6 GB for 19 s; now they take well under a second (the bound only catches hangs).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Case {
  const char* model;
  const char* expected;  // in the error line
};

const Case kCases[] = {
    {"instance_norm_rank1",
     "node 'norm' (InstanceNormalization): input 0 has rank 1, needs at least 3"},
    {"instance_norm_rank2_int8_scale",
     "node 'norm' (InstanceNormalization): input 0 has rank 2, needs at least 3"},
    {"initializer_declares_6gb_over_144_bytes",
     "raw data has 144 bytes, f32[520043518,3] needs 6240522216"},
    {"expand_to_4tb", "over the tensor memory limit"},
};

const char* const kDevices[] = {"cpu", "tpu-emu:v4", "ipu-emu:gc200"};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(CliReliability, ReportedModelsGiveOneErrorLineOnEveryDevice) {
  fs::path dir = fs::temp_directory_path() / ("mimic_cli_reliability_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string err = (dir / "stderr").string();
  for (const Case& c : kCases) {
    std::string model =
        std::string(MIMIC_SOURCE_DIR) + "/tests/fuzz/regressions/onnx_import/" + c.model + ".onnx";
    for (const char* device : kDevices) {
      SCOPED_TRACE(std::string(c.model) + " on " + device);
      auto start = std::chrono::steady_clock::now();
      int status = std::system(("timeout 5 " + std::string(MIMIC_BIN) + " run --onnx " + model +
                                " --device " + device + " >/dev/null 2>" + err)
                                   .c_str());
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ASSERT_TRUE(WIFEXITED(status));
      int code = WEXITSTATUS(status);
      EXPECT_NE(code, 124) << "timed out";
      EXPECT_NE(code, 0);
      EXPECT_NE(code, 1) << "internal error";
      std::string text = slurp(err);
      EXPECT_EQ(text.rfind("mimic: error: ", 0), 0u) << text;
      EXPECT_EQ(text.find('\n'), text.size() - 1) << "not one line: " << text;
      EXPECT_NE(text.find(c.expected), std::string::npos) << text;
      RecordProperty(std::string(c.model) + "@" + device + "_seconds", std::to_string(seconds));
    }
  }
  fs::remove_all(dir);
}

}  // namespace
