// Assembles every IPU's superstep list from the lowered stages:
//   one stage (num_ipus = replicas): per micro-batch, stream in -> the stage's supersteps -> stream
//   out; several stages (pipelining, in Poplar's sharded style): in pipeline cycle c, stage j
//   works on micro-batch m when c = m x spacing + j (ipu_options.h: PipelineSchedule), then all
//   IPUs sync externally and send the tensors later stages read over IPU-Links (ramp up, steady
//   state, ramp down); replicas with weight_update: a ring all-reduce of each stage's weights
//   (reduce-scatter then all-gather, 2 (R - 1) steps over IPU-Links), as in data-parallel
//   training.
// A training step (train_plan.h) pipelines forward and backward: IPU s runs its layers' forward
// pass as stage s and their backward pass as stage 2S - 1 - s (grouped: both in one cycle, of
// different micro-batches, the backward pass first; interleaved: one per cycle, alternating;
// sequential: one stage of the whole system per cycle), gradients cross back over the IPU-Links,
// and each IPU stashes its forward activations for the micro-batches in flight
// (stashed_micro_batches). It streams only its data per micro-batch (parameters and optimizer state
// stay on the IPU), adds each micro-batch's gradients into their accumulators, then, once per step:
// the same ring all-reduce of the gradients across replicas, the optimizer state loaded from
// streaming memory when it lives there, the update ops, and the state stored back.
#include <algorithm>

#include "backends/ipu_emu/ipu_compiler.h"
#include "backends/ipu_emu/train_plan.h"
#include "models/ipu/tile_costs.h"

namespace mimic::backends::ipu_emu {
namespace {

using models::ipu::BspProgram;
using models::ipu::IpuSpec;
using models::ipu::Superstep;
using models::ipu::SyncKind;

struct Builder {
  const IpuSpec& specs;
  const IpuOptions& o;
  const ir::Graph& g;
  bool training;
  const std::vector<StagePlan>& stages;
  Labels& labels;
  bool once_per_step(const LoweredOp& op) const {
    return training && g.node(op.node).phase == ir::StepPhase::update;
  }
  uint32_t tiles() const { return static_cast<uint32_t>(specs.tiles); }
  // Whether stage j (IPU s's forward pass is stage s; in a training step its backward pass is
  // stage 2S - 1 - s) runs a micro-batch in pipeline cycle c.
  bool active(uint32_t stage, uint32_t cycle) const {
    uint32_t spacing = micro_batch_spacing(o, training);
    return cycle >= stage && (cycle - stage) % spacing == 0 &&
           (cycle - stage) / spacing < o.micro_batches;
  }
  bool active_backward(uint32_t stage, uint32_t cycle) const {
    return active(2 * o.stages - 1 - stage, cycle);
  }
  uint32_t cycles() const { return pipeline_cycles(o, training); }
  // Which part of a pipeline cycle makes value v: 0 forward, 1 backward, 2 update (after it).
  int part_of(ir::ValueId v) const {
    if (!training) return 0;
    ir::StepPhase ph = g.node(g.value(v).producer).phase;
    return ph == ir::StepPhase::update ? 2 : ph == ir::StepPhase::backward ? 1 : 0;
  }
  bool sends_in(uint32_t s, int part, uint32_t c) const {
    return part == 0 ? active(s, c) : part == 1 && active_backward(s, c);
  }

  Superstep stream(const StagePlan& st, bool in) {
    Superstep s;
    s.label = labels.id(in ? "stream in" : "stream out");
    s.sync = SyncKind::internal;
    for (ir::ValueId v : in ? st.host_inputs : st.host_outputs) {
      if (st.resident[v]) continue;
      const Placement& p = st.placement[v];
      (in ? s.host_to_device_bytes : s.device_to_host_bytes) += st.bytes[v];
      add_exchange(s.exchange, p.span, tiles(), in ? 0 : p.bytes_per_tile,
                   in ? p.bytes_per_tile : 0);
    }
    return s;
  }

  // One micro-batch's ops of `part` (-1: every op but the update; 0 forward and loss, 1 backward).
  void body(const StagePlan& st, std::vector<Superstep>& list, int part = -1) {
    auto any = [&](const std::vector<ir::ValueId>& vs) {
      return std::any_of(vs.begin(), vs.end(), [&](ir::ValueId v) { return !st.resident[v]; });
    };
    if (part != 1 && any(st.host_inputs)) list.push_back(stream(st, true));
    for (const auto& op : st.ops) {
      if (once_per_step(op)) continue;
      bool backward = training && g.node(op.node).phase == ir::StepPhase::backward;
      if (part < 0 || part == int(backward))
        list.insert(list.end(), op.steps.begin(), op.steps.end());
    }
    if (part != 0 && training && o.micro_batches > 1 && !st.gradients.empty()) {
      std::vector<Placement> grads;
      for (ir::ValueId v : st.gradients) grads.push_back(st.placement[v]);
      list.push_back(accumulate_step(
          specs, grads,
          o.half_precision ? models::ipu::NumberFormat::f16 : models::ipu::NumberFormat::f32,
          labels.id("gradient accumulation")));
    }
    if (part != 1 && any(st.host_outputs)) list.push_back(stream(st, false));
  }

