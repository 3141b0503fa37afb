// Fast paths of the vector unit's elementwise numerics (numerics_vector.cpp): one run of elements
// of a common function (copies, ReLU, the arithmetic of gradients and BatchNorm) in a loop of its
// own, which the compiler vectorizes, where the generic path dispatches on the function for every
// element. The values are the generic path's: the same expression per element, and the epilogue's
// activation and bf16 store applied only when it has them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/activations.h"
#include "base/extrema.h"
#include "models/tpu/program.h"

namespace mimic::models::tpu::map {

inline bool plain(const Epilogue& e) {
  return e.activation == VectorFunc::identity && e.store != Rounding::bf16;
}

// y[j * sy] = op(a[j * sa], b[j * sb]) for j < n, then `finish` (the epilogue) unless it is plain.
template <typename Op, typename Finish>
void binary_run(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t sy,
                int64_t n, bool is_plain, Op op, Finish finish) {
  if (is_plain && sy == 1 && sa == 1 && sb == 1) {
    for (int64_t j = 0; j < n; ++j) y[j] = op(a[j], b[j]);
  } else if (is_plain && sy == 1 && sa == 1 && sb == 0) {
    const float c = b[0];
    for (int64_t j = 0; j < n; ++j) y[j] = op(a[j], c);
  } else if (is_plain && sy == 1 && sa == 0 && sb == 1) {
    const float c = a[0];
    for (int64_t j = 0; j < n; ++j) y[j] = op(c, b[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) {
      float v = op(a[j * sa], b[j * sb]);
      y[j * sy] = is_plain ? v : finish(v);
    }
  }
}

template <typename Op, typename Finish>
void unary_run(const float* x, int64_t sx, float* y, int64_t sy, int64_t n, bool is_plain, Op op,
               Finish finish) {
  if (is_plain && sy == 1 && sx == 1) {
    for (int64_t j = 0; j < n; ++j) y[j] = op(x[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) {
      float v = op(x[j * sx]);
      y[j * sy] = is_plain ? v : finish(v);
    }
  }
}

// Runs `f` over the run when it has a fast path; false leaves it to the generic loop.
template <typename Finish>
bool binary(VectorFunc f, const float* a, int64_t sa, const float* b, int64_t sb, float* y,
            int64_t sy, int64_t n, bool is_plain, Finish finish) {
  switch (f) {
    case VectorFunc::add:
      binary_run(
          a, sa, b, sb, y, sy, n, is_plain, [](float u, float v) { return u + v; }, finish);
      return true;
    case VectorFunc::sub:
      binary_run(
          a, sa, b, sb, y, sy, n, is_plain, [](float u, float v) { return u - v; }, finish);
      return true;
    case VectorFunc::mul:
      binary_run(
          a, sa, b, sb, y, sy, n, is_plain, [](float u, float v) { return u * v; }, finish);
      return true;
    case VectorFunc::div:
      binary_run(
          a, sa, b, sb, y, sy, n, is_plain, [](float u, float v) { return u / v; }, finish);
      return true;
    case VectorFunc::max:
      binary_run(
          a, sa, b, sb, y, sy, n, is_plain, [](float u, float v) { return max_nan(u, v); }, finish);
      return true;
    case VectorFunc::min:
      binary_run(
          a, sa, b, sb, y, sy, n, is_plain, [](float u, float v) { return min_nan(u, v); }, finish);
      return true;
    case VectorFunc::greater:  // comparisons give 1 or 0 (a ReLU gradient's mask is x > 0)
      binary_run(
          a, sa, b, sb, y, sy, n, is_plain, [](float u, float v) { return u > v ? 1.0f : 0.0f; },
          finish);
      return true;
    case VectorFunc::less:
      binary_run(
          a, sa, b, sb, y, sy, n, is_plain, [](float u, float v) { return u < v ? 1.0f : 0.0f; },
          finish);
      return true;
    case VectorFunc::equal:
      binary_run(
          a, sa, b, sb, y, sy, n, is_plain, [](float u, float v) { return u == v ? 1.0f : 0.0f; },
          finish);
      return true;
    default:
      return false;
  }
}

template <typename Finish>
bool unary(VectorFunc f, const float* x, int64_t sx, float* y, int64_t sy, int64_t n, bool is_plain,
           Finish finish) {
  switch (f) {
    case VectorFunc::identity:
    case VectorFunc::copy:
    case VectorFunc::transpose:
      unary_run(
          x, sx, y, sy, n, is_plain, [](float v) { return v; }, finish);
      return true;
    case VectorFunc::relu:
      unary_run(
          x, sx, y, sy, n, is_plain, [](float v) { return activation::relu(v); }, finish);
      return true;
    default:
      return false;
  }
}

// An elementwise instruction's iteration space with adjacent dimensions merged wherever every
// input and the output step through them as one (row-major order, hence the flat element indices,
// unchanged): an NCHW tensor's [N, C, H, W] walk becomes one run of N*C*H*W elements instead of
// N*C*H runs of W, each of which paid for its offsets.
struct Walk {
  std::vector<int64_t> dims, out_strides;  // out_strides empty: contiguous output
  std::vector<std::vector<int64_t>> in_strides;
};

inline Walk coalesced(const VectorDesc& d, size_t nin) {
  Walk w{d.dims, d.out_strides, {}};
  for (size_t k = 0; k < nin; ++k) w.in_strides.push_back(d.in_strides[k]);
  for (int i = static_cast<int>(w.dims.size()) - 2; i >= 0; --i) {
    const int64_t inner = w.dims[i + 1];
    bool merge = w.out_strides.empty() || w.out_strides[i] == w.out_strides[i + 1] * inner;
    for (size_t k = 0; k < nin && merge; ++k)
      merge = w.in_strides[k][i] == w.in_strides[k][i + 1] * inner;
    if (!merge) continue;
    w.dims[i] *= inner;
    w.dims.erase(w.dims.begin() + i + 1);
    if (!w.out_strides.empty()) {
      w.out_strides[i] = w.out_strides[i + 1];
      w.out_strides.erase(w.out_strides.begin() + i + 1);
    }
    for (size_t k = 0; k < nin; ++k) {
      w.in_strides[k][i] = w.in_strides[k][i + 1];
      w.in_strides[k].erase(w.in_strides[k].begin() + i + 1);
    }
  }
  return w;
}

}  // namespace mimic::models::tpu::map
