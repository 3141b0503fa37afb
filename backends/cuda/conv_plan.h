// Convolutions as GEMMs (im2col + cuBLAS), planned on the host.
//
// Channels first (NCHW...): per image and group, Y[Mg, P] = W[Mg, K] x col[K, P] with K = Cg * kvol
// and P the output pixels; col is [images][C * kvol][P] so that group g is the row block
// [g * K, (g + 1) * K), and one strided-batched call per group covers a chunk of images.
// Channels last (NHWC...): Y[images * P, M] holds group g in columns [g * Mg, (g + 1) * Mg):
// Y_g = col_g x Wt_g^T with col [images * P][C * kvol] ordered (group, kernel position, channel)
// and the weights reordered to Wt[M, kvol, Cg] once at compile time.
// Pointwise convolutions (1x1, stride 1, no padding) read the input directly. 2-D depthwise
// convolutions (one channel per group) use a direct kernel. col buffers are bounded by the
// workspace limit by processing the batch in chunks of images.
// Transposed convolutions (channels first): col[M * kvol, P_in] = W_g^T x X_g per group, then a
// gather (col2im) sums the windows into each output pixel.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cuda/gemm_plan.h"
#include "frontend/ir/host_tensor.h"
#include "frontend/ir/nn_geometry.h"

namespace mimic::backends::cuda {

enum class ConvAlgo { depthwise, pointwise, im2col };

struct ConvPlan {
  ConvAlgo algo = ConvAlgo::im2col;
  ir::WindowGeometry g;
  int64_t cg = 0, mg = 0, kvol = 0, k = 0, out_spatial = 0, in_spatial = 0;
  int64_t chunk_images = 0;      // images per im2col chunk
  int64_t col_elements = 0;      // elements of one chunk's col buffer (0 without im2col)
  bool reorder_weights = false;  // channels last with im2col: weights as [M, kvol, Cg]
};

ConvPlan plan_conv(const ir::WindowGeometry& g, int64_t element_bytes, int64_t workspace_bytes);

// The GEMMs of images [first, first + count): A = weights (or reordered weights), B = col (or the
// input for pointwise), C = output. Offsets are in elements of those buffers; for im2col the col
// buffer holds exactly this chunk.
std::vector<GemmCall> conv_gemm_calls(const ConvPlan& plan, int64_t first, int64_t count);

// [M, Cg, k...] -> [M, k..., Cg] (any element size).
ir::HostTensor reorder_weights_channels_last(const ir::HostTensor& w);

struct ConvTransposePlan {
  ir::WindowGeometry g;
  int64_t cg = 0, mg = 0, kvol = 0, in_spatial = 0, out_spatial = 0;
  int64_t chunk_images = 0, col_elements = 0;  // col is f32 [chunk][M * kvol][P_in]
};

ConvTransposePlan plan_conv_transpose(const ir::WindowGeometry& g, int64_t workspace_bytes);
// col_g = W_g^T x X_g for images [first, first + count); C offsets are within the chunk's col.
std::vector<GemmCall> conv_transpose_gemm_calls(const ConvTransposePlan& plan, int64_t first,
                                                int64_t count);

}  // namespace mimic::backends::cuda
