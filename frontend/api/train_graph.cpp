#include "frontend/api/train_graph.h"

#include <fmt/format.h>

#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "base/error.h"
#include "frontend/ir/autodiff.h"
#include "frontend/ir/batch_norm_train.h"
#include "frontend/ir/op_helpers.h"
#include "frontend/ir/recurrent.h"
#include "frontend/ir/recurrent_expand.h"
#include "frontend/ir/shape_inference.h"

namespace mimic {

using ir::OpType;
using ir::ValueId;

namespace {

// The forward graph's constants that hold a parameter (by storage), and which parameters feed a
// BatchNormalization's running mean or variance (buffers).
struct Matched {
  std::unordered_map<int, ValueId> value_of_param;
  std::vector<bool> is_buffer;
};

Matched match_parameters(const ir::Graph& forward, const NamedTensors& params) {
  if (forward.outputs().size() != 1)
    throw InvalidArgument(
        fmt::format("training: graph '{}' has {} outputs, needs exactly one (the model output)",
                    forward.name(), forward.outputs().size()));
  if (forward.has_symbolic_batch())
    throw InvalidArgument(
        fmt::format("training: graph '{}' has a symbolic batch; trace it with a concrete batch",
                    forward.name()));
  Matched m{{}, std::vector<bool>(params.size(), false)};
  std::unordered_map<ValueId, int> param_of_value;
  for (size_t p = 0; p < params.size(); ++p)
    for (ValueId v = 0; v < forward.num_values(); ++v) {
      const ir::Value& val = forward.value(v);
      if (val.constant && val.producer < 0 && val.constant->same_storage(params[p].second) &&
          val.constant->type() == params[p].second.type() && !param_of_value.count(v)) {
        param_of_value[v] = static_cast<int>(p);
        m.value_of_param[static_cast<int>(p)] = v;
        break;
      }
    }
  for (const ir::Node& n : forward.nodes())
    if (n.op == OpType::BatchNormalization)
      for (int i = 3; i < 5 && i < n.num_inputs(); ++i)
        if (param_of_value.count(n.inputs[i])) m.is_buffer[param_of_value[n.inputs[i]]] = true;
  return m;
}

// The values the rest of the build refers to, moved along when the graph is rewritten.
struct LiveValues {
  ValueId output;
  std::vector<ValueId> params, buffers;
  std::unordered_map<ValueId, ValueId> updated;   // buffer input -> its new value
  std::vector<ir::CompositeGradient> composites;  // training BatchNormalizations
  BatchNormVariance variance = BatchNormVariance::two_pass;
};

// Training-mode BatchNormalization from batch statistics; returns y and records the running-stat
// updates of inputs 3 and 4 and the composition's gradient.
ValueId batch_norm_train(ir::GraphBuilder& b, const ir::Node& n, const std::vector<ValueId>& in,
                         LiveValues& live) {
  ir::BatchStatistics s = ir::batch_norm_batch_statistics(b, n, in[0], in[1], in[2], live.variance);
  const ir::Shape& xs = b.shape(in[0]);
  const int64_t channels = b.shape(in[1])[0];
  const int64_t count = xs.numel() / channels;
  const double m = 1.0 - n.attrs.get_float("momentum", 0.9);
  ir::Shape flat({channels});
  double unbias = count > 1 ? static_cast<double>(count) / static_cast<double>(count - 1) : 1.0;
  live.updated[in[3]] = b.add(b.scale(in[3], 1.0 - m), b.scale(b.reshape(s.mean, flat), m));
  live.updated[in[4]] = b.add(b.scale(in[4], 1.0 - m), b.scale(b.reshape(s.var, flat), m * unbias));
  ir::Node whole = n;
  whole.inputs = {in[0], in[1], in[2], s.xhat, s.rstd};
  whole.outputs = {s.y};
  live.composites.push_back({whole, 3, ir::batch_norm_training_rule});
  return s.y;
}

// Training-mode Dropout: x * mask / (1 - ratio) with the mask a new graph input.
void dropout_train(TrainGraph& t, const ir::Node& n, const std::vector<ValueId>& in,
                   std::unordered_map<ValueId, ValueId>& map) {
  ir::GraphBuilder b(t.graph, n.name);
  double ratio = n.has_input(1) ? ir::constant_scalar(t.graph, n, 1).value_or(0.5) : 0.5;
  if (n.has_input(1) && !t.graph.value(in[1]).constant)
    throw UnsupportedOpError(
        fmt::format("training: {}: the dropout ratio must be a constant", n.name));
  if (!(ratio >= 0 && ratio < 1))
    throw InvalidArgument(
        fmt::format("training: {}: dropout ratio {} is outside [0, 1)", n.name, ratio));
  ValueId x = in[0], y = x, mask = ir::kNoValue;
  if (ratio > 0) {
    ir::TensorType type{ir::DType::f32, b.shape(x)};
    mask = t.graph.add_input(n.name + ".mask", type.dtype, type.shape);
    t.inputs.push_back({TrainRole::dropout_mask, static_cast<int>(t.dropouts.size())});
    t.dropouts.push_back({type, ratio});
    y = b.scale(b.mul(x, b.cast(mask, b.dtype(x))), 1.0 / (1.0 - ratio));
  }
  map[n.outputs[0]] = y;
  if (n.outputs.size() > 1) {
    ValueId keep = mask == ir::kNoValue ? b.full({ir::DType::f32, b.shape(x)}, 1.0) : mask;
    map[n.outputs[1]] = b.cast(keep, ir::DType::boolean);
  }
}

// Copies `src` into t.graph node by node (inputs already created), rewriting BatchNormalization
// and Dropout; nodes whose inputs are all constant fold (shape computations), parameters being
// inputs now.
ValueId copy_forward(const ir::Graph& src, TrainGraph& t, std::unordered_map<ValueId, ValueId>& map,
                     LiveValues& live) {
  ir::Graph& dst = t.graph;
  auto evaluator = backends::cpu::make_evaluator();
  ir::InferOptions infer{evaluator.get()};
  auto mapped = [&](ValueId v) {
    if (v == ir::kNoValue) return ir::kNoValue;
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    const ir::Value& val = src.value(v);
    if (!val.constant)
      throw ShapeError(fmt::format("training: value '{}' is used before defined", val.name));
    return map[v] = dst.add_constant(val.name, *val.constant);
  };
  for (const ir::Node& n : src.nodes()) {
    std::vector<ValueId> in;
    for (ValueId v : n.inputs) in.push_back(mapped(v));
    if (n.op == OpType::BatchNormalization) {
      ir::GraphBuilder b(dst, n.name);
      map[n.outputs[0]] = batch_norm_train(b, n, in, live);
      continue;
    }
    if (n.op == OpType::Dropout) {
      ir::Node copy = n;
      copy.inputs = in;
      dropout_train(t, copy, in, map);
      continue;
    }
    std::vector<std::string> names;
    for (ValueId v : n.outputs) names.push_back(src.value(v).name);
    std::vector<ValueId> out =
        dst.add_node(n.op, n.name, in, n.attrs, static_cast<int>(n.outputs.size()), names);
    ir::infer_node(dst, dst.num_nodes() - 1, infer);
    for (size_t i = 0; i < out.size(); ++i) map[n.outputs[i]] = out[i];
  }
  return mapped(src.outputs().at(0));
}

// Replaces every recurrent node of t.graph (parameters are inputs by now, so the unrolling
// slices and transposes them with ops that have gradient rules) by its unrolled ops.
void unroll_recurrent_layers(TrainGraph& t, LiveValues& live) {
  const ir::Graph& g = t.graph;
  std::vector<bool> pick(g.num_nodes(), false);
  bool any = false;
  for (int i = 0; i < g.num_nodes(); ++i) {
    const ir::Node& n = g.node(i);
    if (!ir::is_recurrent(n.op)) continue;
    std::string why;
    if (!ir::can_unroll_recurrent(g, n, &why))
      throw UnsupportedOpError(
          fmt::format("training: {} has no gradient: it cannot be unrolled ({})",
                      ir::describe(g, n), why),
          {ir::op_name(n.op)});
    pick[i] = any = true;
  }
  if (!any) return;
  std::vector<ValueId> map;
  ir::Graph unrolled = ir::unroll_recurrent_nodes(g, pick, &map);
  live.output = map.at(live.output);
  for (ValueId& v : live.params) v = map.at(v);
  for (ValueId& v : live.buffers) v = map.at(v);
  std::unordered_map<ValueId, ValueId> updated;
  for (const auto& [from, to] : live.updated) updated[map.at(from)] = map.at(to);
  live.updated = std::move(updated);
  for (ir::CompositeGradient& c : live.composites)
    for (auto* values : {&c.node.inputs, &c.node.outputs})
      for (ValueId& v : *values) v = map.at(v);
  t.graph = std::move(unrolled);
}

// Graph inputs for the forward graph's data inputs and its used parameters (buffers apart).
void add_parameter_inputs(TrainGraph& t, const ir::Graph& forward, const NamedTensors& params,
                          std::unordered_map<ValueId, ValueId>& map,
                          std::vector<ValueId>& param_values, std::vector<ValueId>& buffer_values) {
  Matched matched = match_parameters(forward, params);
  for (ValueId v : forward.inputs()) {
    const ir::Value& val = forward.value(v);
    map[v] = t.graph.add_input(val.name, val.type.dtype, val.type.shape);
    t.inputs.push_back({TrainRole::data});
  }
  for (size_t p = 0; p < params.size(); ++p) {
    auto it = matched.value_of_param.find(static_cast<int>(p));
    if (it == matched.value_of_param.end()) continue;  // not used by the graph
    const ir::TensorType& type = forward.value(it->second).type;
    ValueId in = map[it->second] = t.graph.add_input(params[p].first, type.dtype, type.shape);
    bool buffer = matched.is_buffer[p];
    t.inputs.push_back({buffer ? TrainRole::buffer : TrainRole::param,
                        static_cast<int>(buffer ? t.buffers.size() : t.params.size())});
    (buffer ? t.buffers : t.params).push_back(params[p].first);
    (buffer ? t.buffer_types : t.param_types).push_back(type);
    (buffer ? buffer_values : param_values).push_back(in);
  }
}

// Optimizer state inputs and the updated parameters and state as outputs (after the loss).
std::vector<ValueId> add_updates(TrainGraph& t, ir::GraphBuilder& b,
                                 const OptimizerConfig& optimizer,
                                 const std::vector<ValueId>& param_values,
                                 const std::vector<ValueId>& grads, ValueId lr, ValueId step) {
  std::vector<ValueId> new_state;
  for (size_t p = 0; p < param_values.size(); ++p) {
    std::vector<ValueId> state;
    for (const std::string& s : optimizer_slots(optimizer)) {
      t.inputs.push_back({TrainRole::state, static_cast<int>(t.state.size())});
      t.state.push_back(t.params[p] + "." + s);
      t.state_types.push_back(t.param_types[p]);
      state.push_back(
          t.graph.add_input(t.state.back(), t.param_types[p].dtype, t.param_types[p].shape));
    }
    b.set_prefix("optimizer/" + t.params[p]);
    ParamUpdate u = append_update(b, optimizer, param_values[p], grads[p], state, lr, step);
    t.graph.add_output(u.param);
    t.outputs.push_back({TrainRole::param, static_cast<int>(p)});
    new_state.insert(new_state.end(), u.state.begin(), u.state.end());
  }
  return new_state;
}

// Gradients of loss * scale, times 1 / scale, and the inf/NaN check: sum(g * 0) over every
// gradient is 0 when all are finite and NaN otherwise (inf * 0 = NaN), and cannot overflow.
std::vector<ValueId> scaled_gradients(TrainGraph& t, ir::GraphBuilder& b, ValueId loss_value,
                                      const LiveValues& live) {
  ValueId scale = t.graph.add_input("loss_scale", ir::DType::f32, ir::Shape());
  t.inputs.push_back({TrainRole::loss_scale});
  b.set_prefix("loss_scale");
  ValueId scaled = b.mul(loss_value, b.cast(scale, b.dtype(loss_value)));
  std::vector<ValueId> grads = ir::append_gradients(t.graph, scaled, live.params, live.composites);
  b.set_prefix("loss_scale");
  ValueId inv = b.op(OpType::Reciprocal, {scale});
  ValueId check = ir::kNoValue;
  for (ValueId& g : grads) {
    g = b.mul(g, b.cast(inv, b.dtype(g)));
    std::vector<int64_t> axes(b.shape(g).rank());
    for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
    ValueId zeros = b.cast(b.scale(g, 0.0), ir::DType::f32);
    ValueId s = axes.empty() ? zeros : b.reduce_sum(zeros, axes, false);
    check = check == ir::kNoValue ? s : b.add(check, s);
  }
  t.graph.add_output(check == ir::kNoValue ? b.scalar(0.0, ir::DType::f32) : check);
  t.outputs.push_back({TrainRole::grads_check});
  return grads;
}

// Memory roles of the step's inputs and of the gradients, and the phase of each node, from the
// node counts at the end of the forward, loss and backward parts (see ir::ValueRole, StepPhase).
void annotate_step(TrainGraph& t, const std::vector<ValueId>& grads, int forward_end, int loss_end,
                   int backward_end) {
  ir::Graph& g = t.graph;
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    TrainRole r = t.inputs[i].role;
    g.value(g.inputs()[i]).role = r == TrainRole::param    ? ir::ValueRole::weight
                                  : r == TrainRole::buffer ? ir::ValueRole::buffer
                                  : r == TrainRole::state  ? ir::ValueRole::optimizer_state
                                                           : ir::ValueRole::data;
  }
  for (ValueId v : grads) g.value(v).role = ir::ValueRole::gradient;
  // The updated parameters, statistics and optimizer state are what their inputs were: XLA
  // updates them in place (donated buffers), so a memory plan counts them in the same category.
  for (size_t i = 0; i < t.outputs.size(); ++i) {
    TrainRole r = t.outputs[i].role;
    ir::Value& v = g.value(g.outputs()[i]);
    if (v.producer < 0 || v.role != ir::ValueRole::activation) continue;
    if (r == TrainRole::param) v.role = ir::ValueRole::weight;
    if (r == TrainRole::buffer) v.role = ir::ValueRole::buffer;
    if (r == TrainRole::state) v.role = ir::ValueRole::optimizer_state;
  }
  for (int n = 0; n < g.num_nodes(); ++n)
    g.node(n).phase = n < forward_end    ? ir::StepPhase::forward
                      : n < loss_end     ? ir::StepPhase::loss
                      : n < backward_end ? ir::StepPhase::backward
                                         : ir::StepPhase::update;
}

}  // namespace

