// Shape inference: elementwise ops, softmax and normalizations.
#include <fmt/format.h>

#include "base/error.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::ir::infer {
namespace {

bool needs_float(OpType op) {
  switch (op) {
    case OpType::Exp:
    case OpType::Log:
    case OpType::Sqrt:
    case OpType::Reciprocal:
    case OpType::Floor:
    case OpType::Ceil:
    case OpType::Round:
    case OpType::Sin:
    case OpType::Cos:
    case OpType::Tan:
    case OpType::Asin:
    case OpType::Acos:
    case OpType::Atan:
    case OpType::Sinh:
    case OpType::Cosh:
    case OpType::Asinh:
    case OpType::Acosh:
    case OpType::Atanh:
    case OpType::Erf:
    case OpType::Sigmoid:
    case OpType::Tanh:
    case OpType::Softplus:
    case OpType::Softsign:
    case OpType::IsNaN:
    case OpType::IsInf:
    case OpType::LeakyRelu:
    case OpType::Elu:
    case OpType::Selu:
    case OpType::Celu:
    case OpType::HardSigmoid:
    case OpType::HardSwish:
    case OpType::ThresholdedRelu:
    case OpType::Gelu:
    case OpType::Softmax:
    case OpType::LogSoftmax:
    case OpType::PRelu:
      return true;
    default:
      return false;
  }
}

void expect_float(InferContext& c, int i) {
  if (!is_floating(c.dtype(i)))
    c.fail(fmt::format("needs a floating-point input, input {} is {}", i, dtype_name(c.dtype(i))));
}

void expect_numeric(InferContext& c, int i) {
  if (c.dtype(i) == DType::boolean) c.fail(fmt::format("input {} is bool, expected a number", i));
}

Shape broadcast(InferContext& c, int first, int last) {
  Shape s = c.shape(first);
  for (int i = first + 1; i <= last; ++i) {
    if (!c.has_input(i)) continue;
    try {
      s = broadcast_shapes(s, c.shape(i), "broadcast");
    } catch (const ShapeError&) {
      c.fail(fmt::format("input shapes {} and {} do not broadcast", s.str(), c.shape(i).str()));
    }
  }
  return s;
}

// Attribute ranges of the parametrized activations (ONNX opset 17).
void check_unary_attributes(InferContext& c) {
  constexpr double kBig = 1e30;
  switch (c.node().op) {
    case OpType::Celu:
      // Celu divides by alpha.
      if (c.float_attr("alpha", 1.0, -kBig, kBig) == 0.0) c.fail("attribute alpha must not be 0");
      break;
    case OpType::LeakyRelu:
    case OpType::Elu:
    case OpType::HardSigmoid:
    case OpType::Selu:
    case OpType::ThresholdedRelu:
      c.float_attr("alpha", 0.0, -kBig, kBig);
      c.float_attr("beta", 0.0, -kBig, kBig);
      c.float_attr("gamma", 1.0, -kBig, kBig);
      break;
    case OpType::Shrink:
      c.float_attr("lambd", 0.5, 0.0, kBig);
      c.float_attr("bias", 0.0, -kBig, kBig);
      break;
    case OpType::Gelu:
      c.string_attr("approximate", "none", {"none", "tanh"});
      break;
    default:
      break;
  }
}

}  // namespace

void unary(InferContext& c) {
  OpType op = c.node().op;
  DType t = c.dtype(0);
  if (needs_float(op)) expect_float(c, 0);
  switch (op) {
    case OpType::Cast: {
      std::string to = c.attrs().get_string("to", "");
      auto dt = parse_dtype(to);
      if (!dt) c.fail(fmt::format("attribute 'to' names unknown dtype '{}'", to));
      c.set_output(0, *dt, c.shape(0));
      return;
    }
    case OpType::IsNaN:
    case OpType::IsInf:
      c.set_output(0, DType::boolean, c.shape(0));
      return;
    case OpType::Not:
      c.expect_dtype(0, {DType::boolean});
      break;
    case OpType::Identity:
      break;
    case OpType::Clip:
      expect_numeric(c, 0);
      for (int i = 1; i < 3; ++i)
        if (c.has_input(i)) {
          c.expect_same_dtype(0, i);
          if (c.shape(i).rank() != 0 && c.shape(i).numel() != 1)
            c.fail(fmt::format("min/max input {} must be a scalar", i));
        }
      break;
    case OpType::Dropout:
      expect_float(c, 0);
      if (c.has_input(1)) {
        c.expect_scalar(1);
        expect_float(c, 1);
      }
      if (c.has_input(2)) {
        c.expect_scalar(2);
        c.expect_dtype(2, {DType::boolean});
      }
      c.float_attr("ratio", 0.5, 0.0, 1.0);
      if (c.node().outputs.size() > 1) c.set_output(1, DType::boolean, c.shape(0));
      break;
    default:
      expect_numeric(c, 0);
      check_unary_attributes(c);
  }
  c.set_output(0, t, c.shape(0));
}

