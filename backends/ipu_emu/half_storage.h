// How the emulated IPU stores f32 values at precision float16 (PopTorch's model.half()): every
// tensor in fp16, rounded to nearest even, or, as Graphcore's mixed-precision training guidance
// recommends, with
//  - fp32 master weights (option master_weights=float32): parameters, optimizer state, BatchNorm
//    statistics and every value the optimizer update computes stay f32; the forward and backward
//    passes read them through an fp16 copy, as a half model reads its cast weights;
//  - stochastic rounding (option stochastic_rounding=true, PopTorch's
//    Precision.enableStochasticRounding): a stored value rounds up with probability equal to its
//    distance from the fp16 neighbour below over the gap between the two, so updates smaller
//    than half an ulp survive on average. The random bits are a counter-based hash of (run,
//    value, element), so a sequence of runs repeats exactly. The AMP's fp16 partials (option
//    enable_half_partials) keep rounding to nearest even.
// A square x * x read only by sums (ReduceSum, ReduceMean: a BatchNorm's one-pass statistics) is
// never stored: poplibs reduces the input with popops::Operation::SQUARE_ADD (poplin/Norms.cpp,
// normReduce), squaring each element inside the reduction, so it stays f32 and an input of
// magnitude 256 does not overflow; the reduction's result is stored as any value is.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/ir/graph.h"
#include "frontend/ir/host_tensor.h"

namespace mimic::backends::ipu_emu {

class HalfStorage {
 public:
  HalfStorage(const ir::Graph& g, bool half, bool fp32_master, bool stochastic);

  // Value v is held in fp16 (its producer's result is rounded when stored).
  bool stored_half(ir::ValueId v) const;
  // `reader` reads f32 master value v through an fp16 copy (forward and backward passes).
  bool read_as_half(ir::ValueId v, const ir::Node& reader) const;
  // Rounds v's elements to fp16 values (nearest even, or stochastically in run `run`).
  void round(float* data, int64_t n, ir::ValueId v, uint64_t run) const;
  ir::HostTensor rounded_copy(const ir::HostTensor& t, ir::ValueId v, uint64_t run) const;

 private:
  bool is_master(ir::ValueId v) const;

  const ir::Graph& g_;
  bool half_, fp32_master_, stochastic_;
  std::vector<bool> summed_square_;  // per value: a square only sums read
};

// x rounded to one of its two fp16 neighbours, up with probability (x - below) / (above - below);
// `random` is 64 uniformly random bits. Exact fp16 values, infinities and NaN are unchanged.
float stochastic_round_f16(float x, uint64_t random);

}  // namespace mimic::backends::ipu_emu
