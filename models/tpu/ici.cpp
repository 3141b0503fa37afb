#include "models/tpu/ici.h"

#include <algorithm>

namespace mimic::models::tpu {

uint64_t ring_allreduce_cycles(const TpuSpec& spec, int64_t replicas, uint64_t bytes) {
  if (replicas <= 1 || bytes == 0 || spec.ici.bytes_per_s == 0) return 0;
  const double n = static_cast<double>(replicas);
  const double moved = 2.0 * (n - 1.0) / n * static_cast<double>(bytes);
  const double bandwidth = 2.0 * static_cast<double>(spec.ici.bytes_per_s);  // both directions
  const double transfer = moved / bandwidth * static_cast<double>(spec.clock_hz);
  const uint64_t hops = 2 * static_cast<uint64_t>(replicas - 1);
  return static_cast<uint64_t>(transfer + 0.5) + hops * spec.ici.latency_cycles;
}

AllReduceSchedule schedule_allreduce(const TpuSpec& spec, int64_t replicas,
                                     const std::vector<GradientReady>& ready,
                                     uint64_t bucket_bytes) {
  AllReduceSchedule s;
  if (replicas <= 1) return s;
  uint64_t pending = 0, pending_ready = 0, link_free = 0;
  auto flush = [&] {
    if (pending == 0) return;
    AllReduceBucket b;
    b.bytes = pending;
    b.start = std::max(pending_ready, link_free);
    b.end = b.start + ring_allreduce_cycles(spec, replicas, pending);
    link_free = b.end;
    s.busy_cycles += b.end - b.start;
    s.bytes += pending;
    s.end = b.end;
    s.buckets.push_back(b);
    pending = 0;
    pending_ready = 0;
  };
  for (const GradientReady& g : ready) {
    if (g.bytes == 0) continue;
    pending += g.bytes;
    pending_ready = std::max(pending_ready, g.cycle);
    if (pending >= bucket_bytes) flush();
  }
  flush();
  return s;
}

}  // namespace mimic::models::tpu
