// The oneDNN half of a cpu executable: the steps of the planned groups (built once, at compile
// time) and, while a run lasts, the values those steps wrote in oneDNN's blocked layouts. A value
// stays blocked while oneDNN steps consume it; it is reordered to its plain layout (the IR's
// row-major tensor) only when a reference kernel or the caller reads it.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "backends/cpu/onednn_ops.h"

namespace mimic::backends::cpu::onednn {

// One run's values: the plain tensors (shared with the reference kernels) and the ones oneDNN
// steps wrote in blocked layouts. Each run has its own; the program holds only what compile built.
// Blocked buffers come from the host cache (host_memory.h), not from oneDNN's allocator, which
// maps every large buffer afresh on each run: a page fault per 4 KiB, most of MobileNetV2's
// batch-8 time. `owners` keep them alive as long as `blocked` uses them.
struct RunState {
  RunState(std::vector<ir::HostTensor>& plain_values, int num_values);
  std::vector<ir::HostTensor>& values;
  std::vector<dnnl::memory> blocked;
  std::vector<std::shared_ptr<void>> owners;      // per value: the buffer of blocked[v]
  std::vector<std::shared_ptr<void>> step_temps;  // the running step's converted inputs
  std::shared_ptr<void> dst_owner;                // the running step's output buffer
  dnnl::stream stream;
};

class Program {
 public:
  // `g` must outlive the program (the executable owns both). A node outside the program's
  // groups reads its inputs at reader_index(node) (a loop-fused group runs at its last member).
  Program(const ir::Graph& g, const std::function<int(int)>& reader_index);

  bool in_group(int node) const { return step_of_node_[node] >= 0; }
  // The node index at which `node`'s inputs are read: its group's last member, else itself.
  int run_index(int node) const;
  bool runs_group(int node) const;
  const std::vector<int>& group_nodes(int node) const {
    return steps_[step_of_node_[node]].group.nodes;
  }
  int num_groups() const { return static_cast<int>(steps_.size()); }
  // MatMul operands read through swapped strides instead of a Transpose's copy.
  int transposes_read_in_place() const;
  // Convolution weight gradients run as oneDNN's backward-weights primitive (Group::wgrad_src).
  int weight_gradients() const;

  // Runs the group whose last member is `node`.
  void run_group(int node, RunState& run) const;
  // Makes run.values[v] hold v's data when a step wrote it blocked.
  void ensure_plain(ir::ValueId v, RunState& run) const;
  void release(ir::ValueId v, RunState& run) const {
    run.blocked[v] = dnnl::memory();
    run.owners[v].reset();
  }

 private:
  // A layout change, created and run on as many threads as its size is worth (threads_for).
  struct Reorder {
    Reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
    void execute(dnnl::stream& stream, dnnl::memory src, dnnl::memory dst) const;
    int threads;
    dnnl::reorder prim;
  };
  struct Conversion {
    bool via_plain = false;          // the value is read from its plain tensor
    std::optional<Reorder> reorder;  // from its blocked or plain layout to the wanted one
  };
  struct Prepared {
    std::vector<Conversion> inputs;
    Conversion residual;
    bool steal_residual = false;  // the residual's blocked buffer becomes the output
  };

  void build_steps();
  Conversion conversion(const RuntimeArg& a);
  void prepare(int step, const std::vector<int>& last_use);
  dnnl::memory source(const RuntimeArg& a, const Conversion& c, RunState& run) const;
  dnnl::memory destination(int step, RunState& run) const;

  const ir::Graph& g_;
  std::vector<Step> steps_;
  std::vector<Prepared> prepared_;
  std::vector<int> step_of_node_;
  std::vector<dnnl::memory::desc> blocked_md_, plain_md_;  // per value written blocked
  std::vector<std::optional<Reorder>> to_plain_;
};

}  // namespace mimic::backends::cpu::onednn
