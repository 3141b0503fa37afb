// Loop fusion on the cpu backend's fast path, as XLA's loop fusion: a group of elementwise nodes
// (f32 unary maps, Add/Sub/Mul/Div, comparisons, Where, Cast from f32 or bool, Expand) that share
// one output shape runs as one pass over its output, a block of elements at a time, instead of
// one pass and one full tensor per node. An intermediate value that a node after the group reads
// is written out too (XLA's multi-output fusion); the others never leave the block. Training
// graphs are full of such chains (BatchNormalization's statistics and its gradient, Relu's
// gradient mask). A ReduceSum/ReduceMean can end a group: it sums the values as they are computed,
// never stored. Each element gets the reference kernels' arithmetic, so results are bitwise those
// of the unfused kernels, but for Exp, Erf, Sigmoid and Tanh: those run vectorized (Eigen's packet
// exp, logistic and tanh and the rational erf XLA uses), within a few ulp of the C library's
// functions the reference calls (Sigmoid's far tail, x < -80, takes the reference formula).
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "backends/cpu/tensor_iter.h"
#include "frontend/ir/graph.h"
#include "frontend/ir/unary_math.h"

namespace mimic::backends::cpu {

class LoopFusion {
 public:
  // Groups of two or more nodes of `g` among those `available` says the fast path has not taken.
  LoopFusion(const ir::Graph& g, const std::function<bool(int)>& available);

  bool in_group(int node) const { return group_of_[node] >= 0; }
  // The node at which `node`'s group runs (its last member), or `node` itself.
  int run_index(int node) const;
  // The members of `node`'s group in graph order.
  const std::vector<int>& members(int node) const { return groups_[group_of_[node]].nodes; }
  // The external inputs of the group that runs at `root`.
  const std::vector<ir::ValueId>& inputs(int root) const { return groups_[group_of_[root]].inputs; }
  int num_groups() const { return static_cast<int>(groups_.size()); }
  int fused_nodes() const;

  // Computes the outputs of the group whose last member is `root` from `values`: the last
  // member's and those of members that nodes outside the group read.
  void run(int root, std::vector<ir::HostTensor>& values) const;

 private:
  // One member: out = op(in...) over slots (external inputs first, then members' outputs).
  struct Instr {
    ir::OpType op;
    int out = 0;
    int in[3] = {-1, -1, -1};
    ir::UnaryAttrs attrs;
  };
  struct Group {
    std::vector<int> nodes;
    std::vector<ir::ValueId> inputs;
    std::vector<Instr> code;
    // (slot, value) of the members read outside the group, the last member's last (unless the
    // root is a reduction).
    std::vector<std::pair<int, ir::ValueId>> outputs;
    int reduction = -1;  // the root, when it is a ReduceSum/ReduceMean of the slot below
    int reduced_slot = -1;
    std::vector<bool> reduced_axes;
  };
  // One thread's slots of a pass over a group, 64-byte aligned in `scratch` (found from its
  // address on each call, so that copies of a Cursor stay valid).
  struct Cursor {
    explicit Cursor(size_t slots);
    float* slot(int k);
    std::vector<float> scratch;
    std::vector<const float*> at;
    std::vector<int64_t> off;
  };

  void grow(int root);
  void compile(Group& grp) const;
  const ir::Shape& shape_of(const Group& grp) const;
  void evaluate(const Group& grp, const std::vector<ir::HostTensor>& values,
                const BroadcastPlan& plan, int64_t row, int64_t begin, int64_t n, Cursor& c,
                std::vector<ir::HostTensor>& outs) const;
  void run_reduction(const Group& grp, std::vector<ir::HostTensor>& values,
                     const BroadcastPlan& plan, std::vector<ir::HostTensor>& outs) const;

  const ir::Graph& g_;
  std::vector<int> group_of_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> eligible_;
  std::vector<bool> graph_output_;  // per value
  std::vector<Group> groups_;
};

}  // namespace mimic::backends::cpu
