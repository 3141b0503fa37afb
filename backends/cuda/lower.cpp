#include "backends/cuda/lower.h"

#include <fmt/format.h>

#include <algorithm>

#include "backends/common.h"
#include "backends/cuda/lowerer.h"
#include "backends/cuda/memory_plan.h"
#include "base/error.h"
#include "base/numeric_formats.h"
#include "frontend/ir/recurrent.h"
#include "frontend/ir/recurrent_expand.h"

namespace mimic::backends::cuda {
namespace {

constexpr int64_t kArenaAlignment = 256;

}  // namespace

const char* instr_name(const Instr& instr) {
  static const char* const kNames[] = {
      "gemm",        "unary",      "binary",     "variadic", "where",
      "cast",        "copy",       "copy2d",     "gather",   "gather_elements",
      "pad",         "trilu",      "im2col",     "col2im",   "depthwise",
      "bias",        "pool",       "batch_norm", "bn_prep",  "lrn",
      "reduce",      "arg_reduce", "softmax",    "row_norm", "cumsum",
      "scatter_rows"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == std::variant_size_v<Instr>,
                "one name per instruction");
  return kNames[instr.index()];
}

// The op table's classes map onto the lowering files; recurrent layers run unrolled
// (unsupported_reason).
Family family_of(ir::OpType op) {
  using ir::OpClass;
  if (ir::is_view_op(op)) return Family::data;
  switch (ir::op_class(op)) {
    case OpClass::unary:
    case OpClass::binary:
    case OpClass::nary:
      return Family::elementwise;
    case OpClass::matmul:
    case OpClass::conv:
      return Family::linear;
    case OpClass::pool:
    case OpClass::norm:
    case OpClass::softmax:
    case OpClass::reduce:
    case OpClass::arg_reduce:
    case OpClass::scan:
      return Family::nn;
    case OpClass::data:
      return Family::data;
    case OpClass::recurrent:
      return Family::none;
  }
  return Family::none;
}

std::string unsupported_reason(const ir::Graph& g, const ir::Node& n) {
  for (ir::ValueId v : n.outputs)
    if (!g.value(v).typed) return "untyped output";
  // The kernels compute in f32, f16 and bf16; double (ONNX DOUBLE, imported models) runs on cpu.
  std::vector<ir::ValueId> values = n.outputs;
  values.insert(values.end(), n.inputs.begin(), n.inputs.end());
  for (ir::ValueId v : values)
    if (v != ir::kNoValue && g.value(v).typed && g.value(v).type.dtype == ir::DType::f64)
      return dtype_reason(n, ir::DType::f64);
  // Recurrent layers run unrolled (frontend/ir/recurrent_expand.h) when every op of the unrolling
  // does: one input-projection GEMM, one GEMM per step, elementwise kernels for the gates.
  // MaxPoolGrad runs as its window ops the same way.
  if (ir::runs_expanded(n.op))
    return ir::unrolled_unsupported_reason(
        g, n, [](const ir::Graph& one, const ir::Node& m) { return unsupported_reason(one, m); });
  try {
    switch (family_of(n.op)) {
      case Family::elementwise:
        return check_elementwise(g, n);
      case Family::linear:
        return check_linear(g, n);
      case Family::nn:
        return check_nn(g, n);
      case Family::data:
        return check_data(g, n);
      case Family::none:
        break;
    }
  } catch (const Error& e) {
    return e.what();
  }
  return fmt::format("no CUDA kernel for {}", ir::op_name(n.op));
}

// ---- helpers ----

bool is_float_type(ir::DType t) {
  return t == ir::DType::f32 || t == ir::DType::f16 || t == ir::DType::bf16;
}

std::string dtype_reason(const ir::Node& n, ir::DType t) {
  return fmt::format("{} on {}", ir::op_name(n.op), ir::dtype_name(t));
}

ir::HostTensor to_f32(const ir::HostTensor& t) {
  if (t.dtype() == ir::DType::f32) return t;
  ir::HostTensor out(ir::DType::f32, t.shape());
  const auto* bits = static_cast<const uint16_t*>(t.raw());
  if (t.dtype() == ir::DType::f16)
    numeric::f16_to_f32(bits, out.data<float>(), t.numel());
  else if (t.dtype() == ir::DType::bf16)
    numeric::bf16_to_f32(bits, out.data<float>(), t.numel());
  else
    throw CompileError(
        fmt::format("cuda: expected a floating-point constant, got {}", ir::dtype_name(t.dtype())));
  return out;
}

ir::HostTensor expand_f32(const ir::HostTensor& t, const ir::Shape& shape) {
  ir::HostTensor src = to_f32(t);
  ir::HostTensor out(ir::DType::f32, shape);
  std::vector<int64_t> strides = broadcast_strides(t.shape(), shape);
  const float* x = src.data<float>();
  float* y = out.data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t rem = i, off = 0;
    for (int d = shape.rank() - 1; d >= 0; --d) {
      off += (rem % shape[d]) * strides[d];
      rem /= shape[d];
    }
    y[i] = x[off];
  }
  return out;
}

