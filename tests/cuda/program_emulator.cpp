#include "tests/cuda/program_emulator.h"

#include <fmt/format.h>
#include <cstring>
#include <stdexcept>

#include "backends/cuda/kernels/device_math_nn.h"

namespace mimic::testing {
namespace {

using namespace backends::cuda;

struct HostMemory {
  std::vector<char> arena;
  std::vector<std::vector<char>> constants;
  std::vector<char*> base;
  ErrorSlot error{};
  char* ptr(const BufRef& r) { return r.valid() ? base[r.buffer] + r.offset : nullptr; }
};

void gemm(const GemmInstr& in, HostMemory& m) {
  const ColMajorGemm& g = in.g;
  // cuBLAS operand A is the row-major B (gemm_plan.h).
  const char* a = m.ptr(in.b);
  const char* b = m.ptr(in.a);
  char* c = m.ptr(in.c);
  int ea = dt_size(in.b_dt), eb = dt_size(in.a_dt), ec = dt_size(in.c_dt);
  for (int64_t bt = 0; bt < g.batch; ++bt) {
    const char* ab = a + bt * g.stride_a * ea;
    const char* bb = b + bt * g.stride_b * eb;
    char* cb = c + bt * g.stride_c * ec;
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        double acc = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          double av = load_f(ab, in.b_dt, g.trans_a ? l + i * g.lda : i + l * g.lda);
          double bv = load_f(bb, in.a_dt, g.trans_b ? j + l * g.ldb : l + j * g.ldb);
          acc += av * bv;
        }
        int64_t ci = i + j * g.ldc;
        double prev = in.beta != 0 ? load_f(cb, in.c_dt, ci) : 0.0;
        store_f(cb, in.c_dt, ci, static_cast<float>(in.alpha * acc + in.beta * prev));
      }
  }
}

template <typename F>
void each(int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) f(i);
}

