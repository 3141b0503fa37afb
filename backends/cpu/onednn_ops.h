// oneDNN primitives for the cpu backend's fast path, built once per executable from a planned group
// (onednn_plan.h): convolutions (direct, grouped, depthwise, 1x1; channels first or last, with the
// library choosing its blocked activation layout), MatMul/Gemm and pooling, with constant weights
// reordered once into the layout the primitive asks for and fused followers as post-ops.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "backends/cpu/onednn_plan.h"

namespace mimic::backends::cpu::onednn {

dnnl::engine& cpu_engine();

// A tensor argument the primitive reads at run time: graph value `value` seen through `user_md`
// (its plain row-major layout in the primitive's logical dims), wanted in `md`.
struct RuntimeArg {
  int arg = 0;  // DNNL_ARG_*
  ir::ValueId value = ir::kNoValue;
  dnnl::memory::desc user_md, md;
};

struct Step {
  Group group;
  dnnl::primitive prim;
  std::vector<RuntimeArg> inputs;
  std::unordered_map<int, dnnl::memory> constants;  // reordered weights, bias
  dnnl::memory::desc dst_md, user_dst_md;           // as computed; plain row-major in logical dims
  std::optional<RuntimeArg> residual;               // copied into dst before a "sum" post-op
  int dst_arg = DNNL_ARG_DST;                       // DNNL_ARG_DIFF_WEIGHTS for a weight gradient
  int threads = 1;
};

// Builds the step of a group; std::nullopt when oneDNN has no implementation for it (the group's
// nodes then run on the reference kernels). `producer_md(v)` is the layout value v will have at run
// time when a step computes it (a layout the consumer may take as is), else an empty desc.
using LayoutOf = std::function<dnnl::memory::desc(ir::ValueId)>;
std::optional<Step> build_step(const ir::Graph& g, const Group& grp, const LayoutOf& producer_md);

// Sets OpenMP's thread count for the current scope (oneDNN reads it when it creates a primitive
// and when it runs one).
class ScopedThreads {
 public:
  explicit ScopedThreads(int n);
  ~ScopedThreads();
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int saved_;
};

// Threads a step runs on: 1 for small ops (under 4 MFLOP, 64 MFLOP when OpenMP's idle workers
// sleep, the work does not pay for waking a second thread), else every thread OpenMP offers.
int threads_for(double flops);

}  // namespace mimic::backends::cpu::onednn
