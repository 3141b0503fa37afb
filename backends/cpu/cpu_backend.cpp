#include "backends/cpu/cpu_backend.h"

#include <fmt/format.h>
#include <omp.h>
#include <chrono>
#include <optional>
#include <thread>

#include "backends/common.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/loop_fusion.h"
#include "backends/cpu/onednn_plan.h"
#include "backends/cpu/onednn_program.h"
#include "base/error.h"
#include "base/numeric_formats.h"

namespace mimic::backends::cpu {
namespace {

using ir::DType;

bool is_half(DType t) {
  return t == DType::f16 || t == DType::bf16;
}

// True when the node reads or writes f64 tensors but its kernel computes in f32 only.
bool needs_missing_f64(const ir::Graph& g, const ir::Node& n) {
  if (supports_f64(n.op)) return false;
  for (ir::ValueId v : n.inputs)
    if (v != ir::kNoValue && g.value(v).type.dtype == DType::f64) return true;
  for (ir::ValueId v : n.outputs)
    if (g.value(v).typed && g.value(v).type.dtype == DType::f64) return true;
  return false;
}

ir::HostTensor widen(const ir::HostTensor& t) {
  ir::HostTensor out(DType::f32, t.shape());
  const auto* bits = static_cast<const uint16_t*>(t.raw());
  if (t.dtype() == DType::f16)
    numeric::f16_to_f32(bits, out.data<float>(), t.numel());
  else
    numeric::bf16_to_f32(bits, out.data<float>(), t.numel());
  return out;
}

ir::HostTensor narrow(const ir::HostTensor& t, DType to) {
  ir::HostTensor out(to, t.shape());
  auto* bits = static_cast<uint16_t*>(out.raw());
  if (to == DType::f16)
    numeric::f32_to_f16(t.data<float>(), bits, t.numel());
  else
    numeric::f32_to_bf16(t.data<float>(), bits, t.numel());
  return out;
}

// Runs a node's kernel, widening 16-bit floats to f32 around arithmetic kernels.
std::vector<ir::HostTensor> execute(const ir::Graph& g, const ir::Node& n,
                                    const std::vector<const ir::HostTensor*>& inputs) {
  Kernel kernel = find_kernel(n.op);
  if (!kernel)
    throw UnsupportedOpError(fmt::format("cpu: no kernel for {}", ir::describe(g, n)),
                             {ir::op_name(n.op)});
  if (needs_missing_f64(g, n))
    throw UnsupportedOpError(
        fmt::format("cpu: {} has no f64 kernel (f64 runs elementwise, reduction and "
                    "data-movement ops only)",
                    ir::describe(g, n)),
        {ir::op_name(n.op)});
  bool widen_io = !is_data_movement(n.op);
  std::vector<ir::HostTensor> widened;
  widened.reserve(inputs.size());
  KernelArgs args{g, n, {}, {}};
  for (const ir::HostTensor* t : inputs) {
    if (t && widen_io && is_half(t->dtype())) {
      widened.push_back(widen(*t));
      args.in.push_back(&widened.back());
    } else {
      args.in.push_back(t);
    }
  }
  std::vector<ir::HostTensor> outputs(n.outputs.size());
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const ir::TensorType& type = g.value(n.outputs[i]).type;
    DType dtype = widen_io && is_half(type.dtype) ? DType::f32 : type.dtype;
    if (!ir::is_view_op(n.op))
      outputs[i] = ir::HostTensor(dtype, type.shape);
    else
      outputs[i] = ir::HostTensor::wrap(dtype, type.shape, nullptr, nullptr);
    args.out.push_back(&outputs[i]);
  }
  kernel(args);
  for (size_t i = 0; i < outputs.size(); ++i) {
    DType want = g.value(n.outputs[i]).type.dtype;
    if (outputs[i].dtype() != want) outputs[i] = narrow(outputs[i], want);
  }
  return outputs;
}

class CpuEvaluator final : public ir::ConstantEvaluator {
 public:
  std::vector<ir::HostTensor> evaluate(const ir::Graph& g, const ir::Node& n,
                                       const std::vector<ir::HostTensor>& inputs) override {
    return run_node(g, n, inputs);
  }
};

// Which kernels a cpu executable runs: the reference kernels for every node, or oneDNN primitives
// for the convolutions, matrix products and pools it implements (with their fused followers) and
// the reference kernels for the rest.
enum class KernelPath { reference, onednn };

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(const ir::Graph& g, KernelPath path, bool loop_fusion) : graph_(g) {
    report_.device = "cpu";
    if (path == KernelPath::onednn) build_fast_path(loop_fusion);
    report_.notes.push_back(
        program_
            ? fmt::format("kernels=onednn: {} oneDNN steps, {} loop-fused groups of {} nodes, "
                          "{} transposes read in place, {} weight gradients as "
                          "backward-weights convolutions",
                          program_->num_groups(), fusion_->num_groups(), fusion_->fused_nodes(),
                          program_->transposes_read_in_place(), program_->weight_gradients())
            : "kernels=reference");
    last_use_.assign(g.num_values(), -1);
    for (int i = 0; i < g.num_nodes(); ++i)
      for (ir::ValueId v : g.node(i).inputs)
        if (v != ir::kNoValue) last_use_[v] = std::max(last_use_[v], run_index(i));
    for (ir::ValueId v : g.outputs()) last_use_[v] = g.num_nodes();
    for (int i = 0; i < g.num_nodes(); ++i) {
      const ir::Node& n = g.node(i);
      ops_.push_back(sim::OpDesc{n.name, ir::op_name(n.op), node_shapes(g, n),
                                 ir::dtype_name(g.value(n.outputs[0]).type.dtype),
                                 ir::node_flops(g, n), ir::node_bytes_in(g, n),
                                 ir::node_bytes_out(g, n), "cpu", false});
    }
  }

