// Numerics of the emulated IPU (runs in the device worker): executes the program's graph with the
// chip's precision rules, one large f32 GEMM (base/gemm.h) per planned K chunk (never per-tile
// loops):
//   - fp16 storage when precision is float16: inputs, constants and every f32 result are rounded
//     to fp16 (round to nearest even, or stochastically), as tensors held in tile memory would be,
//     except fp32 master weights and what the update computes (half_storage.h);
//   - matrix products (MatMul, Gemm, 2-D Conv) accumulate over K in the order of the plan's K
//   split:
//     each chunk is an fp32 product of the (exactly representable) operands; chunks are summed in
//     fp32 partials, or with enable_half_partials in fp16 (each chunk rounded, the running sum
//     rounded after every add), so half partials change the results the way the AMP's fp16
//     accumulators would;
//   - depthwise convolutions accumulate tap by tap in the partials format (vector unit);
//   - every other op runs the cpu backend's reference kernel, rounded to the storage format.
// Approximated: within a chunk the accumulation is fp32 in oneDNN sgemm's order (the AMP's internal
// order and its fp16 accumulator width inside a pass are not modeled); transcendental functions are
// the host's. A training BatchNorm's statistics are primitive ops here, as poplibs computes them
// (poplin/Norms.cpp, normStatistics): the squares its one-pass variance sums stay f32 inside the
// SQUARE_ADD reduction (half_storage.h), and the mean and the mean of squares are stored in the
// activations' type ("keep it at reduced precision to save memory"), so at float16 an input whose
// root mean square reaches 256 overflows on the chip too.
#pragma once

#include <vector>

#include "backends/ipu_emu/half_storage.h"
#include "backends/ipu_emu/ipu_program.h"

namespace mimic::backends::ipu_emu {

class IpuNumerics {
 public:
  explicit IpuNumerics(const DeviceProgram& program);
  // Inputs in graph-input order; returns the graph's outputs.
  std::vector<ir::HostTensor> run(const std::vector<ir::HostTensor>& inputs) const;

 private:
  // A value as node `reader` reads it (an fp16 copy of an f32 master weight, see half_storage.h).
  ir::HostTensor read(const std::vector<ir::HostTensor>& values, ir::ValueId v,
                      const ir::Node& reader, uint64_t run) const;

  const DeviceProgram& p_;
  HalfStorage storage_;
  mutable uint64_t runs_ = 0;              // stochastic rounding draws new bits every run
  std::vector<ir::HostTensor> constants_;  // per value, rounded to the storage format
  std::vector<int> last_use_;
};

}  // namespace mimic::backends::ipu_emu
