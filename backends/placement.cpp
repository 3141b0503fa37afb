// Placement of graph nodes on a backend with fallback to cpu: the graph (minus folded nodes) is cut
// into maximal runs of consecutive nodes placed on the same backend; each run is compiled as its
// own subgraph and the runs execute in order, exchanging tensors through host memory.
#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "backends/registry.h"
#include "base/error.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::backends {
namespace {

struct Segment {
  const Backend* backend = nullptr;
  std::string arg;
  bool fallback = false;
  std::vector<int> nodes;
  std::vector<ir::ValueId> inputs, outputs;  // parent-graph value ids
  std::unique_ptr<Executable> executable;
};

// Builds the subgraph of one segment: values from outside become inputs (or constants).
// One device segment's metrics into the whole graph's. Memory plans (memory.*) are per program:
// the graph's is that of the segment with the largest peak, whole; replica counts and buffer
// extents (hbm.*) the largest; phase and all-reduce cycles add up; other metrics add up at compile
// time and are the last segment's at run time.
void merge_metrics(std::map<std::string, double>& into, const std::map<std::string, double>& part,
                   bool sum_others) {
  auto peak = [](const std::map<std::string, double>& m) {
    auto it = m.find("memory.peak_bytes");
    return it == m.end() ? -1.0 : it->second;
  };
  if (peak(part) > peak(into)) {
    for (auto it = into.begin(); it != into.end();)
      it = it->first.rfind("memory.", 0) == 0 ? into.erase(it) : std::next(it);
    for (const auto& [k, v] : part)
      if (k.rfind("memory.", 0) == 0) into[k] = v;
  }
  for (const auto& [key, value] : part) {
    if (key.rfind("memory.", 0) == 0) continue;
    auto it = into.find(key);
    if (it == into.end())
      into[key] = value;
    else if (key == "replicas" || key.rfind("hbm.", 0) == 0)
      it->second = std::max(it->second, value);
    else if (sum_others || key.rfind("phase.", 0) == 0 || key.rfind("allreduce.", 0) == 0)
      it->second += value;
    else
      it->second = value;
  }
}

ir::Graph extract(const ir::Graph& g, Segment& seg, const std::vector<bool>& needed_later) {
  ir::Graph sub(g.name());
  std::unordered_map<ir::ValueId, ir::ValueId> map;
  for (int index : seg.nodes) {
    const ir::Node& n = g.node(index);
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue) {
        inputs.push_back(ir::kNoValue);
        continue;
      }
      auto it = map.find(v);
      if (it == map.end()) {
        const ir::Value& val = g.value(v);
        ir::ValueId id = val.constant ? sub.add_constant(val.name, *val.constant)
                                      : sub.add_input(val.name, val.type.dtype, val.type.shape);
        sub.value(id).role = val.role;  // memory plans count inputs by role
        if (!val.constant) seg.inputs.push_back(v);
        it = map.emplace(v, id).first;
      }
      inputs.push_back(it->second);
    }
    std::vector<std::string> names;
    for (ir::ValueId v : n.outputs) names.push_back(g.value(v).name);
    auto outs =
        sub.add_node(n.op, n.name, inputs, n.attrs, static_cast<int>(n.outputs.size()), names);
    sub.node(sub.num_nodes() - 1).phase = n.phase;
    for (size_t i = 0; i < outs.size(); ++i) {
      sub.value(outs[i]).role = g.value(n.outputs[i]).role;
      map[n.outputs[i]] = outs[i];
    }
  }
  for (int index : seg.nodes)
    for (ir::ValueId v : g.node(index).outputs)
      if (needed_later[v]) {
        sub.add_output(map.at(v));
        seg.outputs.push_back(v);
      }
  ir::infer_shapes(sub);
  return sub;
}

class PlacedExecutable final : public Executable {
 public:
  PlacedExecutable(const ir::Graph& g, std::vector<Segment> segments, CompileReport report)
      : graph_inputs_(g.inputs()),
        graph_outputs_(g.outputs()),
        segments_(std::move(segments)),
        report_(std::move(report)) {
    for (ir::ValueId v : graph_outputs_)
      if (g.value(v).constant) constants_[v] = *g.value(v).constant;
  }

  RunResult run(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink) override {
    return run_segments(inputs, sink, false);
  }