  // Once per training step, after the micro-batches (and the all-reduce).
  void update(const StagePlan& st, std::vector<Superstep>& list) {
    bool offload = o.offload_optimizer_state && st.optimizer_state_bytes;
    if (offload)
      list.push_back(stream_state_step(specs, st.optimizer_state_bytes, true,
                                       labels.id("optimizer state load")));
    for (const auto& op : st.ops)
      if (once_per_step(op)) list.insert(list.end(), op.steps.begin(), op.steps.end());
    if (offload)
      list.push_back(stream_state_step(specs, st.optimizer_state_bytes, false,
                                       labels.id("optimizer state store")));
  }

  // End of pipeline cycle `c` on stage `s` (c = cycles(): before the update, for update values
  // read on another IPU): external sync, IPU-Link transfers to the replica's other stages.
  Superstep boundary(uint32_t s, uint32_t c) {
    Superstep b;
    b.label = labels.id("ipu exchange");
    b.sync = SyncKind::external;
    auto sent = [&](uint32_t from, ir::ValueId v) {
      int part = part_of(v);
      return c == cycles() ? part == 2 : sends_in(from, part, c);
    };
    const StagePlan& st = stages[s];
    for (const auto& [v, to] : st.sends) {
      if (!sent(s, v)) continue;
      b.links.push_back({to, st.bytes[v]});
      add_exchange(b.exchange, st.placement[v].span, tiles(), st.placement[v].bytes_per_tile, 0);
    }
    for (uint32_t from = 0; from < o.stages; ++from) {
      if (from == s) continue;
      for (const auto& [v, to] : stages[from].sends)
        if (to == s && sent(from, v))
          add_exchange(b.exchange, st.placement[v].span, tiles(), 0,
                       st.placement[v].bytes_per_tile);
    }
    return b;
  }

  // Ring all-reduce of `bytes` (each replica's weights or gradients of stage s): every step sends a
  // chunk to the same stage of the next replica.
  void all_reduce(uint32_t s, uint64_t bytes, std::vector<Superstep>& list) {
    uint32_t replicas = o.replicas;
    uint64_t chunk = ceil_div(bytes, replicas);
    uint64_t per_tile = ceil_div(chunk, tiles());
    for (uint32_t k = 0; k < 2 * (replicas - 1); ++k) {
      Superstep a;
      a.label = labels.id("all-reduce");
      a.sync = SyncKind::external;
      a.links.push_back({o.stages + s, chunk});
      add_exchange(a.exchange, TileSpan{0, tiles()}, tiles(), per_tile, per_tile);
      if (k < replicas - 1 && per_tile) {  // reduce-scatter steps add the received chunk
        models::ipu::VertexWork add{models::ipu::VertexClass::vector,
                                    models::ipu::NumberFormat::f32, models::ipu::NumberFormat::f32,
                                    1, 0};
        add_compute(
            a.compute, TileSpan{0, tiles()}, tiles(),
            models::ipu::split_over_workers(add, ceil_div(per_tile, 4), 1, specs.worker_contexts));
      }
      list.push_back(std::move(a));
    }
  }
};

}  // namespace

BspProgram build_program(const IpuSpec& specs, const IpuOptions& o, const ir::Graph& g,
                         bool training, const std::vector<StagePlan>& stages, Labels& labels) {
  Builder b{specs, o, g, training, stages, labels};
  BspProgram p;
  // One replica's lists, link targets in replica 0's numbering; the system runs one copy per
  // replica (BspProgram::replicas).
  p.replicas = o.replicas;
  p.ipus.resize(o.stages);
  for (uint32_t s = 0; s < o.stages; ++s) {
    auto& list = p.ipus[s];
    if (o.stages == 1) {
      for (uint32_t m = 0; m < o.micro_batches; ++m) b.body(stages[s], list);
    } else if (!training) {
      for (uint32_t c = 0; c < b.cycles(); ++c) {
        if (b.active(s, c)) b.body(stages[s], list);
        list.push_back(b.boundary(s, c));
      }
    } else {
      for (uint32_t c = 0; c < b.cycles(); ++c) {
        if (b.active_backward(s, c)) b.body(stages[s], list, 1);
        if (b.active(s, c)) b.body(stages[s], list, 0);
        list.push_back(b.boundary(s, c));
      }
      list.push_back(b.boundary(s, b.cycles()));
    }
    if (training) {
      if (o.replicas > 1) b.all_reduce(s, stages[s].gradient_bytes, list);
      b.update(stages[s], list);
    } else if (o.weight_update && o.replicas > 1) {
      b.all_reduce(s, stages[s].weight_bytes, list);
    }
  }
  return p;
}

}  // namespace mimic::backends::ipu_emu
