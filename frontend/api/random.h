// Deterministic, fast pseudo-random numbers for weights and example inputs (xoshiro256**,
// polar-method normals): the same seed gives the same model on every machine.
#pragma once

#include <cstdint>

#include "frontend/ir/host_tensor.h"

namespace mimic {

class Random {
 public:
  explicit Random(uint64_t seed);
  uint64_t next_u64();
  double uniform();  // [0, 1)
  float normal();    // N(0, 1)
  // A tensor of `dtype`: normals scaled by `stddev` for floats, integers in [0, int_high).
  ir::HostTensor tensor(ir::DType dtype, const ir::Shape& shape, int64_t int_high = 100,
                        float stddev = 1.0f);
  // An f32 tensor uniform in [-bound, bound).
  ir::HostTensor uniform_tensor(const ir::Shape& shape, float bound);

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  float spare_ = 0;
};

}  // namespace mimic