// ---- Lowerer ----

Lowerer::Lowerer(const ir::Graph& g, const CudaOptions& options) : g_(g), options_(options) {
  values_.assign(g.num_values(), BufRef{});
  for (ir::ValueId v : g.inputs()) {
    const ir::Value& val = g.value(v);
    BufferDesc b;
    b.kind = BufferKind::arena;
    b.bytes = static_cast<int64_t>(val.type.shape.numel() * ir::dtype_size(val.type.dtype));
    b.first_step = b.last_step = -1;
    b.what = fmt::format("input '{}'", val.name);
    program_.buffers.push_back(b);
    values_[v] = {static_cast<int32_t>(program_.buffers.size() - 1), 0};
    program_.inputs.push_back(values_[v]);
    program_.input_types.push_back(val.type);
  }
}

const ir::HostTensor* Lowerer::constant(const ir::Node& n, int i) const {
  if (!n.has_input(i)) return nullptr;
  return g_.value(n.inputs[i]).constant.get();
}

void Lowerer::touch(const BufRef& ref) {
  BufferDesc& b = program_.buffers.at(ref.buffer);
  if (b.kind == BufferKind::arena) b.last_step = std::max(b.last_step, step_);
}

BufRef Lowerer::value_buffer(ir::ValueId v) {
  if (values_[v].valid()) return values_[v];
  const ir::Value& val = g_.value(v);
  if (!val.constant)
    throw CompileError(fmt::format("cuda: value '{}' is read before it is computed", val.name));
  values_[v] = upload(*val.constant, fmt::format("constant '{}'", val.name));
  return values_[v];
}

BufRef Lowerer::in(const ir::Node& n, int i) {
  if (!n.has_input(i)) return BufRef{};
  BufRef r = value_buffer(n.inputs[i]);
  touch(r);
  return r;
}

BufRef Lowerer::out(const ir::Node& n, int i) {
  const ir::Value& val = g_.value(n.outputs.at(i));
  BufferDesc b;
  b.bytes = static_cast<int64_t>(val.type.shape.numel() * ir::dtype_size(val.type.dtype));
  b.first_step = b.last_step = step_;
  b.what = fmt::format("value '{}'", val.name);
  program_.buffers.push_back(b);
  values_[n.outputs[i]] = {static_cast<int32_t>(program_.buffers.size() - 1), 0};
  return values_[n.outputs[i]];
}

void Lowerer::alias(const ir::Node& n, int out_index, int in_index) {
  values_[n.outputs.at(out_index)] = in(n, in_index);
}

void Lowerer::set_constant_output(const ir::Node& n, int i, ir::HostTensor data) {
  values_[n.outputs.at(i)] =
      upload(std::move(data), fmt::format("value '{}'", g_.value(n.outputs[i]).name));
}

BufRef Lowerer::scratch(int64_t bytes, const std::string& what) {
  BufferDesc b;
  b.bytes = bytes;
  b.first_step = b.last_step = step_;
  b.what = what;
  program_.buffers.push_back(b);
  return {static_cast<int32_t>(program_.buffers.size() - 1), 0};
}