  // Carried values stay on the device when the whole graph is one segment on it: the segment's
  // executable keeps them (its inputs and outputs renumbered). A graph split by cpu fallback keeps
  // them in host memory (the default), as its segments exchange tensors through the host anyway.
  void set_carries(std::vector<Carry> carries, std::vector<ir::HostTensor> initial) override {
    delegated_ = false;
    std::vector<Carry> mapped;
    if (segments_.size() == 1) {
      const Segment& seg = segments_[0];
      auto position = [](const std::vector<ir::ValueId>& list, ir::ValueId v) {
        auto it = std::find(list.begin(), list.end(), v);
        return it == list.end() ? -1 : static_cast<int>(it - list.begin());
      };
      for (const Carry& c : carries) {
        Carry m{position(seg.inputs, graph_inputs_[c.input]),
                position(seg.outputs, graph_outputs_[c.output]),
                c.guard < 0 ? -1 : position(seg.outputs, graph_outputs_[c.guard])};
        if (m.input < 0 || m.output < 0 || (c.guard >= 0 && m.guard < 0)) break;
        mapped.push_back(m);
      }
    }
    if (segments_.size() != 1 || mapped.size() != carries.size()) {
      Executable::set_carries(std::move(carries), std::move(initial));
      return;
    }
    carries_ = std::move(carries);
    segments_[0].executable->set_carries(std::move(mapped), std::move(initial));
    delegated_ = true;
  }

  RunResult run_carried(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink) override {
    if (!delegated_) return Executable::run_carried(inputs, sink);
    return run_segments(inputs, sink, true);
  }
  ir::HostTensor read_carry(size_t carry) override {
    return delegated_ ? segments_[0].executable->read_carry(carry) : Executable::read_carry(carry);
  }
  void write_carry(size_t carry, const ir::HostTensor& value) override {
    if (delegated_)
      segments_[0].executable->write_carry(carry, value);
    else
      Executable::write_carry(carry, value);
  }
  bool carries_on_device() const override {
    return delegated_ && segments_[0].executable->carries_on_device();
  }

  const CompileReport& compile_report() const override { return report_; }

 private:
  // `carried`: one segment keeps the carried values (set_carries delegated them to it).
  RunResult run_segments(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink,
                         bool carried) {
    auto start = std::chrono::steady_clock::now();
    std::unordered_map<ir::ValueId, ir::HostTensor> values = constants_;
    for (size_t i = 0; i < graph_inputs_.size() && i < inputs.size(); ++i)
      values[graph_inputs_[i]] = inputs[i];
    RunResult result;
    bool first = true;
    for (Segment& seg : segments_) {
      std::vector<ir::HostTensor> seg_inputs;
      for (ir::ValueId v : seg.inputs) seg_inputs.push_back(values.at(v));
      RunResult r = carried ? seg.executable->run_carried(seg_inputs, sink)
                            : seg.executable->run(seg_inputs, sink);
      for (size_t i = 0; i < seg.outputs.size(); ++i)
        values[seg.outputs[i]] = std::move(r.outputs[i]);
      merge(result.report, r.report, seg.fallback, first);
      first = false;
    }
    for (ir::ValueId v : graph_outputs_) result.outputs.push_back(values.at(v));
    result.report.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }

  static void merge(RunReport& into, RunReport& part, bool fallback, bool first) {
    if (fallback) {
      for (auto& op : part.ops) op.fallback = true;
      into.fallback_wall_seconds += part.wall_seconds;
    } else {
      into.device = part.device;
      into.backend = part.backend;
      into.precision = part.precision;
      into.clock_hz = part.clock_hz;
      into.peak_flops_per_s = part.peak_flops_per_s;
      into.ridge_intensity = part.ridge_intensity;
      into.cycles += part.cycles;
      into.device_seconds += part.device_seconds;
      merge_metrics(into.metrics, part.metrics, false);
      for (auto& [k, v] : part.tables) into.tables[k] = std::move(v);
      for (auto& u : part.units) merge_unit(into.units, u);
    }
    if (first && into.device.empty()) into.device = part.device;
    for (auto& [k, v] : part.bytes_moved) into.bytes_moved[k] += v;
    for (auto& op : part.ops) into.ops.push_back(std::move(op));
    for (auto& note : part.notes) into.notes.push_back(std::move(note));
    int64_t flops = 0;
    for (const auto& op : into.ops)
      if (!op.fallback) flops += op.flops;
    into.achieved_flops_per_s = into.device_seconds > 0 ? flops / into.device_seconds : 0;
  }

