#include "frontend/ir/recurrent_expand.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "base/error.h"
#include "frontend/ir/graph_builder.h"
#include "frontend/ir/graph_rewrite.h"
#include "frontend/ir/pool_grad.h"
#include "frontend/ir/primitive_expansions.h"
#include "frontend/ir/recurrent.h"
#include "frontend/ir/resize.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::ir {
namespace {

constexpr int kW = 1, kR = 2, kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6,
              kPeepholes = 7;

bool all_zero(const HostTensor& t) {
  if (t.dtype() != DType::f32) return false;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.data<float>()[i] != 0.0f) return false;
  return true;
}

// Output values of the unrolling of one direction: Y [seq, batch, hidden] and final states.
struct DirectionValues {
  ValueId y = kNoValue, h = kNoValue, c = kNoValue;
};

class Unroller {
 public:
  Unroller(Graph& out, const Graph& g, const Node& n, std::vector<ValueId>& map)
      : out_(out), g_(g), n_(n), map_(map), s_(recurrent_spec(g, n)) {}

  void run();

 private:
  ValueId op(OpType type, std::vector<ValueId> in, Attributes a = {}) {
    return out_.add_node(type, n_.name + "/" + op_name(type), std::move(in), std::move(a))[0];
  }
  std::vector<ValueId> split(ValueId v, int axis, const std::vector<int64_t>& sizes) {
    return out_.add_node(OpType::Split, n_.name + "/Split", {v, ints(sizes)},
                         {{"axis", int64_t{axis}}}, static_cast<int>(sizes.size()));
  }
  ValueId constant(HostTensor t) { return out_.add_constant(n_.name + "/const", std::move(t)); }
  ValueId floats(const Shape& shape, const std::vector<float>& data) {
    return constant(HostTensor::from(shape, data.data()));
  }
  ValueId scalar(float v) { return floats(Shape(), {v}); }
  ValueId ints(const std::vector<int64_t>& v) {
    return constant(HostTensor::from(Shape({static_cast<int64_t>(v.size())}), v.data()));
  }
  ValueId reshape(ValueId v, const std::vector<int64_t>& dims) {
    return op(OpType::Reshape, {v, ints(dims)});
  }
  const float* data(int input) const { return g_.value(n_.inputs[input]).constant->data<float>(); }
  ValueId input(int i);
  ValueId clip(ValueId v);
  ValueId activate(int d, int which, ValueId v);
  ValueId time_major_x();
  std::vector<ValueId> step_inputs(int d, ValueId x2);
  ValueId initial_state(int input, int d);
  ValueId transposed_weights(int input, int d, int64_t row0, int64_t rows, int64_t cols);
  ValueId vector_param(int input, int d, int64_t begin, int64_t end);
  ValueId runtime_slice(int input, int d, int64_t begin, int64_t end);
  void lstm_step(int d, ValueId xw, ValueId& h, ValueId& c);
  void gru_step(int d, ValueId xw, ValueId& h);
  DirectionValues direction(int d, ValueId x2);
  ValueId mask_of_step(int64_t step);
  ValueId stack_in_time_order(int d, const std::vector<ValueId>& ys);
  ValueId gather_rows(ValueId v, int d, bool to_steps);

  Graph& out_;
  const Graph& g_;
  const Node& n_;
  std::vector<ValueId>& map_;
  RecurrentSpec s_;
  std::vector<int64_t> lens_;
  // Weights and parameter slices already emitted, shared by every step.
  std::map<std::tuple<int, int, int64_t, int64_t>, ValueId> params_;
  bool varying_ = false;  // some row is shorter than seq_length
};

ValueId Unroller::input(int i) {
  if (!n_.has_input(i)) return kNoValue;
  ValueId v = n_.inputs[i];
  if (map_[v] == kNoValue) map_[v] = out_.add_constant(g_.value(v).name, *g_.value(v).constant);
  return map_[v];
}

ValueId Unroller::clip(ValueId v) {
  if (!s_.has_clip) return v;
  return op(OpType::Clip, {v, scalar(-s_.clip), scalar(s_.clip)});
}