BufRef Lowerer::upload(ir::HostTensor data, const std::string& what) {
  BufferDesc b;
  b.kind = BufferKind::constant;
  b.bytes = static_cast<int64_t>(data.nbytes());
  b.constant = static_cast<int>(program_.constants.size());
  b.what = what;
  program_.constant_bytes += b.bytes;
  program_.constants.push_back(std::move(data));
  program_.buffers.push_back(b);
  return {static_cast<int32_t>(program_.buffers.size() - 1), 0};
}

void Lowerer::emit(Instr instr) {
  program_.instrs.push_back(std::move(instr));
  program_.steps.back().end = program_.instrs.size();
}

void Lowerer::matrix_mode(ir::DType dtype) {
  if (dtype == ir::DType::f32)
    program_.matrix_modes.insert(options_.tf32 ? "tf32" : "fp32");
  else
    program_.matrix_modes.insert(dtype == ir::DType::bf16 ? "bf16" : "fp16");
}

void Lowerer::lower_node(int index) {
  const ir::Node& n = g_.node(index);
  std::string reason = unsupported_reason(g_, n);
  if (!reason.empty())
    throw UnsupportedOpError(fmt::format("cuda: cannot run {}: {}", ir::describe(g_, n), reason),
                             {ir::op_name(n.op)});
  ++step_;
  Step s;
  s.node = index;
  s.name = n.name;
  s.op_type = ir::op_name(n.op);
  s.shapes = node_shapes(g_, n);
  s.dtype = ir::dtype_name(g_.value(n.outputs[0]).type.dtype);
  s.flops = ir::node_flops(g_, n);
  s.bytes_in = ir::node_bytes_in(g_, n);
  s.bytes_out = ir::node_bytes_out(g_, n);
  s.first = s.end = program_.instrs.size();
  program_.steps.push_back(s);
  switch (family_of(n.op)) {
    case Family::elementwise:
      lower_elementwise(*this, n);
      break;
    case Family::linear:
      lower_linear(*this, n);
      break;
    case Family::nn:
      lower_nn(*this, n);
      break;
    case Family::data:
      lower_data(*this, n);
      break;
    case Family::none:
      break;
  }
}

Program Lowerer::finish() {
  int end = static_cast<int>(program_.steps.size());
  for (ir::ValueId v : g_.outputs()) {
    BufRef r = value_buffer(v);
    BufferDesc& b = program_.buffers[r.buffer];
    if (b.kind == BufferKind::arena) b.last_step = end;
    program_.outputs.push_back(r);
    program_.output_types.push_back(g_.value(v).type);
  }
  std::vector<BufferLifetime> lives;
  std::vector<size_t> arena;
  for (size_t i = 0; i < program_.buffers.size(); ++i) {
    const BufferDesc& b = program_.buffers[i];
    if (b.kind != BufferKind::arena) continue;
    arena.push_back(i);
    lives.push_back({b.bytes, std::max(b.first_step, 0), std::max(b.last_step, 0)});
  }
  MemoryPlan plan = plan_memory(lives, kArenaAlignment);
  for (size_t k = 0; k < arena.size(); ++k) program_.buffers[arena[k]].offset = plan.offsets[k];
  program_.arena_bytes = plan.total_bytes;
  program_.peak_live_bytes = plan.peak_live_bytes;
  return std::move(program_);
}

Program lower(const ir::Graph& g, const CudaOptions& options) {
  if (std::any_of(g.nodes().begin(), g.nodes().end(),
                  [](const ir::Node& n) { return ir::runs_expanded(n.op); })) {
    ir::Graph unrolled =
        ir::unroll_recurrent(g, [](const ir::Node& n) { return ir::runs_expanded(n.op); });
    Program p = lower(unrolled, options);
    p.notes.push_back(ir::unroll_note(g, unrolled));
    return p;
  }
  Lowerer l(g, options);
  for (int i = 0; i < g.num_nodes(); ++i)
    if (!is_folded(g, g.node(i))) l.lower_node(i);
  return l.finish();
}

}  // namespace mimic::backends::cuda
