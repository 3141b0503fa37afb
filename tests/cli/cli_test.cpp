// The `mimic` command end to end: listing devices, running zoo models, JSON output, and every bad
// input giving one line on stderr and the documented exit status.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct Result {
  int status;
  std::string out, err;
};

Result mimic(const std::string& args) {
  // One file per test process: ctest runs the cases of this binary in parallel processes.
  std::string err_file =
      ::testing::TempDir() + "/mimic_stderr_" + std::to_string(getpid()) + ".txt";
  std::string cmd = std::string(MIMIC_BIN) + " " + args + " 2>" + err_file;
  Result r{0, "", ""};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  FILE* e = fopen(err_file.c_str(), "r");
  while (e && (n = fread(buf.data(), 1, buf.size(), e)) > 0) r.err.append(buf.data(), n);
  if (e) fclose(e);
  std::remove(err_file.c_str());
  return r;
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(Cli, DevicesListsCpuAndWhyOthersAreUnavailable) {
  Result r = mimic("devices");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("cpu "), std::string::npos);
  EXPECT_NE(r.out.find("cuda:0"), std::string::npos);
  Result j = mimic("devices --json");
  auto devices = nlohmann::json::parse(j.out);
  for (const auto& d : devices) {
    if (d["name"] == "cpu") {
      EXPECT_TRUE(d["available"].get<bool>());
    }
    if (!d["available"].get<bool>()) {
      EXPECT_FALSE(d["reason"].get<std::string>().empty()) << d.dump();
    }
  }
}

TEST(Cli, RunPrintsASummary) {
  Result r =
      mimic("run --model mlp --batch 4 --model-arg layers=2 --model-arg hidden=64 --repeat 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("checksum sum="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("f32[4,10]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("top 5 ops by wall time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fc1.matmul"), std::string::npos) << r.out;
}

TEST(Cli, RunJsonIsParseable) {
  Result r = mimic("run --model resnet18 --model-arg image_size=32 --layout nhwc --batch 2 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["outputs"][0]["type"], "f32[2,1000]");
  EXPECT_EQ(j["layout"], "nhwc");
  EXPECT_GT(j["report"]["ops"].size(), 20u);
}

TEST(Cli, TrainPrintsTheLossOfEveryStepAndSavesACheckpoint) {
  std::string ckpt = ::testing::TempDir() + "/mimic_train_" + std::to_string(getpid()) + ".npz";
  Result r = mimic(
      "train --model mlp --model-arg layers=2 --model-arg hidden=64 --batch 8 --steps 12 "
      "--optimizer adamw --lr 0.01 --save " +
      ckpt);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("step    12/12  loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trained mlp on cpu (adamw cross_entropy lr 0.01): 12 steps of batch 8"),
            std::string::npos)
      << r.out;
  FILE* f = std::fopen(ckpt.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::array<char, 4> magic{};
  EXPECT_EQ(std::fread(magic.data(), 1, 4, f), 4u);
  std::fclose(f);
  EXPECT_EQ(std::string(magic.data(), 2), "PK");
  std::remove(ckpt.c_str());
}

TEST(Cli, TrainWithRecomputationGivesTheSameLosses) {
  const std::string train =
      "train --model mlp --model-arg layers=3 --model-arg hidden=32 --batch 8 --steps 3 ";
  Result none = mimic(train);
  Result full = mimic(train + "--recompute full");
  ASSERT_EQ(none.status, 0) << none.err;
  ASSERT_EQ(full.status, 0) << full.err;
  auto losses = [](const std::string& out) { return out.substr(0, out.find("trained")); };
  EXPECT_EQ(losses(full.out), losses(none.out));
  EXPECT_NE(full.out.find("recompute full: "), std::string::npos) << full.out;
  Result bad = mimic(train + "--recompute sometimes");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("recompute 'sometimes' is not one of none, checkpoints, full"),
            std::string::npos)
      << bad.err;
}