  RunResult run(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink) override {
    check_inputs(inputs);
    auto run_start = std::chrono::steady_clock::now();
    sim::DeviceId device =
        sink.add_device(sim::DeviceDesc{"cpu", "", 1'000'000'000, sim::TimeUnit::ns,
                                        fmt::format(R"({{"threads":{}}})", omp_get_max_threads())});
    sim::TrackId track = sink.add_track(device, "host", "compute");
    std::vector<ir::HostTensor> values(graph_.num_values());
    for (int v = 0; v < graph_.num_values(); ++v)
      if (graph_.value(v).constant) values[v] = *graph_.value(v).constant;
    for (size_t i = 0; i < inputs.size(); ++i) values[graph_.inputs()[i]] = inputs[i];
    RunResult result;
    std::optional<onednn::RunState> state;
    if (program_) state.emplace(values, graph_.num_values());
    onednn::RunState* run_state = state ? &*state : nullptr;
    // A oneDNN group's time goes to its head node; its other members show zero.
    std::vector<uint64_t> ts(graph_.num_nodes(), 0), dur(graph_.num_nodes(), 0);
    for (int i = 0; i < graph_.num_nodes(); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      run_node_at(i, values, run_state);
      auto t1 = std::chrono::steady_clock::now();
      release_dead_values(values, run_state, i);
      int at = program_ && program_->runs_group(i) ? program_->group_nodes(i).front() : i;
      ts[i] = std::chrono::duration_cast<std::chrono::nanoseconds>(t0 - run_start).count();
      ts[at] = ts[i];
      dur[at] = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    }
    for (int i = 0; i < graph_.num_nodes(); ++i) {
      sim::OpId op = sink.add_op(ops_[i]);
      sink.event(track, op, graph_.node(i).name, ts[i], dur[i]);
      result.report.ops.push_back(op_report(i, dur[i]));
    }
    for (ir::ValueId v : graph_.outputs()) {
      if (program_) program_->ensure_plain(v, *run_state);
      result.outputs.push_back(values[v]);
    }
    double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    result.report.device = "cpu";
    result.report.backend = "cpu";
    result.report.precision = "f32";
    result.report.wall_seconds = wall;
    result.report.device_seconds = wall;
    result.report.achieved_flops_per_s = wall > 0 ? result.report.total_flops() / wall : 0;
    result.report.metrics["threads"] = omp_get_max_threads();
    return result;
  }

