// Helpers for cpu-kernel tests: build a one-node graph, run it on the cpu backend, compare.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "frontend/api/random.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::testing {

// An input of the node: data given as a graph input, or as a constant (shape parameters).
struct In {
  ir::HostTensor data;
  bool constant = false;
};

inline In constant_ints(std::vector<int64_t> v) {
  return {ir::HostTensor::from(ir::Shape({static_cast<int64_t>(v.size())}), v.data()), true};
}

inline ir::HostTensor random_tensor(ir::Shape shape, uint64_t seed,
                                    ir::DType dtype = ir::DType::f32) {
  Random rng(seed);
  return rng.tensor(dtype, shape, 10);
}

inline std::vector<ir::HostTensor> run_op(ir::OpType op, const std::vector<In>& inputs,
                                          ir::Attributes attrs = {}, int num_outputs = 1) {
  ir::Graph g;
  std::vector<ir::ValueId> ids;
  std::vector<ir::HostTensor> data;
  for (const In& in : inputs) {
    if (!in.data.defined()) {
      ids.push_back(ir::kNoValue);
      data.emplace_back();
    } else if (in.constant) {
      ids.push_back(g.add_constant("c", in.data));
      data.push_back(in.data);
    } else {
      ids.push_back(g.add_input("x", in.data.dtype(), in.data.shape()));
      data.push_back(in.data);
    }
  }
  g.add_node(op, "node", ids, attrs, num_outputs);
  ir::infer_shapes(g);
  return backends::cpu::run_node(g, g.node(0), data);
}

inline ir::HostTensor run1(ir::OpType op, const std::vector<In>& inputs,
                           ir::Attributes attrs = {}) {
  return run_op(op, inputs, std::move(attrs))[0];
}

inline void expect_near(const ir::HostTensor& got, const std::vector<float>& want,
                        float tol = 1e-4f) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  const float* g = got.data<float>();
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(g[i], want[i], tol * std::max(1.0f, std::fabs(want[i]))) << "element " << i;
}

inline std::vector<float> values(const ir::HostTensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

}  // namespace mimic::testing
