// Strided N-d iteration for the cpu kernels. One strided copy serves Transpose, Slice, Expand,
// Tile, DepthToSpace and friends: each is a read of the input through per-dimension strides
// (zero for broadcast dims, permuted for transposes). Dimensions that are contiguous in both
// source and destination are merged first so the inner loop is long.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/ir/host_tensor.h"

namespace mimic::backends::cpu {

// Advances an N-d counter over `dims` (last dimension fastest); returns false after the last index.
inline bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// Copies out[i...] = in[offset + sum(i_d * src_strides[d])] for every index of `out_dims`.
// Strides and offset are in elements; `elem_size` is 1, 2, 4 or 8.
void strided_copy(void* out, const void* in, const std::vector<int64_t>& out_dims,
                  const std::vector<int64_t>& src_strides, int64_t src_offset, size_t elem_size);

// Strides (in elements) that read `in_shape` broadcast to `out_shape` (numpy rules).
std::vector<int64_t> broadcast_strides(const ir::Shape& in_shape, const ir::Shape& out_shape);

// Visits an N-d broadcast of up to three operands: calls fn(out_offset, a_offset, b_offset,
// c_offset, count, a_step, b_step, c_step) for runs of `count` elements along the innermost merged
// dim.
struct BroadcastPlan {
  std::vector<int64_t> dims;                  // merged output dims
  std::vector<std::vector<int64_t>> strides;  // per operand, per merged dim
  int64_t inner() const { return dims.empty() ? 1 : dims.back(); }
  int64_t outer() const;
  // Operand offsets for the outer index `o` (all dims but the last).
  void offsets(int64_t o, std::vector<int64_t>& out) const;
};
BroadcastPlan plan_broadcast(const ir::Shape& out, const std::vector<ir::Shape>& operands);

// Canonical f32 view helpers.
inline float* f32(ir::HostTensor& t) {
  return t.data<float>();
}
inline const float* f32(const ir::HostTensor& t) {
  return t.data<float>();
}

}  // namespace mimic::backends::cpu
