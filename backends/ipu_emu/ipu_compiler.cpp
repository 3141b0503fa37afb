#include "backends/ipu_emu/ipu_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "backends/common.h"
#include "backends/ipu_emu/expression_fusion.h"
#include "backends/ipu_emu/train_plan.h"
#include "models/ipu/tile_costs.h"

namespace mimic::backends::ipu_emu {
namespace {

using models::ipu::IpuSpec;
using models::ipu::NumberFormat;

int64_t graph_batch(const ir::Graph& g) {
  for (ir::ValueId v : g.inputs())
    if (g.value(v).type.shape.rank() > 0) return g.value(v).type.shape[0];
  return 1;
}

// Shapes of one micro-batch on one replica: dimension 0 of every computed value divided by
// `factor` (constants keep theirs); in a training step the batch axis of the values that carry
// it (train_plan.h).
std::vector<ir::Shape> micro_shapes(const ir::Graph& g, int64_t factor, bool training,
                                    int64_t batch, std::vector<std::string>& notes) {
  std::vector<ir::Shape> shapes(g.num_values());
  std::vector<int> axes = training ? batch_axes(g, batch) : std::vector<int>();
  int kept = 0;
  for (int v = 0; v < g.num_values(); ++v) {
    shapes[v] = g.value(v).type.shape;
    if (factor == 1 || g.value(v).constant || shapes[v].rank() == 0) continue;
    if (training) {
      if (axes[v] < 0) continue;
      if (shapes[v][axes[v]] % factor == 0)
        shapes[v][axes[v]] /= factor;
      else
        ++kept;
      continue;
    }
    if (shapes[v][0] % factor == 0)
      shapes[v][0] /= factor;
    else
      ++kept;
  }
  if (kept)
    notes.push_back(fmt::format(
        "{} value(s) whose first dimension does not split into {} parts are planned whole", kept,
        factor));
  return shapes;
}

std::vector<int> device_nodes(const ir::Graph& g) {
  std::vector<int> out;
  for (int i = 0; i < g.num_nodes(); ++i)
    if (!is_folded(g, g.node(i))) out.push_back(i);
  return out;
}

// Contiguous split of `cost` into at most `parts` groups minimizing the largest group (binary
// search on the bound, greedy fill). Returns the stage of every position.
std::vector<uint32_t> partition(const std::vector<uint64_t>& cost, uint32_t parts) {
  std::vector<uint32_t> stage(cost.size(), 0);
  if (parts <= 1 || cost.empty()) return stage;
  uint64_t lo = *std::max_element(cost.begin(), cost.end()),
           hi = std::accumulate(cost.begin(), cost.end(), 0ull);
  auto groups_for = [&](uint64_t bound) {
    uint32_t groups = 1;
    uint64_t sum = 0;
    for (uint64_t c : cost) {
      if (sum + c > bound) ++groups, sum = 0;
      sum += c;
    }
    return groups;
  };
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (groups_for(mid) <= parts)
      hi = mid;
    else
      lo = mid + 1;
  }
  uint32_t s = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < cost.size(); ++i) {
    // Leave at least one node for each remaining stage.
    bool must_cut = cost.size() - i <= parts - 1 - s;
    if ((sum + cost[i] > lo || must_cut) && s + 1 < parts && sum > 0) ++s, sum = 0;
    sum += cost[i];
    stage[i] = s;
  }
  return stage;
}

struct GraphInfo {
  const ir::Graph& g;
  std::vector<int> nodes;           // device nodes in order
  std::vector<int32_t> op_of_node;  // node -> op index (-1 folded)
  std::vector<ir::Shape> shapes;
};

LowerContext make_context(const IpuSpec& s, const IpuOptions& o, const GraphInfo& gi, uint32_t ipu,
                          Labels& labels) {
  LowerContext c{s,   o,       gi.g, gi.shapes, {}, {}, TileCursor(static_cast<uint32_t>(s.tiles)),
                 ipu, &labels, -1};
  c.placement.assign(gi.g.num_values(), Placement{});
  c.placed.assign(gi.g.num_values(), false);
  return c;
}

