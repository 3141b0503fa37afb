// On-chip layout costs. TPU memories store the two minor-most dimensions of a tensor in
// (sublanes x lanes) tiles of 32-bit words (v2+: 8 x 128; S3, "Padding: ... padded to 128"), so a
// tensor whose minor dimension is 7 (NCHW at 7x7) occupies and moves as if it were 128 wide.
// These helpers give the padded sizes that DMA bytes, VMEM footprints and vector-unit work use;
// NHWC keeps channels minor (lane-dense for C >= 128), NCHW keeps W minor.
#pragma once

#include <cstdint>
#include <vector>

#include "models/tpu/program.h"
#include "models/tpu/tpu_spec.h"

namespace mimic::backends::tpu_emu {

inline int64_t round_up(int64_t x, int64_t m) {
  return m <= 1 ? x : (x + m - 1) / m * m;
}

// Elements of a [rows, cols] block once tiled.
inline int64_t tiled_elements(int64_t rows, int64_t cols, const models::tpu::VpuSpec& v) {
  return round_up(rows, v.sublanes) * round_up(cols, v.lanes);
}

// Tiled elements of a whole tensor of `dims` (leading dimensions multiply the last two).
int64_t tiled_elements(const std::vector<int64_t>& dims, const models::tpu::VpuSpec& v);
// Elements of a rank-4 channels-last activation [N, H, W, C] laid out batch-minor: N padded to the
// lanes, C to the sublanes, H and W untiled.
int64_t batch_minor_elements(const std::vector<int64_t>& dims, const models::tpu::VpuSpec& v);

// Bytes of `channels` input channels of the input tile of conv output rows [r0, r1) as stored
// (NHWC: image rows of W x channels; NCHW: per channel plane, rows x W), tiled; `runs` gets the
// contiguous pieces.
int64_t conv_input_tile_bytes(const models::tpu::Window& w, int64_t r0, int64_t r1,
                              int64_t channels, int64_t element_bytes,
                              const models::tpu::VpuSpec& v, int64_t* runs);
// Bytes of output rows [r0, r1) x `channels` channels as stored, tiled; `runs` as above.
int64_t conv_output_tile_bytes(const models::tpu::Window& w, int64_t r0, int64_t r1,
                               int64_t channels, int64_t element_bytes,
                               const models::tpu::VpuSpec& v, int64_t* runs);

}  // namespace mimic::backends::tpu_emu
