// Gradient rules of elementwise ops (numpy broadcasting: each input's gradient is summed back
// over the axes broadcasting stretched). Derivatives follow PyTorch's autograd formulas
// (tools/autograd/derivatives.yaml), e.g. Relu' = 0 at 0, Abs' = sign(x).
#include <cmath>

#include "frontend/ir/autodiff.h"
#include "frontend/ir/unary_math.h"

namespace mimic::ir {
namespace {

void set_unb(GradContext& c, int i, ValueId g) {
  if (c.needs(i)) c.set(i, c.b.unbroadcast(g, c.x_shape(i)));
}

void add_rule(GradContext& c) {
  set_unb(c, 0, c.dy());
  set_unb(c, 1, c.dy());
}

void sub_rule(GradContext& c) {
  set_unb(c, 0, c.dy());
  if (c.needs(1)) set_unb(c, 1, c.b.neg(c.dy()));
}

void mul_rule(GradContext& c) {
  if (c.needs(0)) set_unb(c, 0, c.b.mul(c.dy(), c.x(1)));
  if (c.needs(1)) set_unb(c, 1, c.b.mul(c.dy(), c.x(0)));
}

void div_rule(GradContext& c) {
  auto& b = c.b;
  if (c.needs(0)) set_unb(c, 0, b.div(c.dy(), c.x(1)));
  if (c.needs(1)) set_unb(c, 1, b.neg(b.div(b.mul(c.dy(), c.y()), c.x(1))));  // -g * (a/b) / b
}

void pow_rule(GradContext& c) {
  auto& b = c.b;
  if (c.needs(0)) {  // g * e * a^(e-1)
    ValueId e = c.x(1);
    ValueId em1 = b.sub(e, b.scalar_like(1.0, e));
    set_unb(c, 0, b.mul(c.dy(), b.mul(e, b.op(OpType::Pow, {c.x(0), em1}))));
  }
  if (c.needs(1)) set_unb(c, 1, b.mul(c.dy(), b.mul(c.y(), b.op(OpType::Log, {c.x(0)}))));
}

// Dropout without training_mode, or with a constant false one, passes its input through.
bool dropout_is_identity(const GradContext& c) {
  if (!c.node().has_input(2)) return true;
  const auto& mode = c.b.graph().value(c.x(2)).constant;
  return mode && mode->numel() == 1 && !mode->data<bool>()[0];
}

// f'(x) of the trigonometric and hyperbolic functions and their inverses, from x and y = f(x).
ValueId trig_derivative(GradContext& c, ValueId x, ValueId y) {
  GraphBuilder& b = c.b;
  ValueId one = b.scalar_like(1.0, x), x2 = b.mul(x, x);
  auto inv_sqrt = [&](ValueId v) { return b.op(OpType::Reciprocal, {b.op(OpType::Sqrt, {v})}); };
  switch (c.node().op) {
    case OpType::Tan:  // 1 + tan^2
      return b.add(one, b.mul(y, y));
    case OpType::Asin:  // 1 / sqrt(1 - x^2)
      return inv_sqrt(b.sub(one, x2));
    case OpType::Acos:
      return b.neg(inv_sqrt(b.sub(one, x2)));
    case OpType::Atan:  // 1 / (1 + x^2)
      return b.op(OpType::Reciprocal, {b.add(one, x2)});
    case OpType::Sinh:
      return b.op(OpType::Cosh, {x});
    case OpType::Cosh:
      return b.op(OpType::Sinh, {x});
    case OpType::Asinh:  // 1 / sqrt(x^2 + 1)
      return inv_sqrt(b.add(x2, one));
    case OpType::Acosh:  // 1 / sqrt(x^2 - 1)
      return inv_sqrt(b.sub(x2, one));
    case OpType::Atanh:  // 1 / (1 - x^2)
      return b.op(OpType::Reciprocal, {b.sub(one, x2)});
    default:
      c.unsupported("no elementwise gradient rule");
  }
}

// dx = g * f'(x) for a derivative built from x and y.
void unary_rule(GradContext& c) {
  auto& b = c.b;
  ValueId x = c.x(0), y = c.y(), g = c.dy();
  ValueId d = kNoValue;  // f'(x), or the gradient itself when `done`
  switch (c.node().op) {
    case OpType::Dropout:
      if (!dropout_is_identity(c))
        c.unsupported("Dropout in training mode: a train step replaces it by a seeded mask");
      c.set(0, g);
      return;
    case OpType::Identity:
      c.set(0, g);
      return;
    case OpType::Neg:
      c.set(0, b.neg(g));
      return;
    case OpType::Exp:
      d = y;
      break;
    case OpType::Log:
      c.set(0, b.div(g, x));
      return;
    case OpType::Sqrt:
      c.set(0, b.div(g, b.scale(y, 2.0)));
      return;
    case OpType::Reciprocal:
      c.set(0, b.neg(b.mul(g, b.mul(y, y))));
      return;
    case OpType::Abs:
      d = b.op(OpType::Sign, {x});
      break;
    case OpType::Sigmoid:
      d = b.mul(y, b.sub(b.scalar_like(1.0, y), y));
      break;
    case OpType::Tanh:
      d = b.sub(b.scalar_like(1.0, y), b.mul(y, y));
      break;
    case OpType::Softplus:
      d = b.op(OpType::Sigmoid, {x});
      break;
    case OpType::Erf:  // 2/sqrt(pi) * exp(-x^2)
      d = b.scale(b.op(OpType::Exp, {b.neg(b.mul(x, x))}), 2.0 / std::sqrt(M_PI));
      break;
    case OpType::Sin:
      d = b.op(OpType::Cos, {x});
      break;
    case OpType::Cos:
      d = b.neg(b.op(OpType::Sin, {x}));
      break;
    default:
      d = trig_derivative(c, x, y);
  }
  c.set(0, b.mul(g, d));
}

// Relu, LeakyRelu: the gradient passes where the input is positive. Relu tests its output
// instead (y > 0 exactly where x > 0), as PyTorch's threshold_backward(grad, result, 0) does: the
// backward pass then reads the value the next layer reads anyway, and the input need not be kept.
void relu_rule(GradContext& c) {
  auto& b = c.b;
  ValueId g = c.dy();
  if (c.node().op == OpType::Relu) {
    ValueId y = c.y();
    c.set(0, b.mul(g, b.cast(b.op(OpType::Greater, {y, b.scalar_like(0.0, y)}), b.dtype(y))));
    return;
  }
  ValueId x = c.x(0);
  ValueId pos = b.op(OpType::Greater, {x, b.scalar_like(0.0, x)});
  c.set(0, b.op(OpType::Where, {pos, g, b.scale(g, unary_attrs(c.node()).alpha)}));
}

void clip_rule(GradContext& c) {
  auto& b = c.b;
  ValueId x = c.x(0), g = c.dy();
  if (c.node().has_input(1))
    g = b.mul(g, b.cast(b.op(OpType::GreaterOrEqual, {x, c.x(1)}), b.dtype(x)));
  if (c.node().has_input(2))
    g = b.mul(g, b.cast(b.op(OpType::LessOrEqual, {x, c.x(2)}), b.dtype(x)));
  c.set(0, g);
}

// Gelu exact: d = Phi(x) + x * phi(x); tanh approximation: derivative of
// 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2/pi).
void gelu_rule(GradContext& c) {
  auto& b = c.b;
  ValueId x = c.x(0);
  ValueId one = b.scalar_like(1.0, x);
  ValueId d;
  if (unary_attrs(c.node()).gelu_tanh) {
    double k = std::sqrt(2.0 / M_PI);
    ValueId x2 = b.mul(x, x);
    ValueId u = b.scale(b.mul(x, b.add(one, b.scale(x2, 0.044715))), k);
    ValueId t = b.op(OpType::Tanh, {u});
    ValueId du = b.scale(b.add(one, b.scale(x2, 3 * 0.044715)), k);
    ValueId left = b.scale(b.add(one, t), 0.5);
    ValueId right = b.mul(b.scale(x, 0.5), b.mul(b.sub(one, b.mul(t, t)), du));
    d = b.add(left, right);
  } else {
    ValueId cdf = b.scale(b.add(one, b.op(OpType::Erf, {b.scale(x, 1.0 / std::sqrt(2.0))})), 0.5);
    ValueId pdf =
        b.scale(b.op(OpType::Exp, {b.scale(b.mul(x, x), -0.5)}), 1.0 / std::sqrt(2.0 * M_PI));
    d = b.add(cdf, b.mul(x, pdf));
  }
  c.set(0, b.mul(c.dy(), d));
}

// Piecewise activations: the derivative is built from masks on x (each boundary point takes the
// derivative of the side ONNX's formula picks).
void piecewise_rule(GradContext& c) {
  auto& b = c.b;
  ValueId x = c.x(0), one = b.scalar_like(1.0, x), zero = b.scalar_like(0.0, x);
  DType t = b.dtype(x);
  auto mask = [&](ValueId cond) { return b.cast(cond, t); };
  ValueId pos = b.op(OpType::Greater, {x, zero});
  ValueId d;
  const UnaryAttrs attrs = unary_attrs(c.node());
  const double alpha = attrs.alpha, beta = attrs.beta, gamma = attrs.gamma;
  switch (c.node().op) {
    case OpType::Elu: {  // x > 0: 1, else alpha e^x
      d = b.op(OpType::Where, {b.op(OpType::GreaterOrEqual, {x, zero}), one,
                               b.scale(b.op(OpType::Exp, {x}), alpha)});
      break;
    }
    case OpType::Selu: {
      d = b.scale(b.op(OpType::Where, {pos, one, b.scale(b.op(OpType::Exp, {x}), alpha)}), gamma);
      break;
    }
    case OpType::Celu: {
      d = b.op(OpType::Where, {pos, one, b.op(OpType::Exp, {b.scale(x, 1.0 / alpha)})});
      break;
    }
    case OpType::HardSigmoid: {  // alpha where 0 < alpha x + beta < 1
      ValueId u = b.add(b.scale(x, alpha), b.scalar_like(beta, x));
      d = b.scale(b.mul(mask(b.op(OpType::Greater, {u, zero})), mask(b.op(OpType::Less, {u, one}))),
                  alpha);
      break;
    }
    case OpType::HardSwish: {  // x < -3: 0, x > 3: 1, else x/3 + 1/2 (PyTorch's hardswish_backward)
      ValueId mid = b.add(b.scale(x, 1.0 / 3.0), b.scalar_like(0.5, x));
      ValueId above = b.op(OpType::Greater, {x, b.scalar_like(3.0, x)});
      ValueId below = b.op(OpType::Less, {x, b.scalar_like(-3.0, x)});
      d = b.op(OpType::Where, {above, one, b.op(OpType::Where, {below, zero, mid})});
      break;
    }
    case OpType::ThresholdedRelu: {  // 1 where x > alpha
      d = mask(b.op(OpType::Greater, {x, b.scalar_like(alpha, x)}));
      break;
    }
    case OpType::Shrink: {  // 1 where x < -lambd or x > lambd
      ValueId lambd = b.scalar_like(attrs.lambd, x);
      d = b.add(mask(b.op(OpType::Less, {x, b.neg(lambd)})),
                mask(b.op(OpType::Greater, {x, lambd})));
      break;
    }
    case OpType::Softsign: {  // 1 / (1 + |x|)^2
      ValueId den = b.add(one, b.op(OpType::Abs, {x}));
      d = b.op(OpType::Reciprocal, {b.mul(den, den)});
      break;
    }
    default:
      c.unsupported("no piecewise gradient rule");
  }
  c.set(0, b.mul(c.dy(), d));
}

// PRelu(x, slope) = x > 0 ? x : slope * x, slope broadcast to x.
void prelu_rule(GradContext& c) {
  auto& b = c.b;
  ValueId x = c.x(0), g = c.dy(), zero = b.scalar_like(0.0, x);
  ValueId pos = b.op(OpType::Greater, {x, zero});
  if (c.needs(0)) set_unb(c, 0, b.op(OpType::Where, {pos, g, b.mul(g, c.x(1))}));
  if (c.needs(1)) set_unb(c, 1, b.op(OpType::Where, {pos, b.mul(zero, g), b.mul(g, x)}));
}

// Mod(a, b) = a - b * q with q = trunc(a / b) (fmod=1) or floor(a / b) (fmod=0): da = g,
// db = -g * q (PyTorch's fmod and remainder).
void mod_rule(GradContext& c) {
  auto& b = c.b;
  set_unb(c, 0, c.dy());
  if (!c.needs(1)) return;
  ValueId ratio = b.div(c.x(0), c.x(1));
  ValueId q = b.op(OpType::Floor, {ratio});
  if (c.attrs().get_int("fmod", 0) != 0) {
    ValueId negative = b.op(OpType::Less, {ratio, b.scalar_like(0.0, ratio)});
    q = b.op(OpType::Where, {negative, b.op(OpType::Ceil, {ratio}), q});
  }
  set_unb(c, 1, b.neg(b.mul(c.dy(), q)));
}

void cast_rule(GradContext& c) {
  if (!is_floating(c.b.dtype(c.x(0))))
    c.unsupported("gradient through a cast from a non-float type");
  c.set(0, c.b.cast(c.dy(), c.b.dtype(c.x(0))));
}

void where_rule(GradContext& c) {
  auto& b = c.b;
  ValueId g = c.dy(), zero = b.scalar_like(0.0, g);
  if (c.needs(1)) set_unb(c, 1, b.op(OpType::Where, {c.x(0), g, zero}));
  if (c.needs(2)) set_unb(c, 2, b.op(OpType::Where, {c.x(0), zero, g}));
}

void sum_mean_rule(GradContext& c) {
  ValueId g = c.dy();
  if (c.node().op == OpType::Mean) g = c.b.scale(g, 1.0 / c.node().num_inputs());
  for (int i = 0; i < c.node().num_inputs(); ++i) set_unb(c, i, g);
}

// Max/Min of several inputs: the gradient goes to the inputs equal to the result, split evenly
// between ties, as PyTorch's maximum/minimum and JAX's max/min do (a tie of an input with itself,
// Max(x, x), then passes the gradient once). No input equals a NaN result: none gets a gradient.
void max_min_rule(GradContext& c) {
  auto& b = c.b;
  const DType t = b.dtype(c.y());
  std::vector<ValueId> hits;
  ValueId ties = ir::kNoValue;
  for (int i = 0; i < c.node().num_inputs(); ++i) {
    hits.push_back(b.cast(b.op(OpType::Equal, {c.x(i), c.y()}), t));
    ties = i == 0 ? hits[0] : b.add(ties, hits[i]);
  }
  ValueId share = b.div(c.dy(), b.op(OpType::Max, {ties, b.scalar_like(1.0, ties)}));
  for (int i = 0; i < c.node().num_inputs(); ++i) set_unb(c, i, b.mul(share, hits[i]));
}

}  // namespace

GradRule elementwise_grad_rule(OpType op) {
  switch (op) {
    case OpType::Add:
      return add_rule;
    case OpType::Sub:
      return sub_rule;
    case OpType::Mul:
      return mul_rule;
    case OpType::Div:
      return div_rule;
    case OpType::Pow:
      return pow_rule;
    case OpType::Identity:
    case OpType::Dropout:
    case OpType::Neg:
    case OpType::Exp:
    case OpType::Log:
    case OpType::Sqrt:
    case OpType::Reciprocal:
    case OpType::Abs:
    case OpType::Sigmoid:
    case OpType::Tanh:
    case OpType::Softplus:
    case OpType::Erf:
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
      return unary_rule;
    case OpType::PRelu:
      return prelu_rule;
    case OpType::Mod:
      return mod_rule;
    case OpType::Relu:
    case OpType::LeakyRelu:
      return relu_rule;
    case OpType::Clip:
      return clip_rule;
    case OpType::Gelu:
      return gelu_rule;
    case OpType::Cast:
      return cast_rule;
    case OpType::Where:
      return where_rule;
    case OpType::Sum:
    case OpType::Mean:
      return sum_mean_rule;
    case OpType::Max:
    case OpType::Min:
      return max_min_rule;
    case OpType::Elu:
    case OpType::Selu:
    case OpType::Celu:
    case OpType::HardSigmoid:
    case OpType::HardSwish:
    case OpType::Softsign:
    case OpType::ThresholdedRelu:
    case OpType::Shrink:
      return piecewise_rule;
    default:
      return nullptr;
  }
}

}  // namespace mimic::ir
