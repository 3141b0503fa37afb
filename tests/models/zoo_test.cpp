// Every zoo model builds with a symbolic batch and runs at small sizes on the cpu backend; NCHW and
// NHWC versions of a CNN (same seed, same weights) compute the same outputs.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/zoo.h"

namespace mimic {
namespace {

RunOutput run_zoo(const std::string& name, zoo::ModelOptions o, int64_t batch) {
  zoo::Model m = zoo::make(name, o);
  ir::Graph g = zoo::build(name, o);
  EXPECT_TRUE(g.has_symbolic_batch()) << name;
  CompileOptions co;
  co.batch = batch;
  Executable exe = compile(g, "cpu", co);
  return exe.run(random_inputs(exe.graph(), 7, m.int_input_high > 0 ? m.int_input_high : 100));
}

void expect_finite(const ir::HostTensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) ASSERT_TRUE(std::isfinite(t.data<float>()[i])) << i;
}

TEST(Zoo, ListsTheModels) {
  EXPECT_EQ(zoo::names(),
            (std::vector<std::string>{"bert", "mlp", "mobilenet_v2", "resnet18", "resnet50"}));
}

TEST(Zoo, MlpAnyBatch) {
  for (int64_t batch : {1, 3, 16}) {
    RunOutput out =
        run_zoo("mlp", {"nchw", 1, {{"layers", 2}, {"hidden", 32}, {"in_features", 20}}}, batch);
    EXPECT_EQ(out.outputs[0].shape(), ir::Shape({batch, 10}));
    expect_finite(out.outputs[0]);
  }
}

TEST(Zoo, CnnsMatchAcrossLayouts) {
  for (const char* name : {"resnet18", "resnet50", "mobilenet_v2"}) {
    zoo::ModelOptions o{"nchw", 3, {{"image_size", 32}, {"classes", 7}}};
    RunOutput nchw = run_zoo(name, o, 2);
    o.layout = "nhwc";
    ir::Graph g = zoo::build(name, o);
    EXPECT_EQ(g.input_type(0).shape, ir::Shape({ir::kBatch, 32, 32, 3})) << name;
    // Same images in NHWC order.
    CompileOptions co;
    co.batch = 2;
    Executable exe = compile(g, "cpu", co);
    ir::HostTensor img =
        random_inputs(compile(zoo::build(name, {"nchw", 3, o.params}), "cpu", co).graph(), 7)[0];
    ir::HostTensor nhwc(ir::DType::f32, ir::Shape({2, 32, 32, 3}));
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < 3; ++c)
        for (int p = 0; p < 32 * 32; ++p)
          nhwc.data<float>()[(n * 1024 + p) * 3 + c] = img.data<float>()[(n * 3 + c) * 1024 + p];
    RunOutput out = exe.run({nhwc});
    ASSERT_EQ(out.outputs[0].shape(), ir::Shape({2, 7})) << name;
    expect_finite(out.outputs[0]);
    for (int i = 0; i < 14; ++i)
      EXPECT_NEAR(out.outputs[0].data<float>()[i], nchw.outputs[0].data<float>()[i],
                  1e-3 * std::max(1.0f, std::fabs(nchw.outputs[0].data<float>()[i])))
          << name << " element " << i;
  }
}

TEST(Zoo, BertEncoder) {
  zoo::ModelOptions o{
      "nchw", 0, {{"layers", 2}, {"hidden", 64}, {"heads", 4}, {"seq", 16}, {"vocab", 100}}};
  RunOutput out = run_zoo("bert", o, 3);
  EXPECT_EQ(out.outputs[0].shape(), ir::Shape({3, 16, 64}));
  expect_finite(out.outputs[0]);
  // LayerNorm output: each token vector has mean ~0 and variance ~1.
  double mean = 0;
  for (int i = 0; i < 64; ++i) mean += out.outputs[0].data<float>()[i];
  EXPECT_NEAR(mean / 64, 0.0, 1e-4);
}

TEST(Zoo, BadParametersAreClearErrors) {
  EXPECT_THROW(zoo::build("resnet51"), InvalidArgument);
  try {
    zoo::build("mlp", {"nchw", 0, {{"depth", 2}}});
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "model 'mlp' has no parameter 'depth' (it takes classes=10 hidden=1024"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(zoo::build("bert", {"nchw", 0, {{"heads", 5}}}), InvalidArgument);
  EXPECT_THROW(zoo::build("resnet18", {"nwhc", 0, {}}), InvalidArgument);
}

}  // namespace
}  // namespace mimic
