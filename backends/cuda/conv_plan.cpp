#include "backends/cuda/conv_plan.h"

#include <algorithm>
#include <cstring>

#include "backends/cuda/tensor_layout.h"

namespace mimic::backends::cuda {

ConvPlan plan_conv(const ir::WindowGeometry& g, int64_t element_bytes, int64_t workspace_bytes) {
  ConvPlan p;
  p.g = g;
  p.cg = g.in_channels / g.group;
  p.mg = g.out_channels / g.group;
  p.kvol = g.kernel_volume();
  p.k = p.cg * p.kvol;
  p.out_spatial = g.out_spatial();
  p.in_spatial = g.in_spatial();
  bool depthwise = g.group > 1 && g.group == g.in_channels && g.group == g.out_channels;
  if (depthwise && g.spatial_rank == 2) {
    p.algo = ConvAlgo::depthwise;
    return p;
  }
  if (g.is_pointwise()) {
    p.algo = ConvAlgo::pointwise;
    p.chunk_images = g.batch;
    return p;
  }
  p.algo = ConvAlgo::im2col;
  int64_t per_image = g.in_channels * p.kvol * p.out_spatial;
  int64_t fit = per_image > 0 ? workspace_bytes / (per_image * element_bytes) : g.batch;
  p.chunk_images = std::clamp<int64_t>(fit, 1, std::max<int64_t>(g.batch, 1));
  p.col_elements = p.chunk_images * per_image;
  p.reorder_weights = g.channels_last;
  return p;
}

std::vector<GemmCall> conv_gemm_calls(const ConvPlan& p, int64_t first, int64_t count) {
  const ir::WindowGeometry& g = p.g;
  int64_t c = g.in_channels, m = g.out_channels, sp = p.out_spatial;
  std::vector<GemmCall> calls;
  for (int64_t grp = 0; grp < g.group; ++grp) {
    if (!g.channels_last) {
      RowOperand w{grp * p.mg * p.k, p.k, 0, false};
      RowOperand y{(first * m + grp * p.mg) * sp, sp, m * sp, false};
      RowOperand x = p.algo == ConvAlgo::pointwise
                         ? RowOperand{(first * c + grp * p.cg) * sp, sp, c * sp, false}
                         : RowOperand{grp * p.k * sp, sp, c * p.kvol * sp, false};
      calls.push_back(row_major_gemm(p.mg, sp, p.k, w, x, y, count));
    } else {
      RowOperand y{first * sp * m + grp * p.mg, m, 0, false};
      RowOperand x = p.algo == ConvAlgo::pointwise
                         ? RowOperand{first * sp * c + grp * p.cg, c, 0, false}
                         : RowOperand{grp * p.k, c * p.kvol, 0, false};
      RowOperand w{grp * p.mg * p.k, p.k, 0, true};
      calls.push_back(row_major_gemm(count * sp, p.mg, p.k, x, w, y, 1));
    }
  }
  return calls;
}

ir::HostTensor reorder_weights_channels_last(const ir::HostTensor& w) {
  const ir::Shape& s = w.shape();
  int64_t m = s[0], cg = s[1], kvol = s.product(2, s.rank());
  size_t es = ir::dtype_size(w.dtype());
  ir::HostTensor out(w.dtype(), ir::Shape({m, kvol, cg}));
  const char* src = static_cast<const char*>(w.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < m; ++o)
    for (int64_t ch = 0; ch < cg; ++ch)
      for (int64_t kk = 0; kk < kvol; ++kk)
        std::memcpy(dst + ((o * kvol + kk) * cg + ch) * es, src + ((o * cg + ch) * kvol + kk) * es,
                    es);
  return out;
}

ConvTransposePlan plan_conv_transpose(const ir::WindowGeometry& g, int64_t workspace_bytes) {
  ConvTransposePlan p;
  p.g = g;
  p.cg = g.in_channels / g.group;
  p.mg = g.out_channels / g.group;
  p.kvol = g.kernel_volume();
  p.in_spatial = g.in_spatial();
  p.out_spatial = g.out_spatial();
  int64_t per_image = g.out_channels * p.kvol * p.in_spatial;
  int64_t fit = per_image > 0 ? workspace_bytes / (per_image * 4) : g.batch;
  p.chunk_images = std::clamp<int64_t>(fit, 1, std::max<int64_t>(g.batch, 1));
  p.col_elements = p.chunk_images * per_image;
  return p;
}

std::vector<GemmCall> conv_transpose_gemm_calls(const ConvTransposePlan& p, int64_t first,
                                                int64_t count) {
  const ir::WindowGeometry& g = p.g;
  int64_t rows = p.mg * p.kvol, pin = p.in_spatial;
  std::vector<GemmCall> calls;
  for (int64_t grp = 0; grp < g.group; ++grp) {
    // Weights [C, Mg * kvol]: group g's rows, used transposed.
    RowOperand w{grp * p.cg * rows, rows, 0, true};
    RowOperand x{(first * g.in_channels + grp * p.cg) * pin, pin, g.in_channels * pin, false};
    RowOperand col{grp * rows * pin, pin, g.out_channels * p.kvol * pin, false};
    calls.push_back(row_major_gemm(rows, pin, p.cg, w, x, col, count));
  }
  return calls;
}

}  // namespace mimic::backends::cuda