namespace {

// Whether a parameter read at input `input` of `n` trains: not through shape and count
// parameters, Resize's roi, scales and sizes, Dropout's ratio, Clip's bounds or Pad's value (a
// model file may store them as float initializers; PyTorch takes them as numbers).
bool trains_through(const ir::Node& n, int input) {
  if (ir::needs_constant_input(n.op, input)) return false;
  switch (n.op) {
    case OpType::Resize:
    case OpType::Dropout:
    case OpType::Clip:
    case OpType::Pad:
      return input == 0;
    default:
      return true;
  }
}

}  // namespace

NamedTensors graph_parameters(const ir::Graph& g) {
  std::vector<bool> trainable(g.num_values(), false);
  for (const ir::Node& n : g.nodes())
    for (int i = 0; i < n.num_inputs(); ++i)
      if (n.has_input(i) && trains_through(n, i)) trainable[n.inputs[i]] = true;
  NamedTensors out;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const ir::Value& val = g.value(v);
    if (val.initializer && val.constant && val.producer < 0 && ir::is_floating(val.type.dtype) &&
        trainable[v])
      out.emplace_back(val.name, *val.constant);
  }
  return out;
}

std::optional<BatchNormVariance> parse_batch_norm_variance(const std::string& name) {
  if (name == "auto") return std::nullopt;
  if (name == "one_pass" || name == "one-pass") return BatchNormVariance::one_pass;
  if (name == "two_pass" || name == "two-pass") return BatchNormVariance::two_pass;
  throw InvalidArgument(
      fmt::format("batch norm variance '{}' is not one of auto, one_pass, two_pass", name));
}

