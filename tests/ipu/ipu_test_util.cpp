#include "tests/ipu/ipu_test_util.h"

#include <algorithm>
#include <cmath>

#include "frontend/api/random.h"

namespace mimic::ipu_test {

using ir::DType;
using ir::OpType;

ir::Graph matmul_graph(int64_t m, int64_t k, int64_t n, uint64_t seed) {
  ir::Graph g("matmul");
  Random rng(seed);
  auto x = g.add_input("x", DType::f32, {m, k});
  auto w = g.add_constant("w", rng.tensor(DType::f32, {k, n}, 0, 0.1f));
  g.add_output(g.add_node(OpType::MatMul, "mm", {x, w})[0]);
  return g;
}

ir::Graph conv_graph(int64_t batch, int64_t in_c, int64_t out_c, int64_t hw, int64_t kernel,
                     int64_t stride, int64_t group, uint64_t seed) {
  ir::Graph g("conv");
  Random rng(seed);
  auto x = g.add_input("x", DType::f32, {batch, in_c, hw, hw});
  auto w =
      g.add_constant("w", rng.tensor(DType::f32, {out_c, in_c / group, kernel, kernel}, 0, 0.2f));
  auto b = g.add_constant("b", rng.tensor(DType::f32, {out_c}, 0, 0.1f));
  int64_t pad = kernel / 2;
  ir::Attributes a{{"strides", std::vector<int64_t>{stride, stride}},
                   {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                   {"group", group}};
  g.add_output(g.add_node(OpType::Conv, "conv", {x, w, b}, a)[0]);
  return g;
}

ir::Graph conv_stack(int64_t channels, int64_t hw, int layers, uint64_t seed, int64_t kernel) {
  ir::Graph g("conv_stack");
  Random rng(seed);
  auto v = g.add_input("x", DType::f32, {ir::kBatch, channels, hw, hw});
  int64_t pad = kernel / 2;
  ir::Attributes a{{"pads", std::vector<int64_t>{pad, pad, pad, pad}}};
  for (int l = 0; l < layers; ++l) {
    auto w = g.add_constant("w" + std::to_string(l),
                            rng.tensor(DType::f32, {channels, channels, kernel, kernel}, 0, 0.05f));
    v = g.add_node(OpType::Conv, "conv" + std::to_string(l), {v, w}, a)[0];
    v = g.add_node(OpType::Relu, "relu" + std::to_string(l), {v})[0];
  }
  g.add_output(v);
  return g;
}

ir::Graph wide_mlp(int64_t width, int layers) {
  ir::Graph g("wide_mlp");
  auto v = g.add_input("x", DType::f32, {ir::kBatch, width});
  ir::HostTensor w(DType::f32, {width, width});  // zeros: only memory and timing matter
  for (int l = 0; l < layers; ++l) {
    auto c = g.add_constant("w" + std::to_string(l), w);
    v = g.add_node(OpType::MatMul, "fc" + std::to_string(l), {v, c})[0];
    v = g.add_node(OpType::Relu, "relu" + std::to_string(l), {v})[0];
  }
  g.add_output(v);
  return g;
}

CompileOptions options(std::map<std::string, std::string> opts, int64_t batch) {
  CompileOptions o;
  o.options = std::move(opts);
  o.batch = batch;
  return o;
}

double max_rel_diff(const ir::HostTensor& a, const ir::HostTensor& b) {
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  double worst = 0, scale = 1e-30;
  for (int64_t i = 0; i < a.numel(); ++i) {
    worst = std::max(worst, std::fabs(double(x[i]) - y[i]));
    scale = std::max(scale, std::fabs(double(y[i])));
  }
  return worst / scale;
}

sim::DeviceId CaptureSink::add_device(const sim::DeviceDesc& d) {
  devices.push_back(d);
  return static_cast<sim::DeviceId>(devices.size() - 1);
}

sim::TrackId CaptureSink::add_track(sim::DeviceId, const std::string& name, const std::string&) {
  tracks.push_back(name);
  return static_cast<sim::TrackId>(tracks.size() - 1);
}

sim::OpId CaptureSink::add_op(const sim::OpDesc& op) {
  ops.push_back(op);
  return static_cast<sim::OpId>(ops.size() - 1);
}

void CaptureSink::event(sim::TrackId track, sim::OpId op, std::string_view name, uint64_t ts,
                        uint64_t dur) {
  events.push_back({tracks.at(track), std::string(name), op, ts, dur});
}

void CaptureSink::table_row(const std::string& table, const std::string&, const std::string& row) {
  tables[table].push_back(row);
}

}  // namespace mimic::ipu_test
