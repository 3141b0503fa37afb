// Parameters of the CUDA backend's kernels: plain structs shared by the host-side lowering (g++),
// the kernels (nvcc) and the host emulator of the tests. No pointers here: buffers are passed to
// the launch functions separately. Every index is int64; shapes are merged (tensor_layout.h) so
// that at most kMaxDims dimensions remain.
#pragma once

#include <cstdint>

#include "frontend/ir/op_type.h"
#include "frontend/ir/unary_math.h"

namespace mimic::backends::cuda {

inline constexpr int kMaxDims = 8;
inline constexpr int kMaxSpatial = 3;
inline constexpr int kMaxVariadic = 8;

// Element types, numbered as ir::DType (checked in lower.cpp).
enum class DT : int32_t { f32 = 0, f16, bf16, i8, i32, i64, b8 };

// Elementwise map over n elements, float math for floating types (16-bit types are widened to
// f32 and rounded back to nearest even, as the cpu backend does), int64 math for integer types.
struct UnaryParams {
  ir::OpType op;
  DT in_dt, out_dt;
  int64_t n;
  ir::UnaryAttrs attrs;
  double lo, hi;  // Clip bounds
};

// out[i] = op(a[offset_a(i)], b[offset_b(i)]) with numpy broadcasting through strides (0 on
// broadcast dims). `same` marks contiguous operands of the output's shape (no index math).
struct BinaryParams {
  ir::OpType op;
  DT a_dt, b_dt, out_dt;
  int32_t fmod_mode, same;
  int64_t n;
  int32_t rank;
  int64_t size[kMaxDims], stride_a[kMaxDims], stride_b[kMaxDims];
};

// Max/Min/Sum/Mean of up to kMaxVariadic broadcast inputs, folded left to right in f32 (floats)
// or int64 (integers), one rounding at the end.
struct VariadicParams {
  ir::OpType op;
  DT dt;
  int32_t count;
  int64_t n;
  int32_t rank;
  int64_t size[kMaxDims];
  int64_t stride[kMaxVariadic][kMaxDims];
};

// out[i] = cond ? x : y, bytes of `esize`, three broadcast operands.
struct WhereParams {
  int32_t esize;
  int64_t n;
  int32_t rank;
  int64_t size[kMaxDims], stride_c[kMaxDims], stride_x[kMaxDims], stride_y[kMaxDims];
};

struct CastParams {
  DT from, to;
  int64_t n;
};

// out[i] (contiguous) = in[offset + sum_d idx_d(i) * stride[d]]: transposes, slices, expands,
// tiles, space/depth moves, layout changes.
struct CopyParams {
  int32_t esize;
  int64_t n, offset;
  int32_t rank;
  int64_t size[kMaxDims], stride[kMaxDims];
};

// A 2-D block copy (rows of `width` bytes with pitches), for Concat and Split.
struct Copy2dParams {
  int64_t rows, width, src_pitch, dst_pitch;
};

// Gather along one axis: out[o, c, i] = data[o, idx[c], i]; out-of-range indices are reported.
struct GatherParams {
  int32_t esize;
  DT index_dt;
  int64_t outer, dim, count, inner;
  int32_t node;  // reported with a bad index
};

// ScatterND of whole f32 rows: row j of the updates written (add = 0) or added at row idx[j] of
// the output [rows, inner], which already holds the data; updates apply in order.
struct ScatterRowsParams {
  DT index_dt;
  int32_t add;
  int64_t rows, count, inner;
  int32_t node;  // reported with a bad index
};

struct GatherElementsParams {
  int32_t esize;
  DT index_dt;
  int32_t rank, axis;
  int64_t n, dim;
  int64_t size[kMaxDims];         // index (= output) shape
  int64_t data_stride[kMaxDims];  // data strides
  int32_t node;
};

enum class PadMode : int32_t { constant = 0, edge, wrap, reflect };

struct PadParams {
  int32_t esize;
  PadMode mode;
  int64_t n;
  int32_t rank;
  int64_t out_size[kMaxDims], in_size[kMaxDims], in_stride[kMaxDims], before[kMaxDims];
  uint8_t fill[8];
};

struct TriluParams {
  int32_t esize, upper;
  int64_t n, rows, cols, k;
};

// Convolution window geometry (spatial dims padded to kMaxSpatial with size 1).
struct Window {
  int32_t rank;
  int64_t in[kMaxSpatial], out[kMaxSpatial], kernel[kMaxSpatial], stride[kMaxSpatial],
      dilation[kMaxSpatial], pad_begin[kMaxSpatial], pad_end[kMaxSpatial];
};

// im2col of `images` images, all groups at once.
//  channels first: col[n][ci * kvol + kk][p]                   (ci = input channel 0..C)
//  channels last:  col[n * P + p][(g * kvol + kk) * Cg + c]    (group-major so a group is a block)
struct Im2colParams {
  DT dt;
  int32_t channels_last;
  int64_t images, channels, groups, kvol, out_spatial, in_spatial, n;
  Window w;
};

// Transposed convolution, gather form: y[n][m][o] = sum of col[n][m * kvol + kk][i] over the
// (kk, i) pairs that land on o. Channels first.
struct Col2imParams {
  DT dt;
  int64_t images, channels, kvol, in_spatial, out_spatial, n;
  Window w;
};

// Depthwise 2-D convolution (one input and one output channel per group), direct, with bias.
struct DepthwiseParams {
  DT dt, bias_dt;
  int32_t channels_last, has_bias;
  int64_t batch, channels, n;
  Window w;
};

// y[n, c, s] = x[n, c, s] + bias[c] in either layout (no bias: a plain conversion); x may be the
// f32 result of a GEMM and y a 16-bit output, so that the result is rounded once as on the cpu.
struct BiasParams {
  DT in_dt, dt, bias_dt;
  int32_t channels_last;
  int64_t n, channels, spatial;
};

struct PoolParams {
  DT dt;
  int32_t is_max, include_pad, channels_last;
  int64_t batch, channels, n;
  Window w;
};

// Inference batch norm folded to y = x * mul[c] + add[c] (mul/add f32, from BnPrepParams).
struct BatchNormParams {
  DT dt;
  int32_t channels_last;
  int64_t n, channels, spatial;
};

struct BnPrepParams {
  DT scale_dt, bias_dt, mean_dt, var_dt;
  int64_t channels;
  double epsilon;
};

// out[o, i] = reduce over r of x[(o * extent + r) * inner + i]. ReduceSum..ReduceLogSumExp.
struct ReduceParams {
  ir::OpType op;
  DT in_dt, out_dt;
  int64_t outer, extent, inner;
};

struct ArgReduceParams {
  DT dt;
  int32_t is_max, select_last;
  int64_t outer, extent, inner;
};

// Softmax, LogSoftmax, Hardmax over the middle dim of [outer, dim, inner].
struct SoftmaxParams {
  ir::OpType op;
  DT dt;
  int64_t outer, dim, inner;
};

// LayerNormalization (params per element of a row) or InstanceNormalization (params per channel,
// channel = row % channels) over rows of `length` elements.
struct RowNormParams {
  DT dt, scale_dt, bias_dt;
  int32_t per_channel, has_scale, has_bias, write_mean, write_inv_std;
  int64_t rows, length, channels;
  double epsilon;
};

struct LrnParams {
  DT dt;
  int64_t n, channels, spatial, size;
  double alpha, beta, bias;
};

struct CumSumParams {
  DT dt;
  int32_t exclusive, reverse;
  int64_t outer, dim, inner;
};

// Where a kernel reports a bad gather index: node + 1 (0 = no error) and the index.
struct ErrorSlot {
  int64_t node_plus_one;
  int64_t index;
};

}  // namespace mimic::backends::cuda
