// Compiler driver: fusion groups, tensor homes and storage, input/output staging, dispatch of
// every node to its lowering, capacity checks and the compile report.
#include "backends/tpu_emu/tpu_compiler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <unordered_set>

#include "backends/common.h"
#include "backends/tpu_emu/fusion.h"
#include "backends/tpu_emu/layout.h"
#include "backends/tpu_emu/loop_fusion.h"
#include "backends/tpu_emu/lowering.h"
#include "backends/tpu_emu/rematerialize.h"
#include "base/error.h"
#include "base/numeric_formats.h"
#include "models/tpu/ici.h"

namespace mimic::backends::tpu_emu {

using namespace models::tpu;

int64_t precision_passes(const std::string& precision, const TpuSpec& spec) {
  int64_t passes;
  if (precision == "default" || precision == "fastest" || precision == "bfloat16")
    passes = 1;
  else if (precision == "high" || precision == "bf16_3x")
    passes = 3;
  else if (precision == "highest" || precision == "float32")
    passes = 6;
  else
    throw InvalidArgument(
        fmt::format("tpu-emu: unknown precision '{}' (use default, high or highest)", precision));
  return spec.numerics == MatrixNumerics::int8 ? 1 : passes;
}

// ---- RangeAllocator
// ------------------------------------------------------------------------------

// Best fit: the smallest free range that holds `bytes` (less fragmentation than first fit, as a
// heap simulator's best-fit allocator), else the top of the used range.
bool RangeAllocator::allocate(uint64_t bytes, uint64_t* address) {
  bytes = std::max<uint64_t>(round_up(static_cast<int64_t>(bytes), 512), 512);
  size_t best = free_.size();
  for (size_t i = 0; i < free_.size(); ++i) {
    uint64_t size = free_[i].end - free_[i].begin;
    if (size >= bytes && (best == free_.size() || size < free_[best].end - free_[best].begin))
      best = i;
  }
  if (best < free_.size()) {
    *address = free_[best].begin;
    free_[best].begin += bytes;
    if (free_[best].begin == free_[best].end) free_.erase(free_.begin() + best);
  } else {
    if (top_ + bytes > capacity_) return false;
    *address = top_;
    top_ += bytes;
  }
  used_ += bytes;
  peak_ = std::max(peak_, used_);
  span_ = std::max(span_, *address + bytes);
  return true;
}

void RangeAllocator::release(uint64_t address, uint64_t bytes, int32_t tensor) {
  bytes = std::max<uint64_t>(round_up(static_cast<int64_t>(bytes), 512), 512);
  used_ -= std::min(used_, bytes);
  dead_.push_back({address, address + bytes, tensor});
  Range r{address, address + bytes};
  auto it = std::lower_bound(free_.begin(), free_.end(), r,
                             [](const Range& a, const Range& b) { return a.begin < b.begin; });
  it = free_.insert(it, r);
  // Coalesce with neighbours.
  if (it + 1 != free_.end() && it->end == (it + 1)->begin) {
    it->end = (it + 1)->end;
    free_.erase(it + 1);
  }
  if (it != free_.begin() && (it - 1)->end == it->begin) {
    (it - 1)->end = it->end;
    free_.erase(it);
  }
  if (!free_.empty() && free_.back().end == top_) {
    top_ = free_.back().begin;
    free_.pop_back();
  }
}

std::vector<int32_t> RangeAllocator::previous_occupants(uint64_t address, uint64_t bytes) {
  std::vector<int32_t> out;
  uint64_t end = address + bytes;
  for (auto it = dead_.begin(); it != dead_.end();) {
    if (it->begin < end && address < it->end) {
      out.push_back(it->tensor);
      it = dead_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

// ---- Context
// --------------------------------------------------------------------------------------

namespace {

// Bytes the allocator takes for `bytes`: 512-byte granules.
uint64_t allocated_bytes(uint64_t bytes) {
  return std::max<uint64_t>(round_up(static_cast<int64_t>(bytes), 512), 512);
}

std::string tensor_shape(const std::string& dtype, const std::vector<int64_t>& dims) {
  return fmt::format("{}[{}]", dtype, fmt::join(dims, ","));
}

// Parameters, their gradients and optimizer state take the layout their readers want (XLA's
// layout assignment: a conv kernel is kept HWIO, channels minor), so of their dimensions the two
// that pad least to the (8, 128) tiles are the tiled ones; activations keep the graph's layout.
int64_t least_padding_elements(const std::vector<int64_t>& dims, const VpuSpec& v) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (dims.size() < 2 || total == 0) return tiled_elements(dims, v);
  int64_t best = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < dims.size(); ++i)
    for (size_t j = 0; j < dims.size(); ++j)
      if (i != j)
        best = std::min(best, total / (dims[i] * dims[j]) * round_up(dims[i], v.sublanes) *
                                  round_up(dims[j], v.lanes));
  return best;
}

// XLA's choice of activation layout (Context::batch_minor): the most common batch (dim 0) of the
// module's 2-D convolutions' inputs is 64 or more. Chips whose activations live on chip (v1,
// edge) keep theirs.
bool convolutions_batch_minor(const ir::Graph& g, const TpuSpec& spec) {
  if (spec.activations_on_chip || spec.offchip.bytes == 0) return false;
  std::map<int64_t, int> batches;
  for (const ir::Node& n : g.nodes())
    if ((n.op == ir::OpType::Conv || n.op == ir::OpType::ConvTranspose) &&
        g.value(n.inputs[0]).type.shape.rank() == 4)
      ++batches[g.value(n.inputs[0]).type.shape[0]];
  auto most = std::max_element(batches.begin(), batches.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  return most != batches.end() && most->first >= 64;
}

bool is_parameter_category(const std::string& category) {
  return category == "weights" || category == "gradients" || category == "optimizer_state" ||
         category == "buffers";
}

}  // namespace

std::vector<float> constant_as_floats(const ir::HostTensor& t, const std::string& name) {
  std::vector<float> data(t.numel());
  switch (t.dtype()) {
    case ir::DType::f32:
      std::copy(t.data<float>(), t.data<float>() + t.numel(), data.begin());
      return data;
    case ir::DType::bf16:
      numeric::bf16_to_f32(static_cast<const uint16_t*>(t.raw()), data.data(), data.size());
      return data;
    case ir::DType::boolean:
      for (int64_t i = 0; i < t.numel(); ++i) data[i] = t.data<bool>()[i] ? 1.0f : 0.0f;
      return data;
    case ir::DType::i32:
    case ir::DType::i64:
      for (int64_t i = 0; i < t.numel(); ++i) {
        int64_t v = t.dtype() == ir::DType::i32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
        if (v > kExactIntegerLimit || v < -kExactIntegerLimit)
          throw CompileError(fmt::format(
              "tpu_emu.compile: constant '{}' holds the integer {}, beyond the +-2^24 the chip's "
              "fp32 vector lanes hold exactly",
              name, v));
        data[i] = static_cast<float>(v);
      }
      return data;
    default:
      throw CompileError(
          fmt::format("tpu_emu.compile: constant '{}' has dtype {}, which the chip "
                      "does not hold",
                      name, ir::dtype_name(t.dtype())));
  }
}

Context::Context(const ir::Graph& graph, const TpuSpec& s, const CompileOptions& o,
                 Program& program, std::vector<std::vector<float>>& consts, const std::string& dev)
    : g(graph), spec(s), options(o), p(program), constants(consts), device(dev) {
  offchip_capacity = spec.offchip.bytes / (spec.offchip_per_core ? spec.cores : 1);
  offchip = RangeAllocator(std::numeric_limits<uint64_t>::max() / 4);
  read_by_backward_.assign(g.num_values(), false);
  for (const ir::Node& n : g.nodes())
    if (n.phase == ir::StepPhase::backward)
      for (ir::ValueId v : n.inputs)
        if (v != ir::kNoValue) read_by_backward_[v] = true;
  for (ir::ValueId v : g.inputs()) trains_ = trains_ || g.value(v).role == ir::ValueRole::weight;
  batch_minor = convolutions_batch_minor(g, spec);
  // Aliases (reshapes) share their source's storage: the source counts as what its aliases are
  // (a gradient reshaped to its parameter's shape is a gradient, an activation a backward node
  // reads through a reshape is saved).
  role_.resize(g.num_values());
  for (ir::ValueId v = 0; v < g.num_values(); ++v) role_[v] = g.value(v).role;
  for (int i = g.num_nodes() - 1; i >= 0; --i) {
    const ir::Node& n = g.node(i);
    if (!ir::is_view_op(n.op) || !n.has_input(0) || n.outputs.empty()) continue;
    ir::ValueId in = n.inputs[0], out = n.outputs[0];
    if (role_[in] == ir::ValueRole::activation && g.value(in).producer >= 0) role_[in] = role_[out];
    if (read_by_backward_[out]) read_by_backward_[in] = true;
  }
  // Chips that keep activations on chip reserve 3/4 of it for resident tensors, the rest for tiles.
  uint64_t resident = spec.activations_on_chip ? spec.onchip.bytes / 4 * 3 : 0;
  onchip = RangeAllocator(resident);
  em = std::make_unique<Emitter>(p, spec, resident);
}

uint64_t Context::storage_bytes(const std::vector<int64_t>& dims, int64_t eb, Level home) const {
  if (home != Level::onchip)
    return static_cast<uint64_t>(tpu_emu::tiled_elements(dims, spec.vpu) * eb);
  // Tensors resident on chip are packed in vector-register rows in whatever order the units want
  // (TPUv1's UB: 256-byte rows), not in the (8, 128) tiles of their graph layout.
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return static_cast<uint64_t>(
      round_up(std::max<int64_t>(n, 1), spec.vpu.lanes * spec.vpu.sublanes) * eb);
}

int32_t Context::new_tensor(const std::string& name, std::vector<int64_t> dims, int64_t eb,
                            bool constant) {
  TensorInfo t;
  t.name = name;
  t.dims = std::move(dims);
  t.constant = constant;
  p.tensors.push_back(std::move(t));
  int32_t id = static_cast<int32_t>(p.tensors.size() - 1);
  element_bytes_[id] = eb;
  return id;
}

int64_t Context::tiled_elements(int32_t t) const {
  int32_t root = t;
  while (p.tensors[root].alias_of >= 0) root = p.tensors[root].alias_of;
  const std::vector<int64_t>& dims = p.tensors[t].dims;
  if (least_padding_.count(root)) return least_padding_elements(dims, spec.vpu);
  if (batch_minor_tensors_.count(root) && dims.size() == 4)
    return batch_minor_elements(dims, spec.vpu);
  return tpu_emu::tiled_elements(dims, spec.vpu);
}

int64_t Context::element_bytes(int32_t t) const {
  auto it = element_bytes_.find(root_tensor(t));
  return it == element_bytes_.end() ? 4 : it->second;
}

int32_t Context::add_constant(const std::string& name, std::vector<int64_t> dims,
                              std::vector<float> data, int64_t stored_element_bytes) {
  int32_t t = new_tensor(name, std::move(dims), stored_element_bytes, true);
  TensorInfo& info = p.tensors[t];
  uint64_t bytes = storage_bytes(info.dims, stored_element_bytes, Level::offchip);
  weight_bytes += bytes;
  uint64_t address = 0;
  uint64_t packed = storage_bytes(info.dims, stored_element_bytes, Level::onchip);
  if (spec.offchip.bytes > 0) {
    offchip.allocate(bytes, &address);
    const char* stored = stored_element_bytes == 1   ? "s8"
                         : stored_element_bytes == 2 ? "bf16"
                                                     : "f32";
    hbm.allocate(t,
                 {name, constant_category(), tensor_shape(stored, info.dims),
                  "the program's constants", allocated_bytes(bytes)},
                 current_op_name());
    info.home = Level::offchip;
  } else if (onchip.allocate(packed, &address)) {
    info.home = Level::onchip;  // Edge TPU: parameters cached on chip while they fit
  } else {
    info.home = Level::host;  // ... and streamed from host memory otherwise
    address = host_cursor;
    host_cursor += bytes;
  }
  info.address = address;
  p.constants.push_back(t);
  constants.push_back(std::move(data));
  return t;
}

int32_t Context::tensor(ir::ValueId v) {
  auto it = tensor_of.find(v);
  if (it != tensor_of.end()) return it->second;
  const ir::Value& val = g.value(v);
  if (!val.constant)
    throw CompileError(
        fmt::format("tpu_emu.compile: internal: value '{}' has no tensor", val.name));
  std::vector<float> data = constant_as_floats(*val.constant, val.name);
  int32_t t = add_constant(val.name, val.type.shape.dims(), std::move(data), 4);
  tensor_of[v] = t;
  return t;
}

// Constants are the weights of an inference graph; a training step's weights are its inputs and
// its constants are literals (scales, class ids).
std::string Context::constant_category() const {
  return trains_ ? "constants" : "weights";
}

std::string Context::current_op_name() const {
  if (current_op < 0) return "the transfer of the graph inputs";
  return fmt::format("{} '{}'", p.ops[current_op].op_type, p.ops[current_op].node);
}

HbmPlan::Tensor Context::plan_info(ir::ValueId v) const {
  const ir::Value& val = g.value(v);
  HbmPlan::Tensor t;
  t.name = val.name;
  t.shape = tensor_shape(ir::dtype_name(val.type.dtype), val.type.shape.dims());
  // The categories of ir::memory_category(), with the backward readers precomputed.
  if (role_[v] != ir::ValueRole::activation)
    t.category = ir::role_name(role_[v]);
  else if (val.constant)
    t.category = constant_category();
  else if (val.producer < 0)
    t.category = "inputs";
  else if (g.node(val.producer).phase == ir::StepPhase::forward && read_by_backward_[v])
    t.category = "saved_activations";
  else
    t.category = "activations";
  t.producer = val.producer >= 0 ? describe(g.node(val.producer)) : "the graph inputs";
  return t;
}

int32_t Context::produce(ir::ValueId v) {
  const ir::Value& val = g.value(v);
  int64_t eb = spec.numerics == MatrixNumerics::int8 && spec.activations_on_chip ? 1
               : stored_bf16(v)                                                  ? 2
                                : static_cast<int64_t>(ir::dtype_size(val.type.dtype));
  HbmPlan::Tensor plan = plan_info(v);
  // The optimizer's temporaries are elementwise over parameters and take their layout.
  bool parameter_layout =
      is_parameter_category(plan.category) ||
      (val.producer >= 0 && g.node(val.producer).phase == ir::StepPhase::update);
  if (v < static_cast<ir::ValueId>(kept_on_chip.size()) && kept_on_chip[v]) {
    int32_t t = new_tensor(val.name, val.type.shape.dims(), eb, false);
    p.tensors[t].home = Level::onchip;
    home_bytes_[t] = 0;
    fused_.insert(t);
    if (parameter_layout)
      least_padding_.insert(t);
    else if (batch_minor && val.type.shape.rank() == 4)
      batch_minor_tensors_.insert(t);
    tensor_of[v] = t;
    return t;
  }
  int32_t t =
      produce_tensor(val.name, val.type.shape.dims(), eb, std::move(plan), parameter_layout);
  tensor_of[v] = t;
  return t;
}

int32_t Context::scratch(const std::string& name, std::vector<int64_t> dims, int32_t like) {
  int64_t eb = like >= 0 ? element_bytes(like)
               : spec.numerics == MatrixNumerics::int8 && spec.activations_on_chip ? 1
                                                                                   : 4;
  HbmPlan::Tensor info{name, "workspace",
                       tensor_shape(eb == 2   ? "bf16"
                                    : eb == 1 ? "s8"
                                              : "f32",
                                    dims),
                       "the workspace of " + current_op_name(), 0};
  return produce_tensor(name, std::move(dims), eb, std::move(info), false);
}

int32_t Context::next_batch_buffer(ir::ValueId v) {
  const ir::Value& val = g.value(v);
  HbmPlan::Tensor plan = plan_info(v);
  plan.name = val.name + ".next";
  plan.producer = "the next step's batch, prefetched";
  return produce_tensor(plan.name, val.type.shape.dims(), element_bytes(tensor_of.at(v)),
                        std::move(plan), false);
}

int32_t Context::produce_tensor(const std::string& name, std::vector<int64_t> dims, int64_t eb,
                                HbmPlan::Tensor plan, bool parameter_layout) {
  int32_t t = new_tensor(name, std::move(dims), eb, false);
  TensorInfo& info = p.tensors[t];
  uint64_t bytes = storage_bytes(info.dims, eb, Level::offchip);
  uint64_t address = 0;
  RangeAllocator* used = nullptr;
  if (spec.activations_on_chip &&
      onchip.allocate(storage_bytes(info.dims, eb, Level::onchip), &address)) {
    info.home = Level::onchip;
    bytes = storage_bytes(info.dims, eb, Level::onchip);
    used = &onchip;
  } else if (spec.offchip.bytes > 0 && !spec.activations_on_chip) {
    // The plan and the allocator count the same bytes.
    if (parameter_layout) {
      bytes = static_cast<uint64_t>(least_padding_elements(info.dims, spec.vpu) * eb);
      least_padding_.insert(t);
    } else if (batch_minor && info.dims.size() == 4) {
      bytes = static_cast<uint64_t>(batch_minor_elements(info.dims, spec.vpu) * eb);
      batch_minor_tensors_.insert(t);
    }
    offchip.allocate(bytes, &address);
    plan.bytes = allocated_bytes(bytes);
    hbm.allocate(t, std::move(plan), current_op_name());
    info.home = Level::offchip;
    used = &offchip;
  } else {
    info.home =
        Level::host;  // v1/edge spill: activations that do not fit on chip stay in host memory
    address = host_cursor;
    host_cursor += bytes;
  }
  info.address = address;
  home_bytes_[t] = bytes;
  if (used)
    for (int32_t dead : used->previous_occupants(address, bytes)) em->reuse_storage(t, dead);
  return t;
}

int32_t Context::alias(ir::ValueId v, int32_t of) {
  TensorInfo t;
  t.name = g.value(v).name;
  t.dims = g.value(v).type.shape.dims();
  t.alias_of = of;
  t.home = p.tensors[of].home;
  t.address = p.tensors[of].address;
  p.tensors.push_back(std::move(t));
  int32_t id = static_cast<int32_t>(p.tensors.size() - 1);
  tensor_of[v] = id;
  return id;
}

int32_t Context::root_tensor(int32_t t) const {
  while (p.tensors.at(t).alias_of >= 0) t = p.tensors[t].alias_of;
  return t;
}

bool Context::fused(int32_t t) const {
  return fused_.count(root_tensor(t)) > 0;
}

bool Context::streams(int32_t t) const {
  return home(t) != Level::onchip && from_sibling.count(root_tensor(t)) == 0;
}

void Context::release(int32_t t) {
  const TensorInfo& info = p.tensors[t];
  if (info.alias_of >= 0 || info.constant || fused_.count(t)) return;
  uint64_t bytes = home_bytes_.at(t);
  if (info.home == Level::onchip)
    onchip.release(info.address, bytes, t);
  else if (info.home == Level::offchip) {
    offchip.release(info.address, bytes, t);
    hbm.release(t);
  }
}

bool Context::stored_bf16(ir::ValueId v) const {
  const ir::Value& val = g.value(v);
  if (!bf16_activations || val.type.dtype != ir::DType::f32 || val.constant || val.producer < 0 ||
      role_[v] != ir::ValueRole::activation)
    return false;
  const ir::StepPhase phase = g.node(val.producer).phase;
  return phase == ir::StepPhase::forward || phase == ir::StepPhase::backward;
}

Rounding Context::store_rounding(ir::ValueId v) const {
  ir::DType t = g.value(v).type.dtype;
  if (t != ir::DType::f32 && t != ir::DType::bf16) return Rounding::none;  // bool/int: exact
  if (spec.numerics == MatrixNumerics::int8) return Rounding::int8;
  if (stored_bf16(v)) return Rounding::bf16;
  return g.value(v).type.dtype == ir::DType::bf16 ? Rounding::bf16 : Rounding::none;
}

int32_t Context::add_kernel(Kernel k) {
  k.op = current_op;
  p.kernels.push_back(std::move(k));
  return static_cast<int32_t>(p.kernels.size() - 1);
}

std::string Context::describe(const ir::Node& n) const {
  return fmt::format("{} '{}'", ir::op_name(n.op), n.name);
}

void Context::untileable(const ir::Node& n, uint64_t needed, const std::string& detail) const {
  throw OutOfMemoryError(
      fmt::format("tpu_emu.compile: {} cannot be tiled: its smallest tile needs {} bytes of {} per "
                  "core, {} has {} "
                  "bytes per kernel (half of the {} bytes not holding resident tensors) [{}]",
                  describe(n), needed, spec.onchip.name, device, em->half_bytes(),
                  spec.onchip.bytes - em->resident_bytes(), detail),
      -1, static_cast<int64_t>(needed), static_cast<int64_t>(em->half_bytes()), n.name);
}

// ---- driver
// ---------------------------------------------------------------------------------------

namespace {

bool is_copy_op(ir::OpType op) {
  using ir::OpType;
  return op == OpType::Transpose || op == OpType::Concat || op == OpType::Slice ||
         op == OpType::Split || op == OpType::Pad || op == OpType::Expand;
}

OpInfo op_info(const ir::Graph& g, const std::vector<int>& nodes) {
  const ir::Node& first = g.node(nodes.front());
  const ir::Node& last = g.node(nodes.back());
  OpInfo o;
  o.node = first.name;
  for (int i : nodes) {
    o.op_type += std::string(o.op_type.empty() ? "" : "+") + ir::op_name(g.node(i).op);
    o.flops += ir::node_flops(g, g.node(i));
  }
  o.shapes = node_shapes(g, first);
  o.dtype = ir::dtype_name(g.value(last.outputs[0]).type.dtype);
  o.bytes_in = ir::node_bytes_in(g, first);
  o.bytes_out = ir::node_bytes_out(g, last);
  o.phase = ir::phase_name(first.phase);
  for (int i : nodes)
    for (ir::ValueId v : g.node(i).inputs)
      o.reads_gradients |= v != ir::kNoValue && g.value(v).role == ir::ValueRole::gradient;
  for (int i : nodes)
    for (ir::ValueId v : g.node(i).outputs)
      if (g.value(v).role == ir::ValueRole::gradient)
        o.gradient_bytes += std::max<int64_t>(0, g.value(v).type.shape.numel()) *
                            static_cast<int64_t>(ir::dtype_size(g.value(v).type.dtype));
  return o;
}

// The HBM plan into the compile report; a peak over capacity fails in XLA's words unless allowed.
void report_memory(Context& c, const ProgramOptions& options, CompileReport& r) {
  if (c.spec.offchip.bytes == 0) return;
  const HbmPlan& plan = c.hbm;
  const uint64_t capacity = c.offchip_capacity;
  r.metrics["memory.peak_bytes"] = static_cast<double>(plan.peak_bytes());
  r.metrics["memory.capacity_bytes"] = static_cast<double>(capacity);
  std::string breakdown;
  for (const auto& [category, bytes] : plan.breakdown()) {
    r.metrics["memory." + category + "_bytes"] = static_cast<double>(bytes);
    breakdown +=
        fmt::format("{}{} {}", breakdown.empty() ? "" : ", ", category, human_bytes(bytes));
  }
  const uint64_t span = c.offchip.span();
  // Beside the plan (memory.*): what the compiled program's buffers hold at once and how far their
  // addresses reach; the chip must hold both.
  r.metrics["hbm.allocated_peak_bytes"] = static_cast<double>(c.offchip.peak());
  r.metrics["hbm.address_span_bytes"] = static_cast<double>(span);
  if (plan.peak_bytes() <= capacity && span <= capacity) {
    c.notes.push_back(fmt::format("{} plan: peak {} of {} while running {} ({})",
                                  c.spec.offchip.name, human_bytes(plan.peak_bytes()),
                                  human_bytes(capacity), plan.peak_op(), breakdown));
    return;
  }
  std::string message = plan.peak_bytes() <= capacity
                            ? address_space_message(plan, c.offchip.peak(), span, capacity,
                                                    c.spec.offchip.name, c.device)
                            : out_of_memory_message(plan, capacity, c.spec.offchip.name, c.device);
  if (!options.allow_out_of_memory)
    throw OutOfMemoryError(
        message, -1, static_cast<int64_t>(plan.peak_bytes() > capacity ? plan.peak_bytes() : span),
        static_cast<int64_t>(capacity), plan.peak_op());
  c.notes.push_back(message);
}

// Per-op program size (rows in program order of ops).
Table ops_table(const Program& p) {
  Table ops;
  ops.columns = {"op", "kernels", "instructions"};
  std::vector<std::vector<double>> rows(p.ops.size(), std::vector<double>{0, 0, 0});
  for (size_t i = 0; i < rows.size(); ++i) rows[i][0] = static_cast<double>(i);
  for (const Kernel& k : p.kernels)
    if (k.op >= 0) rows[k.op][1] += 1;
  for (const Instruction& in : p.instructions)
    if (in.kernel >= 0 && p.kernels[in.kernel].op >= 0) rows[p.kernels[in.kernel].op][2] += 1;
  ops.rows = std::move(rows);
  return ops;
}

// Data parallelism: the gradient bytes each step all-reduces and the ring's time for them whole
// (the run report schedules it in buckets, overlapped with the backward pass).
void report_replicas(const TpuSpec& spec, const Program& p, CompileReport& r) {
  int64_t gradient_bytes = 0;
  for (const OpInfo& o : p.ops) gradient_bytes += o.gradient_bytes;
  r.metrics["replicas"] = static_cast<double>(p.replicas);
  r.metrics["allreduce.gradient_bytes"] = static_cast<double>(gradient_bytes);
  r.metrics["allreduce.ring_cycles"] = static_cast<double>(
      ring_allreduce_cycles(spec, p.replicas, static_cast<uint64_t>(gradient_bytes)));
}

// A training step's parameters, optimizer state and BatchNorm statistics live in HBM from one
// step to the next (XLA aliases the updated outputs to the donated inputs, jax.jit's
// donate_argnums): they cross the host link once, not every step, so the step does not stage
// them; its batch, scalars and loss do cross it.
bool stays_on_device(const ir::Graph& g, ir::ValueId v) {
  const ir::Value& val = g.value(v);
  if (val.role == ir::ValueRole::weight || val.role == ir::ValueRole::optimizer_state ||
      val.role == ir::ValueRole::buffer)
    return true;
  return val.producer >= 0 && g.node(val.producer).phase == ir::StepPhase::update;
}

// Host <-> home staging of graph inputs and outputs (issued by core 0). The host sends and
// receives dense row-major bytes; the (8, 128) tiling is the chip's business. `prefetch`: the
// transfer fills a buffer no instruction of this program reads, concurrently with it.
void stage(Context& c, int32_t t, bool to_device, bool prefetch = false) {
  const TensorInfo& info = c.p.tensors[t];
  if (info.home == Level::host) return;
  Instruction in;
  in.opcode = Opcode::dma;
  in.core = 0;
  in.src = to_device ? Level::host : info.home;
  in.dst = to_device ? info.home : Level::host;
  in.bytes = static_cast<uint64_t>(std::max<int64_t>(1, info.numel() * c.element_bytes(t)));
  in.src_address = to_device ? 0 : info.address;
  in.dst_address = to_device ? info.address : 0;
  if (prefetch)
    c.em->emit(in, {}, {});
  else if (to_device)
    c.em->emit(in, {}, {t});
  else
    c.em->emit(in, {t}, {});
}

}  // namespace

namespace {

// The values whose last reader is each emission step (aliases extend their source's life): freed
// after that step. Fills `in_place` (plan_residuals_in_place).
std::vector<std::vector<ir::ValueId>> deaths(const ir::Graph& g, const FusionPlan& plan,
                                             const std::vector<bool>& kept,
                                             std::unordered_set<ir::ValueId>* in_place) {
  std::vector<int> last_use(g.num_values(), -1);
  for (int i = 0; i < g.num_nodes(); ++i)
    for (ir::ValueId v : g.node(i).inputs)
      if (v != ir::kNoValue) last_use[v] = std::max(last_use[v], plan.emit_at[i]);
  for (ir::ValueId v : g.outputs()) last_use[v] = g.num_nodes();
  // A result nothing reads (an unused optional output) dies once its node has run.
  for (int i = 0; i < g.num_nodes(); ++i)
    for (ir::ValueId v : g.node(i).outputs)
      if (v != ir::kNoValue && last_use[v] < 0) last_use[v] = plan.emit_at[i];
  for (int i = g.num_nodes() - 1; i >= 0; --i) {
    const ir::Node& n = g.node(i);
    if (ir::is_view_op(n.op) && n.has_input(0))
      last_use[n.inputs[0]] = std::max(last_use[n.inputs[0]], last_use[n.outputs[0]]);
  }
  plan_residuals_in_place(g, plan, kept, last_use, in_place);
  std::vector<std::vector<ir::ValueId>> dies_after(g.num_nodes() + 1);
  for (ir::ValueId v = 0; v < g.num_values(); ++v)
    if (last_use[v] >= 0 && last_use[v] < g.num_nodes()) dies_after[last_use[v]].push_back(v);

  return dies_after;
}

// Lowers node i's fusion group (or the node alone) as one op of the program.
void emit_group(Context& c, const ir::Graph& g, const FusionPlan& plan, int i) {
  const ir::Node& n = g.node(i);
  const std::vector<int>& nodes =
      plan.group_of[i] >= 0 ? plan.groups[plan.group_of[i]] : std::vector<int>{i};
  c.p.ops.push_back(op_info(g, nodes));
  c.current_op = static_cast<int32_t>(c.p.ops.size() - 1);
  c.from_sibling.clear();
  if (!c.sibling_reads.empty())
    for (ir::ValueId v : c.sibling_reads[i]) c.from_sibling.insert(c.root_tensor(c.tensor(v)));
  if (is_vector_conv_transpose(g, n) && c.spec.numerics == MatrixNumerics::bf16)
    lower_transposed_window(c, n);
  else if (n.op == ir::OpType::ConvTranspose || is_fusion_head(g, g.node(nodes.front())))
    lower_matmul_group(c, nodes, plan.weight_grad_in_place[nodes.front()]);
  else if (is_depthwise(g, g.node(nodes.front())))
    lower_depthwise_group(c, nodes);
  else if (ir::is_view_op(n.op))
    c.alias(n.outputs[0], c.tensor(n.inputs[0]));
  else if (is_copy_op(n.op))
    lower_copy_node(c, n);
  else
    lower_vector_node(c, n);
}

// Loop fusion's plan (loop_fusion.h): the values kept on chip, and per node those it reads from
// another loop's tiles (siblings, and the early readers of values written back for late ones).
// Returns the number of values written back.
int plan_loops(Context& c, const ir::Graph& g, const FusionPlan& plan) {
  int written_back = 0;
  c.kept_on_chip = plan_loop_fusion(g, plan);
  std::vector<std::vector<ir::ValueId>> on_chip_reads =
      write_back_late_reads(g, c.kept_on_chip, &written_back);
  c.sibling_reads = plan_sibling_reads(g, plan, c.kept_on_chip);
  for (int i = 0; i < g.num_nodes(); ++i)
    for (ir::ValueId v : on_chip_reads[i])
      if (std::find(c.sibling_reads[i].begin(), c.sibling_reads[i].end(), v) ==
          c.sibling_reads[i].end())
        c.sibling_reads[i].push_back(v);
  return written_back;
}

// The compile report's counts of what the compiler did to the program.
void program_metrics(const Context& c, const FusionPlan& plan, int recomputed, CompileReport& r) {
  const Program& p = c.p;
  r.metrics["program_instructions"] = static_cast<double>(p.instructions.size());
  r.metrics["program_kernels"] = static_cast<double>(p.kernels.size());
  r.metrics["program_dependencies"] = static_cast<double>(p.deps.size());
  r.metrics["weight_bytes"] = static_cast<double>(c.weight_bytes);
  r.metrics["offchip_peak_bytes"] = static_cast<double>(c.offchip.peak());
  r.metrics["onchip_resident_peak_bytes"] = static_cast<double>(c.onchip.peak());
  r.metrics["fused_nodes"] = static_cast<double>(plan.fused_nodes);
  r.metrics["kernel_row_splits"] = static_cast<double>(c.kernel_row_splits);
  r.metrics["filters_read_in_place"] = static_cast<double>(c.filters_in_place);
  r.metrics["rematerialized_values"] = recomputed;
  r.metrics["weight_gradients_in_place"] = static_cast<double>(
      std::count(plan.weight_grad_in_place.begin(), plan.weight_grad_in_place.end(), true));
  r.metrics["loop_fused_values"] =
      static_cast<double>(std::count(c.kept_on_chip.begin(), c.kept_on_chip.end(), true));
  int64_t sibling = 0;
  for (const auto& reads : c.sibling_reads) sibling += static_cast<int64_t>(reads.size());
  r.metrics["sibling_fused_reads"] = static_cast<double>(sibling);
  r.metrics["residuals_updated_in_place"] = static_cast<double>(c.residual_in_place.size());
}

}  // namespace

CompiledProgram compile_program(const ir::Graph& given, const TpuSpec& spec,
                                const CompileOptions& options, const std::string& device,
                                const ProgramOptions& program) {
  auto t0 = std::chrono::steady_clock::now();
  const bool loop_fusion =
      program.loop_fusion && !spec.activations_on_chip && spec.offchip.bytes > 0;
  int recomputed = 0, duplicated = 0, written_back = 0;
  ir::Graph rewritten =
      loop_fusion ? rematerialize_cheap_values(given, spec.numerics == MatrixNumerics::bf16,
                                               &recomputed, &duplicated)
                  : ir::Graph();
  const ir::Graph& g = recomputed + duplicated > 0 ? rewritten : given;
  CompiledProgram out;
  Program& p = out.program;
  p.name = g.name();
  p.precision = options.precision;
  p.passes = precision_passes(options.precision, spec);
  p.numerics = spec.numerics;
  Context c(g, spec, options, p, out.constants, device);
  FusionPlan plan = plan_fusion(g, spec.numerics == MatrixNumerics::bf16);
  if (loop_fusion) written_back = plan_loops(c, g, plan);
  c.bf16_activations = program.bf16_activations && spec.numerics == MatrixNumerics::bf16;
  std::vector<std::vector<ir::ValueId>> dies_after =
      deaths(g, plan, c.kept_on_chip, &c.residual_in_place);
  // A training step's batch arrived during the previous step (Flax's prefetch_to_device, the TPU
  // infeed of TensorFlow's estimators): this step sends the next one, overlapped with its work,
  // into a second buffer. Inference programs wait for their inputs.
  for (ir::ValueId v : g.inputs()) {
    int32_t t = c.produce(v);
    if (stays_on_device(g, v)) continue;
    if (c.trains() && c.p.tensors[t].home == Level::offchip)
      stage(c, c.next_batch_buffer(v), true, true);
    else
      stage(c, t, true);
  }
  for (int i = 0; i < g.num_nodes(); ++i) {
    const ir::Node& n = g.node(i);
    if (is_folded(g, n)) continue;
    if (plan.emit_at[i] == i) emit_group(c, g, plan, i);
    for (ir::ValueId v : dies_after[i]) {
      auto it = c.tensor_of.find(v);
      if (it != c.tensor_of.end()) c.release(it->second);
    }
  }
  for (ir::ValueId v : g.outputs()) {
    int32_t t = c.tensor(v);
    p.outputs.push_back(t);
    if (!stays_on_device(g, v)) stage(c, t, false);
  }
  for (ir::ValueId v : g.inputs()) p.inputs.push_back(c.tensor_of.at(v));
  p.resident_onchip_bytes.assign(spec.cores, 0);
  p.resident_onchip_bytes[0] = static_cast<int64_t>(c.onchip.peak());
  p.replicas = program.replicas;

  CompileReport& r = out.report;
  r.device = device;
  program_metrics(c, plan, recomputed, r);
  r.metrics["late_reads_duplicated"] = duplicated;
  r.metrics["late_read_values_written_back"] = written_back;
  r.metrics["matrix_passes"] = static_cast<double>(p.passes);
  if (spec.numerics == MatrixNumerics::int8 && options.precision != "default")
    c.notes.push_back(fmt::format("precision '{}' has no effect on {}: its matrix units are int8",
                                  options.precision, spec.name));
  if (c.host_cursor > 0 && spec.activations_on_chip)
    c.notes.push_back(
        fmt::format("{} bytes of tensors did not fit {} and live in host memory (over {})",
                    c.host_cursor, spec.onchip.name, spec.host_link.name));
  r.tables["tpu_ops"] = ops_table(p);
  report_memory(c, program, r);
  report_replicas(spec, p, r);
  r.notes = c.notes;
  r.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace mimic::backends::tpu_emu