TrainGraph build_train_graph(const ir::Graph& forward, const NamedTensors& params,
                             const LossConfig& loss, const OptimizerConfig& optimizer,
                             bool loss_scaling, BatchNormVariance variance) {
  optimizer.validate();
  TrainGraph t;
  t.graph.set_name(forward.name() + ".train");
  std::unordered_map<ValueId, ValueId> map;
  LiveValues live;
  live.variance = variance;
  add_parameter_inputs(t, forward, params, map, live.params, live.buffers);
  live.output = copy_forward(forward, t, map, live);
  unroll_recurrent_layers(t, live);
  ir::Graph& g = t.graph;
  ValueId output = live.output;
  t.output_type = g.value(output).type;
  t.target_type = loss_target_type(loss, t.output_type);
  ValueId target = g.add_input("target", t.target_type.dtype, t.target_type.shape);
  ValueId lr = g.add_input("lr", ir::DType::f32, ir::Shape());
  ValueId step = g.add_input("step", ir::DType::f32, ir::Shape());
  t.inputs.insert(t.inputs.end(), {{TrainRole::target}, {TrainRole::lr}, {TrainRole::step}});
  const int forward_end = g.num_nodes();
  ir::GraphBuilder b(g, "loss");
  ValueId loss_value = append_loss(b, loss, output, target);
  g.add_output(loss_value);
  t.outputs.push_back({TrainRole::loss});
  const int loss_end = g.num_nodes();
  std::vector<ValueId> grads =
      loss_scaling ? scaled_gradients(t, b, loss_value, live)
                   : ir::append_gradients(g, loss_value, live.params, live.composites);
  const int backward_end = g.num_nodes();
  b.set_prefix("optimizer");
  grads = append_grad_clip(b, optimizer, grads);
  std::vector<ValueId> new_state = add_updates(t, b, optimizer, live.params, grads, lr, step);
  for (size_t i = 0; i < live.buffers.size(); ++i) {
    auto it = live.updated.find(live.buffers[i]);
    g.add_output(it == live.updated.end() ? live.buffers[i] : it->second);
    t.outputs.push_back({TrainRole::buffer, static_cast<int>(i)});
  }
  for (size_t i = 0; i < new_state.size(); ++i) {
    g.add_output(new_state[i]);
    t.outputs.push_back({TrainRole::state, static_cast<int>(i)});
  }
  annotate_step(t, grads, forward_end, loss_end, backward_end);
  return t;
}

}  // namespace mimic
