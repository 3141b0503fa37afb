// Numerics: tensor storage with reuse, per-run operand caches, instruction dispatch, int8 scales.
#include "models/tpu/numerics.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/numeric_formats.h"

namespace mimic::models::tpu {

Numerics::Numerics(const Program& program, std::vector<std::vector<float>> constants)
    : program_(program) {
  const size_t nt = program.tensors.size();
  store_.resize(nt);
  if (constants.size() != program.constants.size())
    throw InvalidArgument(fmt::format("tpu numerics: program has {} constants, got data for {}",
                                      program.constants.size(), constants.size()));
  for (size_t i = 0; i < constants.size(); ++i) {
    int32_t t = program.constants[i];
    int64_t n = program.tensors.at(t).numel();
    if (static_cast<int64_t>(constants[i].size()) != n)
      throw InvalidArgument(
          fmt::format("tpu numerics: constant '{}' has {} values, its shape needs {}",
                      program.tensors[t].name, constants[i].size(), n));
    allocate(t);
    std::memcpy(store_[t].data.get(), constants[i].data(), n * sizeof(float));
  }
  // Lifetimes: a non-constant tensor is released after the last instruction that touches it.
  last_use_.assign(nt, -1);
  kernel_last_.assign(program.kernels.size(), -1);
  auto touch = [&](int32_t t, int32_t i) {
    if (t >= 0) last_use_[base(t)] = std::max(last_use_[base(t)], i);
  };
  for (int32_t i = 0; i < static_cast<int32_t>(program.instructions.size()); ++i) {
    const Instruction& in = program.instructions[i];
    if (!in.computes || in.kernel < 0) continue;
    kernel_last_[in.kernel] = i;
    const Kernel& k = program.kernels[in.kernel];
    if (k.kind == KernelKind::gemm) {
      for (int32_t t : {k.gemm.a, k.gemm.w, k.gemm.y, k.gemm.epi.bias, k.gemm.epi.residual})
        touch(t, i);
    } else {
      for (int32_t t : k.vec.in) touch(t, i);
      touch(k.vec.out, i);
    }
  }
  for (int32_t t : program.outputs) last_use_[base(t)] = INT32_MAX;
  frees_.assign(program.instructions.size(), {});
  for (int32_t t = 0; t < static_cast<int32_t>(nt); ++t)
    if (base(t) == t && !program.tensors[t].constant && last_use_[t] >= 0 &&
        last_use_[t] != INT32_MAX)
      frees_[last_use_[t]].push_back(t);
}

Numerics::~Numerics() = default;

int32_t Numerics::base(int32_t t) const {
  while (program_.tensors[t].alias_of >= 0) t = program_.tensors[t].alias_of;
  return t;
}

Buffer Numerics::take(size_t elements) {
  // Reuse the smallest pooled buffer that fits (no page faults after the first run).
  size_t best = pool_.size();
  for (size_t i = 0; i < pool_.size(); ++i)
    if (pool_[i].capacity >= elements &&
        (best == pool_.size() || pool_[i].capacity < pool_[best].capacity))
      best = i;
  Buffer b;
  if (best < pool_.size()) {
    b = std::move(pool_[best]);
    pool_.erase(pool_.begin() + static_cast<std::ptrdiff_t>(best));
  } else {
    b.data.reset(new float[std::max<size_t>(elements, 1)]);
    b.capacity = elements;
  }
  return b;
}

void Numerics::allocate(int32_t t) {
  t = base(t);
  size_t need = static_cast<size_t>(std::max<int64_t>(program_.tensors[t].numel(), 1));
  Buffer& b = store_[t];
  if (b.data && b.capacity >= need) return;
  b = take(need);
}

void Numerics::release(int32_t t) {
  t = base(t);
  if (!store_[t].data) return;
  pool_.push_back(std::move(store_[t]));
  store_[t] = Buffer{};
  for (int key_part = 0; key_part < 8; ++key_part) {
    auto it = operands_.find(static_cast<int64_t>(t) * 8 + key_part);
    if (it != operands_.end()) {
      pool_.push_back(std::move(it->second));
      operands_.erase(it);
    }
  }
}

float* Numerics::data(int32_t t) {
  int32_t b = base(t);
  if (!store_[b].data) allocate(b);
  return store_[b].data.get();
}

float Numerics::last_scale(int32_t tensor) const {
  auto it = scales_.find(base(tensor));
  return it == scales_.end() ? 0.0f : it->second;
}

float Numerics::tensor_scale(int32_t t) {
  int32_t b = base(t);
  auto it = scales_.find(b);
  if (it != scales_.end()) return it->second;
  const float* x = data(b);
  int64_t n = program_.tensors[b].numel();
  float m = 0;
#pragma omp parallel for reduction(max : m) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  float s = numeric::int8_scale_for(m);
  scales_[b] = s;
  return s;
}

namespace {

// dst[img][p][c] = src[img][c][p]: NCHW -> NHWC, in cache-friendly 32 x 32 blocks.
void to_channels_last(const float* src, float* dst, int64_t images, int64_t channels,
                      int64_t plane) {
  constexpr int64_t kBlock = 32;
#pragma omp parallel for collapse(2) if (images * channels * plane > 65536) schedule(static)
  for (int64_t img = 0; img < images; ++img)
    for (int64_t c0 = 0; c0 < channels; c0 += kBlock) {
      const float* s = src + img * channels * plane;
      float* d = dst + img * channels * plane;
      int64_t c1 = std::min(channels, c0 + kBlock);
      for (int64_t p0 = 0; p0 < plane; p0 += kBlock) {
        int64_t p1 = std::min(plane, p0 + kBlock);
        for (int64_t c = c0; c < c1; ++c)
          for (int64_t p = p0; p < p1; ++p) d[p * channels + c] = s[c * plane + p];
      }
    }
}

// A 2-D convolution filter in ONNX's order gathered into the GEMM's [groups][KH*KW][C/groups][N]:
// a Conv's [M][Cg][KH][KW], or a ConvTranspose's [C][Mg][KH][KW] with its (sub-)kernel's taps
// flipped (filter_tap).
void gather_filter(const float* src, float* dst, const GemmDesc& g, int64_t elements) {
  const Window& w = g.conv;
  const bool transposed = g.w_view == GemmDesc::WView::conv_transpose_filter;
  const int64_t kvol = w.kh * w.kw, cg = w.c / w.groups, ng = w.m / w.groups;
  const int64_t full = elements / (w.groups * cg * ng);  // the filter's KH * KW
  const int64_t s_group = cg * ng * full;
  const int64_t s_in = transposed ? ng * full : full, s_out = transposed ? full : cg * full;
  for (int64_t grp = 0; grp < w.groups; ++grp)
    for (int64_t p = 0; p < kvol; ++p) {
      const int64_t tap = transposed ? filter_tap(g, kvol - 1 - p) : p;
      for (int64_t ci = 0; ci < cg; ++ci) {
        float* row = dst + ((grp * kvol + p) * cg + ci) * ng;
        const float* at = src + grp * s_group + tap + ci * s_in;
        for (int64_t o = 0; o < ng; ++o) row[o] = at[o * s_out];
      }
    }
}

}  // namespace

const float* Numerics::operand(int32_t t, int part, bool channels_last, const Window* conv) {
  bool relayout = channels_last && conv && !conv->channels_last;
  int64_t key = (static_cast<int64_t>(base(t)) * 4 + part) * 2 + (relayout ? 1 : 0);
  auto it = operands_.find(key);
  if (it != operands_.end()) return it->second.data.get();
  const int64_t n = program_.tensors[base(t)].numel();
  Buffer out = take(static_cast<size_t>(n));
  const float* src = data(base(t));
  if (relayout) {
    to_channels_last(src, out.data.get(), conv->n, conv->c, conv->h * conv->w);
    src = out.data.get();
  }
  return keep_operand(operands_[key], std::move(out), t, part, src, n);
}

const float* Numerics::filter_operand(const GemmDesc& g, int32_t kernel, int part) {
  int64_t key = static_cast<int64_t>(kernel) * 4 + part;
  auto it = filters_.find(key);
  if (it != filters_.end()) return it->second.data.get();
  const int64_t n = g.batch * g.k * g.n;
  Buffer out = take(static_cast<size_t>(n));
  const float* gathered = out.data.get();
  gather_filter(data(base(g.w)), out.data.get(), g, program_.tensors[base(g.w)].numel());
  return keep_operand(filters_[key], std::move(out), g.w, part, gathered, n);
}

// Writes the operand part of the n elements of `src` (tensor t's data, possibly already in
// `out`) into `out`, kept in `slot` for the rest of the run.
const float* Numerics::keep_operand(Buffer& slot, Buffer out, int32_t t, int part, const float* src,
                                    int64_t n) {
  const int32_t b = base(t);
  float* dst = out.data.get();
  if (program_.numerics == MatrixNumerics::int8) {
    float inv = 1.0f / tensor_scale(b);
#pragma omp parallel for if (n > 65536) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      dst[i] = std::clamp(std::nearbyint(src[i] * inv), -127.0f, 127.0f);
  } else if (part == 0) {  // the high bf16 part is the operand rounded once (vectorized)
    if (src != dst) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    numeric::round_to_bf16(dst, static_cast<size_t>(n));
  } else {
#pragma omp parallel for if (n > 65536) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      numeric::Bf16Split s = numeric::split_bf16(src[i]);
      dst[i] = part == 1 ? s.mid : s.lo;
    }
  }
  slot = std::move(out);
  return slot.data.get();
}

