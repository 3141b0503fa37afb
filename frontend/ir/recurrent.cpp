#include "frontend/ir/recurrent.h"

#include <fmt/format.h>
#include <cctype>

#include "base/error.h"

namespace mimic::ir {
namespace {

struct ActivationInfo {
  RecurrentActivation kind;
  const char* name;
  bool uses_alpha, uses_beta;
  float default_alpha, default_beta;  // those of the ONNX ops of the same name
};

// Affine and ScaledTanh were experimental ONNX ops: alpha 1, beta 0 (Affine) and 1, 1 (ScaledTanh)
// as in onnxruntime's recurrent kernels.
constexpr ActivationInfo kActivations[] = {
    {RecurrentActivation::Relu, "Relu", false, false, 0.0f, 0.0f},
    {RecurrentActivation::Tanh, "Tanh", false, false, 0.0f, 0.0f},
    {RecurrentActivation::Sigmoid, "Sigmoid", false, false, 0.0f, 0.0f},
    {RecurrentActivation::Affine, "Affine", true, true, 1.0f, 0.0f},
    {RecurrentActivation::LeakyRelu, "LeakyRelu", true, false, 0.01f, 0.0f},
    {RecurrentActivation::ThresholdedRelu, "ThresholdedRelu", true, false, 1.0f, 0.0f},
    {RecurrentActivation::ScaledTanh, "ScaledTanh", true, true, 1.0f, 1.0f},
    {RecurrentActivation::HardSigmoid, "HardSigmoid", true, true, 0.2f, 0.5f},
    {RecurrentActivation::Elu, "Elu", true, false, 1.0f, 0.0f},
    {RecurrentActivation::Softsign, "Softsign", false, false, 0.0f, 0.0f},
    {RecurrentActivation::Softplus, "Softplus", false, false, 0.0f, 0.0f},
};

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

const ActivationInfo& find_activation(const std::string& name) {
  for (const ActivationInfo& a : kActivations)
    if (lower(a.name) == lower(name)) return a;
  std::string known;
  for (const ActivationInfo& a : kActivations)
    known += (known.empty() ? "" : "|") + std::string(a.name);
  throw ShapeError(fmt::format("activation '{}' is not one of {}", name, known));
}

std::vector<std::string> default_activations(OpType op) {
  if (op == OpType::LSTM) return {"Sigmoid", "Tanh", "Tanh"};
  if (op == OpType::GRU) return {"Sigmoid", "Tanh"};
  return {"Tanh"};
}

// activations, activation_alpha, activation_beta: alphas and betas are consumed in list order by
// the activations that take them; missing ones take the ONNX op's default.
std::vector<ActivationSpec> parse_activations(const Node& n, int per_direction, int directions) {
  std::vector<std::string> names;
  auto it = n.attrs.items().find("activations");
  if (it != n.attrs.items().end()) {
    const auto* list = std::get_if<std::vector<std::string>>(&it->second);
    const auto* one = std::get_if<std::string>(&it->second);
    if (!list && !one) throw ShapeError("attribute 'activations' is not a list of strings");
    names = list ? *list : std::vector<std::string>{*one};
  } else {
    names = default_activations(n.op);
  }
  int want = per_direction * directions;
  // One direction's list for a bidirectional node applies to both (as onnxruntime reads it).
  if (static_cast<int>(names.size()) == per_direction && directions == 2) {
    std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (static_cast<int>(names.size()) != want)
    throw ShapeError(
        fmt::format("attribute 'activations' has {} entries, expected {} ({} per "
                    "direction x {} directions)",
                    names.size(), want, per_direction, directions));
  std::vector<double> alphas = n.attrs.get_floats("activation_alpha");
  std::vector<double> betas = n.attrs.get_floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<ActivationSpec> out;
  for (const std::string& name : names) {
    const ActivationInfo& info = find_activation(name);
    ActivationSpec a{info.kind, info.default_alpha, info.default_beta};
    if (info.uses_alpha && ai < alphas.size()) a.alpha = static_cast<float>(alphas[ai++]);
    if (info.uses_beta && bi < betas.size()) a.beta = static_cast<float>(betas[bi++]);
    out.push_back(a);
  }
  if (ai < alphas.size() || bi < betas.size())
    throw ShapeError(
        fmt::format("activation_alpha has {} and activation_beta {} values; the "
                    "activations consume only {} and {}",
                    alphas.size(), betas.size(), ai, bi));
  return out;
}

void parse_direction(const Node& n, RecurrentSpec& s) {
  std::string direction = n.attrs.get_string("direction", "forward");
  if (direction == "bidirectional") {
    s.num_directions = 2;
  } else if (direction == "reverse") {
    s.reverse = true;
  } else if (direction != "forward") {
    throw ShapeError(fmt::format(
        "attribute direction='{}' must be forward, reverse or bidirectional", direction));
  }
}

void parse_flags(const Node& n, RecurrentSpec& s) {
  s.layout = static_cast<int>(n.attrs.get_int("layout", 0));
  if (s.layout != 0 && s.layout != 1)
    throw ShapeError(fmt::format("attribute layout={} must be 0 or 1", s.layout));
  if (n.attrs.has("clip")) {
    s.has_clip = true;
    s.clip = static_cast<float>(n.attrs.get_float("clip", 0.0));
    if (!(s.clip > 0.0f))
      throw ShapeError(fmt::format("attribute clip={} must be a positive threshold", s.clip));
  }
  int64_t input_forget = n.attrs.get_int("input_forget", 0);
  if (n.op != OpType::LSTM && n.attrs.has("input_forget"))
    throw ShapeError("attribute input_forget is LSTM only");
  if (input_forget != 0 && input_forget != 1)
    throw ShapeError(fmt::format("attribute input_forget={} must be 0 or 1", input_forget));
  s.input_forget = input_forget == 1;
  if (n.op != OpType::GRU && n.attrs.has("linear_before_reset"))
    throw ShapeError("attribute linear_before_reset is GRU only");
  s.linear_before_reset = n.attrs.get_int("linear_before_reset", 0) != 0;
}

void check_weights(const RecurrentSpec& s, const Shape& w, const Shape& r) {
  if (w.rank() != 3) throw ShapeError(fmt::format("W must be 3-D, got {}", w.str()));
  if (r.rank() != 3) throw ShapeError(fmt::format("R must be 3-D, got {}", r.str()));
  int64_t rows = s.gates * s.hidden;
  if (w[0] != s.num_directions || w[1] != rows || w[2] != s.input_size)
    throw ShapeError(
        fmt::format("W is {}, expected [{},{},{}] (num_directions, {}*hidden_size={}, "
                    "input_size)",
                    w.str(), s.num_directions, rows, s.input_size, s.gates, s.hidden));
  if (r[0] != s.num_directions || r[1] != rows || r[2] != s.hidden)
    throw ShapeError(
        fmt::format("R is {}, expected [{},{},{}] (num_directions, {}*hidden_size, "
                    "hidden_size)",
                    r.str(), s.num_directions, rows, s.hidden, s.gates));
}

}  // namespace

Shape RecurrentSpec::y_shape() const {
  if (layout == 0) return Shape({seq_length, num_directions, batch, hidden});
  return Shape({batch, seq_length, num_directions, hidden});
}

Shape RecurrentSpec::state_shape() const {
  if (layout == 0) return Shape({num_directions, batch, hidden});
  return Shape({batch, num_directions, hidden});
}

const char* activation_name(RecurrentActivation kind) {
  for (const ActivationInfo& a : kActivations)
    if (a.kind == kind) return a.name;
  return "?";
}

RecurrentSpec recurrent_spec(const Node& n, const Shape& x, const Shape& w, const Shape& r) {
  RecurrentSpec s;
  s.op = n.op;
  s.gates = n.op == OpType::LSTM ? 4 : n.op == OpType::GRU ? 3 : 1;
  s.activations_per_direction = n.op == OpType::LSTM ? 3 : n.op == OpType::GRU ? 2 : 1;
  parse_direction(n, s);
  parse_flags(n, s);
  if (x.rank() != 3) throw ShapeError(fmt::format("X must be 3-D, got {}", x.str()));
  s.seq_length = s.layout == 0 ? x[0] : x[1];
  s.batch = s.layout == 0 ? x[1] : x[0];
  s.input_size = x[2];
  if (s.seq_length == kBatch || s.input_size == kBatch)
    throw ShapeError(fmt::format("X {} has a symbolic sequence or input dimension (layout={})",
                                 x.str(), s.layout));
  if (r.rank() != 3) throw ShapeError(fmt::format("R must be 3-D, got {}", r.str()));
  s.hidden = n.attrs.get_int("hidden_size", r[2]);
  if (s.hidden <= 0)
    throw ShapeError(fmt::format("attribute hidden_size={} must be positive", s.hidden));
  check_weights(s, w, r);
  s.activations = parse_activations(n, s.activations_per_direction, s.num_directions);
  return s;
}

RecurrentSpec recurrent_spec(const Graph& g, const Node& n) {
  return recurrent_spec(n, g.value(n.inputs[0]).type.shape, g.value(n.inputs[1]).type.shape,
                        g.value(n.inputs[2]).type.shape);
}

int64_t recurrent_flops(const Graph& g, const Node& n) {
  RecurrentSpec s = recurrent_spec(g, n);
  if (s.batch == kBatch) return 0;
  // Per step and batch row: the input and recurrent projections (2 flops per multiply-add) and
  // about 3 flops per gate element for biases, activation and the state update.
  int64_t rows = s.gates * s.hidden;
  int64_t per_row = 2 * rows * (s.input_size + s.hidden) + 3 * rows;
  int64_t steps = s.num_directions * s.seq_length * s.batch;
  int64_t r = 0;
  return __builtin_mul_overflow(per_row, steps, &r) ? INT64_MAX : r;
}

}  // namespace mimic::ir
