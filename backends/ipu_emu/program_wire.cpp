// Serialization of DeviceProgram for the device worker (ipu_program.h).
#include <fmt/format.h>

#include "backends/ipu_emu/graph_wire.h"
#include "backends/ipu_emu/ipu_device_host.h"
#include "backends/ipu_emu/ipu_program.h"
#include "base/error.h"

namespace mimic::backends::ipu_emu {
namespace {

using models::ipu::Superstep;

void write_step(wire::Writer& w, const Superstep& s) {
  w.pod(s.op);
  w.u32(s.label);
  w.u8(static_cast<uint8_t>(s.sync));
  w.pods(s.exchange);
  w.pods(s.links);
  w.u64(s.host_to_device_bytes);
  w.u64(s.device_to_host_bytes);
  w.u64(s.compute.size());
  for (const auto& g : s.compute) {
    w.u32(g.first_tile);
    w.u32(g.tile_count);
    w.pods(g.vertices);
  }
}

Superstep read_step(wire::Reader& r) {
  Superstep s;
  s.op = r.pod<int32_t>();
  s.label = r.u32();
  uint8_t sync = r.u8();
  if (sync > 2) throw RuntimeError("ipu-emu: bad sync kind in program");
  s.sync = static_cast<models::ipu::SyncKind>(sync);
  s.exchange = r.pods<models::ipu::ExchangeGroup>();
  s.links = r.pods<models::ipu::LinkTransfer>();
  s.host_to_device_bytes = r.u64();
  s.device_to_host_bytes = r.u64();
  uint64_t n = r.u64();
  if (n > r.remaining()) throw RuntimeError("ipu-emu: bad compute group count in program");
  s.compute.resize(n);
  for (auto& g : s.compute) {
    g.first_tile = r.u32();
    g.tile_count = r.u32();
    g.vertices = r.pods<models::ipu::VertexBatch>();
    for (const auto& v : g.vertices)
      if (static_cast<uint8_t>(v.work.cls) > 3 || static_cast<uint8_t>(v.work.format) > 1 ||
          static_cast<uint8_t>(v.work.partials) > 1)
        throw RuntimeError("ipu-emu: bad vertex in program");
  }
  return s;
}

void write_op(wire::Writer& w, const sim::OpDesc& o) {
  w.str(o.node);
  w.str(o.op_type);
  w.str(o.shapes);
  w.str(o.dtype);
  w.i64(o.flops);
  w.i64(o.bytes_in);
  w.i64(o.bytes_out);
}

sim::OpDesc read_op(wire::Reader& r) {
  sim::OpDesc o;
  o.node = r.str();
  o.op_type = r.str();
  o.shapes = r.str();
  o.dtype = r.str();
  o.flops = r.i64();
  o.bytes_in = r.i64();
  o.bytes_out = r.i64();
  o.backend = "ipu-emu";
  return o;
}

}  // namespace

std::vector<uint8_t> device_config(const models::ipu::IpuSpec& specs, uint32_t num_ipus) {
  wire::Writer w;
  w.str(models::ipu::to_json(specs));
  w.u32(num_ipus);
  return std::move(w.data());
}

void write_program(wire::Writer& w, const DeviceProgram& p) {
  w.u64(p.bsp.labels.size());
  for (const auto& l : p.bsp.labels) w.str(l);
  w.u32(p.bsp.replicas);
  w.u64(p.bsp.ipus.size());
  for (const auto& steps : p.bsp.ipus) {
    w.u64(steps.size());
    for (const auto& s : steps) write_step(w, s);
  }
  write_graph(w, p.graph, !p.timing_only);
  w.u64(p.recipes.size());
  for (const auto& rec : p.recipes) {
    w.u8(static_cast<uint8_t>(rec.kind));
    w.pods(rec.k_bounds);
    w.boolean(rec.half_partials);
  }
  w.u64(p.ops.size());
  for (const auto& o : p.ops) write_op(w, o);
  w.pods(p.op_nodes);
  w.pods(p.op_ipus);
  w.boolean(p.half_storage);
  w.boolean(p.fp32_master);
  w.boolean(p.stochastic_rounding);
  w.boolean(p.timing_only);
  w.u32(p.replicas);
  w.u32(p.stages);
  w.u32(p.micro_batches);
  w.str(p.precision);
  w.str(p.preset);
  w.u64(p.macs_per_cycle);
  w.u64(p.notes.size());
  for (const auto& n : p.notes) w.str(n);
}

DeviceProgram read_program(wire::Reader& r) {
  DeviceProgram p;
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) p.bsp.labels.push_back(r.str());
  p.bsp.replicas = r.u32();
  uint64_t ipus = r.u64();
  if (ipus > 4096 || p.bsp.replicas == 0 || p.bsp.replicas > 4096)
    throw RuntimeError("ipu-emu: bad IPU count in program");
  p.bsp.ipus.resize(ipus);
  for (auto& steps : p.bsp.ipus) {
    uint64_t n = r.u64();
    if (n > r.remaining()) throw RuntimeError("ipu-emu: bad superstep count in program");
    steps.reserve(n);
    for (uint64_t i = 0; i < n; ++i) steps.push_back(read_step(r));
  }
  p.graph = read_graph(r);
  uint64_t nr = r.u64();
  if (nr != static_cast<uint64_t>(p.graph.num_nodes()))
    throw RuntimeError("ipu-emu: recipes do not match the graph");
  p.recipes.resize(nr);
  for (auto& rec : p.recipes) {
    uint8_t kind = r.u8();
    if (kind > 3) throw RuntimeError("ipu-emu: bad recipe kind");
    rec.kind = static_cast<RecipeKind>(kind);
    rec.k_bounds = r.pods<int64_t>();
    rec.half_partials = r.boolean();
  }
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) p.ops.push_back(read_op(r));
  p.op_nodes = r.pods<int32_t>();
  p.op_ipus = r.pods<int32_t>();
  p.half_storage = r.boolean();
  p.fp32_master = r.boolean();
  p.stochastic_rounding = r.boolean();
  p.timing_only = r.boolean();
  p.replicas = r.u32();
  p.stages = r.u32();
  p.micro_batches = r.u32();
  p.precision = r.str();
  p.preset = r.str();
  p.macs_per_cycle = r.u64();
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) p.notes.push_back(r.str());
  return p;
}

}  // namespace mimic::backends::ipu_emu
