#include "frontend/api/train.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "base/error.h"
#include "frontend/api/npz.h"
#include "frontend/api/random.h"
#include "frontend/ir/shape_inference.h"

namespace mimic {

namespace {

NamedTensors module_params(nn::Module& module) {
  NamedTensors out;
  for (auto& [name, t] : module.named_parameters()) out.emplace_back(name, t.host());
  return out;
}

ir::Graph trace_for_training(nn::Module& module, const ir::TensorType& input_type) {
  if (input_type.shape.is_symbolic())
    throw InvalidArgument(
        fmt::format("training: input type {} must have a concrete batch", input_type.str()));
  return nn::trace_module(module, "input", input_type.dtype, input_type.shape,
                          module.name().empty() ? "model" : module.name());
}

// Keep-with-probability (1 - ratio) mask of one Dropout node for one step.
ir::HostTensor dropout_mask(const TrainGraph::Dropout& d, uint64_t seed, int64_t step, int index) {
  Random rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step) * 1000003u +
             static_cast<uint64_t>(index));
  ir::HostTensor m(ir::DType::f32, d.mask_type.shape);
  float* p = m.data<float>();
  for (int64_t i = 0; i < m.numel(); ++i) p[i] = rng.uniform() >= d.ratio ? 1.0f : 0.0f;
  return m;
}

std::shared_ptr<TrainGraph> step_graph(const ir::Graph& forward, const NamedTensors& params,
                                       const Device& device, const TrainOptions& options) {
  auto t = std::make_shared<TrainGraph>(
      build_train_graph(forward, params, options.loss, options.optimizer,
                        options.loss_scale.mode != LossScaleMode::none,
                        options.batch_norm_variance.value_or(default_batch_norm_variance(device))));
  apply_recompute(*t, options.recompute, options.recompute_checkpoints);
  return t;
}

}  // namespace

TrainStep::TrainStep(const ir::Graph& forward, const NamedTensors& params, const Device& device,
                     const TrainOptions& options)
    : graph_(step_graph(forward, params, device, options)),
      options_(options),
      lr_(options.optimizer.lr),
      scaler_(options.loss_scale) {
  const TrainGraph& t = *graph_;
  options.schedule.validate();
  int data_inputs = 0;
  for (const TrainSlot& s : t.inputs) data_inputs += s.role == TrainRole::data;
  if (data_inputs != 1)
    throw InvalidArgument(fmt::format("training: graph '{}' has {} data inputs, needs exactly one",
                                      forward.name(), data_inputs));
  std::map<std::string, const ir::HostTensor*> by_name;
  for (const auto& [name, tensor] : params) by_name[name] = &tensor;
  std::vector<ir::HostTensor> initial;
  for (const std::string& n : t.params) initial.push_back(*by_name.at(n));
  for (const std::string& n : t.buffers) initial.push_back(*by_name.at(n));
  for (const ir::TensorType& type : t.state_types) initial.emplace_back(type.dtype, type.shape);
  exe_ = compile(t.graph, device, options.compile);
  describe_run(forward, options);
  carry_state(std::move(initial));
}

