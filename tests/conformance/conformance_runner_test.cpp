// The conformance runner library: tolerance rules, comparison, test discovery and the outcome of
// generated tests (pass, fail on a wrong expected output, skip on an unsupported op).
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/numeric_formats.h"
#include "frontend/onnx/conformance.h"
#include "tests/onnx/model_builder.h"

namespace mimic::testing {
namespace {

namespace fs = std::filesystem;
using conformance::Status;

ir::HostTensor f32(ir::Shape s, std::vector<float> v) {
  return ir::HostTensor::from(std::move(s), v.data());
}

TEST(ConformanceTolerance, ByPrecision) {
  EXPECT_EQ(conformance::tolerance_for("f32").rtol, 1e-3);
  EXPECT_EQ(conformance::tolerance_for("f32").atol, 1e-7);
  EXPECT_EQ(conformance::tolerance_for("", "highest").basis, "f32");
  EXPECT_EQ(conformance::tolerance_for("bf16").basis, "bf16");
  EXPECT_EQ(conformance::tolerance_for("", "float16").basis, "f16");
  EXPECT_EQ(conformance::tolerance_for("", "high").basis, "bf16x3");
  EXPECT_EQ(conformance::tolerance_for("f32", "float16").basis, "f32");  // what the device did wins
  EXPECT_EQ(conformance::tolerance_for("something-new").basis, "f32");   // unknown: the strict one
}

TEST(ConformanceCompare, Floats) {
  conformance::Tolerance tol;
  ir::HostTensor e = f32({4}, {1, 0, NAN, INFINITY});
  EXPECT_TRUE(conformance::compare(e, f32({4}, {1.0009f, 0, NAN, INFINITY}), tol).ok);
  auto c = conformance::compare(e, f32({4}, {1.0011f, 0, NAN, INFINITY}), tol);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("1 of 4 elements differ"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("at [0]"), std::string::npos) << c.message;
  EXPECT_FALSE(conformance::compare(e, f32({4}, {1, 2e-7f, NAN, INFINITY}), tol).ok);  // atol 1e-7
  EXPECT_FALSE(
      conformance::compare(e, f32({4}, {1, 0, 0, INFINITY}), tol).ok);  // NaN only matches NaN
  EXPECT_FALSE(conformance::compare(e, f32({4}, {1, 0, NAN, -INFINITY}), tol).ok);
  EXPECT_FALSE(conformance::compare(e, f32({2, 2}, {1, 0, NAN, INFINITY}), tol).ok);  // shape
}

TEST(ConformanceCompare, IntegersExactAndDtypesMustMatch) {
  conformance::Tolerance tol;
  int64_t a[] = {1000, 2}, b[] = {1001, 2};
  ir::HostTensor ia = ir::HostTensor::from(ir::Shape({2}), a),
                 ib = ir::HostTensor::from(ir::Shape({2}), b);
  EXPECT_TRUE(conformance::compare(ia, ia, tol).ok);
  EXPECT_FALSE(conformance::compare(ia, ib, tol).ok);
  auto c = conformance::compare(f32({2}, {1, 2}), ia, tol);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.message.find("got i64[2], expected f32[2]"), std::string::npos) << c.message;
}

// bf16 outputs are right to one unit in the last place: truncation and rounding both pass.
TEST(ConformanceCompare, SixteenBitOutputsWithinOneUlp) {
  conformance::Tolerance tol;
  auto bf16 = [](uint16_t bits) {
    ir::HostTensor t(ir::DType::bf16, ir::Shape({1}));
    t.data<ir::BFloat16>()[0].bits = bits;
    return t;
  };
  EXPECT_TRUE(conformance::compare(bf16(0x3f51), bf16(0x3f52), tol).ok);
  EXPECT_FALSE(conformance::compare(bf16(0x3f51), bf16(0x3f54), tol).ok);
}

class ConformanceRun : public ::testing::Test {
 protected:
  void SetUp() override { root_ = temp_dir("conformance"); }
  void TearDown() override { fs::remove_all(root_); }

  // suite/<name>: y = op(x) on x = [-1, 4] with the given expected output.
  void add(const std::string& name, const std::string& op, std::vector<float> expected) {
    fs::path dir = fs::path(root_) / "suite" / name;
    fs::create_directories(dir / "test_data_set_0");
    ModelBuilder b(13, name);
    b.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
    b.node(op, {"x"}, {"y"});
    b.output("y");
    b.save((dir / "model.onnx").string());
    std::ofstream(dir / "test_data_set_0/input_0.pb", std::ios::binary)
        << float_tensor({2}, {-1, 4}, "x").SerializeAsString();
    std::ofstream(dir / "test_data_set_0/output_0.pb", std::ios::binary)
        << float_tensor({2}, expected, "y").SerializeAsString();
  }

  std::string root_;
};

TEST_F(ConformanceRun, DiscoverFolders) {
  add("test_b", "Relu", {0, 4});
  add("test_a", "Neg", {1, -4});
  auto all = conformance::discover(root_);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "suite/test_a");
  EXPECT_EQ(conformance::discover(root_ + "/suite").size(), 2u);
  auto one = conformance::discover(root_ + "/suite/test_b");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].name, "suite/test_b");
  EXPECT_THROW(conformance::discover(root_ + "/nothing"), InvalidArgument);
}

TEST_F(ConformanceRun, PassFailSkip) {
  add("test_pass", "Relu", {0, 4});
  add("test_fail", "Relu", {0, 4.01f});
  add("test_skip", "Unique", {0, 0});
  conformance::Summary s = conformance::run_tests(conformance::discover(root_), {});
  EXPECT_EQ(conformance::format_summary(s), "1 passed, 1 failed, 1 skipped");
  for (const auto& r : s.results) {
    if (r.name == "suite/test_pass") {
      EXPECT_EQ(r.status, Status::passed) << r.detail;
    }
    if (r.name == "suite/test_fail") {
      EXPECT_EQ(r.status, Status::failed);
      EXPECT_NEAR(r.max_abs_error, 0.01, 1e-6);
      EXPECT_NE(conformance::format_result(r).find(
                    "FAIL  suite/test_fail: test_data_set_0: output 0 'y'"),
                std::string::npos)
          << conformance::format_result(r);
    }
    if (r.name == "suite/test_skip") {
      EXPECT_EQ(r.status, Status::skipped);
      EXPECT_EQ(r.detail, "unsupported Unique (no IR equivalent)");
    }
  }
}

TEST_F(ConformanceRun, UnavailableDeviceIsAnError) {
  add("test_pass", "Relu", {0, 4});
  conformance::RunnerOptions o;
  o.device = "cpu:7";
  EXPECT_THROW(conformance::run_tests(conformance::discover(root_), o), DeviceUnavailableError);
}

}  // namespace
}  // namespace mimic::testing
