#include "backends/cpu/loop_fusion.h"
#include "backends/cpu/threading.h"

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>

#include "backends/cpu/kernels.h"
#include "backends/cpu/tensor_iter.h"
#include "base/activations.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::backends::cpu {
namespace {

using ir::DType;
using ir::OpType;

// Elements per slot: every slot of a group stays in L1/L2; a multiple of the widest packet, so
// that every slot of a 64-byte-aligned cursor is too.
constexpr int64_t kBlock = 1024;

bool is_comparison(OpType op) {
  return op == OpType::Greater || op == OpType::Less || op == OpType::GreaterOrEqual ||
         op == OpType::LessOrEqual || op == OpType::Equal;
}

// Whether node `n` computes what the group evaluator computes (the reference kernels' f32 math).
bool fusable(const ir::Graph& g, const ir::Node& n) {
  if (n.outputs.size() != 1) return false;
  const ir::Value& out = g.value(n.outputs[0]);
  if (!out.typed || out.type.shape.is_symbolic()) return false;
  for (ir::ValueId v : n.inputs)
    if (v == ir::kNoValue) return false;
  auto in = [&](int i) { return g.value(n.inputs[i]).type.dtype; };
  DType o = out.type.dtype;
  switch (n.op) {
    case OpType::Add:
    case OpType::Sub:
    case OpType::Mul:
    case OpType::Div:
      return o == DType::f32 && in(0) == DType::f32 && in(1) == DType::f32;
    case OpType::Where:
      return o == DType::f32 && in(0) == DType::boolean && in(1) == DType::f32 &&
             in(2) == DType::f32;
    case OpType::Cast:
      return o == DType::f32 && (in(0) == DType::f32 || in(0) == DType::boolean);
    case OpType::Expand:  // a broadcast read of input 0; the shape input is not data
      return o == DType::f32 && in(0) == DType::f32;
    case OpType::Not:
    case OpType::IsNaN:
    case OpType::IsInf:
    case OpType::Identity:
    case OpType::Dropout:
    case OpType::Clip:
      return false;
    default:
      if (is_comparison(n.op))
        return o == DType::boolean && in(0) == DType::f32 && in(1) == DType::f32;
      return ir::is_unary_elementwise(n.op) && n.num_inputs() == 1 && o == DType::f32 &&
             in(0) == DType::f32;
  }
}

// ReduceSum/ReduceMean of a non-empty f32 tensor: the reference kernel's sum_in_place, which a
// group can feed with computed values instead of a stored tensor.
bool fusable_reduction(const ir::Graph& g, const ir::Node& n) {
  if ((n.op != OpType::ReduceSum && n.op != OpType::ReduceMean) || n.outputs.size() != 1)
    return false;
  const ir::Value &in = g.value(n.inputs[0]), &out = g.value(n.outputs[0]);
  return in.typed && out.typed && in.type.dtype == DType::f32 && out.type.dtype == DType::f32 &&
         !in.type.shape.is_symbolic() && in.type.shape.numel() > 0;
}

// The inputs a member reads elementwise (Expand's target shape and a reduction's axes are not).
std::vector<ir::ValueId> data_inputs(const ir::Node& n) {
  if (n.op == OpType::Expand || ir::is_reduce(n.op)) return {n.inputs[0]};
  return n.inputs;
}

// Elements [offset, offset + n * stride) of `t` as floats: a pointer into `t` when they are
// contiguous f32, else copied (broadcast, strided or bool) into `scratch`.
const float* load(const ir::HostTensor& t, int64_t offset, int64_t stride, int64_t n,
                  float* scratch) {
  if (t.dtype() == DType::boolean) {
    const bool* b = t.data<bool>() + offset;
    for (int64_t j = 0; j < n; ++j) scratch[j] = b[j * stride] ? 1.0f : 0.0f;
    return scratch;
  }
  const float* f = t.data<float>() + offset;
  if (stride == 1) return f;
  if (stride == 0) {
    std::fill(scratch, scratch + n, f[0]);
  } else {
    for (int64_t j = 0; j < n; ++j) scratch[j] = f[j * stride];
  }
  return scratch;
}

template <typename Fn>
void each(float* o, int64_t n, Fn fn) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) o[j] = fn(j);
}

// Writes n computed elements to `out` at `offset` (booleans from 0 and 1).
void store(const float* r, ir::HostTensor& out, int64_t offset, int64_t n) {
  if (out.dtype() == DType::boolean) {
    bool* dst = out.data<bool>() + offset;
    for (int64_t j = 0; j < n; ++j) dst[j] = r[j] != 0.0f;
  } else {
    std::memcpy(out.data<float>() + offset, r, n * sizeof(float));
  }
}

