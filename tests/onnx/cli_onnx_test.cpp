// The `mimic` command on ONNX files: `run --onnx` with .npy inputs and outputs, bad files (one
// error line, the io exit status), unsupported ops, and `conformance` on a small generated suite.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <onnx/onnx_pb.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "frontend/api/npy.h"
#include "tests/onnx/test_util.h"

namespace mimic::testing {
namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class CliOnnx : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir("cli_onnx"); }
  void TearDown() override { fs::remove_all(dir_); }

  Result mimic(const std::string& args) {
    std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    int status =
        std::system((std::string(MIMIC_BIN) + " " + args + " >" + out + " 2>" + err).c_str());
    return Result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }

  // y = relu(x @ w + b) with a symbolic batch.
  std::string linear_model() {
    ModelBuilder b(13, "linear");
    b.input("x", TensorProto::FLOAT, {std::string("batch"), int64_t{3}});
    b.initializer("w", {3, 2}, {1, 0, 0, 1, 1, 1});
    b.initializer("b", {2}, {0, -10});
    b.node("MatMul", {"x", "w"}, {"xw"});
    b.node("Add", {"xw", "b"}, {"z"});
    b.node("Relu", {"z"}, {"y"});
    b.output("y");
    return b.save(dir_ + "/linear.onnx");
  }

  std::string dir_;
};

TEST_F(CliOnnx, RunsWithRandomInputs) {
  Result r = mimic("run --onnx " + linear_model() + " --device cpu");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("checksum"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("random inputs"), std::string::npos) << r.out;
}

TEST_F(CliOnnx, ReadsAndWritesNpy) {
  write_npy(dir_ + "/x.npy", f32({2, 3}, {1, 2, 3, 10, 20, 30}));
  Result r = mimic("run --onnx " + linear_model() + " --input x=" + dir_ + "/x.npy --output-dir " +
                   dir_ + "/out");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("batch 2"), std::string::npos) << r.out;
  ir::HostTensor y = read_npy(dir_ + "/out/y.npy");
  EXPECT_EQ(y.shape(), ir::Shape({2, 2}));
  EXPECT_EQ(values(y), (std::vector<float>{4, 0, 40, 40}));
}

