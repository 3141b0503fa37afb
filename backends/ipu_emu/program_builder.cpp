// Assembles every IPU's superstep list from the lowered stages:
//   one stage (num_ipus = replicas): per micro-batch, stream in -> the stage's supersteps -> stream
//   out; several stages (pipelining, in Poplar's sharded style): in pipeline cycle c, stage s works
//   on micro-batch c - s when 0 <= c - s < micro_batches, then all IPUs sync externally and send
//   the tensors later stages read over IPU-Links (ramp up, steady state, ramp down: M + S - 1
//   cycles); replicas with weight_update: a ring all-reduce of each stage's weights (reduce-scatter
//   then all-gather, 2 (R - 1) steps over IPU-Links), as in data-parallel training.
#include <algorithm>

#include "backends/ipu_emu/ipu_compiler.h"
#include "models/ipu/tile_costs.h"

namespace mimic::backends::ipu_emu {
namespace {

using models::ipu::BspProgram;
using models::ipu::IpuSpecs;
using models::ipu::Superstep;
using models::ipu::SyncKind;

struct Builder {
  const IpuSpecs& specs;
  const IpuOptions& o;
  const std::vector<StagePlan>& stages;
  Labels& labels;
  uint32_t tiles() const { return static_cast<uint32_t>(specs.tiles); }
  bool active(uint32_t stage, uint32_t cycle) const {
    return cycle >= stage && cycle - stage < o.micro_batches;
  }

  Superstep stream(const StagePlan& st, bool in) {
    Superstep s;
    s.label = labels.id(in ? "stream in" : "stream out");
    s.sync = SyncKind::internal;
    for (ir::ValueId v : in ? st.host_inputs : st.host_outputs) {
      const Placement& p = st.placement[v];
      (in ? s.host_to_device_bytes : s.device_to_host_bytes) += st.bytes[v];
      add_exchange(s.exchange, p.span, tiles(), in ? 0 : p.bytes_per_tile,
                   in ? p.bytes_per_tile : 0);
    }
    return s;
  }

  void body(const StagePlan& st, std::vector<Superstep>& list) {
    if (!st.host_inputs.empty()) list.push_back(stream(st, true));
    for (const auto& op : st.ops) list.insert(list.end(), op.steps.begin(), op.steps.end());
    if (!st.host_outputs.empty()) list.push_back(stream(st, false));
  }

  // End of pipeline cycle `c` on stage `s` of replica `r`: external sync, IPU-Link transfers.
  Superstep boundary(uint32_t r, uint32_t s, uint32_t c) {
    Superstep b;
    b.label = labels.id("ipu exchange");
    b.sync = SyncKind::external;
    const StagePlan& st = stages[s];
    if (active(s, c))
      for (const auto& [v, to] : st.sends) {
        b.links.push_back({r * o.stages + to, st.bytes[v]});
        add_exchange(b.exchange, st.placement[v].span, tiles(), st.placement[v].bytes_per_tile, 0);
      }
    for (uint32_t from = 0; from < s; ++from) {
      if (!active(from, c)) continue;
      for (const auto& [v, to] : stages[from].sends)
        if (to == s)
          add_exchange(b.exchange, st.placement[v].span, tiles(), 0,
                       st.placement[v].bytes_per_tile);
    }
    return b;
  }

  void all_reduce(uint32_t r, uint32_t s, std::vector<Superstep>& list) {
    uint32_t replicas = o.replicas;
    uint64_t chunk = ceil_div(stages[s].weight_bytes, replicas);
    uint64_t per_tile = ceil_div(chunk, tiles());
    for (uint32_t k = 0; k < 2 * (replicas - 1); ++k) {
      Superstep a;
      a.label = labels.id("all-reduce");
      a.sync = SyncKind::external;
      a.links.push_back({((r + 1) % replicas) * o.stages + s, chunk});
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

BspProgram build_program(const IpuSpecs& specs, const IpuOptions& o,
                         const std::vector<StagePlan>& stages, Labels& labels) {
  Builder b{specs, o, stages, labels};
  BspProgram p;
  p.ipus.resize(static_cast<size_t>(o.stages) * o.replicas);
  for (uint32_t r = 0; r < o.replicas; ++r)
    for (uint32_t s = 0; s < o.stages; ++s) {
      auto& list = p.ipus[r * o.stages + s];
      if (o.stages == 1) {
        for (uint32_t m = 0; m < o.micro_batches; ++m) b.body(stages[s], list);
      } else {
        for (uint32_t c = 0; c + 1 < o.micro_batches + o.stages; ++c) {
          if (b.active(s, c)) b.body(stages[s], list);
          list.push_back(b.boundary(r, s, c));
        }
      }
      if (o.weight_update && o.replicas > 1) b.all_reduce(r, s, list);
    }
  return p;
}

}  // namespace mimic::backends::ipu_emu