// y = op(x) over m elements, a multiple of the widest packet, y 64-byte aligned: Eigen computes
// every element with its packet function (no scalar head or tail).
void packet_apply(OpType op, float* y, const float* x, int64_t m) {
  Eigen::Map<Eigen::ArrayXf, Eigen::Aligned64> out(y, m);
  Eigen::Map<const Eigen::ArrayXf> in(x, m);
  if (op == OpType::Exp)
    out = in.exp();
  else if (op == OpType::Erf)
    out = in.erf();
  else if (op == OpType::Sigmoid)
    out = in.logistic();
  else
    out = in.tanh();
}

// o = op(a) over n <= kBlock elements (o a 64-byte-aligned slot) for the transcendental
// functions, vectorized as XLA computes them (Eigen's packet exp, logistic and tanh, and XLA's
// rational erf): within a few ulp of the C library's scalar functions the reference kernels call
// (base/activations.h's formulas). False for other ops. Eigen computes an unaligned span's
// elements before its first aligned packet and after its last whole one with the scalar C
// function, so where a block lay in memory would change its result by an ulp and a run would not
// repeat bit for bit; every element goes through the packet function instead: the whole packets
// in the aligned slot, the last partial one padded in a packet-sized buffer.
bool vectorized(OpType op, float* o, const float* a, int64_t n) {
  if (op != OpType::Exp && op != OpType::Erf && op != OpType::Sigmoid && op != OpType::Tanh)
    return false;
  constexpr int64_t kWidest = 16;  // floats in the widest packet (AVX-512)
  // Eigen's packet logistic flushes at its exp's floor (every x < -88.7 gives ~3e-39, where the
  // reference formula reaches the subnormals and 0): log(sigmoid(x)), PyTorch's export of
  // logsigmoid, would read -88.7 for all of them. The far tail takes the reference formula; its
  // inputs are kept first, as `o` may be `a`.
  alignas(64) float kept[kBlock];
  const bool far_tail =
      op == OpType::Sigmoid && std::any_of(a, a + n, [](float x) { return x < -80.0f; });
  if (far_tail) a = std::copy(a, a + n, kept) - n;
  const int64_t whole = n / kWidest * kWidest;
  packet_apply(op, o, a, whole);
  if (whole < n) {
    alignas(64) float tail[kWidest] = {};
    std::copy(a + whole, a + n, tail);
    packet_apply(op, tail, tail, kWidest);
    std::copy(tail, tail + (n - whole), o + whole);
  }
  if (far_tail)
    for (int64_t j = 0; j < n; ++j)
      if (a[j] < -80.0f) o[j] = activation::sigmoid(a[j]);
  return true;
}

// o = op(a, b, c) over n elements; booleans are 0 and 1.
void eval(OpType op, const ir::UnaryAttrs& attrs, float* o, const float* a, const float* b,
          const float* c, int64_t n) {
  switch (op) {
    case OpType::Add:
      return each(o, n, [&](int64_t j) { return a[j] + b[j]; });
    case OpType::Sub:
      return each(o, n, [&](int64_t j) { return a[j] - b[j]; });
    case OpType::Mul:
      return each(o, n, [&](int64_t j) { return a[j] * b[j]; });
    case OpType::Div:
      return each(o, n, [&](int64_t j) { return a[j] / b[j]; });
    case OpType::Greater:
      return each(o, n, [&](int64_t j) { return a[j] > b[j] ? 1.0f : 0.0f; });
    case OpType::Less:
      return each(o, n, [&](int64_t j) { return a[j] < b[j] ? 1.0f : 0.0f; });
    case OpType::GreaterOrEqual:
      return each(o, n, [&](int64_t j) { return a[j] >= b[j] ? 1.0f : 0.0f; });
    case OpType::LessOrEqual:
      return each(o, n, [&](int64_t j) { return a[j] <= b[j] ? 1.0f : 0.0f; });
    case OpType::Equal:
      return each(o, n, [&](int64_t j) { return a[j] == b[j] ? 1.0f : 0.0f; });
    case OpType::Where:
      return each(o, n, [&](int64_t j) { return a[j] != 0.0f ? b[j] : c[j]; });
    case OpType::Cast:
    case OpType::Expand:
      return each(o, n, [&](int64_t j) { return a[j]; });
    case OpType::Relu:
      return each(o, n, [&](int64_t j) { return a[j] < 0 ? 0.0f : a[j]; });
    case OpType::Neg:
      return each(o, n, [&](int64_t j) { return -a[j]; });
    default:
      if (!vectorized(op, o, a, n))
        for (int64_t j = 0; j < n; ++j) o[j] = ir::unary_float<float>(op, a[j], attrs);
  }
}

}  // namespace

