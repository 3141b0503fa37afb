#include "frontend/ir/batch_norm_train.h"

#include <algorithm>

#include "frontend/ir/graph_rewrite.h"
#include "frontend/ir/nn_geometry.h"

namespace mimic::ir {

BatchStatistics batch_norm_batch_statistics(GraphBuilder& b, const Node& n, ValueId x,
                                            ValueId scale, ValueId bias,
                                            BatchNormVariance variance) {
  const Shape xs = b.shape(x);
  int ch = is_channels_last(n) ? xs.rank() - 1 : 1;
  std::vector<int64_t> axes, per_channel(xs.rank(), 1);
  per_channel[ch] = xs[ch];
  for (int i = 0; i < xs.rank(); ++i)
    if (i != ch) axes.push_back(i);
  double eps = n.attrs.get_float("epsilon", 1e-5);
  BatchStatistics s;
  s.mean = b.reduce_mean(x, axes, true);
  s.centered = b.sub(x, s.mean);
  s.var =
      variance == BatchNormVariance::two_pass
          ? b.reduce_mean(b.mul(s.centered, s.centered), axes, true)
          : b.op(OpType::Max, {b.sub(b.reduce_mean(b.mul(x, x), axes, true), b.mul(s.mean, s.mean)),
                               b.scalar_like(0.0, s.mean)});
  s.rstd =
      b.op(OpType::Reciprocal, {b.op(OpType::Sqrt, {b.add(s.var, b.scalar_like(eps, s.var))})});
  s.xhat = b.mul(s.centered, s.rstd);
  s.y = b.add(b.mul(s.xhat, b.reshape(scale, Shape(per_channel))),
              b.reshape(bias, Shape(per_channel)));
  return s;
}

bool is_training_batch_norm(const Node& n) {
  return n.op == OpType::BatchNormalization && n.attrs.get_int("training_mode", 0) != 0;
}

Graph expand_training_batch_norms(Graph g, BatchNormVariance variance) {
  std::vector<bool> pick(g.num_nodes(), false);
  for (int i = 0; i < g.num_nodes(); ++i) pick[i] = is_training_batch_norm(g.node(i));
  if (std::none_of(pick.begin(), pick.end(), [](bool p) { return p; })) return g;
  auto expand = [variance](NodeRewrite& r, const Node& n, const std::vector<ValueId>& inputs) {
    GraphBuilder b(r.out, n.name);
    ValueId y = batch_norm_batch_statistics(b, n, inputs[0], inputs[1], inputs[2], variance).y;
    r.map[n.outputs[0]] = y;
    r.keep_role(n.outputs[0], y);
  };
  return rewrite_nodes(g, pick, expand);
}

}  // namespace mimic::ir