  static void merge_unit(std::vector<UnitReport>& units, const UnitReport& u) {
    for (auto& existing : units)
      if (existing.name == u.name) {
        existing.busy_cycles += u.busy_cycles;
        return;
      }
    units.push_back(u);
  }

  std::vector<ir::ValueId> graph_inputs_, graph_outputs_;
  std::vector<Segment> segments_;
  CompileReport report_;
  std::unordered_map<ir::ValueId, ir::HostTensor> constants_;
  bool delegated_ = false;
};

}  // namespace

std::unique_ptr<Executable> compile_with_fallback(const Backend& b, const ir::Graph& g,
                                                  const std::string& arg,
                                                  const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  const Backend* cpu = Registry::global().find("cpu");
  std::vector<Segment> segments;
  std::vector<std::string> fallback_nodes, fallback_reasons;
  for (int i = 0; i < g.num_nodes(); ++i) {
    const ir::Node& n = g.node(i);
    if (is_folded(g, n)) continue;
    bool on_device = b.supports_op(g, n, arg, options);
    if (!on_device) {
      fallback_nodes.push_back(n.name);
      std::string why = b.unsupported_reason(g, n, arg, options);
      fallback_reasons.push_back(fmt::format("{} '{}': {}", ir::op_name(n.op), n.name,
                                             why.empty() ? "not supported by " + b.name() : why));
    }
    const Backend* target = on_device ? &b : cpu;
    if (segments.empty() || segments.back().backend != target) {
      segments.emplace_back();
      segments.back().backend = target;
      segments.back().arg = on_device ? arg : "";
      segments.back().fallback = !on_device && &b != cpu;
    }
    segments.back().nodes.push_back(i);
  }
  if (!fallback_reasons.empty() && (options.strict || &b == cpu)) {
    const size_t shown = std::min<size_t>(fallback_reasons.size(), 3);  // with their reasons
    throw UnsupportedOpError(
        fmt::format("{}{}: {} op(s) cannot run on this device: {}{}", b.name(),
                    arg.empty() ? "" : ":" + arg, fallback_reasons.size(),
                    fmt::join(fallback_reasons.begin(),
                              fallback_reasons.begin() + static_cast<long>(shown), "; "),
                    shown < fallback_reasons.size()
                        ? fmt::format("; and {} more", fallback_reasons.size() - shown)
                        : ""));
  }
  // A value is a segment output if a later segment or the graph's outputs read it.
  std::vector<int> consumer_segment_max(g.num_values(), -1);
  for (size_t s = 0; s < segments.size(); ++s)
    for (int index : segments[s].nodes)
      for (ir::ValueId v : g.node(index).inputs)
        if (v != ir::kNoValue) consumer_segment_max[v] = std::max<int>(consumer_segment_max[v], s);
  CompileReport report;
  for (size_t s = 0; s < segments.size(); ++s) {
    std::vector<bool> needed(g.num_values(), false);
    for (ir::ValueId v : g.outputs()) needed[v] = true;
    for (int v = 0; v < g.num_values(); ++v)
      if (consumer_segment_max[v] > static_cast<int>(s)) needed[v] = true;
    ir::Graph sub = extract(g, segments[s], needed);
    CompileOptions seg_options = options;
    if (segments[s].fallback) {  // the device's options and preset fields are not the cpu's
      seg_options.options.clear();
      seg_options.overrides.clear();
    }
    segments[s].executable = segments[s].backend->compile(sub, segments[s].arg, seg_options);
    const CompileReport& r = segments[s].executable->compile_report();
    if (!segments[s].fallback) {
      report.device = r.device;
      merge_metrics(report.metrics, r.metrics, true);
      for (const auto& [k, v] : r.tables) report.tables[k] = v;
    }
    for (const auto& note : r.notes) report.notes.push_back(note);
  }
  report.fallback_nodes = std::move(fallback_nodes);
  report.fallback_reasons = std::move(fallback_reasons);
  report.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::make_unique<PlacedExecutable>(g, std::move(segments), std::move(report));
}

}  // namespace mimic::backends