LoopFusion::LoopFusion(const ir::Graph& g, const std::function<bool(int)>& available)
    : g_(g),
      group_of_(g.num_nodes(), -1),
      consumers_(g.num_values()),
      graph_output_(g.num_values(), false) {
  for (ir::ValueId v : g.outputs()) graph_output_[v] = true;
  std::vector<bool> reduction_root(g.num_nodes(), false);
  for (int i = 0; i < g.num_nodes(); ++i) {
    eligible_.push_back(available(i) && fusable(g, g.node(i)));
    reduction_root[i] = available(i) && fusable_reduction(g, g.node(i));
    for (ir::ValueId v : g.node(i).inputs)
      if (v != ir::kNoValue) consumers_[v].push_back(i);
  }
  for (int i = g.num_nodes() - 1; i >= 0; --i)
    if ((eligible_[i] || reduction_root[i]) && group_of_[i] < 0) grow(i);
}

// Adds to the group of `root` every eligible producer of a member whose output has the group's
// shape (root's output, or a reduction root's input), is no graph output and is read by members
// or by nodes after root; a group of one node is dropped.
void LoopFusion::grow(int root) {
  const int id = static_cast<int>(groups_.size());
  const ir::Node& r = g_.node(root);
  const ir::Shape& shape = g_.value(ir::is_reduce(r.op) ? r.inputs[0] : r.outputs[0]).type.shape;
  std::vector<int> members{root}, work{root};
  group_of_[root] = id;
  while (!work.empty()) {
    int m = work.back();
    work.pop_back();
    for (ir::ValueId v : data_inputs(g_.node(m))) {
      int p = g_.value(v).producer;
      if (p < 0 || !eligible_[p] || group_of_[p] >= 0 || graph_output_[v] ||
          g_.value(v).type.shape != shape)
        continue;
      // A value read outside the group is written out as well (a multi-output fusion), when
      // every such reader runs after the group: a reader before `root` could feed a member.
      bool readers_ok = std::all_of(consumers_[v].begin(), consumers_[v].end(),
                                    [&](int c) { return group_of_[c] == id || c > root; });
      if (!readers_ok) continue;
      group_of_[p] = id;
      members.push_back(p);
      work.push_back(p);
    }
  }
  if (members.size() < 2) {
    group_of_[root] = -1;
    return;
  }
  std::sort(members.begin(), members.end());
  Group grp;
  grp.nodes = std::move(members);
  compile(grp);
  groups_.push_back(std::move(grp));
}

// Slots: the group's external inputs first, then one per member output, in graph order.
void LoopFusion::compile(Group& grp) const {
  std::map<ir::ValueId, int> slot;
  std::set<ir::ValueId> produced;
  for (int m : grp.nodes) produced.insert(g_.node(m).outputs[0]);
  for (int m : grp.nodes)
    for (ir::ValueId v : data_inputs(g_.node(m)))
      if (!produced.count(v) && !slot.count(v)) {
        slot[v] = static_cast<int>(grp.inputs.size());
        grp.inputs.push_back(v);
      }
  int next = static_cast<int>(grp.inputs.size());
  for (int m : grp.nodes) {
    const ir::Node& n = g_.node(m);
    if (ir::is_reduce(n.op)) {  // the root: it sums the slot of its input
      grp.reduction = m;
      grp.reduced_slot = slot.at(n.inputs[0]);
      grp.reduced_axes = ir::resolve_reduce_axes(g_, n);
      continue;
    }
    Instr ins;
    ins.op = n.op;
    std::vector<ir::ValueId> in = data_inputs(n);
    for (size_t k = 0; k < in.size(); ++k) ins.in[k] = slot.at(in[k]);
    if (ir::is_unary_elementwise(n.op)) ins.attrs = ir::unary_attrs(n);
    ins.out = next;
    slot[n.outputs[0]] = next++;
    grp.code.push_back(ins);
    bool read_outside =
        std::any_of(consumers_[n.outputs[0]].begin(), consumers_[n.outputs[0]].end(),
                    [&](int c) { return group_of_[c] != group_of_[m]; });
    if (read_outside || (m == grp.nodes.back() && grp.reduction < 0))
      grp.outputs.push_back({ins.out, n.outputs[0]});
  }
}

int LoopFusion::run_index(int node) const {
  return group_of_[node] < 0 ? node : groups_[group_of_[node]].nodes.back();
}

int LoopFusion::fused_nodes() const {
  int n = 0;
  for (const Group& grp : groups_) n += static_cast<int>(grp.nodes.size());
  return n;
}

const ir::Shape& LoopFusion::shape_of(const Group& grp) const {
  const ir::Node& root = g_.node(grp.nodes.back());
  return g_.value(grp.reduction >= 0 ? root.inputs[0] : root.outputs[0]).type.shape;
}

