#include "backends/cuda/tensor_layout.h"

#include <fmt/format.h>

#include "base/error.h"

namespace mimic::backends::cuda {

static_assert(static_cast<int>(ir::DType::f32) == static_cast<int>(DT::f32) &&
                  static_cast<int>(ir::DType::f16) == static_cast<int>(DT::f16) &&
                  static_cast<int>(ir::DType::bf16) == static_cast<int>(DT::bf16) &&
                  static_cast<int>(ir::DType::i8) == static_cast<int>(DT::i8) &&
                  static_cast<int>(ir::DType::i32) == static_cast<int>(DT::i32) &&
                  static_cast<int>(ir::DType::i64) == static_cast<int>(DT::i64) &&
                  static_cast<int>(ir::DType::boolean) == static_cast<int>(DT::b8),
              "DT must number the element types as ir::DType");

StridedLayout merge_dims(std::vector<int64_t> size, std::vector<std::vector<int64_t>> strides) {
  StridedLayout out;
  out.strides.resize(strides.size());
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == 1) continue;
    bool merge = !out.size.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k)
      merge = out.strides[k].back() == strides[k][d] * size[d];
    if (merge) {
      out.size.back() *= size[d];
      for (size_t k = 0; k < strides.size(); ++k) out.strides[k].back() = strides[k][d];
    } else {
      out.size.push_back(size[d]);
      for (size_t k = 0; k < strides.size(); ++k) out.strides[k].push_back(strides[k][d]);
    }
  }
  bool empty = false;
  for (int64_t s : size) empty = empty || s == 0;
  if (empty) {
    out.size.assign(1, 0);
    for (auto& s : out.strides) s.assign(1, 0);
  } else if (out.size.empty()) {
    out.size.push_back(1);
    for (auto& s : out.strides) s.push_back(0);
  }
  return out;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * dims[d + 1];
  return s;
}

std::vector<int64_t> broadcast_strides(const ir::Shape& in, const ir::Shape& out) {
  std::vector<int64_t> in_strides = row_major_strides(in.dims());
  std::vector<int64_t> s(out.rank(), 0);
  int offset = out.rank() - in.rank();
  for (int d = 0; d < in.rank(); ++d) s[offset + d] = in[d] == 1 ? 0 : in_strides[d];
  return s;
}

StridedLayout broadcast_layout(const ir::Shape& out, const std::vector<ir::Shape>& operands) {
  std::vector<std::vector<int64_t>> strides{row_major_strides(out.dims())};
  for (const ir::Shape& s : operands) strides.push_back(broadcast_strides(s, out));
  return merge_dims(out.dims(), strides);
}

bool copy_fits(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& src_strides) {
  return merge_dims(out_dims, {row_major_strides(out_dims), src_strides}).rank() <= kMaxDims;
}

CopyParams copy_params(const std::vector<int64_t>& out_dims,
                       const std::vector<int64_t>& src_strides, int64_t src_offset, int esize) {
  StridedLayout l = merge_dims(out_dims, {row_major_strides(out_dims), src_strides});
  if (l.rank() > kMaxDims)
    throw CompileError(fmt::format(
        "cuda: a strided copy needs {} dims after merging, kernels take {}", l.rank(), kMaxDims));
  CopyParams p{};
  p.esize = esize;
  p.offset = src_offset;
  p.rank = l.rank();
  p.n = 1;
  for (int d = 0; d < l.rank(); ++d) {
    p.size[d] = l.size[d];
    p.stride[d] = l.strides[1][d];
    p.n *= l.size[d];
  }
  return p;
}

CopyParams permute_params(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& perm,
                          int esize) {
  std::vector<int64_t> strides = row_major_strides(in_dims), dims, src;
  for (int64_t p : perm) {
    dims.push_back(in_dims[p]);
    src.push_back(strides[p]);
  }
  return copy_params(dims, src, 0, esize);
}

CopyParams channels_move_params(const std::vector<int64_t>& in_dims, bool to_last, int esize) {
  int r = static_cast<int>(in_dims.size());
  std::vector<int64_t> perm(r);
  perm[0] = 0;
  for (int i = 1; i < r; ++i)
    perm[i] = to_last ? (i == r - 1 ? 1 : i + 1) : (i == 1 ? r - 1 : i - 1);
  return permute_params(in_dims, perm, esize);
}

DT to_dt(ir::DType t) {
  return static_cast<DT>(static_cast<int>(t));
}
int esize_of(ir::DType t) {
  return static_cast<int>(ir::dtype_size(t));
}

Window make_window(const ir::WindowGeometry& g) {
  if (g.spatial_rank > kMaxSpatial)
    throw CompileError(
        fmt::format("cuda: {} spatial dims, kernels take at most {}", g.spatial_rank, kMaxSpatial));
  Window w{};
  w.rank = g.spatial_rank;
  for (int d = 0; d < kMaxSpatial; ++d) {
    bool real = d < g.spatial_rank;
    w.in[d] = real ? g.in_size[d] : 1;
    w.out[d] = real ? g.out_size[d] : 1;
    w.kernel[d] = real ? g.kernel[d] : 1;
    w.stride[d] = real ? g.strides[d] : 1;
    w.dilation[d] = real ? g.dilations[d] : 1;
    w.pad_begin[d] = real ? g.pad_begin[d] : 0;
    w.pad_end[d] = real ? g.pad_end[d] : 0;
  }
  return w;
}

}  // namespace mimic::backends::cuda