  const CompileReport& compile_report() const override { return report_; }

 private:
  // oneDNN groups, then (option fusion=on, the default) loop fusion of the elementwise nodes
  // they left.
  void build_fast_path(bool loop_fusion) {
    std::vector<bool> taken(graph_.num_nodes(), !loop_fusion);
    for (const onednn::Group& grp : onednn::plan_groups(graph_))
      for (int n : grp.nodes) taken[n] = true;
    fusion_ = std::make_unique<LoopFusion>(graph_, [&](int i) { return !taken[i]; });
    program_ =
        std::make_unique<onednn::Program>(graph_, [this](int i) { return fusion_->run_index(i); });
  }

  // The node index at which node i's inputs are read: its group's last member, else i.
  int run_index(int i) const {
    if (program_ && program_->in_group(i)) return program_->run_index(i);
    return fusion_ ? fusion_->run_index(i) : i;
  }

  // Runs node i: a oneDNN or loop-fused group at its last member (its other members do
  // nothing), else the node's reference kernel.
  void run_node_at(int i, std::vector<ir::HostTensor>& values, onednn::RunState* run) const {
    const ir::Node& n = graph_.node(i);
    if (program_ && program_->in_group(i)) {
      if (program_->runs_group(i)) program_->run_group(i, *run);
      return;
    }
    if (fusion_ && fusion_->in_group(i)) {
      if (fusion_->run_index(i) != i) return;
      for (ir::ValueId v : fusion_->inputs(i)) program_->ensure_plain(v, *run);
      fusion_->run(i, values);
      return;
    }
    std::vector<const ir::HostTensor*> in;
    for (ir::ValueId v : n.inputs) {
      if (v != ir::kNoValue && program_) program_->ensure_plain(v, *run);
      in.push_back(v == ir::kNoValue ? nullptr : &values[v]);
    }
    std::vector<ir::HostTensor> out = execute(graph_, n, in);
    for (size_t k = 0; k < out.size(); ++k) values[n.outputs[k]] = std::move(out[k]);
  }