void place_input(LowerContext& c, ir::ValueId v) {
  if (c.placed[v]) return;
  c.placement[v] =
      spread(c.ipu, c.cursor.take(linear_tiles(c, c.shapes[v].numel())), value_bytes(c, v));
  c.placed[v] = true;
}

// Cycle estimates of every device node on one whole IPU (for balancing pipeline stages).
std::vector<uint64_t> estimate_cycles(const IpuSpec& s, const IpuOptions& o, const GraphInfo& gi) {
  Labels labels;
  LowerContext c = make_context(s, o, gi, 0, labels);
  for (ir::ValueId v : gi.g.inputs()) place_input(c, v);
  std::vector<uint64_t> out;
  for (int node : gi.nodes) out.push_back(std::max<uint64_t>(1, lower_node(c, node).est_cycles));
  return out;
}

// The pipeline stage of every device node: a balanced contiguous split of the cost; in a training
// step of the forward pass only, backward and update ops following their layers (train_plan.h).
std::vector<uint32_t> assign_stages(const IpuSpec& s, const IpuOptions& o, const GraphInfo& gi,
                                    bool training) {
  if (o.stages <= 1) return std::vector<uint32_t>(gi.nodes.size(), 0);
  std::vector<uint64_t> cost = estimate_cycles(s, o, gi);
  if (!training) return partition(cost, o.stages);
  std::vector<uint64_t> forward_cost;
  auto forward = [&](size_t i) { return gi.g.node(gi.nodes[i]).phase <= ir::StepPhase::loss; };
  for (size_t i = 0; i < cost.size(); ++i)
    if (forward(i)) forward_cost.push_back(cost[i]);
  std::vector<uint32_t> part = partition(forward_cost, o.stages), forward_stage(cost.size(), 0);
  for (size_t i = 0, k = 0; i < cost.size(); ++i)
    if (forward(i)) forward_stage[i] = part[k++];
  return training_stages(gi.g, gi.nodes, forward_stage);
}

// Per position of gi.nodes: fused into the next node's expression (expression_fusion.h).
std::vector<bool> expression_fusion(const IpuOptions& o, const GraphInfo& gi,
                                    const std::vector<uint32_t>& stage_of,
                                    const std::vector<bool>& resident) {
  if (!o.expression_fusion) return std::vector<bool>(gi.nodes.size(), false);
  std::vector<uint32_t> stage;
  for (int node : gi.nodes) stage.push_back(stage_of[gi.op_of_node[node]]);
  return plan_expression_fusion(gi.g, gi.nodes, stage, resident);
}

StagePlan lower_stage(const IpuSpec& s, const IpuOptions& o, const GraphInfo& gi,
                      const std::vector<uint32_t>& stage_of, uint32_t stage, Labels& labels) {
  const ir::Graph& g = gi.g;
  StagePlan plan;
  LowerContext c = make_context(s, o, gi, stage, labels);
  std::vector<bool> seen(g.num_values(), false);
  for (int node : gi.nodes) {
    if (stage_of[gi.op_of_node[node]] != stage) continue;
    const ir::Node& n = g.node(node);
    for (int i = 0; i < n.num_inputs(); ++i) {
      ir::ValueId v = n.inputs[i];
      if (!n.has_input(i) || g.value(v).constant || seen[v]) continue;
      int p = g.value(v).producer;
      if (p >= 0 && stage_of[gi.op_of_node[p]] == stage) continue;
      seen[v] = true;
      (p < 0 ? plan.host_inputs : plan.received).push_back(v);
      place_input(c, v);
    }
  }
  plan.resident = resident_values(g);
  std::vector<bool> fused = expression_fusion(o, gi, stage_of, plan.resident);
  for (size_t k = 0; k < gi.nodes.size(); ++k) {
    int node = gi.nodes[k];
    if (stage_of[gi.op_of_node[node]] != stage) continue;
    c.op_index = gi.op_of_node[node];
    plan.ops.push_back(lower_node(c, node));
    LoweredOp& op = plan.ops.back();
    op.fused_into_next = fused[k];
    // The expression's ops run behind the sync of its first op.
    if (k > 0 && fused[k - 1] && !op.steps.empty())
      op.steps.front().sync = models::ipu::SyncKind::none;
    for (const auto& [v, p] : op.stored) plan.weight_bytes += p.total_bytes;
  }
  std::vector<bool> is_output(g.num_values(), false);
  for (ir::ValueId v : g.outputs()) is_output[v] = true;
  for (int node : gi.nodes) {
    uint32_t ns = stage_of[gi.op_of_node[node]];
    const ir::Node& n = g.node(node);
    if (ns == stage)
      for (ir::ValueId v : n.outputs)
        if (is_output[v] && std::find(plan.host_outputs.begin(), plan.host_outputs.end(), v) ==
                                plan.host_outputs.end())
          plan.host_outputs.push_back(v);
    if (ns == stage) continue;
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue || g.value(v).constant || g.value(v).producer < 0) continue;
      if (stage_of[gi.op_of_node[g.value(v).producer]] != stage) continue;
      std::pair<ir::ValueId, uint32_t> send{v, ns};
      if (std::find(plan.sends.begin(), plan.sends.end(), send) == plan.sends.end())
        plan.sends.push_back(send);
    }
  }
  plan.placement = c.placement;
  plan.bytes.resize(g.num_values());
  for (int v = 0; v < g.num_values(); ++v) plan.bytes[v] = value_bytes(c, v);
  plan.gradients = stage_gradients(g, plan.ops);
  for (ir::ValueId v : plan.gradients) plan.gradient_bytes += plan.bytes[v];
  for (ir::ValueId v : plan.host_inputs)
    if (g.value(v).role == ir::ValueRole::optimizer_state)
      plan.optimizer_state_bytes += plan.bytes[v];
  return plan;
}

