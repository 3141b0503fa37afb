// `mimic train --onnx model.onnx --data x.npy y.npy`: an ONNX classifier trained on samples from
// .npy files (its initializers are the parameters). The first step's loss equals the
// cross-entropy of the initial weights on the first batch, computed here independently; the loss
// falls; the checkpoint holds the initializers by name; files that do not fit the model or the
// loss are one-line errors with the invalid-argument exit status.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <onnx/onnx_pb.h>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "frontend/api/npy.h"
#include "frontend/api/npz.h"
#include "tests/onnx/test_util.h"

namespace mimic::testing {
namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

constexpr int64_t kSamples = 12, kIn = 3, kClasses = 2;
const std::vector<float> kW = {0.5f, -0.2f, 0.1f, 0.3f, -0.4f, 0.25f}, kB = {0.05f, -0.1f};

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class CliTrainOnnx : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("cli_train_onnx");
    ModelBuilder b(13, "linear_classifier");  // logits = x @ w + b, symbolic batch
    b.input("x", TensorProto::FLOAT, {std::string("batch"), kIn});
    b.initializer("w", {kIn, kClasses}, kW);
    b.initializer("b", {kClasses}, kB);
    b.node("MatMul", {"x", "w"}, {"xw"});
    b.node("Add", {"xw", "b"}, {"logits"});
    b.output("logits");
    model_ = b.save(dir_ + "/model.onnx");
    for (int64_t i = 0; i < kSamples * kIn; ++i) x_.push_back(std::sin(0.7f * i));
    for (int64_t i = 0; i < kSamples; ++i) y_.push_back(i % 3 == 0 ? 1 : 0);
    write_npy(dir_ + "/x.npy", f32({kSamples, kIn}, x_));
    write_npy(dir_ + "/y.npy", ir::HostTensor::from(ir::Shape({kSamples}), y_.data()));
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result mimic(const std::string& args) {
    std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    int status =
        std::system((std::string(MIMIC_BIN) + " " + args + " >" + out + " 2>" + err).c_str());
    return Result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }

  // Mean cross-entropy of the initial weights on samples [0, n).
  double initial_loss(int64_t n) const {
    double total = 0;
    for (int64_t s = 0; s < n; ++s) {
      double z[kClasses];
      for (int64_t c = 0; c < kClasses; ++c) {
        z[c] = kB[c];
        for (int64_t k = 0; k < kIn; ++k) z[c] += x_[s * kIn + k] * kW[k * kClasses + c];
      }
      double m = std::max(z[0], z[1]), lse = m + std::log(std::exp(z[0] - m) + std::exp(z[1] - m));
      total += lse - z[y_[s]];
    }
    return total / static_cast<double>(n);
  }

  std::string dir_, model_;
  std::vector<float> x_;
  std::vector<int64_t> y_;
};

double loss_of_step(const std::string& out, int step, int steps) {
  std::string key = "/" + std::to_string(steps) + "  loss ";
  std::string head =
      "step" + std::string(6 - std::to_string(step).size(), ' ') + std::to_string(step) + key;
  size_t at = out.find(head);
  return at == std::string::npos ? NAN : std::stod(out.substr(at + head.size()));
}

TEST_F(CliTrainOnnx, TrainsOnNpyData) {
  std::string ckpt = dir_ + "/ckpt.npz";
  Result r =
      mimic("train --onnx " + model_ + " --data " + dir_ + "/x.npy " + dir_ +
            "/y.npy --batch 4 --steps 9 --optimizer sgd --momentum 0.9 --lr 0.5 --save " + ckpt);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("9 steps of batch 4, 8 parameters"), std::string::npos) << r.out;
  EXPECT_NEAR(loss_of_step(r.out, 1, 9), initial_loss(4), 1e-5) << r.out;
  EXPECT_LT(loss_of_step(r.out, 9, 9), loss_of_step(r.out, 3, 9)) << r.out;  // same batch
  auto saved = read_npz(ckpt);
  std::vector<std::string> names;
  for (const auto& [name, t] : saved) names.push_back(name);
  EXPECT_NE(std::find(names.begin(), names.end(), "w"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "w.momentum_buffer"), names.end());
}

TEST_F(CliTrainOnnx, DataThatDoesNotFitIsAOneLineError) {
  write_npy(dir_ + "/x4.npy", f32({kSamples, 4}, std::vector<float>(kSamples * 4, 0.f)));
  write_npy(dir_ + "/y_f32.npy", f32({kSamples}, std::vector<float>(kSamples, 0.f)));
  write_npy(dir_ + "/y_short.npy", ir::HostTensor::from(ir::Shape({5}), y_.data()));
  std::vector<int64_t> bad_labels(kSamples, 7);
  write_npy(dir_ + "/y_range.npy", ir::HostTensor::from(ir::Shape({kSamples}), bad_labels.data()));
  struct Bad {
    std::string data, extra, message;
  };
  std::vector<Bad> cases = {
      {"x4.npy y.npy", "--batch 4",
       "x4.npy is f32[12,4], the model input must be f32[N,3] (N samples)"},
      {"x.npy y_f32.npy", "--batch 4", "rows per sample) must be i64[N] (N samples)"},
      {"x.npy y_short.npy", "--batch 4", "x.npy has 12 samples, " + dir_ + "/y_short.npy has 5"},
      {"x.npy y.npy", "--batch 16", "has 12 samples, fewer than one batch of 16"},
      {"x.npy y.npy", "--batch 4 --loss mse", "the mse target must be f32[N,2] (N samples)"},
      {"x.npy y_range.npy", "--batch 4", "7"},
  };
  for (const Bad& c : cases) {
    size_t space = c.data.find(' ');
    Result r = mimic("train --onnx " + model_ + " --steps 2 " + c.extra + " --data " + dir_ + "/" +
                     c.data.substr(0, space) + " " + dir_ + "/" + c.data.substr(space + 1));
    EXPECT_EQ(r.code, 2) << c.data << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace mimic::testing