TEST(Cli, TrainWithWarmupCosineLambAndLossScalingPrintsTheLr) {
  Result r = mimic(
      "train --model mlp --model-arg layers=2 --model-arg hidden=32 --batch 8 --steps 4 "
      "--optimizer lamb --lr 0.01 --weight-decay 0.01 --schedule cosine --warmup-steps 2 "
      "--loss-scale dynamic");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("step     1/4  lr 0  loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step     2/4  lr 0.005  loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step     3/4  lr 0.01  loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step     4/4  lr 0.005  loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loss scale 65536 after 0 steps skipped"), std::string::npos) << r.out;
  Result bad = mimic("train --steps 4 --schedule cosine --warmup-steps 4");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("warmup steps 4 must be in [0, total steps 4)"), std::string::npos)
      << bad.err;
}

TEST(Cli, HelpOnEverySubcommand) {
  for (const char* sub : {"", "devices ", "run ", "train "}) {
    Result r = mimic(std::string(sub) + "--help");
    EXPECT_EQ(r.status, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub;
  }
}

struct BadInput {
  const char* args;
  int status;
  const char* message;
};

class CliBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliBadInput, OneLineErrorAndExitStatus) {
  BadInput b = GetParam();
  Result r = mimic(b.args);
  EXPECT_EQ(r.status, b.status) << b.args << "\n" << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("mimic: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(b.message), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Errors, CliBadInput,
    ::testing::Values(
        BadInput{"run --model mlp --device gpu:0", 2, "unknown device 'gpu:0'"},
        BadInput{"run --model resnet51", 2, "unknown model 'resnet51'"},
        BadInput{"run --model mlp --batch 0", 2, "--batch must be positive, got 0"},
        BadInput{"run --model mlp --batch -3", 2, "--batch must be positive, got -3"},
        BadInput{"run --model mlp --model-arg layers", 2,
                 "--model-arg 'layers' must look like key=value"},
        BadInput{"run --model mlp --model-arg layers=two", 2, "needs an integer value"},
        BadInput{"run --model mlp --model-arg hidden=-4", 2, "must be positive"},
        BadInput{"run --model resnet18 --layout nwhc", 2, "unknown layout 'nwhc'"},
        BadInput{"run --model mlp --device cuda:0", 5, "cuda:0' is unavailable"},
        BadInput{"run --model mlp --option threads=4", 2, "cpu: unknown option 'threads'"},
        BadInput{"run", 2, "give a model"}, BadInput{"run --model mlp --batch x", 2, "--batch"},
        BadInput{"", 2, "subcommand"}, BadInput{"frobnicate", 2, "frobnicate"},
        BadInput{"train --model mlp --lr -1", 2, "optimizer: lr = -1 must be a finite number >= 0"},
        BadInput{"train --model mlp --optimizer lbfgs", 2, "unknown optimizer 'lbfgs'"},
        BadInput{"train --model mlp --steps 0", 2, "--steps 0"},
        BadInput{"train --model mlp --loss hinge", 2, "unknown loss 'hinge'"},
        BadInput{"train --model mlp --batch 64 --max-tensor-bytes 1KiB", 2,
                 "needs 262.1 kB (262144 bytes), over the tensor memory limit of 1.0 kB (1024 "
                 "bytes) (--max-tensor-bytes)"},
        BadInput{"train --model mlp --recompute full --recompute-checkpoints fc1.matmul,nope", 2,
                 "recompute checkpoint 'nope' is not a node of the forward pass (8 nodes"},
        BadInput{"train --model mlp --recompute-checkpoints fc1.matmul", 2,
                 "recompute checkpoints (1 named) need recompute 'full', not 'none'"},
        BadInput{"train --model mlp --batch-norm-variance sometimes", 2,
                 "batch norm variance 'sometimes' is not one of auto, one_pass, two_pass"}),
    [](const ::testing::TestParamInfo<BadInput>& info) {
      std::string name = std::to_string(info.index) + "_";
      for (const char* c = info.param.args; *c && name.size() < 40; ++c)
        name += std::isalnum(*c) ? *c : '_';
      return name;
    });

// `mimic scalesim` writes SCALE-Sim v2's own golden reports (alexnet_part, ws) byte for byte.
std::string read_all(const std::string& path) {
  std::string s;
  FILE* f = fopen(path.c_str(), "rb");
  std::array<char, 4096> buf;
  size_t n;
  while (f && (n = fread(buf.data(), 1, buf.size(), f)) > 0) s.append(buf.data(), n);
  if (f) fclose(f);
  return s;
}

std::string write_temp(const std::string& name, const std::string& text) {
  static int count = 0;
  std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" +
                     std::to_string(count++) + "_" + name;
  FILE* f = fopen(path.c_str(), "wb");
  fwrite(text.data(), 1, text.size(), f);
  fclose(f);
  return path;
}

std::string scalesim_cfg(const std::string& from, const std::string& to) {
  std::string cfg = read_all(std::string(MIMIC_SOURCE_DIR) + "/tests/data/scalesim/scale.cfg");
  cfg.replace(cfg.find(from), from.size(), to);
  return write_temp("scalesim.cfg", cfg);
}

TEST(Cli, ScaleSimWritesSCALESimsGoldenReports) {
  const std::string data = std::string(MIMIC_SOURCE_DIR) + "/tests/data/scalesim/";
  const std::string cfg = scalesim_cfg("Dataflow : os", "Dataflow : ws");
  const std::string out = ::testing::TempDir() + "/scalesim_out_" + std::to_string(getpid());
  Result r =
      mimic("scalesim -c " + cfg + " -t " + data + "alexnet_part.csv -p " + out + " --native");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("112283 cycles"), std::string::npos) << r.out;
  for (const char* f : {"COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv"})
    EXPECT_EQ(read_all(out + "/scale_example_run_32x32_os/" + f),
              read_all(data + "golden_trace/" + f))
        << f;
  EXPECT_EQ(
      read_all(out + "/scale_example_run_32x32_os/NATIVE_REPORT.csv"),
      "LayerID, Layer, SCALE-Sim Total Cycles, Native Cycles, Native Cycles Double-Buffered,\n"
      "0, Conv1, 112283, 112284, 108994,\n");
}

