// The table of gradient-rule cases shared by the finite-difference check (autodiff_test.cpp) and
// the every-device check (autodiff_devices_test.cpp): each case builds f(inputs) from f32 inputs;
// its loss is sum(f(inputs) * R) with a fixed random R.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "frontend/ir/graph.h"
#include "frontend/ir/graph_builder.h"
#include "frontend/ir/host_tensor.h"

namespace mimic::test {

// How inputs are drawn (unit_interval: inside (-0.8, 0.8), for Asin, Acos, Atanh and Tan): values
// near a kink (Relu at 0, ties in a max window) are avoided so that
// central differences are smooth.
enum class Gen { normal, positive, away_from_zero, distinct, with_zeros, unit_interval };

struct Input {
  ir::Shape shape;
  Gen gen = Gen::normal;
};

struct Case {
  std::string name;
  std::vector<Input> inputs;
  std::function<ir::ValueId(ir::GraphBuilder&, const std::vector<ir::ValueId>&)> build;
};

// forward: inputs -> loss; backward: inputs -> loss, then d loss / d input for every input.
struct CaseGraphs {
  ir::Graph forward, backward;
  std::vector<ir::HostTensor> data;  // the inputs' values
};
CaseGraphs build_case(const Case& c);

// Asserts that the analytic gradients (cpu) match central differences.
void check_case(const Case& c);

std::vector<Case> elementwise_cases();
std::vector<Case> linear_cases();
std::vector<Case> shape_cases();
std::vector<Case> nn_cases();
std::vector<Case> reduce_cases();  // reductions, CumSum, strided Slice, Gather*, LRN
std::vector<Case> all_cases();

}  // namespace mimic::test