void Numerics::run(const std::vector<const float*>& inputs, std::vector<std::vector<float>>& out) {
  if (inputs.size() != program_.inputs.size())
    throw InvalidArgument(fmt::format("tpu numerics: program takes {} inputs, got {}",
                                      program_.inputs.size(), inputs.size()));
  scales_.clear();
  for (auto& [key, buf] : operands_) pool_.push_back(std::move(buf));
  operands_.clear();
  for (auto& [key, buf] : filters_) pool_.push_back(std::move(buf));
  filters_.clear();
  for (auto& e : im2col_) e.key[0] = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int32_t t = program_.inputs[i];
    allocate(t);
    std::memcpy(data(t), inputs[i], program_.tensors[t].numel() * sizeof(float));
  }
  for (uint32_t i = 0; i < program_.instructions.size(); ++i) {
    const Instruction& in = program_.instructions[i];
    if (in.computes && in.kernel >= 0) {
      pending_.push_back(i);
      if (kernel_last_[in.kernel] == static_cast<int32_t>(i)) {
        run_kernel(in.kernel);
        finish_kernel(in.kernel);
      }
    }
    for (int32_t t : frees_[i]) release(t);
  }
  out.resize(program_.outputs.size());
  for (size_t i = 0; i < program_.outputs.size(); ++i) {
    const float* p = data(program_.outputs[i]);
    out[i].assign(p, p + program_.tensors[program_.outputs[i]].numel());
  }
  for (int32_t t = 0; t < static_cast<int32_t>(store_.size()); ++t)
    if (!program_.tensors[t].constant && base(t) == t) release(t);
}