TEST_F(CliOnnx, InputErrors) {
  std::string model = linear_model();
  write_npy(dir_ + "/x.npy", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  write_npy(dir_ + "/bad_shape.npy", f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  Result r = mimic("run --onnx " + model + " --input nope=" + dir_ + "/x.npy");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no input of that name (inputs: x)"), std::string::npos) << r.err;
  r = mimic("run --onnx " + model + " --input x=" + dir_ + "/bad_shape.npy");
  EXPECT_EQ(r.code, 2) << r.err;
  r = mimic("run --onnx " + model + " --input x=" + dir_ + "/missing.npy");
  EXPECT_EQ(r.code, 6) << r.err;
  r = mimic("run --onnx " + model + " --model mlp");
  EXPECT_EQ(r.code, 2) << r.err;
}

// A Reshape whose shape is an input: its --input value is compiled in; without it, a clear error.
TEST_F(CliOnnx, ShapeInputsTakeTheirInputValues) {
  ModelBuilder b(13);
  b.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  b.input("shape", TensorProto::INT64, {int64_t{2}});
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y");
  std::string model = b.save(dir_ + "/reshape.onnx");
  Result r = mimic("run --onnx " + model);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input(s) shape set shapes"), std::string::npos) << r.err;
  write_npy(dir_ + "/x.npy", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  int64_t shape[] = {3, 2};
  write_npy(dir_ + "/shape.npy", ir::HostTensor::from(ir::Shape({2}), shape));
  r = mimic("run --onnx " + model + " --input x=" + dir_ + "/x.npy --input shape=" + dir_ +
            "/shape.npy --output-dir " + dir_ + "/out");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_npy(dir_ + "/out/y.npy").shape(), ir::Shape({3, 2}));
}

TEST_F(CliOnnx, GarbageAndTruncatedFilesAreOneErrorLine) {
  std::string good = slurp(linear_model());
  std::ofstream(dir_ + "/garbage.onnx") << "definitely not a protobuf \xff\xfe";
  std::ofstream(dir_ + "/truncated.onnx", std::ios::binary) << good.substr(0, good.size() / 2);
  for (const char* name : {"garbage.onnx", "truncated.onnx", "missing.onnx"}) {
    Result r = mimic(std::string("run --onnx ") + dir_ + "/" + name);
    EXPECT_EQ(r.code, 6) << name << ": " << r.err;
    EXPECT_EQ(r.err.rfind("mimic: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(CliOnnx, UnsupportedOpsExitWithTheirCode) {
  ModelBuilder b(13);
  b.input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{4}});
  b.node("TopK", {"x"}, {"v", "i"}, "topk");
  b.node("Unique", {"v"}, {"y"}, "unique");
  b.output("y");
  Result r = mimic("run --onnx " + b.save(dir_ + "/unsupported.onnx"));
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("TopK (no IR equivalent): node 'topk'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Unique (no IR equivalent): node 'unique'"), std::string::npos) << r.err;
}

// A suite of three generated tests: one passes, one has a wrong expected output, one uses an op
// without an IR equivalent.
class CliConformance : public CliOnnx {
 protected:
  void add_test(const std::string& name, const std::string& op, float expected_first) {
    fs::path dir = fs::path(dir_) / "suite" / name;
    fs::create_directories(dir / "test_data_set_0");
    ModelBuilder b(13, name);
    b.input("x", TensorProto::FLOAT, {int64_t{2}});
    b.node(op, {"x"}, {"y"});
    b.output("y");
    b.save((dir / "model.onnx").string());
    std::ofstream(dir / "test_data_set_0/input_0.pb", std::ios::binary)
        << float_tensor({2}, {-1, 4}, "x").SerializeAsString();
    std::ofstream(dir / "test_data_set_0/output_0.pb", std::ios::binary)
        << float_tensor({2}, {expected_first, 4}, "y").SerializeAsString();
  }
};

TEST_F(CliConformance, CountsPassFailSkip) {
  add_test("test_relu", "Relu", 0);
  add_test("test_relu_wrong", "Relu", 0.5f);
  add_test("test_unsupported", "NonZero", 0);
  Result r = mimic("conformance --device cpu --suite " + dir_ + "/suite");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("pass  suite/test_relu "), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find(
          "FAIL  suite/test_relu_wrong: test_data_set_0: output 0 'y': 1 of 2 elements differ"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("skip  suite/test_unsupported: unsupported NonZero"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n1 passed, 1 failed, 1 skipped\n"), std::string::npos) << r.out;

  r = mimic("conformance --suite " + dir_ + "/suite --filter 'relu$' --json");
  EXPECT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passed"], 1);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["tests"][0]["name"], "suite/test_relu");
  EXPECT_EQ(j["tests"][0]["rtol"], 1e-3);
}

TEST_F(CliConformance, BadArguments) {
  add_test("test_relu", "Relu", 0);
  EXPECT_EQ(mimic("conformance --suite " + dir_ + "/suite --filter '('").code, 2);
  EXPECT_EQ(mimic("conformance --suite " + dir_ + "/suite --filter nothing_matches").code, 2);
  // A precision the device does not have fails once, not once per test.
  Result p =
      mimic("conformance --device ipu-emu:gc200 --precision highest --suite " + dir_ + "/suite");
  EXPECT_EQ(p.code, 2);
  EXPECT_EQ(p.out.find("FAIL"), std::string::npos) << p.out;
  EXPECT_NE(p.err.find("precision 'highest' is not supported"), std::string::npos) << p.err;
  EXPECT_EQ(mimic("conformance --suite " + dir_ + "/no_such_folder").code, 2);
  EXPECT_EQ(mimic("conformance --suite " + dir_ + "/suite --device cpu:1").code, 5);
}

}  // namespace
}  // namespace mimic::testing
