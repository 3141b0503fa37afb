// Builds OpCase graphs (op_cases*.cpp).
#pragma once

#include <fmt/format.h>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "frontend/ir/graph.h"
#include "tests/conformance/op_cases.h"

namespace mimic::testing {

class CaseBuilder {
 public:
  explicit CaseBuilder(std::string name);
  // A graph input with random data: floats uniform in [lo, hi) (integral values if `integral`),
  // integers uniform in [lo, hi], bools random.
  ir::ValueId in(ir::DType t, ir::Shape s, double lo = -2, double hi = 2, bool integral = false);
  ir::ValueId in_data(const ir::HostTensor& t);
  ir::ValueId constant(const ir::HostTensor& t);
  ir::ValueId random_constant(ir::DType t, ir::Shape s, double lo = -1, double hi = 1);
  ir::ValueId ints(std::vector<int64_t> v);
  ir::ValueId f32_scalar(float v);
  // Adds a node; every output becomes a graph output unless chained() was called for it.
  std::vector<ir::ValueId> node(ir::OpType op, std::vector<ir::ValueId> inputs,
                                ir::Attributes attrs = {}, int outputs = 1);
  ir::ValueId op(ir::OpType op, std::vector<ir::ValueId> inputs, ir::Attributes attrs = {}) {
    return node(op, std::move(inputs), std::move(attrs))[0];
  }
  // Marks the result of the last node as an intermediate (not a graph output).
  void chained(ir::ValueId v);
  CaseBuilder& option(const std::string& key, const std::string& value);
  CaseBuilder& matrix();
  CaseBuilder& data_movement();
  OpCase done();

  ir::HostTensor random(ir::DType t, const ir::Shape& s, double lo, double hi,
                        bool integral = false);

 private:
  OpCase c_;
  std::vector<ir::ValueId> outputs_;
  std::mt19937_64 rng_;
  int next_ = 0;
};

ir::HostTensor f32_tensor(ir::Shape s, std::vector<float> v);
ir::HostTensor i64_tensor(ir::Shape s, std::vector<int64_t> v);

void add_elementwise_cases(std::vector<OpCase>& out);
void add_linear_cases(std::vector<OpCase>& out);
void add_nn_cases(std::vector<OpCase>& out);
void add_data_cases(std::vector<OpCase>& out);

}  // namespace mimic::testing