ValueId Unroller::activate(int d, int which, ValueId v) {
  const ActivationSpec& a = s_.activation(d, which);
  switch (a.kind) {
    case RecurrentActivation::Relu:
      return op(OpType::Relu, {v});
    case RecurrentActivation::Tanh:
      return op(OpType::Tanh, {v});
    case RecurrentActivation::Sigmoid:
      return op(OpType::Sigmoid, {v});
    case RecurrentActivation::Softsign:
      return op(OpType::Softsign, {v});
    case RecurrentActivation::Softplus:
      return op(OpType::Softplus, {v});
    case RecurrentActivation::Affine:
      return op(OpType::Add, {op(OpType::Mul, {v, scalar(a.alpha)}), scalar(a.beta)});
    case RecurrentActivation::ScaledTanh:
      return op(OpType::Mul,
                {op(OpType::Tanh, {op(OpType::Mul, {v, scalar(a.beta)})}), scalar(a.alpha)});
    case RecurrentActivation::LeakyRelu:
      return op(OpType::LeakyRelu, {v}, {{"alpha", double{a.alpha}}});
    case RecurrentActivation::ThresholdedRelu:
      return op(OpType::ThresholdedRelu, {v}, {{"alpha", double{a.alpha}}});
    case RecurrentActivation::Elu:
      return op(OpType::Elu, {v}, {{"alpha", double{a.alpha}}});
    case RecurrentActivation::HardSigmoid:
      return op(OpType::HardSigmoid, {v}, {{"alpha", double{a.alpha}}, {"beta", double{a.beta}}});
  }
  return v;
}

