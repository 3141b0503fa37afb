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
};

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
  if (batch > 0 && !g.inputs().empty() && g.input_type(0).shape.rank() > 0 &&
      g.input_type(0).shape[0] != batch)
    throw InvalidArgument(fmt::format(
        "graph '{}' has a fixed batch of {} (input '{}' {}), cannot run batch {}", g.name(),
        g.input_type(0).shape[0], g.value(g.inputs()[0]).name, g.input_type(0).shape.str(), batch));
  ir::Graph out = g;
  ir::infer_shapes(out, infer);
  return out;
}

Executable compile(const ir::Graph& g, const Device& device, const CompileOptions& options) {
  device.require_available();
  auto impl = std::make_shared<Executable::Impl>();
  impl->graph = prepare_graph(g, options.batch, options.max_tensor_bytes);
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

RunOutput Executable::run(const std::vector<ir::HostTensor>& inputs) const {
  const ir::Graph& g = impl_->graph;
  if (impl_->options.compile_only)
    throw InvalidArgument(
        fmt::format("graph '{}' was compiled for {} with compile_only: it cannot run", g.name(),
                    impl_->device.str()));
  if (inputs.size() != g.inputs().size())
    throw InvalidArgument(fmt::format("graph '{}' takes {} input(s), got {}", g.name(),
                                      g.inputs().size(), inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = g.value(g.inputs()[i]);
    if (!inputs[i].defined() || inputs[i].type() != v.type)
      throw InvalidArgument(
          fmt::format("input {} '{}' must be {}, got {}", i, v.name, v.type.str(),
                      inputs[i].defined() ? inputs[i].type().str() : "an undefined tensor"));
  }
  RunObserver* observer = current_run_observer();
  sim::NullSink null_sink;
  sim::EventSink& sink = observer ? observer->begin_run(impl_->info) : null_sink;
  try {
    backends::RunResult r = impl_->backend_executable->run(inputs, sink);
    if (observer) observer->end_run(true, "");
    return RunOutput{std::move(r.outputs), std::move(r.report)};
  } catch (const std::exception& e) {
    if (observer) observer->end_run(false, e.what());
    throw;
  }
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

std::vector<ir::HostTensor> random_inputs(const ir::Graph& g, uint64_t seed, int64_t int_high) {
  std::vector<ir::HostTensor> out;
  Random rng(seed);
  for (ir::ValueId v : g.inputs()) {
    const ir::TensorType& t = g.value(v).type;
    if (t.shape.is_symbolic())
      throw InvalidArgument(fmt::format("input '{}' has shape {}: bind the batch first",
                                        g.value(v).name, t.shape.str()));
    out.push_back(rng.tensor(t.dtype, t.shape, int_high));
  }
  return out;
}

}  // namespace mimic