const float* Numerics::im2col_block(const int64_t key[5], size_t elements, bool* fresh) {
  Im2colEntry* victim = &im2col_[0];
  for (auto& e : im2col_) {
    if (std::equal(key, key + 5, e.key)) {
      e.used = ++im2col_clock_;
      *fresh = false;
      return e.block.data.get();
    }
    if (e.used < victim->used) victim = &e;
  }
  if (victim->block.capacity < elements) {
    victim->block.data.reset(new float[elements]);
    victim->block.capacity = elements;
  }
  std::copy(key, key + 5, victim->key);
  victim->used = ++im2col_clock_;
  *fresh = true;
  return victim->block.data.get();
}

void Numerics::execute(const Instruction& in) {
  const Kernel& k = program_.kernels.at(in.kernel);
  if (k.kind == KernelKind::gemm)
    run_gemm(in, k);
  else
    run_vector(in, k);
}

void Numerics::run_kernel(int32_t kernel) {
  const Kernel& k = program_.kernels[kernel];
  std::vector<uint32_t> items;
  items.swap(pending_);
  // Instructions of other kernels cannot be pending: a kernel's instructions are contiguous in
  // computation order (its last computing instruction precedes the next kernel's first).
  bool whole = true;
  if (k.kind == KernelKind::gemm) {
    const GemmDesc& g = k.gemm;
    std::vector<int64_t> area(static_cast<size_t>(g.batch), 0);
    for (uint32_t i : items) {
      const Instruction& in = program_.instructions[i];
      if (in.batch < 0 || in.batch >= g.batch)
        whole = false;
      else
        area[in.batch] += (in.r1 - in.r0) * (in.c1 - in.c0);
    }
    for (int64_t a : area) whole = whole && a == g.m * g.n;
    if (whole) {
      // Row blocks that keep an im2col block near 32 MiB and GEMMs large.
      int64_t step = std::max<int64_t>(
          256, std::min<int64_t>(8192, (int64_t{8} << 20) / std::max<int64_t>(g.k, 1)));
      for (int64_t b = 0; b < g.batch; ++b)
        for (int64_t r0 = 0; r0 < g.m; r0 += step) {
          Instruction block;
          block.kernel = kernel;
          block.batch = b;
          block.r0 = r0;
          block.r1 = std::min(g.m, r0 + step);
          block.c0 = 0;
          block.c1 = g.n;
          run_gemm(block, k);
        }
      return;
    }
  } else {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (uint32_t i : items)
      ranges.emplace_back(program_.instructions[i].r0, program_.instructions[i].r1);
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size() && whole; ++i)
      whole = ranges[i].first == ranges[i - 1].second;
    if (whole && !ranges.empty() && ranges.front().first == 0) {
      Instruction all;
      all.kernel = kernel;
      all.r0 = 0;
      all.r1 = ranges.back().second;
      run_vector(all, k);
      return;
    }
  }
  for (uint32_t i : items) execute(program_.instructions[i]);
}

// int8 chips keep activations on the int8 grid: once a kernel's output is complete it is
// requantized with the per-tensor scale of its own range.
void Numerics::finish_kernel(int32_t kernel) {
  const Kernel& k = program_.kernels[kernel];
  const Epilogue& epi = k.kind == KernelKind::gemm ? k.gemm.epi : k.vec.epi;
  if (epi.store != Rounding::int8) return;
  int32_t y = base(k.kind == KernelKind::gemm ? k.gemm.y : k.vec.out);
  scales_.erase(y);
  float s = tensor_scale(y), inv = 1.0f / s;
  float* p = data(y);
  int64_t n = program_.tensors[y].numel();
#pragma omp parallel for if (n > 65536) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    p[i] = std::clamp(std::nearbyint(p[i] * inv), -127.0f, 127.0f) * s;
}

}  // namespace mimic::models::tpu
