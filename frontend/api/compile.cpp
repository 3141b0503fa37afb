#include "frontend/api/compile.h"

#include <fmt/format.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/registry.h"
#include "base/error.h"
#include "base/numeric_formats.h"
#include "frontend/api/random.h"
#include "frontend/ir/shape_inference.h"

namespace mimic {

struct Executable::Impl {
  ir::Graph graph;
  Device device;
  CompileOptions options;
  std::unique_ptr<backends::Executable> backend_executable;
  RunInfo info;
  std::vector<backends::Carry> carries;
  std::vector<bool> carried_inputs;  // by graph input
};

void check_fixed_batch(const ir::Graph& g, int64_t batch) {
  if (batch > 0 && !g.has_symbolic_batch() && !g.inputs().empty() &&
      g.input_type(0).shape.rank() > 0 && g.input_type(0).shape[0] != batch)
    throw InvalidArgument(fmt::format(
        "graph '{}' has a fixed batch of {} (input '{}' {}), cannot run batch {}", g.name(),
        g.input_type(0).shape[0], g.value(g.inputs()[0]).name, g.input_type(0).shape.str(), batch));
}

ir::Graph prepare_graph(const ir::Graph& g, int64_t batch, int64_t max_tensor_bytes) {
  auto evaluator = backends::cpu::make_evaluator();
  ir::InferOptions infer{evaluator.get()};
  infer.max_tensor_bytes = max_tensor_bytes;
  if (g.outputs().empty()) throw ShapeError(fmt::format("graph '{}' has no outputs", g.name()));
  if (g.has_symbolic_batch()) {
    if (batch <= 0)
      throw InvalidArgument(
          fmt::format("graph '{}' has a symbolic batch dimension: give a batch size > 0 (got {})",
                      g.name(), batch));
    return ir::bind_batch(g, batch, infer);
  }
  check_fixed_batch(g, batch);
  ir::Graph out = g;
  ir::infer_shapes(out, infer);
  return out;
}

ir::BatchNormVariance default_batch_norm_variance(const Device& device) {
  const std::string& backend = device.backend();
  return backend.rfind("tpu", 0) == 0 || backend.rfind("ipu", 0) == 0
             ? ir::BatchNormVariance::one_pass
             : ir::BatchNormVariance::two_pass;
}

namespace {

// A Dropout in training mode (a constant true training_mode input) with a nonzero ratio draws a
// random mask every run: only a train step, which draws the masks itself, runs one.
void refuse_random_dropout(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes()) {
    if (n.op != ir::OpType::Dropout || !n.has_input(2)) continue;
    const ir::Value& training = g.value(n.inputs[2]);
    if (!training.constant || !ir::element_as_double(*training.constant, 0)) continue;
    double ratio = n.has_input(1) ? ir::constant_scalar(g, n, 1).value_or(0.5) : 0.5;
    if (ratio > 0)
      throw UnsupportedOpError(
          fmt::format("{}: Dropout in training mode (ratio {}) draws a random mask every run; "
                      "train the model (mimic train, mimic.compile_train), or export it in eval "
                      "mode to run it",
                      ir::describe(g, n), ratio),
          {"Dropout"});
  }
}

}  // namespace

Executable compile(const ir::Graph& g, const Device& device, const CompileOptions& options) {
  device.require_available();
  auto impl = std::make_shared<Executable::Impl>();
  impl->graph =
      ir::expand_training_batch_norms(prepare_graph(g, options.batch, options.max_tensor_bytes),
                                      default_batch_norm_variance(device));
  refuse_random_dropout(impl->graph);
  impl->device = device;
  impl->options = options;
  const backends::Backend* backend = backends::Registry::global().find(device.backend());
  impl->backend_executable =
      backends::compile_with_fallback(*backend, impl->graph, device.arg(), options);
  impl->info.model = g.name();
  impl->info.device = device.str();
  impl->info.precision = options.precision;
  if (!impl->graph.inputs().empty() && impl->graph.input_type(0).shape.rank() > 0)
    impl->info.batch = impl->graph.input_type(0).shape[0];
  Executable e;
  e.impl_ = std::move(impl);
  return e;
}