// A training step's buffers beyond its values: gradient accumulators (resident), and optimizer
// state in streaming memory, on tiles only from the first update op to the last.
void training_buffers(const ir::Graph& g, const StagePlan& st, const IpuOptions& o, int n,
                      MemoryInputs& in) {
  if (o.micro_batches > 1)
    for (ir::ValueId v : st.gradients)
      in.buffers.push_back(
          Buffer{st.placement[v], -1, std::max(n - 1, 0), Category::gradient_accumulator});
  if (!o.offload_optimizer_state) return;
  int first = n, last = -1;
  for (int i = 0; i < n; ++i)
    if (g.node(st.ops[i].node).phase == ir::StepPhase::update) first = std::min(first, i), last = i;
  for (Buffer& b : in.buffers)
    if (b.category == Category::optimizer_state && b.first_op < 0 && last >= 0)
      b.first_op = first, b.last_op = last;
}

// Buffers of a stage in execution order. Resident values (training: parameters, optimizer
// state, BatchNorm statistics) live the whole step and are updated in place; forward values a
// backward op reads are saved activations; accumulation adds one accumulator per gradient.
MemoryInputs memory_inputs(const ir::Graph& g, const StagePlan& st, uint32_t stage,
                           const IpuOptions& o, bool training) {
  bool pipelined = o.stages > 1;
  MemoryInputs in;
  std::vector<int> buffer_of(g.num_values(), -1);
  std::vector<ir::StepPhase> made_in;  // per buffer: the phase of its producer
  int n = static_cast<int>(st.ops.size());
  int last = std::max(n - 1, 0);
  // A value made on another stage (or streamed from the host) carries its producer's phase: a
  // gradient received from a later stage is a backward value, never a stashed activation.
  auto add = [&](ir::ValueId v, int first) {
    buffer_of[v] = static_cast<int>(in.buffers.size());
    bool resident = st.resident[v];
    in.buffers.push_back(
        Buffer{st.placement[v], first, resident ? last : std::max(first, 0), base_category(g, v)});
    int producer = first >= 0 ? st.ops[first].node : g.value(v).producer;
    made_in.push_back(producer >= 0 ? g.node(producer).phase : ir::StepPhase::forward);
  };
  for (ir::ValueId v : st.host_inputs) add(v, -1);
  for (ir::ValueId v : st.received) {
    add(v, -1);
    // The next micro-batch's copy arrives while this one is in use (double buffering).
    if (pipelined) {
      in.buffers.push_back(Buffer{st.placement[v], -1, n - 1, base_category(g, v)});
      made_in.push_back(made_in.back());
    }
  }
  for (int i = 0; i < n; ++i) {
    const LoweredOp& op = st.ops[i];
    in.ops.push_back(&op);
    const ir::Node& node = g.node(op.node);
    for (ir::ValueId v : node.inputs) {
      int b = v != ir::kNoValue ? buffer_of[v] : -1;
      if (b < 0) continue;
      Buffer& buf = in.buffers[b];
      buf.last_op = std::max(buf.last_op, i);
      bool stashed = node.phase == ir::StepPhase::backward &&
                     (buf.category == Category::activation || buf.category == Category::data) &&
                     made_in[b] != ir::StepPhase::backward;
      if (stashed && buf.category == Category::activation)
        buf.category = Category::saved_activations;
      buf.stashed = buf.stashed || stashed;
      // A pipeline stashes them for every micro-batch between its forward and backward pass.
      if (stashed && pipelined && training) buf.copies = stashed_micro_batches(o, stage);
    }
    for (ir::ValueId v : node.outputs) {
      if (op.view && buffer_of[node.inputs[0]] >= 0)
        buffer_of[v] = buffer_of[node.inputs[0]];
      else if (!op.view && !st.resident[v] && !op.fused_into_next)  // resident: written in place
        add(v, i);
    }
  }
  for (ir::ValueId v : st.host_outputs)
    if (buffer_of[v] >= 0) in.buffers[buffer_of[v]].last_op = last;
  for (const auto& [v, stage] : st.sends)
    if (buffer_of[v] >= 0) in.buffers[buffer_of[v]].last_op = last;
  if (training) training_buffers(g, st, o, n, in);
  return in;
}