// Calls f(i) with an int32 index where the GPU launcher would (index32), else int64.
template <typename P, typename F>
void each_indexed(const P& p, int64_t n, bool wide, F f) {
  if (!wide && index32(p)) {
    for (int32_t i = 0; i < static_cast<int32_t>(n); ++i) f(i);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

struct Emulate {
  HostMemory& m;
  bool wide;

  void operator()(const GemmInstr& i) const { gemm(i, m); }
  void operator()(const UnaryInstr& i) const {
    each(i.p.n, [&](int64_t k) { unary_body(i.p, m.ptr(i.x), m.ptr(i.y), k); });
  }
  void operator()(const BinaryInstr& i) const {
    each_indexed(i.p, i.p.n, wide, [&](auto k) {
      binary_body<decltype(k)>(i.p, m.ptr(i.a), m.ptr(i.b), m.ptr(i.y), k);
    });
  }
  void operator()(const VariadicInstr& i) const {
    const void* in[kMaxVariadic] = {};
    for (size_t k = 0; k < i.inputs.size(); ++k) in[k] = m.ptr(i.inputs[k]);
    each_indexed(i.p, i.p.n, wide,
                 [&](auto k) { variadic_body<decltype(k)>(i.p, in, m.ptr(i.y), k); });
  }
  void operator()(const WhereInstr& i) const {
    each_indexed(i.p, i.p.n, wide, [&](auto k) {
      where_body<decltype(k)>(i.p, m.ptr(i.cond), m.ptr(i.x), m.ptr(i.y), m.ptr(i.out), k);
    });
  }
  void operator()(const CastInstr& i) const {
    each(i.p.n, [&](int64_t k) { cast_body(i.p, m.ptr(i.x), m.ptr(i.y), k); });
  }
  void operator()(const CopyInstr& i) const {
    each_indexed(i.p, i.p.n, wide,
                 [&](auto k) { copy_body<decltype(k)>(i.p, m.ptr(i.x), m.ptr(i.y), k); });
  }
  void operator()(const Copy2dInstr& i) const {
    for (int64_t r = 0; r < i.p.rows; ++r)
      std::memmove(m.ptr(i.y) + r * i.p.dst_pitch, m.ptr(i.x) + r * i.p.src_pitch, i.p.width);
  }
  void operator()(const GatherInstr& i) const {
    each(i.p.outer * i.p.count * i.p.inner, [&](int64_t k) {
      gather_body(i.p, m.ptr(i.data), m.ptr(i.indices), m.ptr(i.y), &m.error, k);
    });
  }
  void operator()(const ScatterRowsInstr& i) const {
    each(i.p.inner, [&](int64_t k) {
      scatter_rows_body(i.p, m.ptr(i.indices), m.ptr(i.updates), m.ptr(i.y), &m.error, k);
    });
  }
  void operator()(const GatherElementsInstr& i) const {
    each(i.p.n, [&](int64_t k) {
      gather_elements_body(i.p, m.ptr(i.data), m.ptr(i.indices), m.ptr(i.y), &m.error, k);
    });
  }
  void operator()(const PadInstr& i) const {
    each_indexed(i.p, i.p.n, wide,
                 [&](auto k) { pad_body<decltype(k)>(i.p, m.ptr(i.x), m.ptr(i.y), k); });
  }
  void operator()(const TriluInstr& i) const {
    each(i.p.n, [&](int64_t k) { trilu_body(i.p, m.ptr(i.x), m.ptr(i.y), k); });
  }
  void operator()(const Im2colInstr& i) const {
    each_indexed(i.p, i.p.n, wide,
                 [&](auto k) { im2col_body<decltype(k)>(i.p, m.ptr(i.x), m.ptr(i.col), k); });
  }
  void operator()(const Col2imInstr& i) const {
    const float* col = reinterpret_cast<const float*>(m.ptr(i.col));
    each_indexed(i.p, i.p.n, wide,
                 [&](auto k) { col2im_body<decltype(k)>(i.p, col, m.ptr(i.y), k); });
  }
  void operator()(const DepthwiseInstr& i) const {
    each_indexed(i.p, i.p.n, wide, [&](auto k) {
      depthwise_body<decltype(k)>(i.p, m.ptr(i.x), m.ptr(i.w), m.ptr(i.bias), m.ptr(i.y), k);
    });
  }
  void operator()(const BiasInstr& i) const {
    each_indexed(i.p, i.p.n, wide, [&](auto k) {
      bias_body<decltype(k)>(i.p, m.ptr(i.x), m.ptr(i.bias), m.ptr(i.y), k);
    });
  }
  void operator()(const PoolInstr& i) const {
    each_indexed(i.p, i.p.n, wide,
                 [&](auto k) { pool_body<decltype(k)>(i.p, m.ptr(i.x), m.ptr(i.y), k); });
  }
  void operator()(const BatchNormInstr& i) const {
    const float* mul = reinterpret_cast<const float*>(m.ptr(i.mul));
    const float* add = reinterpret_cast<const float*>(m.ptr(i.add));
    each_indexed(i.p, i.p.n, wide, [&](auto k) {
      batch_norm_body<decltype(k)>(i.p, m.ptr(i.x), mul, add, m.ptr(i.y), k);
    });
  }
  void operator()(const BnPrepInstr& i) const {
    float* mul = reinterpret_cast<float*>(m.ptr(i.mul));
    float* add = reinterpret_cast<float*>(m.ptr(i.add));
    each(i.p.channels, [&](int64_t c) {
      bn_prep_body(i.p, m.ptr(i.scale), m.ptr(i.bias), m.ptr(i.mean), m.ptr(i.var), mul, add, c);
    });
  }
  void operator()(const LrnInstr& i) const {
    each(i.p.n, [&](int64_t k) { lrn_body(i.p, m.ptr(i.x), m.ptr(i.y), k); });
  }
  void operator()(const ReduceInstr& i) const {
    each(i.p.outer * i.p.inner, [&](int64_t j) { reduce_body(i.p, m.ptr(i.x), m.ptr(i.y), j); });
  }
  void operator()(const ArgReduceInstr& i) const {
    int64_t* y = reinterpret_cast<int64_t*>(m.ptr(i.y));
    each(i.p.outer * i.p.inner, [&](int64_t j) { arg_reduce_body(i.p, m.ptr(i.x), y, j); });
  }
  void operator()(const SoftmaxInstr& i) const {
    each(i.p.outer * i.p.inner, [&](int64_t j) { softmax_body(i.p, m.ptr(i.x), m.ptr(i.y), j); });
  }
  void operator()(const RowNormInstr& i) const {
    float* mean = reinterpret_cast<float*>(m.ptr(i.mean));
    float* inv = reinterpret_cast<float*>(m.ptr(i.inv_std));
    each(i.p.rows, [&](int64_t r) {
      row_norm_body(i.p, m.ptr(i.x), m.ptr(i.scale), m.ptr(i.bias), m.ptr(i.y), mean, inv, r);
    });
  }
  void operator()(const CumSumInstr& i) const {
    each(i.p.outer * i.p.inner, [&](int64_t j) { cumsum_body(i.p, m.ptr(i.x), m.ptr(i.y), j); });
  }
};

}  // namespace

std::vector<ir::HostTensor> emulate_program(const Program& p,
                                            const std::vector<ir::HostTensor>& inputs,
                                            EmulatedMemory memory, EmulatedIndex index) {
  HostMemory m;
  m.arena.assign(static_cast<size_t>(p.arena_bytes), 0);
  for (const ir::HostTensor& c : p.constants) {
    const char* raw = static_cast<const char*>(c.raw());
    m.constants.emplace_back(raw, raw + c.nbytes());
  }
  std::vector<std::vector<char>> separate;
  for (const BufferDesc& b : p.buffers) {
    if (b.kind == BufferKind::constant) {
      m.base.push_back(m.constants[b.constant].data());
    } else if (memory == EmulatedMemory::planned_arena) {
      m.base.push_back(m.arena.data() + b.offset);
    } else {
      separate.emplace_back(static_cast<size_t>(b.bytes));
      m.base.push_back(separate.back().data());
    }
  }
  if (inputs.size() != p.inputs.size())
    throw std::runtime_error("emulate_program: wrong number of inputs");
  for (size_t i = 0; i < inputs.size(); ++i)
    std::memcpy(m.ptr(p.inputs[i]), inputs[i].raw(), inputs[i].nbytes());
  for (const Instr& instr : p.instrs) std::visit(Emulate{m, index == EmulatedIndex::wide}, instr);
  if (m.error.node_plus_one != 0)
    throw std::runtime_error(fmt::format("emulated program: node {} read index {} out of range",
                                         m.error.node_plus_one - 1, m.error.index));
  std::vector<ir::HostTensor> out;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    ir::HostTensor t(p.output_types[i].dtype, p.output_types[i].shape);
    std::memcpy(t.raw(), m.ptr(p.outputs[i]), t.nbytes());
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace mimic::testing