namespace {

// Count, dtype and shape of every input but the carried ones.
void check_inputs(const ir::Graph& g, const std::vector<ir::HostTensor>& inputs,
                  const std::vector<bool>& carried) {
  if (inputs.size() != g.inputs().size())
    throw InvalidArgument(fmt::format("graph '{}' takes {} input(s), got {}", g.name(),
                                      g.inputs().size(), inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i < carried.size() && carried[i]) continue;
    const ir::Value& v = g.value(g.inputs()[i]);
    if (!inputs[i].defined() || inputs[i].type() != v.type)
      throw InvalidArgument(
          fmt::format("input {} '{}' must be {}, got {}", i, v.name, v.type.str(),
                      inputs[i].defined() ? inputs[i].type().str() : "an undefined tensor"));
  }
}

void check_carry(const ir::Graph& g, const backends::Carry& c, std::vector<bool>& input_used,
                 std::vector<bool>& output_used) {
  int n_in = static_cast<int>(g.inputs().size()), n_out = static_cast<int>(g.outputs().size());
  if (c.input < 0 || c.input >= n_in || c.output < 0 || c.output >= n_out || c.guard < -1 ||
      c.guard >= n_out)
    throw InvalidArgument(fmt::format(
        "graph '{}': carry input {} <- output {} (guard {}) is out of range ({} inputs, {} "
        "outputs)",
        g.name(), c.input, c.output, c.guard, n_in, n_out));
  if (input_used[c.input] || output_used[c.output])
    throw InvalidArgument(fmt::format("graph '{}': input {} or output {} is carried twice",
                                      g.name(), c.input, c.output));
  input_used[c.input] = output_used[c.output] = true;
  const ir::TensorType& in = g.input_type(c.input);
  const ir::TensorType& out = g.value(g.outputs()[c.output]).type;
  if (in != out)
    throw InvalidArgument(fmt::format("graph '{}': carried input {} is {}, its output {} is {}",
                                      g.name(), c.input, in.str(), c.output, out.str()));
  if (c.guard >= 0) {
    const ir::TensorType& guard = g.value(g.outputs()[c.guard]).type;
    if (guard.dtype != ir::DType::f32 || guard.shape.numel() != 1)
      throw InvalidArgument(fmt::format("graph '{}': carry guard output {} is {}, not one f32",
                                        g.name(), c.guard, guard.str()));
  }
}

}  // namespace

template <typename Run>
RunOutput Executable::observed_run(Run&& run) const {
  if (impl_->options.compile_only)
    throw InvalidArgument(
        fmt::format("graph '{}' was compiled for {} with compile_only: it cannot run",
                    impl_->graph.name(), impl_->device.str()));
  ObservedRun hold;
  RunObserver* observer = hold.observer();
  sim::NullSink null_sink;
  sim::EventSink& sink = observer ? observer->begin_run(impl_->info) : null_sink;
  try {
    backends::RunResult r = run(sink);
    if (observer) observer->end_run(true, "");
    return RunOutput{std::move(r.outputs), std::move(r.report)};
  } catch (const std::exception& e) {
    if (observer) observer->end_run(false, e.what());
    throw;
  }
}

RunOutput Executable::run(const std::vector<ir::HostTensor>& inputs) const {
  check_inputs(impl_->graph, inputs, {});
  return observed_run(
      [&](sim::EventSink& sink) { return impl_->backend_executable->run(inputs, sink); });
}

RunOutput Executable::run_carried(const std::vector<ir::HostTensor>& inputs) const {
  check_inputs(impl_->graph, inputs, impl_->carried_inputs);
  return observed_run(
      [&](sim::EventSink& sink) { return impl_->backend_executable->run_carried(inputs, sink); });
}