std::string op_name_at(const ir::Graph& g, const StagePlan& st, const TileMemory& m, uint32_t tile,
                       uint32_t tiles) {
  const LoweredOp* pick = m.peak_op >= 0 ? &st.ops[m.peak_op] : nullptr;
  if (!pick) {  // Overflow from always-live data: the op whose constants weigh most on the tile.
    uint64_t most = 0;
    for (const auto& op : st.ops)
      for (const auto& [v, p] : op.stored) {
        TileSpan sp = p.span;
        bool on = sp.count && (tile + tiles - sp.first % tiles) % tiles < sp.count;
        if (on && p.bytes_per_tile > most) most = p.bytes_per_tile, pick = &op;
      }
  }
  if (!pick) return "(runtime code)";
  const ir::Node& n = g.node(pick->node);
  return fmt::format("'{}' ({})", n.name, ir::op_name(n.op));
}

// The tile's bytes by category, largest first: "activations 1200 (saved_activations 800, ...)".
std::string breakdown(const TileMemory& t) {
  std::vector<std::pair<uint64_t, std::string>> parts = {{t.activations, "activations"},
                                                         {t.exchange, "exchange buffers"},
                                                         {t.partials, "partials"},
                                                         {t.weights, "weights"},
                                                         {t.code, "code"},
                                                         {t.vertex_state, "vertex state"}};
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [bytes, name] : parts) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, bytes);
    if (name != "activations" || t.activations == 0) continue;
    std::vector<std::pair<uint64_t, size_t>> live;
    for (size_t c = 0; c < kTensorCategories; ++c)
      if (t.live[c] && c != static_cast<size_t>(Category::weight)) live.push_back({t.live[c], c});
    std::stable_sort(live.begin(), live.end(), [](auto a, auto b) { return a.first > b.first; });
    if (live.size() == 1 && live[0].second == static_cast<size_t>(Category::activation)) continue;
    std::string inner;
    for (const auto& [b, c] : live)
      inner += fmt::format("{}{} {}", inner.empty() ? "" : ", ",
                           category_name(static_cast<Category>(c)), b);
    out += " (" + inner + ")";
  }
  return out;
}

// When the weights resident on one IPU take most of its memory, the fix is more IPUs, not a
// smaller batch or memory_proportion: say so, with the IPU's totals ("" otherwise).
std::string weights_hint(const IpuMemoryPlan& m, const IpuSpec& s, uint32_t stages) {
  uint64_t weights = 0;
  for (const TileMemory& t : m.tiles) weights += t.weights;
  uint64_t capacity = s.tile_sram_bytes * s.tiles;
  if (weights * 2 < capacity) return "";
  return fmt::format(
      "; the weights alone take {:.1f} MB of this IPU's {:.1f} MB: shard the model over more "
      "IPUs (option num_ipus; {} pipeline stage(s) now)",
      weights / 1e6, capacity / 1e6, stages);
}