  void check_inputs(const std::vector<ir::HostTensor>& inputs) const {
    if (inputs.size() != graph_.inputs().size())
      throw InvalidArgument(fmt::format("cpu: graph '{}' takes {} inputs, got {}", graph_.name(),
                                        graph_.inputs().size(), inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ir::Value& v = graph_.value(graph_.inputs()[i]);
      if (inputs[i].type() != v.type)
        throw InvalidArgument(fmt::format("cpu: input '{}' must be {}, got {}", v.name,
                                          v.type.str(), inputs[i].type().str()));
    }
  }

  void release_dead_values(std::vector<ir::HostTensor>& values, onednn::RunState* run,
                           int node) const {
    if (run_index(node) != node) return;  // a group member: its inputs are read when it runs
    for (int m : members(node))
      for (ir::ValueId v : graph_.node(m).inputs)
        if (v != ir::kNoValue && last_use_[v] == node && !graph_.value(v).constant) {
          values[v] = {};
          if (program_) program_->release(v, *run);
        }
  }

  // The nodes whose inputs are read at node i: its group's members, or i alone.
  std::vector<int> members(int i) const {
    if (program_ && program_->runs_group(i)) return program_->group_nodes(i);
    if (fusion_ && fusion_->in_group(i)) return fusion_->members(i);
    return {i};
  }

  OpReport op_report(int i, uint64_t dur_ns) const {
    const sim::OpDesc& d = ops_[i];
    OpReport r;
    r.node = d.node;
    r.op_type = d.op_type;
    r.backend = "cpu";
    r.shapes = d.shapes;
    r.flops = d.flops;
    r.bytes_in = d.bytes_in;
    r.bytes_out = d.bytes_out;
    r.wall_ns = static_cast<double>(dur_ns);
    r.device_seconds = dur_ns * 1e-9;
    return r;
  }

  ir::Graph graph_;
  std::unique_ptr<LoopFusion> fusion_;
  std::unique_ptr<onednn::Program> program_;
  std::vector<int> last_use_;
  std::vector<sim::OpDesc> ops_;
  CompileReport report_;
};

struct CpuOptions {
  KernelPath path = KernelPath::onednn;
  bool loop_fusion = true;
};

// The cpu computes in f32 whatever the precision: it takes every name another device takes (one
// device string switches a program between them) and rejects the rest.
void check_precision(const std::string& precision) {
  static const char* const known[] = {"default", "fastest", "bfloat16", "high",
                                      "bf16_3x", "highest", "float32",  "float16"};
  for (const char* k : known)
    if (precision == k) return;
  throw InvalidArgument(fmt::format(
      "cpu: unknown precision '{}' (default, high, highest, float32, float16, bfloat16; the cpu "
      "computes f32 in every case)",
      precision));
}

CpuOptions cpu_options(const CompileOptions& options) {
  check_precision(options.precision);
  if (!options.overrides.empty())
    throw InvalidArgument(fmt::format(
        "cpu: --set '{}' overrides a field of an emulated chip's preset; the cpu has no preset",
        options.overrides.begin()->first));
  CpuOptions o;
  for (const auto& [key, value] : options.options) {
    if (key == "kernels" && (value == "onednn" || value == "reference")) {
      o.path = value == "reference" ? KernelPath::reference : KernelPath::onednn;
    } else if (key == "fusion" && (value == "on" || value == "off")) {
      o.loop_fusion = value == "on";
    } else if (key == "kernels" || key == "fusion") {
      throw InvalidArgument(fmt::format("cpu: option {}='{}' must be {}", key, value,
                                        key == "kernels" ? "onednn or reference" : "on or off"));
    } else {
      throw InvalidArgument(fmt::format(
          "cpu: unknown option '{}' (the cpu backend takes kernels=onednn|reference and "
          "fusion=on|off)",
          key));
    }
  }
  return o;
}

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::vector<DeviceInfo> enumerate() const override { return {probe("")}; }
  DeviceInfo probe(const std::string& arg) const override {
    if (!arg.empty() && arg != "0")
      return DeviceInfo{"cpu:" + arg, "cpu", false,
                        "the cpu backend has one device: cpu (or cpu:0)", ""};
    return DeviceInfo{
        "cpu", "cpu", true, "",
        fmt::format(
            "host CPU, {} threads, f32 oneDNN and reference kernels (kernels=onednn|reference, "
            "fusion=on|off)",
            omp_get_max_threads())};
  }
  bool supports_op(const ir::Graph& g, const ir::Node& n, const std::string&,
                   const CompileOptions&) const override {
    return find_kernel(n.op) != nullptr && !needs_missing_f64(g, n);
  }
  std::unique_ptr<Executable> compile(const ir::Graph& g, const std::string& arg,
                                      const CompileOptions& options) const override {
    DeviceInfo info = probe(arg);
    if (!info.available) throw InvalidArgument(info.reason);
    CpuOptions o = cpu_options(options);
    return std::make_unique<CpuExecutable>(g, o.path, o.loop_fusion);
  }
};

}  // namespace

std::vector<ir::HostTensor> run_node(const ir::Graph& g, const ir::Node& n,
                                     const std::vector<ir::HostTensor>& inputs) {
  std::vector<const ir::HostTensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i)
    ptrs.push_back(n.has_input(static_cast<int>(i)) ? &inputs[i] : nullptr);
  return execute(g, n, ptrs);
}

std::unique_ptr<ir::ConstantEvaluator> make_evaluator() {
  return std::make_unique<CpuEvaluator>();
}

std::unique_ptr<Backend> make_backend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace mimic::backends::cpu