void binary(InferContext& c) {
  OpType op = c.node().op;
  Shape s = broadcast(c, 0, 1);
  switch (op) {
    case OpType::Equal:
    case OpType::Greater:
    case OpType::Less:
    case OpType::GreaterOrEqual:
    case OpType::LessOrEqual:
      c.expect_same_dtype(0, 1);
      c.set_output(0, DType::boolean, s);
      return;
    case OpType::And:
    case OpType::Or:
    case OpType::Xor:
      c.expect_dtype(0, {DType::boolean});
      c.expect_dtype(1, {DType::boolean});
      c.set_output(0, DType::boolean, s);
      return;
    case OpType::Pow:
      expect_numeric(c, 0);
      expect_numeric(c, 1);
      c.set_output(0, c.dtype(0), s);
      return;
    case OpType::Mod: {
      expect_numeric(c, 0);
      c.expect_same_dtype(0, 1);
      // ONNX asks fmod=1 for floats; the IR also defines float fmod=0 (numpy's mod, sign of
      // divisor).
      c.int_attr("fmod", 0, 0, 1);
      c.set_output(0, c.dtype(0), s);
      return;
    }
    case OpType::PRelu:
      expect_float(c, 0);
      c.expect_same_dtype(0, 1);
      if (s != c.shape(0))
        c.fail(fmt::format("slope {} must broadcast to the input {}", c.shape(1).str(),
                           c.shape(0).str()));
      c.set_output(0, c.dtype(0), s);
      return;
    default:
      expect_numeric(c, 0);
      c.expect_same_dtype(0, 1);
      c.set_output(0, c.dtype(0), s);
  }
}

void variadic(InferContext& c) {
  for (int i = 1; i < c.num_inputs(); ++i) c.expect_same_dtype(0, i);
  expect_numeric(c, 0);
  if (c.node().op == OpType::Mean) expect_float(c, 0);
  c.set_output(0, c.dtype(0), broadcast(c, 0, c.num_inputs() - 1));
}

void where(InferContext& c) {
  c.expect_dtype(0, {DType::boolean});
  c.expect_same_dtype(1, 2);
  c.set_output(0, c.dtype(1), broadcast(c, 0, 2));
}

void softmax(InferContext& c) {
  expect_float(c, 0);
  c.expect_rank_at_least(0, 1);
  normalize_axis(c.attrs().get_int("axis", -1), c.shape(0).rank(), "softmax axis");
  c.set_output(0, c.dtype(0), c.shape(0));
}

void batch_norm(InferContext& c) {
  expect_float(c, 0);
  c.expect_rank_at_least(0, 2);
  c.float_attr("epsilon", 1e-5, 0.0, 1e30);
  const int64_t training_mode = c.attrs().get_int("training_mode", 0);
  if (training_mode != 0 && training_mode != 1)
    c.fail(fmt::format("training_mode must be 0 or 1, got {}", training_mode));
  const Shape& x = c.shape(0);
  int64_t channels = is_channels_last(c.node()) ? x.dim(-1) : x[1];
  if (channels == kBatch) c.fail("the channel dimension cannot be the symbolic batch");
  for (int i = 1; i < 5; ++i) {
    if (c.shape(i).rank() != 1 || c.shape(i)[0] != channels)
      c.fail(fmt::format("input {} must have shape [{}] (one value per channel)", i, channels));
    expect_float(c, i);
  }
  c.set_output(0, c.dtype(0), x);
}

// ONNX InstanceNormalization: X is (N, C, D1, ..., Dn); like onnxruntime, rank >= 3.
void instance_norm(InferContext& c) {
  expect_float(c, 0);
  c.expect_rank_at_least(0, 3);
  c.float_attr("epsilon", 1e-5, 0.0, 1e30);
  int64_t channels = c.shape(0)[1];
  if (channels == kBatch) c.fail("the channel dimension cannot be the symbolic batch");
  c.expect_per_channel(1, channels);
  c.expect_per_channel(2, channels);
  c.set_output(0, c.dtype(0), c.shape(0));
}

// ONNX LRN: X is (N, C, D1, ..., Dn) and the window `size` (channels summed over) is required.
void lrn(InferContext& c) {
  expect_float(c, 0);
  c.expect_rank_at_least(0, 3);
  if (!c.attrs().has("size")) c.fail("attribute size is required");
  c.int_attr("size", 1, 1, int64_t{1} << 20);
  c.float_attr("alpha", 1e-4, -1e30, 1e30);
  c.float_attr("beta", 0.75, -1e30, 1e30);
  c.float_attr("bias", 1.0, -1e30, 1e30);
  c.set_output(0, c.dtype(0), c.shape(0));
}

void layer_norm(InferContext& c) {
  expect_float(c, 0);
  c.expect_rank_at_least(0, 1);
  c.float_attr("epsilon", 1e-5, 0.0, 1e30);
  c.int_attr("stash_type", 1, 1, 1);
  const Shape& x = c.shape(0);
  int axis = normalize_axis(c.attrs().get_int("axis", -1), x.rank(), "LayerNormalization axis");
  for (int i = 1; i < c.num_inputs(); ++i)
    if (c.has_input(i)) c.expect_same_dtype(0, i);
  Shape normalized(std::vector<int64_t>(x.dims().begin() + axis, x.dims().end()));
  for (int i = 1; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) continue;
    if (!broadcasts_to(c.shape(i), normalized))
      c.fail(fmt::format("input {} of shape {} does not broadcast to the normalized shape {}", i,
                         c.shape(i).str(), normalized.str()));
  }
  c.set_output(0, c.dtype(0), x);
  std::vector<int64_t> stat(x.dims().begin(), x.dims().begin() + axis);
  stat.resize(x.rank(), 1);
  for (size_t i = 1; i < c.node().outputs.size(); ++i) c.set_output(i, DType::f32, Shape(stat));
}

void same_as_input(InferContext& c) {
  c.set_output(0, c.dtype(0), c.shape(0));
}

}  // namespace mimic::ir::infer
