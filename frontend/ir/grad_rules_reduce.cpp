// Gradient rules of reductions and scans: each reduction's gradient is the output gradient
// expanded back over the reduced axes times the derivative of that reduction, following PyTorch's
// autograd formulas (tools/autograd/derivatives.yaml): prod's exact product-of-the-others with
// zeros, norm's x / |x| (0 where the norm is 0), logsumexp's softmax. CumSum's gradient is the
// CumSum of the output gradient in the opposite direction.
#include "frontend/ir/autodiff.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::ir {
namespace {

// The input's shape with every reduced axis kept as 1.
Shape kept_shape(GradContext& c) {
  Shape x = c.x_shape(0);
  std::vector<bool> reduced = resolve_reduce_axes(c.b.graph(), c.node());
  std::vector<int64_t> kept = x.dims();
  for (int i = 0; i < x.rank(); ++i)
    if (reduced[i]) kept[i] = 1;
  return Shape(kept);
}

std::vector<int64_t> reduced_axes(GradContext& c) {
  std::vector<bool> reduced = resolve_reduce_axes(c.b.graph(), c.node());
  std::vector<int64_t> axes;
  for (size_t i = 0; i < reduced.size(); ++i)
    if (reduced[i]) axes.push_back(static_cast<int64_t>(i));
  return axes;
}

// `v` (shaped like the output) reshaped to keep the reduced axes, then expanded to the input.
ValueId expand_back(GradContext& c, ValueId v) {
  return c.b.expand(c.b.reshape(v, kept_shape(c)), c.x_shape(0));
}

// The output, reshaped to keep the reduced axes (broadcasts against the input).
ValueId kept_output(GradContext& c) {
  return c.b.reshape(c.y(), kept_shape(c));
}

// ReduceMean's scale applies before the expansion: the same product per element, on the small
// tensor (a full-size Mul fewer per BatchNorm statistic of a training step).
void reduce_sum_mean_rule(GradContext& c) {
  ValueId g = c.dy();
  if (c.node().op == OpType::ReduceMean)
    g = c.b.scale(
        g, static_cast<double>(kept_shape(c).numel()) / static_cast<double>(c.x_shape(0).numel()));
  c.set(0, expand_back(c, g));
}

// ReduceMax/ReduceMin: the gradient goes to the elements equal to the result, split evenly between
// ties, as PyTorch's amax/amin, TensorFlow's reduce_max and JAX's reduce_max do.
void reduce_extreme_rule(GradContext& c) {
  auto& b = c.b;
  ValueId hit = b.cast(b.op(OpType::Equal, {c.x(0), kept_output(c)}), b.dtype(c.x(0)));
  ValueId ties = b.reduce_sum(hit, reduced_axes(c), true);
  ValueId count = b.op(OpType::Max, {ties, b.scalar_like(1.0, ties)});  // 0 ties: a NaN result
  ValueId share = b.div(b.reshape(c.dy(), kept_shape(c)), count);
  c.set(0, b.mul(hit, b.expand(share, c.x_shape(0))));
}

// d prod / d x_i = the product of the other elements: prod / x_i with no zero in the group, the
// product of the non-zero elements at the single zero, 0 everywhere with two zeros or more.
void reduce_prod_rule(GradContext& c) {
  auto& b = c.b;
  ValueId x = c.x(0), one = b.scalar_like(1.0, x), zero = b.scalar_like(0.0, x);
  DType t = b.dtype(x);
  ValueId is_zero = b.op(OpType::Equal, {x, zero});
  ValueId nonzero = b.op(OpType::Where, {is_zero, one, x});
  std::vector<int64_t> axes = reduced_axes(c);
  ValueId prod_nz = b.op(OpType::ReduceProd, {nonzero, b.ints(axes)}, {{"keepdims", int64_t{1}}});
  ValueId zeros = b.reduce_sum(b.cast(is_zero, t), axes, true);
  ValueId none = b.op(OpType::Equal, {zeros, zero});
  ValueId single = b.op(OpType::And, {b.op(OpType::Equal, {zeros, one}), is_zero});
  ValueId others = b.op(
      OpType::Where, {none, b.div(prod_nz, nonzero), b.op(OpType::Where, {single, prod_nz, zero})});
  c.set(0, b.mul(others, expand_back(c, c.dy())));
}

void reduce_norm_rule(GradContext& c) {
  auto& b = c.b;
  ValueId x = c.x(0), g = expand_back(c, c.dy());
  switch (c.node().op) {
    case OpType::ReduceL1:
      c.set(0, b.mul(g, b.op(OpType::Sign, {x})));
      return;
    case OpType::ReduceSumSquare:
      c.set(0, b.mul(g, b.scale(x, 2.0)));
      return;
    case OpType::ReduceL2: {  // x / |x|, 0 where the norm is 0
      ValueId y = kept_output(c), zero = b.scalar_like(0.0, x);
      ValueId safe =
          b.op(OpType::Where, {b.op(OpType::Equal, {y, zero}), b.scalar_like(1.0, x), y});
      c.set(0, b.mul(g, b.div(x, safe)));
      return;
    }
    case OpType::ReduceLogSum: {  // 1 / sum(x)
      ValueId sum = b.reduce_sum(x, reduced_axes(c), true);
      c.set(0, b.div(g, sum));
      return;
    }
    case OpType::ReduceLogSumExp:  // softmax over the reduced axes: exp(x - y)
      c.set(0, b.mul(g, b.op(OpType::Exp, {b.sub(x, kept_output(c))})));
      return;
    default:
      c.unsupported("no reduction gradient rule");
  }
}

// y_i = sum over j <= i (or j < i, exclusive) of x_j: dx_j = sum over i >= j (i > j) of dy_i,
// the same scan run the other way.
void cumsum_rule(GradContext& c) {
  Attributes at = c.attrs();
  at.set("reverse", int64_t{c.attrs().get_int("reverse", 0) == 0});
  c.set(0, c.b.op(OpType::CumSum, {c.dy(), c.x(1)}, at));
}

}  // namespace

GradRule reduce_grad_rule(OpType op) {
  switch (op) {
    case OpType::ReduceSum:
    case OpType::ReduceMean:
      return reduce_sum_mean_rule;
    case OpType::ReduceMax:
    case OpType::ReduceMin:
      return reduce_extreme_rule;
    case OpType::ReduceProd:
      return reduce_prod_rule;
    case OpType::ReduceL1:
    case OpType::ReduceL2:
    case OpType::ReduceSumSquare:
    case OpType::ReduceLogSum:
    case OpType::ReduceLogSumExp:
      return reduce_norm_rule;
    case OpType::CumSum:
      return cumsum_rule;
    default:
      return nullptr;
  }
}

}  // namespace mimic::ir