// USER interface-bandwidth mode: SCALE-Sim's stalling read buffers, its reports byte for byte.
TEST(Cli, ScaleSimUserModeWritesSCALESimsReports) {
  const std::string data = std::string(MIMIC_SOURCE_DIR) + "/tests/data/scalesim/";
  const std::string out = ::testing::TempDir() + "/scalesim_user_" + std::to_string(getpid());
  Result r = mimic("scalesim -c " + data + "u816_os.cfg -t " + data +
                   "test_mnk_input.csv -i gemm -p " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* f : {"COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "DETAILED_ACCESS_REPORT.csv"})
    EXPECT_EQ(read_all(out + "/u816_os/" + f),
              read_all(data + "expected/test_mnk_input__u816_os/" + f))
        << f;
}

TEST(Cli, ScaleSimBadInputs) {
  const std::string topo = std::string(MIMIC_SOURCE_DIR) + "/tests/data/scalesim/test.csv";
  struct Case {
    std::string args;
    int status;
    std::string text;
  };
  const Case cases[] = {
      {"scalesim -c /nonexistent.cfg -t " + topo, 6, "cannot read '/nonexistent.cfg'"},
      {"scalesim -c " + scalesim_cfg("Dataflow : os", "Dataflow : rs") + " -t " + topo, 2,
       "Dataflow: 'rs' is not os"},
      {"scalesim -c " +
           write_temp("user.cfg",
                      [] {
                        std::string cfg = read_all(std::string(MIMIC_SOURCE_DIR) +
                                                   "/tests/data/scalesim/u816_os.cfg");
                        return cfg.replace(cfg.find("Bandwidth : 4"), 13, "Bandwidth : four");
                      }()) +
           " -t " + topo,
       6, "Bandwidth: 'four' is not a positive integer"},
      {"scalesim -c " + scalesim_cfg("Dataflow : os", "Dataflow : os") + " -t " + topo + " -i mnk",
       2, "-i 'mnk' is not conv or gemm"},
      {"scalesim -c " + scalesim_cfg("Dataflow : os", "Dataflow : os") + " -t " +
           write_temp("bad.csv", "h\nA, 7, 7, 3, x, 2, 4, 1,\n"),
       6, "bad.csv:2: Filter Width: 'x' is not an integer"},
  };
  for (const Case& c : cases) {
    Result r = mimic(c.args);
    EXPECT_EQ(r.status, c.status) << c.args << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.text), std::string::npos) << r.err;
  }
}

}  // namespace