// What a trace's run row says of each step: the model (its forward graph's name), its batch, and
// the loss and optimizer in the config JSON. Callers that know a better model name (the CLI's zoo
// name or ONNX path) overwrite it.
void TrainStep::describe_run(const ir::Graph& forward, const TrainOptions& options) {
  RunInfo& info = exe_.run_info();
  info.model = forward.name();
  const ir::Graph& g = exe_.graph();
  for (size_t i = 0; i < graph_->inputs.size(); ++i)
    if (graph_->inputs[i].role == TrainRole::data &&
        g.input_type(static_cast<int>(i)).shape.rank() > 0)
      info.batch = g.input_type(static_cast<int>(i)).shape[0];
  const OptimizerConfig& opt = options.optimizer;
  nlohmann::json config{{"training",
                         {{"loss", loss_name(options.loss.kind)},
                          {"optimizer", optimizer_name(opt.kind)},
                          {"lr", opt.lr},
                          {"momentum", opt.momentum},
                          {"weight_decay", opt.weight_decay},
                          {"max_grad_norm", opt.max_grad_norm},
                          {"parameters", graph_->params.size()},
                          {"loss_scaling", options.loss_scale.mode != LossScaleMode::none}}}};
  info.config_json = config.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Parameters, buffers and optimizer state become carried values: input slot (role, index) takes
// the output slot of the same role and index. With loss scaling, the grads_check output guards
// parameters and optimizer state (a step with an inf or NaN gradient keeps them); BatchNorm
// statistics update either way, as PyTorch's forward pass updates them before the check.
void TrainStep::carry_state(std::vector<ir::HostTensor> initial) {
  const TrainGraph& t = *graph_;
  int guard = -1;
  for (size_t o = 0; o < t.outputs.size(); ++o)
    if (t.outputs[o].role == TrainRole::grads_check) guard = static_cast<int>(o);
  auto base = [&](TrainRole role) -> size_t {
    return role == TrainRole::param    ? 0
           : role == TrainRole::buffer ? t.params.size()
                                       : t.params.size() + t.buffers.size();
  };
  std::vector<backends::Carry> carries(initial.size());
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    TrainRole role = t.inputs[i].role;
    if (role != TrainRole::param && role != TrainRole::buffer && role != TrainRole::state) continue;
    carries[base(role) + t.inputs[i].index].input = static_cast<int>(i);
  }
  for (size_t o = 0; o < t.outputs.size(); ++o) {
    TrainRole role = t.outputs[o].role;
    if (role != TrainRole::param && role != TrainRole::buffer && role != TrainRole::state) continue;
    backends::Carry& c = carries[base(role) + t.outputs[o].index];
    c.output = static_cast<int>(o);
    c.guard = role == TrainRole::buffer ? -1 : guard;
  }
  for (const auto* names : {&t.params, &t.buffers, &t.state})
    carry_names_.insert(carry_names_.end(), names->begin(), names->end());
  for (const ir::HostTensor& v : initial) carry_types_.push_back(v.type());
  read_back_ = initial;
  for (ir::HostTensor& v : read_back_) v = v.clone();  // the step never writes the caller's
  exe_.set_carries(carries, read_back_);
}

const ir::HostTensor& TrainStep::carried(size_t carry) const {
  if (!read_back_[carry].defined()) read_back_[carry] = exe_.read_carry(carry);
  return read_back_[carry];
}

TrainStep::TrainStep(nn::Module& module, const ir::TensorType& input_type, const Device& device,
                     const TrainOptions& options)
    : TrainStep(trace_for_training(module, input_type), module_params(module), device, options) {}

void TrainStep::set_lr(double lr) {
  OptimizerConfig o = options_.optimizer;
  o.lr = lr;
  o.validate();
  lr_ = lr;
}

float TrainStep::step(const ir::HostTensor& input, const ir::HostTensor& target) {
  const TrainGraph& t = *graph_;
  check_loss_target(options_.loss, t.output_type, target);
  float lr_value = static_cast<float>(lr()), step = static_cast<float>(step_ + 1);
  float scale = static_cast<float>(scaler_.scale());
  std::vector<ir::HostTensor> feed;
  for (const TrainSlot& s : t.inputs) {
    switch (s.role) {
      case TrainRole::data:
        feed.push_back(input);
        break;
      case TrainRole::target:
        feed.push_back(target);
        break;
      case TrainRole::lr:
        feed.push_back(ir::HostTensor::from(ir::Shape(), &lr_value));
        break;
      case TrainRole::step:
        feed.push_back(ir::HostTensor::from(ir::Shape(), &step));
        break;
      case TrainRole::param:
      case TrainRole::buffer:
      case TrainRole::state:
        feed.emplace_back();  // carried: on the device
        break;
      case TrainRole::dropout_mask:
        feed.push_back(dropout_mask(t.dropouts[s.index], options_.seed, step_ + 1, s.index));
        break;
      case TrainRole::loss_scale:
        feed.push_back(ir::HostTensor::from(ir::Shape(), &scale));
        break;
      case TrainRole::loss:
      case TrainRole::grads_check:
        break;
    }
  }
  RunOutput out = exe_.run_carried(feed);
  // A timing-only step computes no numbers (its outputs are zeros): the state keeps its values.
  if (!options_.compile.timing_only)
    for (ir::HostTensor& v : read_back_) v = ir::HostTensor();
  bool found_inf = false;
  float loss = 0;
  for (size_t i = 0; i < t.outputs.size(); ++i) {
    if (t.outputs[i].role == TrainRole::grads_check)
      found_inf = !std::isfinite(out.outputs[i].data<float>()[0]);
    if (t.outputs[i].role == TrainRole::loss) loss = out.outputs[i].data<float>()[0];
  }
  if (scaling()) scaler_.update(found_inf);
  if (found_inf)
    ++skipped_;
  else
    ++step_;
  last_report_ = std::move(out.report);
  return loss;
}

