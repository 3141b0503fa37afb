// `mimic` with ipu-emu devices: the run summary (cycles, device time, tables, difference against
// cpu), out-of-memory errors and their exit code, the memory report with allow_out_of_memory,
// option and preset-field errors.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <string>

namespace {

struct Result {
  int code;
  std::string out;
};

Result mimic(const std::string& args) {
  std::string cmd = std::string(MIMIC_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  Result r{-1, ""};
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool has(const Result& r, const std::string& s) {
  return r.out.find(s) != std::string::npos;
}

TEST(IpuCli, DevicesListPresets) {
  Result r = mimic("devices");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* p : {"ipu-emu:gc2 ", "ipu-emu:gc200", "ipu-emu:bow"})
    EXPECT_TRUE(has(r, p)) << r.out;
  EXPECT_FALSE(has(r, "IPU emulator is not built")) << r.out;
}

TEST(IpuCli, RunPrintsDeviceFiguresTablesAndDifference) {
  Result r = mimic("run --model mlp --batch 4 --device ipu-emu:gc200 --top 3");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* s :
       {"cycles =", "at 1.33 GHz", "difference  max abs", "(vs cpu)",
        "table ipu_tile_memory (1472 rows", "table ipu_supersteps", "tile_balance_max_over_mean",
        "samples_per_second", "ipu0.tiles", "ipu0.exchange", "MatMul"})
    EXPECT_TRUE(has(r, s)) << s << "\n" << r.out;
}

TEST(IpuCli, OutOfMemoryExitCodeAndReport) {
  Result r = mimic("run --model resnet50 --batch 128 --device ipu-emu:gc200 --compile-only");
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_TRUE(has(r, "mimic: error: Out of memory on tile ")) << r.out;
  EXPECT_TRUE(has(r, "bytes used but tiles only have 638976 bytes")) << r.out;
  r = mimic(
      "run --model resnet50 --batch 128 --device ipu-emu:gc200 --compile-only --option "
      "allow_out_of_memory=true "
      "--top 2");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "note: Out of memory on tile ")) << r.out;
  EXPECT_TRUE(has(r, "table ipu_tile_memory (1472 rows, first 2)")) << r.out;
  EXPECT_TRUE(has(r, "out_of_memory                    1")) << r.out;
}

TEST(IpuCli, BadOptionsAndFields) {
  Result r = mimic("run --model mlp --device ipu-emu:gc200 --option bogus=1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r, "unknown option 'bogus'")) << r.out;
  r = mimic("run --model mlp --device ipu-emu:gc200 --set tilez=3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r, "'tilez'")) << r.out;
  r = mimic("run --model mlp --device ipu-emu:gc200 --set tiles=736 --compile-only");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "tiles_per_ipu                    736")) << r.out;
  r = mimic("run --model mlp --device ipu-emu:gc200 --precision highest");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r, "precision 'highest'")) << r.out;
}

}  // namespace