LoopFusion::Cursor::Cursor(size_t slots) : scratch(slots * kBlock + 16), at(slots) {}

float* LoopFusion::Cursor::slot(int k) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(scratch.data());
  return scratch.data() + (64 - base % 64) % 64 / sizeof(float) + static_cast<int64_t>(k) * kBlock;
}

// Computes elements [begin, begin + n) of broadcast row `row` (n <= kBlock) into the cursor's
// slots and writes those of the members read outside the group to `outs`.
void LoopFusion::evaluate(const Group& grp, const std::vector<ir::HostTensor>& values,
                          const BroadcastPlan& plan, int64_t row, int64_t begin, int64_t n,
                          Cursor& c, std::vector<ir::HostTensor>& outs) const {
  plan.offsets(row, c.off);
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    int64_t stride = plan.strides[k + 1].back();
    c.at[k] = load(values[grp.inputs[k]], c.off[k + 1] + begin * stride, stride, n,
                   c.slot(static_cast<int>(k)));
  }
  for (const Instr& ins : grp.code) {
    float* o = c.slot(ins.out);
    auto arg = [&](int i) { return i < 0 ? nullptr : c.at[i]; };
    eval(ins.op, ins.attrs, o, arg(ins.in[0]), arg(ins.in[1]), arg(ins.in[2]), n);
    c.at[ins.out] = o;
  }
  for (size_t k = 0; k < outs.size(); ++k)
    store(c.at[grp.outputs[k].first], outs[k], c.off[0] + begin, n);
}

void LoopFusion::run(int root, std::vector<ir::HostTensor>& values) const {
  const Group& grp = groups_[group_of_[root]];
  std::vector<ir::HostTensor> outs;
  for (const auto& [slot, v] : grp.outputs)
    outs.push_back(ir::HostTensor::uninitialized(g_.value(v).type.dtype, g_.value(v).type.shape));
  std::vector<ir::Shape> shapes;
  for (ir::ValueId v : grp.inputs) shapes.push_back(values[v].shape());
  const BroadcastPlan plan = plan_broadcast(shape_of(grp), shapes);
  const size_t slots = grp.inputs.size() + grp.code.size();
  if (grp.reduction >= 0) {
    run_reduction(grp, values, plan, outs);
  } else {
    const int64_t inner = plan.inner(), per_row = (inner + kBlock - 1) / kBlock;
    const int64_t work = plan.outer() * per_row;
#pragma omp parallel if (work > 1 && outs.back().numel() > parallel_threshold(32768))
    {
      Cursor c(slots);
#pragma omp for schedule(static)
      for (int64_t w = 0; w < work; ++w)
        evaluate(grp, values, plan, w / per_row, w % per_row * kBlock,
                 std::min(kBlock, inner - w % per_row * kBlock), c, outs);
    }
  }
  for (size_t k = 0; k < outs.size(); ++k) values[grp.outputs[k].second] = std::move(outs[k]);
}

// The root reduction sums the group's values as sum_in_place visits them (each element once), so
// the summed value is never stored and the result is bitwise the reference kernel's.
void LoopFusion::run_reduction(const Group& grp, std::vector<ir::HostTensor>& values,
                               const BroadcastPlan& plan, std::vector<ir::HostTensor>& outs) const {
  const ir::Node& r = g_.node(grp.reduction);
  ir::HostTensor result =
      ir::HostTensor::uninitialized(DType::f32, g_.value(r.outputs[0]).type.shape);
  const int64_t inner = plan.inner();
  const size_t slots = grp.inputs.size() + grp.code.size();
  // One cursor per thread, made once: the source runs once per reduced run of elements (per
  // image and channel of a BatchNorm's statistics), often a few dozen elements.
  std::vector<Cursor> cursors(static_cast<size_t>(omp_get_max_threads()), Cursor(slots));
  RunSource source = [&](int64_t at, int64_t n, std::vector<float>& scratch) {
    Cursor& c = cursors.at(static_cast<size_t>(omp_get_thread_num()));
    scratch.resize(static_cast<size_t>(n));
    for (int64_t p = at; p < at + n;) {
      const int64_t begin = p % inner, m = std::min({kBlock, inner - begin, at + n - p});
      evaluate(grp, values, plan, p / inner, begin, m, c, outs);
      std::memcpy(scratch.data() + (p - at), c.at[grp.reduced_slot], m * sizeof(float));
      p += m;
    }
    return static_cast<const float*>(scratch.data());
  };
  sum_in_place(r.op, shape_of(grp), grp.reduced_axes, source, result.data<float>());
  values[r.outputs[0]] = std::move(result);
}

}  // namespace mimic::backends::cpu
