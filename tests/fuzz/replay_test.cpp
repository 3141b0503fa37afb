// Replays a fuzz target's committed inputs in the normal build (no libFuzzer needed): every file
// of tests/fuzz/regressions/<fuzzer>/ (inputs that once crashed, hung or ran away) and
// tests/fuzz/corpus/<fuzzer>/ (seeds) goes through LLVMFuzzerTestOneInput, which must return.
// Under the sanitizer build (scripts/test.sh) they run with ASan and UBSan.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

int replay_folder(const fs::path& dir) {
  if (!fs::exists(dir)) return 0;
  int count = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(e.path().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
              0);
    ++count;
  }
  return count;
}

TEST(FuzzReplay, RegressionsAndSeeds) {
  fs::path root = fs::path(MIMIC_SOURCE_DIR) / "tests/fuzz";
  int regressions = replay_folder(root / "regressions" / MIMIC_FUZZER);
  int seeds = replay_folder(root / "corpus" / MIMIC_FUZZER);
  RecordProperty("regressions", regressions);
  RecordProperty("seeds", seeds);
  EXPECT_GT(regressions + seeds, 0) << "no inputs for " << MIMIC_FUZZER;
}

}  // namespace