void check_memory(IpuCompilation& out, const ir::Graph& g, const IpuSpec& s) {
  const OutOfMemory* worst = nullptr;
  OutOfMemory candidate;
  for (uint32_t st = 0; st < out.stages.size(); ++st) {
    const IpuMemoryPlan& m = out.stages[st].memory;
    if (m.fullest_bytes <= s.tile_sram_bytes ||
        (worst && static_cast<int64_t>(m.fullest_bytes) <= worst->bytes_used))
      continue;
    const TileMemory& t = m.tiles[m.fullest_tile];
    candidate.ipu = st;
    candidate.tile = static_cast<int64_t>(st) * static_cast<int64_t>(s.tiles) + m.fullest_tile;
    candidate.bytes_used = static_cast<int64_t>(m.fullest_bytes);
    candidate.bytes_available = static_cast<int64_t>(s.tile_sram_bytes);
    candidate.op = op_name_at(g, out.stages[st], t, m.fullest_tile, static_cast<uint32_t>(s.tiles));
    candidate.message = fmt::format(
        "Out of memory on tile {}: {} bytes used but tiles only have {} bytes (ipu {}, while "
        "running op {}: {}){}",
        candidate.tile, candidate.bytes_used, candidate.bytes_available, st, candidate.op,
        breakdown(t), weights_hint(m, s, static_cast<uint32_t>(out.stages.size())));
    out.out_of_memory = candidate;
    worst = &*out.out_of_memory;
  }
}

// The report contract shared with tpu-emu: the fullest tile's bytes by category.
void memory_metrics(const IpuCompilation& out, const IpuSpec& s, std::map<std::string, double>& m) {
  const TileMemory* worst = nullptr;
  for (const auto& st : out.stages) {
    const TileMemory& t = st.memory.tiles[st.memory.fullest_tile];
    if (!worst || t.total() > worst->total()) worst = &t;
  }
  if (!worst) return;
  m["memory.peak_bytes"] = double(worst->total());
  m["memory.capacity_bytes"] = double(s.tile_sram_bytes);
  for (size_t c = 0; c < kTensorCategories; ++c)
    m[fmt::format("memory.{}_bytes", category_name(static_cast<Category>(c)))] =
        double(worst->live[c]);
  m["memory.exchange_bytes"] = double(worst->exchange);
  m["memory.partials_bytes"] = double(worst->partials);
  m["memory.code_bytes"] = double(worst->code);
  m["memory.vertex_state_bytes"] = double(worst->vertex_state);
  if (out.training)
    for (size_t k = 0; k < out.stages.size(); ++k)
      m[fmt::format("stashed_bytes.ipu{}", k)] = double(out.stages[k].memory.stashed_bytes);
}

// phase.<phase>_cycles before running: the planner's estimate of every op (forward, loss and
// backward once per micro-batch, the update once per step) and the ring all-reduce at IPU-Link
// bandwidth, summed over the stages. The run report's are measured on the model.
void phase_estimates(const IpuCompilation& out, const IpuOptions& o, const IpuSpec& s,
                     std::map<std::string, double>& m) {
  std::map<std::string, double> c = {
      {"forward", 0}, {"loss", 0}, {"backward", 0}, {"allreduce", 0}, {"update", 0}};
  for (const auto& st : out.stages) {
    for (const auto& op : st.ops) {
      ir::StepPhase ph = out.program.graph.node(op.node).phase;
      bool once = out.training && ph == ir::StepPhase::update;
      c[ir::phase_name(ph)] += double(op.est_cycles) * (once ? 1 : o.micro_batches);
    }
    uint64_t chunk = ceil_div(st.gradient_bytes, o.replicas);
    if (out.training && o.replicas > 1)
      c["allreduce"] +=
          2.0 * (o.replicas - 1) * double(s.ipu_link_latency_cycles + s.ipu_link_cycles(chunk));
  }
  for (const auto& [phase, cycles] : c) m["phase." + phase + "_cycles"] = cycles;
}