// X as [seq * batch, input], rows in time-major order (t * batch + b).
ValueId Unroller::time_major_x() {
  ValueId x = input(0);
  if (s_.layout == 1) x = op(OpType::Transpose, {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  return reshape(x, {s_.seq_length * s_.batch, s_.input_size});
}

// Rows [row0, row0 + rows) of W or R of direction d (each `cols` long), transposed: [cols, rows]:
// rearranged at compile time when constant, by Slice and Transpose ops when given at run time.
ValueId Unroller::transposed_weights(int input, int d, int64_t row0, int64_t rows, int64_t cols) {
  auto key = std::make_tuple(input, d, row0, rows);
  if (auto it = params_.find(key); it != params_.end()) return it->second;
  ValueId v;
  if (g_.value(n_.inputs[input]).constant) {
    const float* w = data(input) + d * s_.gates * s_.hidden * cols;
    std::vector<float> t(cols * rows);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) t[k * rows + r] = w[(row0 + r) * cols + k];
    v = floats(Shape({cols, rows}), t);
  } else {
    v = op(OpType::Transpose, {runtime_slice(input, d, row0, row0 + rows)},
           {{"perm", std::vector<int64_t>{1, 0}}});
  }
  return params_[key] = v;
}

// Entries [begin, end) of direction d's row of B or P, as a [end - begin] vector.
ValueId Unroller::vector_param(int input, int d, int64_t begin, int64_t end) {
  auto key = std::make_tuple(input, d, begin, -end);
  if (auto it = params_.find(key); it != params_.end()) return it->second;
  ValueId v;
  if (g_.value(n_.inputs[input]).constant) {
    const float* row = data(input) + d * g_.value(n_.inputs[input]).type.shape[1];
    v = floats(Shape({end - begin}), std::vector<float>(row + begin, row + end));
  } else {
    v = runtime_slice(input, d, begin, end);
  }
  return params_[key] = v;
}

// Direction d's rows (W, R: [end - begin, cols]) or entries (B, P: [end - begin]) of a runtime
// input.
ValueId Unroller::runtime_slice(int i, int d, int64_t begin, int64_t end) {
  const Shape& shape = g_.value(n_.inputs[i]).type.shape;
  ValueId v = op(OpType::Slice, {input(i), ints({d, begin}), ints({d + 1, end}), ints({0, 1})});
  std::vector<int64_t> dims{end - begin};
  if (shape.rank() == 3) dims.push_back(shape[2]);
  return reshape(v, dims);
}

// Row (s * batch + b) of the result holds row (t * batch + b) of `v`, where t is the time that
// batch row b processes at step s of a backward direction (to_steps), or the inverse (Y's rows
// back in time order; times past a row's length read its last step, which is masked to zero).
ValueId Unroller::gather_rows(ValueId v, int d, bool to_steps) {
  int64_t seq = s_.seq_length, batch = s_.batch;
  std::vector<int64_t> index(seq * batch);
  for (int64_t i = 0; i < seq; ++i)
    for (int64_t b = 0; b < batch; ++b) {
      int64_t len = lens_[b];
      int64_t other = i < len ? len - 1 - i : (to_steps ? 0 : seq - 1);
      index[i * batch + b] = other * batch + b;
    }
  return op(OpType::Gather, {v, ints(index)}, {{"axis", int64_t{0}}});
}

// xw of every step in step order, each [batch, gates * hidden], biases included.
std::vector<ValueId> Unroller::step_inputs(int d, ValueId x2) {
  int64_t gh = s_.gates * s_.hidden, hid = s_.hidden;
  ValueId xw = op(OpType::MatMul, {x2, transposed_weights(kW, d, 0, gh, s_.input_size)});
  if (n_.has_input(kB)) {
    // Wb + Rb, except GRU's Rb_h with linear_before_reset (applied inside the reset product).
    ValueId rb = vector_param(kB, d, gh, 2 * gh);
    if (s_.op == OpType::GRU && s_.linear_before_reset) {
      std::vector<float> keep(gh, 1.0f);
      std::fill(keep.begin() + 2 * hid, keep.end(), 0.0f);
      rb = op(OpType::Mul, {rb, floats(Shape({gh}), keep)});
    }
    xw = op(OpType::Add, {xw, op(OpType::Add, {vector_param(kB, d, 0, gh), rb})});
  }
  if (varying_ && s_.backward(d)) xw = gather_rows(xw, d, true);
  std::vector<ValueId> parts =
      split(reshape(xw, {s_.seq_length, s_.batch, gh}), 0, std::vector<int64_t>(s_.seq_length, 1));
  std::vector<ValueId> steps(s_.seq_length);
  for (int64_t i = 0; i < s_.seq_length; ++i) {
    // Uniform lengths: step i of a backward direction reads time seq - 1 - i.
    int64_t t = s_.backward(d) && !varying_ ? s_.seq_length - 1 - i : i;
    steps[i] = reshape(parts[t], {s_.batch, gh});
  }
  return steps;
}

// Direction d's slice of initial_h / initial_c as [batch, hidden]; kNoValue when absent or zero.
ValueId Unroller::initial_state(int i, int d) {
  if (!n_.has_input(i) || g_.value(n_.inputs[i]).constant) return kNoValue;
  ValueId v = input(i);
  if (s_.num_directions == 1) return reshape(v, {s_.batch, s_.hidden});
  return op(OpType::Gather,
            {v, constant(HostTensor::from(Shape(), std::vector<int64_t>{d}.data()))},
            {{"axis", int64_t{s_.layout == 0 ? 0 : 1}}});
}

// [batch, 1] bool: rows still inside their sequence at `step`; kNoValue when all are.
ValueId Unroller::mask_of_step(int64_t step) {
  bool all = true;
  for (int64_t len : lens_) all = all && step < len;
  if (all) return kNoValue;
  HostTensor m(DType::boolean, Shape({s_.batch, 1}));
  for (int64_t b = 0; b < s_.batch; ++b) m.data<bool>()[b] = step < lens_[b];
  return constant(std::move(m));
}

// One LSTM step (ONNX equations in recurrent.h); h and c are kNoValue while zero.
void Unroller::lstm_step(int d, ValueId xw, ValueId& h, ValueId& c) {
  int64_t hid = s_.hidden;
  ValueId pre = xw;
  if (h != kNoValue)
    pre =
        op(OpType::Add, {pre, op(OpType::MatMul, {h, transposed_weights(kR, d, 0, 4 * hid, hid)})});
  std::vector<ValueId> g = split(pre, 1, {hid, hid, hid, hid});  // i, o, f, c
  auto peephole = [&](ValueId gate, int which, ValueId state) {
    if (!n_.has_input(kPeepholes) || state == kNoValue) return gate;
    ValueId p = vector_param(kPeepholes, d, which * hid, (which + 1) * hid);
    return op(OpType::Add, {gate, op(OpType::Mul, {state, p})});
  };
  ValueId i = activate(d, 0, clip(peephole(g[0], 0, c)));
  ValueId cell = op(OpType::Mul, {i, activate(d, 1, clip(g[3]))});
  if (c != kNoValue) {
    ValueId f = s_.input_forget ? op(OpType::Sub, {scalar(1.0f), i})
                                : activate(d, 0, clip(peephole(g[2], 2, c)));
    cell = op(OpType::Add, {op(OpType::Mul, {f, c}), cell});
  }
  ValueId o = activate(d, 0, clip(peephole(g[1], 1, cell)));
  h = op(OpType::Mul, {o, activate(d, 2, cell)});
  c = cell;
}

// One GRU step; h is kNoValue while zero.
void Unroller::gru_step(int d, ValueId xw, ValueId& h) {
  int64_t hid = s_.hidden;
  bool lbr = s_.linear_before_reset;
  std::vector<ValueId> x = split(xw, 1, {2 * hid, hid});  // zr, h
  ValueId pre_zr = x[0], hr_h = kNoValue;
  if (h != kNoValue) {
    ValueId hr = op(OpType::MatMul, {h, transposed_weights(kR, d, 0, (lbr ? 3 : 2) * hid, hid)});
    if (lbr) {
      std::vector<ValueId> parts = split(hr, 1, {2 * hid, hid});
      hr = parts[0];
      hr_h = parts[1];
    }
    pre_zr = op(OpType::Add, {pre_zr, hr});
  }
  std::vector<ValueId> zr = split(pre_zr, 1, {hid, hid});
  ValueId z = activate(d, 0, clip(zr[0])), r = activate(d, 0, clip(zr[1]));
  ValueId recurrent = kNoValue;
  if (lbr) {
    // r (.) (H R_h^T + Rb_h); with a zero state only r (.) Rb_h remains.
    ValueId inner = hr_h;
    if (n_.has_input(kB)) {
      ValueId rbh = vector_param(kB, d, 5 * hid, 6 * hid);
      inner = inner == kNoValue ? rbh : op(OpType::Add, {inner, rbh});
    }
    if (inner != kNoValue) recurrent = op(OpType::Mul, {r, inner});
  } else if (h != kNoValue) {
    recurrent =
        op(OpType::MatMul, {op(OpType::Mul, {r, h}), transposed_weights(kR, d, 2 * hid, hid, hid)});
  }
  ValueId cand =
      activate(d, 1, clip(recurrent == kNoValue ? x[1] : op(OpType::Add, {x[1], recurrent})));
  // (1 - z) (.) cand + z (.) H = cand + z (.) (H - cand)
  h = h == kNoValue ? op(OpType::Sub, {cand, op(OpType::Mul, {z, cand})})
                    : op(OpType::Add, {cand, op(OpType::Mul, {z, op(OpType::Sub, {h, cand})})});
}

// Y of direction d as [seq, batch, hidden] in time order from the per-step outputs.
ValueId Unroller::stack_in_time_order(int d, const std::vector<ValueId>& ys) {
  int64_t seq = s_.seq_length;
  std::vector<ValueId> rows;
  for (int64_t t = 0; t < seq; ++t) {
    int64_t step = s_.backward(d) && !varying_ ? seq - 1 - t : t;
    rows.push_back(reshape(ys[step], {1, s_.batch, s_.hidden}));
  }
  ValueId y = rows.size() == 1 ? rows[0] : op(OpType::Concat, rows, {{"axis", int64_t{0}}});
  if (!(varying_ && s_.backward(d))) return y;
  ValueId flat = reshape(y, {seq * s_.batch, s_.hidden});
  return reshape(gather_rows(flat, d, false), {seq, s_.batch, s_.hidden});
}

DirectionValues Unroller::direction(int d, ValueId x2) {
  std::vector<ValueId> xw = step_inputs(d, x2);
  ValueId h = initial_state(kInitialH, d), c = initial_state(kInitialC, d);
  ValueId zeros =
      floats(Shape({s_.batch, s_.hidden}), std::vector<float>(s_.batch * s_.hidden, 0.0f));
  std::vector<ValueId> ys;
  for (int64_t step = 0; step < s_.seq_length; ++step) {
    ValueId h_prev = h, c_prev = c;
    if (s_.op == OpType::LSTM)
      lstm_step(d, xw[step], h, c);
    else if (s_.op == OpType::GRU)
      gru_step(d, xw[step], h);
    else
      h = activate(
          d, 0,
          clip(h == kNoValue
                   ? xw[step]
                   : op(OpType::Add,
                        {xw[step], op(OpType::MatMul,
                                      {h, transposed_weights(kR, d, 0, s_.hidden, s_.hidden)})})));
    ValueId mask = mask_of_step(step);
    if (mask == kNoValue) {
      ys.push_back(h);
      continue;
    }
    // Rows past their length keep their state and output zeros.
    ys.push_back(op(OpType::Where, {mask, h, zeros}));
    h = op(OpType::Where, {mask, h, h_prev == kNoValue ? zeros : h_prev});
    if (c != kNoValue) c = op(OpType::Where, {mask, c, c_prev == kNoValue ? zeros : c_prev});
  }
  if (c == kNoValue && s_.op == OpType::LSTM) c = zeros;
  return {stack_in_time_order(d, ys), h, c};
}

void Unroller::run() {
  lens_.assign(s_.batch, s_.seq_length);
  if (n_.has_input(kSequenceLens)) lens_ = constant_ints(g_, n_, kSequenceLens);
  for (int64_t len : lens_) varying_ = varying_ || len != s_.seq_length;
  ValueId x2 = time_major_x();
  std::vector<DirectionValues> dirs;
  for (int d = 0; d < s_.num_directions; ++d) dirs.push_back(direction(d, x2));
  int64_t seq = s_.seq_length, batch = s_.batch, hid = s_.hidden;
  auto join = [&](auto member, std::vector<int64_t> dims, int axis) {
    std::vector<ValueId> parts;
    for (const DirectionValues& v : dirs) parts.push_back(reshape(v.*member, dims));
    return parts.size() == 1 ? parts[0] : op(OpType::Concat, parts, {{"axis", int64_t{axis}}});
  };
  ValueId y = join(&DirectionValues::y, {seq, 1, batch, hid}, 1);
  std::vector<ValueId> results{y, join(&DirectionValues::h, {1, batch, hid}, 0)};
  if (s_.op == OpType::LSTM) results.push_back(join(&DirectionValues::c, {1, batch, hid}, 0));
  if (s_.layout == 1) {
    results[0] = op(OpType::Transpose, {results[0]}, {{"perm", std::vector<int64_t>{2, 0, 1, 3}}});
    for (size_t i = 1; i < results.size(); ++i)
      results[i] = op(OpType::Transpose, {results[i]}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  }
  for (size_t i = 0; i < n_.outputs.size(); ++i) {
    ValueId v = n_.outputs[i];
    map_[v] = out_.add_node(OpType::Identity, n_.name, {results[i]}, {}, 1, {g_.value(v).name})[0];
  }
}

bool fail(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

}  // namespace

bool can_unroll_recurrent(const Graph& g, const Node& n, std::string* why) {
  if (!is_recurrent(n.op)) return fail(why, "not a recurrent node");
  const Value& x = g.value(n.inputs[0]);
  if (x.type.dtype != DType::f32) return fail(why, "unrolled only for f32 data");
  if (x.constant) return fail(why, "constant X");
  if (x.type.shape.is_symbolic()) return fail(why, "unbound batch");
  if (n.has_input(kSequenceLens) && !g.value(n.inputs[kSequenceLens]).constant)
    return fail(why, "runtime sequence_lens (unrolled with constant lengths only)");
  for (int i : {kInitialH, kInitialC})
    if (n.has_input(i) && g.value(n.inputs[i]).constant &&
        !all_zero(*g.value(n.inputs[i]).constant))
      return fail(why, "constant non-zero initial state");
  RecurrentSpec s = recurrent_spec(g, n);
  if (s.seq_length < 1 || s.batch < 1) return fail(why, "empty sequence or batch");
  return true;
}

Graph unroll_recurrent_nodes(const Graph& g, const std::vector<bool>& unroll_node,
                             std::vector<ValueId>* value_map) {
  std::vector<bool> pick(unroll_node);
  for (size_t i = 0; i < pick.size() && i < static_cast<size_t>(g.num_nodes()); ++i)
    pick[i] = pick[i] && can_expand(g.node(static_cast<int>(i)).op);
  auto expand = [](NodeRewrite& r, const Node& n, const std::vector<ValueId>& inputs) {
    if (is_recurrent(n.op)) return Unroller(r.out, r.source, n, r.map).run();
    GraphBuilder b(r.out, n.name);
    if (n.op == OpType::Resize) {
      r.map[n.outputs[0]] = expand_resize(b, inputs[0], resize_spec(r.source, n));
    } else if (n.op == OpType::InstanceNormalization) {
      r.map[n.outputs[0]] = expand_instance_norm(b, n, inputs);
    } else if (n.op == OpType::DepthToSpace || n.op == OpType::SpaceToDepth) {
      r.map[n.outputs[0]] = expand_depth_space(b, n, inputs[0]);
    } else {
      Node expanded = n;
      expanded.inputs = inputs;
      r.map[n.outputs[0]] = expand_max_pool_grad(b, expanded);
    }
    r.keep_role(n.outputs[0], r.map[n.outputs[0]]);
  };
  return rewrite_nodes(g, pick, expand, value_map);
}

Graph unrolled_node(const Graph& g, const Node& n) {
  Graph one(n.name);
  std::vector<ValueId> inputs;
  for (ValueId v : n.inputs) {
    if (v == kNoValue)
      inputs.push_back(kNoValue);
    else if (g.value(v).constant)
      inputs.push_back(one.add_constant(g.value(v).name, *g.value(v).constant));
    else
      inputs.push_back(
          one.add_input(g.value(v).name, g.value(v).type.dtype, g.value(v).type.shape));
  }
  for (ValueId v : one.add_node(n.op, n.name, inputs, n.attrs, static_cast<int>(n.outputs.size())))
    one.add_output(v);
  infer_shapes(one);
  return unroll_recurrent_nodes(one, {true});
}

std::string unroll_note(const Graph& g, const Graph& unrolled) {
  std::string layers;
  for (const Node& n : g.nodes()) {
    if (!is_recurrent(n.op)) continue;
    RecurrentSpec s = recurrent_spec(g, n);
    layers += fmt::format("{}{} '{}' ({} steps x {} direction{})", layers.empty() ? "" : ", ",
                          op_name(n.op), n.name, s.seq_length, s.num_directions,
                          s.num_directions == 1 ? "" : "s");
  }
  // The MaxPoolGrads and Resizes that were expanded: those of g the unrolled graph no longer has.
  auto expanded = [&](OpType op) {
    auto count = [op](const Graph& graph) {
      return std::count_if(graph.nodes().begin(), graph.nodes().end(),
                           [op](const Node& n) { return n.op == op; });
    };
    return count(g) - count(unrolled);
  };
  std::string what = layers.empty() ? "" : "recurrent layers unrolled: " + layers;
  if (auto pool_grads = expanded(OpType::MaxPoolGrad); pool_grads > 0)
    what += fmt::format("{}{} MaxPoolGrad(s) as window ops", what.empty() ? "" : "; ", pool_grads);
  if (auto resizes = expanded(OpType::Resize); resizes > 0)
    what += fmt::format("{}{} Resize(s) as matrix products", what.empty() ? "" : "; ", resizes);
  return fmt::format("{}; {} nodes became {}", what, g.num_nodes(), unrolled.num_nodes());
}

std::string unrolled_unsupported_reason(
    const Graph& g, const Node& n,
    const std::function<std::string(const Graph&, const Node&)>& op_reason) {
  std::string why;
  if (n.op == OpType::MaxPoolGrad && g.value(n.inputs.at(0)).type.dtype != DType::f32)
    return "MaxPoolGrad runs as window ops in f32 only";
  if (n.op == OpType::Resize && g.value(n.inputs.at(0)).type.dtype == DType::f64)
    return "Resize runs as matrix products in f32, f16 and bf16";
  if (n.op == OpType::Resize)
    if (std::string limit = resize_expansion_limit(resize_spec(g, n)); !limit.empty())
      return "Resize as matrix products: " + limit;
  if (is_recurrent(n.op) && !can_unroll_recurrent(g, n, &why))
    return "recurrent layer not unrolled: " + why;
  Graph one = unrolled_node(g, n);
  for (const Node& m : one.nodes())
    if (std::string r = op_reason(one, m); !r.empty())
      return fmt::format("its unrolling needs {} '{}': {}", op_name(m.op), m.name, r);
  return "";
}

}  // namespace mimic::ir
