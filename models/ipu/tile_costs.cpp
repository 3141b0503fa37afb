#include "models/ipu/tile_costs.h"

#include <algorithm>

namespace mimic::models::ipu {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return b == 0 ? 0 : (a + b - 1) / b;
}

}  // namespace

uint64_t amp_macs_per_cycle(const IpuSpec& s, NumberFormat in, NumberFormat partials) {
  if (in == NumberFormat::f32) return s.amp_fp32_macs_per_cycle;
  return partials == NumberFormat::f16 ? s.amp_fp16_fp16_macs_per_cycle
                                       : s.amp_fp16_fp32_macs_per_cycle;
}

uint64_t vertex_cycles(const IpuSpec& s, const VertexWork& v) {
  switch (v.cls) {
    case VertexClass::amp:
      return s.amp_vertex_overhead_cycles +
             ceil_div(v.amount, amp_macs_per_cycle(s, v.format, v.partials));
    case VertexClass::vector: {
      uint64_t width = s.vector_bytes_per_cycle / format_bytes(v.format);
      return s.vector_vertex_overhead_cycles +
             ceil_div(v.amount, width) * std::max<uint32_t>(v.cycles_per_vector, 1);
    }
    case VertexClass::transcendental:
      return s.vector_vertex_overhead_cycles + v.amount * s.transcendental_cycles_per_element;
    case VertexClass::copy:
      return s.vector_vertex_overhead_cycles + ceil_div(v.amount, s.vector_bytes_per_cycle);
  }
  return 0;
}

uint64_t tile_compute_cycles(const IpuSpec& s, const std::vector<VertexBatch>& vertices) {
  uint64_t workers = std::max<uint64_t>(s.worker_contexts, 1);
  // Small fixed-size array: worker contexts are at most 32 (validated).
  uint64_t load[32] = {0};
  uint64_t next = 0;
  for (const auto& batch : vertices) {
    uint64_t c = vertex_cycles(s, batch.work);
    uint64_t count = batch.count;
    // Whole rounds add to every worker; the remainder continues round-robin.
    uint64_t rounds = count / workers;
    if (rounds)
      for (uint64_t w = 0; w < workers; ++w) load[w] += rounds * c;
    for (uint64_t i = 0; i < count % workers; ++i) {
      load[next] += c;
      next = (next + 1) % workers;
    }
  }
  uint64_t busiest = *std::max_element(load, load + workers);
  return busiest * workers;
}

uint64_t exchange_cycles(const IpuSpec& s, uint64_t send_bytes, uint64_t recv_bytes) {
  uint64_t bytes = std::max(send_bytes, recv_bytes);
  if (bytes == 0) return 0;
  return s.exchange_latency_cycles + ceil_div(bytes, s.exchange_bytes_per_cycle);
}

std::vector<VertexBatch> split_over_workers(const VertexWork& work, uint64_t units,
                                            uint64_t amount_per_unit, uint64_t parts) {
  std::vector<VertexBatch> out;
  if (units == 0 || amount_per_unit == 0) return out;
  parts = std::max<uint64_t>(1, std::min(parts, units));
  uint64_t small = units / parts, big_count = units % parts;
  VertexWork w = work;
  if (big_count) {
    w.amount = (small + 1) * amount_per_unit;
    out.push_back({w, static_cast<uint32_t>(big_count)});
  }
  if (parts - big_count) {
    w.amount = small * amount_per_unit;
    out.push_back({w, static_cast<uint32_t>(parts - big_count)});
  }
  return out;
}

}  // namespace mimic::models::ipu
