// Host-side shape arithmetic for the CUDA kernels' parameters: merging dimensions that are
// contiguous for every operand (so a transpose of [N,C,H,W] to [N,H,W,C] becomes a 3-D copy, an
// elementwise op on equal shapes a 1-D loop) and filling the fixed-size arrays of params.h.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cuda/kernels/params.h"
#include "frontend/ir/dtype.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/shape.h"

namespace mimic::backends::cuda {

// Output dims with one stride vector per operand (elements; 0 on broadcast dims).
struct StridedLayout {
  std::vector<int64_t> size;
  std::vector<std::vector<int64_t>> strides;
  int rank() const { return static_cast<int>(size.size()); }
};

// Drops size-1 dims and merges neighbours that are contiguous for every operand. A scalar (or
// all-ones) layout becomes one dim of size 1.
StridedLayout merge_dims(std::vector<int64_t> size, std::vector<std::vector<int64_t>> strides);

// Row-major strides of `shape` (elements).
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims);
// Strides that read `in` broadcast to `out` (numpy rules, 0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const ir::Shape& in, const ir::Shape& out);

// The layout of reading each operand broadcast to `out`, merged; operand 0 is the output itself.
StridedLayout broadcast_layout(const ir::Shape& out, const std::vector<ir::Shape>& operands);

// A contiguous output read through `src_strides` from a source (transpose, slice, expand, ...).
CopyParams copy_params(const std::vector<int64_t>& out_dims,
                       const std::vector<int64_t>& src_strides, int64_t src_offset, int esize);
// True when the merged copy fits kMaxDims.
bool copy_fits(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& src_strides);
// Permutation copy: out = transpose(in, perm).
CopyParams permute_params(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& perm,
                          int esize);
// Moves channels between position 1 and last: [N, C, S...] <-> [N, S..., C].
CopyParams channels_move_params(const std::vector<int64_t>& in_dims, bool to_last, int esize);

DT to_dt(ir::DType t);
int esize_of(ir::DType t);

// The window of a convolution or pool in the kernels' fixed-size form.
Window make_window(const ir::WindowGeometry& g);

}  // namespace mimic::backends::cuda