NamedTensors TrainStep::parameters() const {
  NamedTensors out;
  size_t n = graph_->params.size() + graph_->buffers.size();
  for (size_t i = 0; i < n; ++i) out.emplace_back(carry_names_[i], carried(i));
  return out;
}

NamedTensors TrainStep::state_dict() const {
  NamedTensors out = parameters();
  for (size_t i = out.size(); i < carry_names_.size(); ++i)
    out.emplace_back(carry_names_[i], carried(i));
  int64_t step = step_;
  out.emplace_back("optimizer.step", ir::HostTensor::from(ir::Shape(), &step));
  if (scaling()) {
    float scale = static_cast<float>(scaler_.scale());  // powers of 2: exact in f32
    int64_t good = scaler_.good_steps();
    out.emplace_back("loss_scale.scale", ir::HostTensor::from(ir::Shape(), &scale));
    out.emplace_back("loss_scale.good_steps", ir::HostTensor::from(ir::Shape(), &good));
  }
  return out;
}

void TrainStep::load_state_dict(const NamedTensors& values) {
  std::map<std::string, size_t> slots;
  for (size_t i = 0; i < carry_names_.size(); ++i) slots[carry_names_[i]] = i;
  for (const auto& [name, v] : values) {  // check everything before changing anything
    if (name == "optimizer.step") {
      if (v.dtype() != ir::DType::i64 || v.numel() != 1 || v.data<int64_t>()[0] < 0)
        throw InvalidArgument(fmt::format(
            "load_state_dict: 'optimizer.step' must be one i64 >= 0, got {}", v.type().str()));
      continue;
    }
    if (name.rfind("loss_scale.", 0) == 0) {
      load_scaler_entry(name, v);
      continue;
    }
    auto it = slots.find(name);
    if (it == slots.end())
      throw InvalidArgument(fmt::format("load_state_dict: unknown entry '{}'", name));
    if (carry_types_[it->second] != v.type())
      throw InvalidArgument(fmt::format("load_state_dict: '{}' is {}, the model has {}", name,
                                        v.type().str(), carry_types_[it->second].str()));
  }
  for (const auto& [name, v] : values) {
    if (name == "optimizer.step")
      step_ = v.data<int64_t>()[0];
    else if (name == "loss_scale.scale")
      scaler_.set_scale(v.data<float>()[0], scaler_.good_steps());
    else if (name == "loss_scale.good_steps")
      scaler_.set_scale(scaler_.scale(), v.data<int64_t>()[0]);
    else {
      size_t carry = slots.at(name);
      read_back_[carry] = v.clone();
      exe_.write_carry(carry, read_back_[carry]);
    }
  }
}

// Checks a loss-scaler entry of a state dict (loading it into a step without scaling is an error).
void TrainStep::load_scaler_entry(const std::string& name, const ir::HostTensor& v) {
  if (!scaling())
    throw InvalidArgument(
        fmt::format("load_state_dict: '{}' given, but this step has no loss scaling", name));
  bool scale = name == "loss_scale.scale", good = name == "loss_scale.good_steps";
  if (!scale && !good)
    throw InvalidArgument(fmt::format("load_state_dict: unknown entry '{}'", name));
  ir::DType want = scale ? ir::DType::f32 : ir::DType::i64;
  if (v.dtype() != want || v.numel() != 1 ||
      (scale ? !(v.data<float>()[0] > 0) : v.data<int64_t>()[0] < 0))
    throw InvalidArgument(fmt::format("load_state_dict: '{}' must be one {} {}, got {}", name,
                                      ir::dtype_name(want), scale ? "> 0" : ">= 0",
                                      v.type().str()));
}

void TrainStep::save(const std::string& path) const {
  write_npz(path, state_dict());
}

void TrainStep::load(const std::string& path) {
  load_state_dict(read_npz(path));
}

ir::Graph bind_model_batch(const ir::Graph& g, int64_t batch) {
  check_fixed_batch(g, batch);
  if (!g.has_symbolic_batch()) return g;
  if (batch <= 0)
    throw InvalidArgument(fmt::format("graph '{}': batch {} must be > 0", g.name(), batch));
  auto evaluator = backends::cpu::make_evaluator();
  return ir::bind_batch(g, batch, ir::InferOptions{evaluator.get()});
}

}  // namespace mimic