Table memory_table(const IpuCompilation& out) {
  Table t;
  t.columns = {"ipu",      "tile",     "total", "weights",      "activations",
               "exchange", "partials", "code",  "vertex_state", "peak_node"};
  for (size_t c = 0; c < kTensorCategories; ++c)
    if (c != static_cast<size_t>(Category::weight))
      t.columns.push_back(category_name(static_cast<Category>(c)));
  for (uint32_t st = 0; st < out.stages.size(); ++st) {
    const auto& tiles = out.stages[st].memory.tiles;
    for (uint32_t i = 0; i < tiles.size(); ++i) {
      const TileMemory& m = tiles[i];
      double node = m.peak_op >= 0 ? static_cast<double>(out.stages[st].ops[m.peak_op].node) : -1;
      t.rows.push_back({double(st), double(i), double(m.total()), double(m.weights),
                        double(m.activations), double(m.exchange), double(m.partials),
                        double(m.code), double(m.vertex_state), node});
      for (size_t c = 0; c < kTensorCategories; ++c)
        if (c != static_cast<size_t>(Category::weight)) t.rows.back().push_back(double(m.live[c]));
    }
  }
  std::stable_sort(t.rows.begin(), t.rows.end(),
                   [](const auto& a, const auto& b) { return a[2] > b[2]; });
  return t;
}

// One row per planned matrix/window op: how it was split over tiles.
Table plan_table(const IpuCompilation& out) {
  Table t;
  t.columns = {"ipu",     "node",  "group_split", "row_split", "col_split",
               "k_split", "tiles", "est_cycles",  "temp_bytes"};
  for (uint32_t st = 0; st < out.stages.size(); ++st)
    for (const auto& op : out.stages[st].ops)
      if (op.planned)
        t.rows.push_back({double(st), double(op.node), double(op.split[0]), double(op.split[1]),
                          double(op.split[2]), double(op.split[3]), double(op.plan_tiles),
                          double(op.est_cycles), double(op.temp_exchange + op.temp_partials)});
  return t;
}

void fill_ops(IpuCompilation& out, const GraphInfo& gi, const std::vector<uint32_t>& stage_of) {
  DeviceProgram& p = out.program;
  for (size_t i = 0; i < gi.nodes.size(); ++i) {
    const ir::Node& n = gi.g.node(gi.nodes[i]);
    p.ops.push_back(sim::OpDesc{n.name, ir::op_name(n.op), node_shapes(gi.g, n),
                                ir::dtype_name(gi.g.value(n.outputs[0]).type.dtype),
                                ir::node_flops(gi.g, n), ir::node_bytes_in(gi.g, n),
                                ir::node_bytes_out(gi.g, n), "ipu-emu", false});
    p.op_nodes.push_back(gi.nodes[i]);
    p.op_ipus.push_back(static_cast<int32_t>(stage_of[i]));
  }
  p.recipes.assign(gi.g.num_nodes(), OpRecipe{});
  for (const auto& st : out.stages)
    for (const auto& op : st.ops) p.recipes[op.node] = op.recipe;
}

// Notes on how the options shaped the program (pipelining, replicas, the training step).
void option_notes(IpuCompilation& out, const IpuOptions& o, int64_t local) {
  std::vector<std::string>& notes = out.report.notes;
  if (o.stages > 1) {
    std::string parts;
    for (uint32_t st = 0; st < o.stages; ++st)
      parts += fmt::format("{}ipu {}: {} ops", st ? ", " : "", st, out.stages[st].ops.size());
    notes.push_back(
        fmt::format("pipelined over {} stages x {} micro-batches, {} schedule: {} "
                    "pipeline cycles ({})",
                    o.stages, o.micro_batches, schedule_name(o.schedule),
                    pipeline_cycles(o, out.training), parts));
  }
  if (o.half_partials && !o.half_precision)
    notes.push_back(
        "enable_half_partials has no effect with precision float32 (partials of fp32 products are "
        "fp32)");
  if (o.replicas > 1)
    notes.push_back(fmt::format("{} replicas of batch {} each{}", o.replicas, local,
                                out.training      ? ", gradients all-reduced once per step"
                                : o.weight_update ? ", weights all-reduced every step"
                                                  : ""));
  if (out.training)
    notes.push_back(fmt::format(
        "training step: {} micro-batch(es) of {} per replica{}, optimizer once per step "
        "(effective batch {}){}",
        o.micro_batches, local / o.micro_batches,
        o.micro_batches > 1 ? ", gradients summed in on-tile accumulators" : "", out.batch,
        o.offload_optimizer_state ? "; optimizer state in streaming memory (remote buffers)" : ""));
}

}  // namespace

