#include "frontend/ir/primitive_expansions.h"

namespace mimic::ir {

// y = (x - mean) / sqrt(var + epsilon) * scale + bias, mean and (biased) var over the spatial
// axes of each sample and channel, as ONNX defines it.
ValueId expand_instance_norm(GraphBuilder& b, const Node& n, const std::vector<ValueId>& in) {
  const Shape xs = b.shape(in[0]);
  std::vector<int64_t> axes, per_channel(xs.rank(), 1);
  for (int i = 2; i < xs.rank(); ++i) axes.push_back(i);
  per_channel[1] = xs[1];
  ValueId centered = b.sub(in[0], b.reduce_mean(in[0], axes, true));
  ValueId var = b.reduce_mean(b.mul(centered, centered), axes, true);
  ValueId eps = b.scalar_like(n.attrs.get_float("epsilon", 1e-5), var);
  ValueId rstd = b.op(OpType::Reciprocal, {b.op(OpType::Sqrt, {b.add(var, eps)})});
  return b.add(b.mul(b.mul(centered, rstd), b.reshape(in[1], Shape(per_channel))),
               b.reshape(in[2], Shape(per_channel)));
}

ValueId expand_depth_space(GraphBuilder& b, const Node& n, ValueId x) {
  const Shape s = b.shape(x);
  const int64_t k = n.attrs.require_int("blocksize"), N = s[0], C = s[1], H = s[2], W = s[3];
  if (n.op == OpType::SpaceToDepth) {
    ValueId blocks = b.reshape(x, Shape({N, C, H / k, k, W / k, k}));
    return b.reshape(b.transpose(blocks, {0, 3, 5, 1, 2, 4}), Shape({N, C * k * k, H / k, W / k}));
  }
  const int64_t c = C / (k * k);
  const bool crd = n.attrs.get_string("mode", "DCR") == "CRD";
  ValueId blocks = b.reshape(x, crd ? Shape({N, c, k, k, H, W}) : Shape({N, k, k, c, H, W}));
  ValueId moved = b.transpose(blocks, crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3}
                                          : std::vector<int64_t>{0, 3, 4, 1, 5, 2});
  return b.reshape(moved, Shape({N, c, H * k, W * k}));
}

}  // namespace mimic::ir
