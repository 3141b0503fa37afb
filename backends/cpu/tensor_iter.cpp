#include "backends/cpu/tensor_iter.h"
#include "backends/cpu/threading.h"

#include <cstring>

namespace mimic::backends::cpu {
namespace {

// Drops size-1 dims and merges dims d, d+1 when every operand's stride makes them contiguous.
void merge_dims(std::vector<int64_t>& dims, std::vector<std::vector<int64_t>>& strides) {
  std::vector<int64_t> d2;
  std::vector<std::vector<int64_t>> s2(strides.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1 && dims.size() > 1) continue;
    bool merge = !d2.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k)
      merge = s2[k].back() == strides[k][d] * dims[d];
    if (merge) {
      d2.back() *= dims[d];
      for (size_t k = 0; k < strides.size(); ++k) s2[k].back() = strides[k][d];
    } else {
      d2.push_back(dims[d]);
      for (size_t k = 0; k < strides.size(); ++k) s2[k].push_back(strides[k][d]);
    }
  }
  if (d2.empty()) {
    d2.push_back(1);
    for (auto& s : s2) s.push_back(0);
  }
  dims = std::move(d2);
  strides = std::move(s2);
}

template <typename T>
void copy_typed(T* out, const T* in, const std::vector<int64_t>& dims,
                const std::vector<int64_t>& out_strides, const std::vector<int64_t>& src_strides) {
  int rank = static_cast<int>(dims.size());
  int64_t inner = dims[rank - 1], in_step = src_strides[rank - 1];
  int64_t outer = 1;
  for (int d = 0; d < rank - 1; ++d) outer *= dims[d];
#pragma omp parallel for if (outer * inner > parallel_threshold(65536)) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o, src = 0, dst = 0;
    for (int d = rank - 2; d >= 0; --d) {
      int64_t i = rem % dims[d];
      rem /= dims[d];
      src += i * src_strides[d];
      dst += i * out_strides[d];
    }
    T* po = out + dst;
    const T* pi = in + src;
    if (in_step == 1) {
      std::memcpy(po, pi, inner * sizeof(T));
    } else {
      for (int64_t i = 0; i < inner; ++i) po[i] = pi[i * in_step];
    }
  }
}

}  // namespace

void strided_copy(void* out, const void* in, const std::vector<int64_t>& out_dims,
                  const std::vector<int64_t>& src_strides, int64_t src_offset, size_t elem_size) {
  for (int64_t d : out_dims)
    if (d == 0) return;
  std::vector<int64_t> dims = out_dims;
  std::vector<int64_t> out_strides(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d)
    out_strides[d] = out_strides[d + 1] * dims[d + 1];
  std::vector<std::vector<int64_t>> strides{out_strides, src_strides};
  if (dims.empty()) {
    dims.push_back(1);
    strides = {{1}, {0}};
  }
  merge_dims(dims, strides);
  const char* base = static_cast<const char*>(in) + src_offset * static_cast<int64_t>(elem_size);
  switch (elem_size) {
    case 1:
      copy_typed(static_cast<uint8_t*>(out), reinterpret_cast<const uint8_t*>(base), dims,
                 strides[0], strides[1]);
      break;
    case 2:
      copy_typed(static_cast<uint16_t*>(out), reinterpret_cast<const uint16_t*>(base), dims,
                 strides[0], strides[1]);
      break;
    case 4:
      copy_typed(static_cast<uint32_t*>(out), reinterpret_cast<const uint32_t*>(base), dims,
                 strides[0], strides[1]);
      break;
    default:
      copy_typed(static_cast<uint64_t*>(out), reinterpret_cast<const uint64_t*>(base), dims,
                 strides[0], strides[1]);
      break;
  }
}

std::vector<int64_t> broadcast_strides(const ir::Shape& in_shape, const ir::Shape& out_shape) {
  std::vector<int64_t> in_strides = ir::contiguous_strides(in_shape);
  std::vector<int64_t> out(out_shape.rank(), 0);
  int offset = out_shape.rank() - in_shape.rank();
  for (int d = 0; d < in_shape.rank(); ++d) out[offset + d] = in_shape[d] == 1 ? 0 : in_strides[d];
  return out;
}

int64_t BroadcastPlan::outer() const {
  int64_t n = 1;
  for (size_t d = 0; d + 1 < dims.size(); ++d) n *= dims[d];
  return n;
}

void BroadcastPlan::offsets(int64_t o, std::vector<int64_t>& out) const {
  out.assign(strides.size(), 0);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
    int64_t i = o % dims[d];
    o /= dims[d];
    for (size_t k = 0; k < strides.size(); ++k) out[k] += i * strides[k][d];
  }
}

BroadcastPlan plan_broadcast(const ir::Shape& out, const std::vector<ir::Shape>& operands) {
  BroadcastPlan plan;
  plan.dims = out.dims();
  plan.strides.push_back(ir::contiguous_strides(out));
  for (const ir::Shape& s : operands) plan.strides.push_back(broadcast_strides(s, out));
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    for (auto& s : plan.strides) s.push_back(0);
    plan.strides[0].back() = 1;
  }
  merge_dims(plan.dims, plan.strides);
  return plan;
}

}  // namespace mimic::backends::cpu