namespace {

// Micro-batches per step when not given: the largest divisor of the batch per replica up to
// 2 x stages (the pipeline's fill) that the schedule accepts, else the smallest one above; checks
// that they divide it and fill the schedule. Returns the batch per replica.
int64_t micro_batching(IpuOptions& o, int64_t batch, bool training) {
  if (batch % o.replicas != 0)
    throw InvalidArgument(fmt::format("ipu-emu: batch {} does not split over replication_factor={}",
                                      batch, o.replicas));
  int64_t local = batch / o.replicas;
  auto fits = [&](int64_t d) {
    return local % d == 0 && pipeline_depth_error(o, uint32_t(d), training).empty();
  };
  if (o.micro_batches == 0 && o.stages > 1) {
    for (int64_t d = std::min<int64_t>(2 * o.stages, local); d >= 1 && !o.micro_batches; --d)
      if (fits(d)) o.micro_batches = static_cast<uint32_t>(d);
    for (int64_t d = 2 * o.stages + 1; d <= local && !o.micro_batches; ++d)
      if (fits(d)) o.micro_batches = static_cast<uint32_t>(d);
  }
  const char* key = o.accumulation ? "gradient_accumulation" : "micro_batches";
  if (o.micro_batches == 0 && o.stages > 1)
    throw InvalidArgument(fmt::format(
        "ipu-emu: no micro-batch count divides the batch per replica ({}) and fills the pipeline: "
        "{}",
        local, pipeline_depth_error(o, uint32_t(std::min<int64_t>(local, 1u << 20)), training)));
  if (o.micro_batches == 0) o.micro_batches = 1;
  if (local % o.micro_batches != 0)
    throw InvalidArgument(
        fmt::format("ipu-emu: {}={} must divide the batch per replica ({} = {} / {})", key,
                    o.micro_batches, local, batch, o.replicas));
  std::string depth = pipeline_depth_error(o, o.micro_batches, training);
  if (!depth.empty())
    throw InvalidArgument(
        fmt::format("ipu-emu: {}; set {} (or a batch that allows it)", depth, key));
  return local;
}

// The device program of a compilation: supersteps per IPU, numerics settings, precision.
void fill_program(IpuCompilation& out, const ir::Graph& g, const IpuSpec& s, const IpuOptions& o,
                  Labels& labels) {
  DeviceProgram& p = out.program;
  p.bsp = build_program(s, o, g, out.training, out.stages, labels);
  p.bsp.labels = labels.names;
  p.graph = g;
  p.half_storage = o.half_precision;
  p.fp32_master = o.fp32_master_weights, p.stochastic_rounding = o.stochastic_rounding;
  p.timing_only = o.timing_only;
  p.replicas = o.replicas, p.stages = o.stages, p.micro_batches = o.micro_batches;
  NumberFormat in = o.half_precision ? NumberFormat::f16 : NumberFormat::f32;
  NumberFormat part = o.half_precision && o.half_partials ? NumberFormat::f16 : NumberFormat::f32;
  p.macs_per_cycle = models::ipu::amp_macs_per_cycle(s, in, part);
  p.precision = o.precision_name + (part == NumberFormat::f16 ? " (half partials)" : "");
  p.preset = s.name;
}

// The compile report's metrics: tile memory, system shape, supersteps, phases, out-of-memory.
void compile_metrics(IpuCompilation& out, const IpuSpec& s, const IpuOptions& o) {
  const DeviceProgram& p = out.program;
  std::vector<std::string>& notes = out.report.notes;
  auto& m = out.report.metrics;
  uint64_t max_bytes = 0, sum_bytes = 0, n_tiles = 0;
  for (const auto& st : out.stages)
    for (const auto& t : st.memory.tiles)
      max_bytes = std::max(max_bytes, t.total()), sum_bytes += t.total(), ++n_tiles;
  m["max_tile_bytes"] = static_cast<double>(max_bytes);
  m["mean_tile_bytes"] = n_tiles ? static_cast<double>(sum_bytes) / n_tiles : 0;
  m["tile_sram_bytes"] = static_cast<double>(s.tile_sram_bytes);
  m["memory_used_fraction"] = static_cast<double>(max_bytes) / s.tile_sram_bytes;
  m["tiles_per_ipu"] = static_cast<double>(s.tiles);
  m["num_ipus"] = o.num_ipus, m["stages"] = o.stages, m["replicas"] = o.replicas,
  m["micro_batches"] = o.micro_batches;
  m["pipeline_cycles"] = o.stages > 1 ? pipeline_cycles(o, out.training) : 0;
  size_t steps = 0;
  for (const auto& ipu : p.bsp.ipus) steps += ipu.size() * p.bsp.replicas;
  m["supersteps"] = static_cast<double>(steps);
  size_t fused = 0;
  for (const auto& st : out.stages)
    for (const auto& op : st.ops) fused += op.fused_into_next;
  m["fused_elementwise_ops"] = static_cast<double>(fused);
  memory_metrics(out, s, m);
  phase_estimates(out, o, s, m);
  m["out_of_memory"] = out.out_of_memory ? 1 : 0;
  if (out.out_of_memory) {
    notes.push_back(out.out_of_memory->message);
    m["out_of_memory_tile"] = static_cast<double>(out.out_of_memory->tile);
  }
}

}  // namespace