void Executable::set_carries(const std::vector<backends::Carry>& carries,
                             const std::vector<ir::HostTensor>& initial) {
  const ir::Graph& g = impl_->graph;
  std::vector<bool> input_used(g.inputs().size(), false), output_used(g.outputs().size(), false);
  for (const backends::Carry& c : carries) check_carry(g, c, input_used, output_used);
  if (initial.size() != carries.size())
    throw InvalidArgument(fmt::format("graph '{}': {} initial values for {} carries", g.name(),
                                      initial.size(), carries.size()));
  for (size_t i = 0; i < carries.size(); ++i) check_carry_value(i, initial[i], carries[i].input);
  impl_->carried_inputs = input_used;
  impl_->carries = carries;
  impl_->backend_executable->set_carries(carries, initial);
}

void Executable::check_carry_value(size_t carry, const ir::HostTensor& value, int input) const {
  const ir::TensorType& want = impl_->graph.input_type(input);
  if (!value.defined() || value.type() != want)
    throw InvalidArgument(
        fmt::format("carried value {} (input {} '{}') must be {}, got {}", carry, input,
                    impl_->graph.value(impl_->graph.inputs()[input]).name, want.str(),
                    value.defined() ? value.type().str() : "an undefined tensor"));
}

ir::HostTensor Executable::read_carry(size_t carry) const {
  if (carry >= impl_->carries.size())
    throw InvalidArgument(
        fmt::format("carry {} does not exist ({} carries)", carry, impl_->carries.size()));
  return impl_->backend_executable->read_carry(carry);
}

void Executable::write_carry(size_t carry, const ir::HostTensor& value) const {
  if (carry >= impl_->carries.size())
    throw InvalidArgument(
        fmt::format("carry {} does not exist ({} carries)", carry, impl_->carries.size()));
  check_carry_value(carry, value, impl_->carries[carry].input);
  impl_->backend_executable->write_carry(carry, value);
}

bool Executable::carries_on_device() const {
  return impl_->backend_executable->carries_on_device();
}

const ir::Graph& Executable::graph() const {
  return impl_->graph;
}
const Device& Executable::device() const {
  return impl_->device;
}
const CompileOptions& Executable::options() const {
  return impl_->options;
}
const backends::CompileReport& Executable::compile_report() const {
  return impl_->backend_executable->compile_report();
}
RunInfo& Executable::run_info() {
  return impl_->info;
}
const RunInfo& Executable::run_info() const {
  return impl_->info;
}

int64_t index_input_high(const ir::Graph& g, ir::ValueId input, int64_t fallback) {
  int64_t high = fallback;
  std::vector<ir::ValueId> values{input};
  while (!values.empty()) {
    ir::ValueId v = values.back();
    values.pop_back();
    for (const ir::Node& n : g.nodes()) {
      if (n.op == ir::OpType::Gather && n.has_input(1) && n.inputs[1] == v) {
        const ir::Shape& data = g.value(n.inputs[0]).type.shape;
        if (data.rank() == 0) continue;
        int64_t axis = n.attrs.get_int("axis", 0);
        int64_t extent = data[static_cast<int>(axis < 0 ? axis + data.rank() : axis)];
        if (extent > 0) high = std::min(high, extent);
      } else if ((ir::is_view_op(n.op) || n.op == ir::OpType::Cast) && n.inputs[0] == v) {
        values.push_back(n.outputs[0]);
      }
    }
  }
  return high;
}

std::vector<ir::HostTensor> random_inputs(const ir::Graph& g, uint64_t seed, int64_t int_high) {
  std::vector<ir::HostTensor> out;
  Random rng(seed);
  for (ir::ValueId v : g.inputs()) {
    const ir::TensorType& t = g.value(v).type;
    if (t.shape.is_symbolic())
      throw InvalidArgument(fmt::format("input '{}' has shape {}: bind the batch first",
                                        g.value(v).name, t.shape.str()));
    out.push_back(rng.tensor(t.dtype, t.shape, index_input_high(g, v, int_high)));
  }
  return out;
}

}  // namespace mimic
