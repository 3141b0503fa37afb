// Data-parallel gradient all-reduce over the inter-chip interconnect (ICI) of a TPU slice.
//
// Modeled: a ring all-reduce (reduce-scatter then all-gather) of B bytes over N replicas moves
// 2 (N - 1) / N x B bytes through each replica's links in 2 (N - 1) steps, each paying one hop's
// latency. XLA runs the ring in both directions of the torus axis, each direction carrying half
// of the data, so the bandwidth is twice one link's one-way figure (spec.ici.bytes_per_s).
// Gradients are combined into buckets (XLA's all-reduce combiner) and each bucket starts once its
// last gradient is computed and the previous bucket is done, so all-reduce overlaps the rest of
// the backward pass as XLA schedules it (async all-reduce start/done).
// Approximated: the all-reduce's own HBM traffic does not slow the compute; replicas run in
// lockstep (every replica's backward pass takes the emulated one's time); the combine threshold is
// [assumed] 32 MiB (XLA's GPU default is 30 MiB; the TPU value is not published).
#pragma once

#include <cstdint>
#include <vector>

#include "models/tpu/tpu_spec.h"

namespace mimic::models::tpu {

constexpr uint64_t kAllReduceBucketBytes = uint64_t{32} << 20;

// Cycles (core clock) of one ring all-reduce of `bytes` over `replicas`; 0 for one replica.
uint64_t ring_allreduce_cycles(const TpuSpec& spec, int64_t replicas, uint64_t bytes);

struct GradientReady {
  uint64_t cycle = 0;  // when the op computing it ended
  uint64_t bytes = 0;
};

struct AllReduceBucket {
  uint64_t start = 0, end = 0, bytes = 0;
};

struct AllReduceSchedule {
  std::vector<AllReduceBucket> buckets;
  uint64_t busy_cycles = 0;  // sum of the buckets' durations
  uint64_t end = 0;          // when the last bucket is done (0: nothing to reduce)
  uint64_t bytes = 0;
};

// Buckets in the order the gradients become ready (`ready` in program order).
AllReduceSchedule schedule_allreduce(const TpuSpec& spec, int64_t replicas,
                                     const std::vector<GradientReady>& ready,
                                     uint64_t bucket_bytes = kAllReduceBucketBytes);

}  // namespace mimic::models::tpu