IpuCompilation compile_ipu(const ir::Graph& g, const IpuSpec& s, const IpuOptions& o_in,
                           const std::string& device) {
  auto t0 = std::chrono::steady_clock::now();
  IpuOptions o = o_in;
  IpuCompilation out;
  out.training = is_training(g);
  out.batch = out.training ? training_batch(g) : graph_batch(g);
  if (!out.training && o.accumulation > 1)
    throw InvalidArgument(fmt::format(
        "ipu-emu: gradient_accumulation={} needs a training step (graph '{}' has no backward "
        "ops); micro_batches splits an inference batch",
        o.accumulation, g.name()));
  int64_t local = micro_batching(o, out.batch, out.training);
  std::vector<std::string>& notes = out.report.notes;
  GraphInfo gi{
      g, device_nodes(g), std::vector<int32_t>(g.num_nodes(), -1),
      micro_shapes(g, int64_t(o.replicas) * o.micro_batches, out.training, out.batch, notes)};
  for (size_t i = 0; i < gi.nodes.size(); ++i) gi.op_of_node[gi.nodes[i]] = static_cast<int32_t>(i);
  for (int node : gi.nodes)
    if (!ipu_supports(g, g.node(node)))
      throw UnsupportedOpError(fmt::format("ipu-emu: cannot run {}", ir::describe(g, g.node(node))),
                               {ir::op_name(g.node(node).op)});
  std::vector<uint32_t> stage_of = assign_stages(s, o, gi, out.training);
  Labels labels;
  out.stages.resize(o.stages);
  for (uint32_t st = 0; st < o.stages; ++st) {
    out.stages[st] = lower_stage(s, o, gi, stage_of, st, labels);
    out.stages[st].memory = plan_memory(s, memory_inputs(g, out.stages[st], st, o, out.training));
  }
  fill_ops(out, gi, stage_of);
  out.memory_table = memory_table(out);
  check_memory(out, g, s);
  if (out.out_of_memory && !o.allow_out_of_memory)
    throw OutOfMemoryError(out.out_of_memory->message +
                               "; set option allow_out_of_memory=true for the full memory report",
                           out.out_of_memory->tile, out.out_of_memory->bytes_used,
                           out.out_of_memory->bytes_available, out.out_of_memory->op);
  fill_program(out, g, s, o, labels);
  compile_metrics(out, s, o);
  option_notes(out, o, local);
  out.program.notes = notes;
  out.report.device = device;
  out.report.tables["ipu_tile_memory"] = out.memory_table;
  out.report.tables["ipu_plans"] = plan_table(out);
  out.report.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.report.metrics["plan_seconds"] = out.report.compile_seconds;
  return out;
}

}  // namespace mimic::backends::ipu_emu
