#include "frontend/api/losses.h"

#include <fmt/format.h>

#include "base/error.h"

namespace mimic {

using ir::DType;
using ir::OpType;
using ir::ValueId;

LossKind parse_loss(const std::string& name) {
  if (name == "cross_entropy") return LossKind::cross_entropy;
  if (name == "mse") return LossKind::mse;
  if (name == "bce_with_logits") return LossKind::bce_with_logits;
  throw InvalidArgument(
      fmt::format("unknown loss '{}' (known: cross_entropy, mse, bce_with_logits)", name));
}

const char* loss_name(LossKind kind) {
  switch (kind) {
    case LossKind::cross_entropy:
      return "cross_entropy";
    case LossKind::mse:
      return "mse";
    case LossKind::bce_with_logits:
      return "bce_with_logits";
  }
  return "?";
}

ir::TensorType loss_target_type(const LossConfig& loss, const ir::TensorType& output) {
  if (!ir::is_floating(output.dtype))
    throw InvalidArgument(fmt::format("{} loss: the model output is {}, needs floating point",
                                      loss_name(loss.kind), output.str()));
  if (loss.kind != LossKind::cross_entropy) return output;
  if (output.shape.rank() != 2)
    throw InvalidArgument(fmt::format(
        "cross_entropy loss: the model output is {}, needs logits [N, C]", output.str()));
  if (!(loss.label_smoothing >= 0 && loss.label_smoothing <= 1))  // NaN too
    throw InvalidArgument(fmt::format("cross_entropy loss: label_smoothing {} is outside [0, 1]",
                                      loss.label_smoothing));
  return {DType::i64, ir::Shape({output.shape[0]})};
}

void check_loss_target(const LossConfig& loss, const ir::TensorType& output,
                       const ir::HostTensor& target) {
  ir::TensorType want = loss_target_type(loss, output);
  if (target.type() != want)
    throw InvalidArgument(fmt::format("{} loss: target is {}, expected {} for model output {}",
                                      loss_name(loss.kind), target.type().str(), want.str(),
                                      output.str()));
  if (loss.kind != LossKind::cross_entropy) return;
  int64_t classes = output.shape[1];
  const int64_t* labels = target.data<int64_t>();
  for (int64_t i = 0; i < target.numel(); ++i)
    if ((labels[i] < 0 || labels[i] >= classes) && labels[i] != loss.ignore_index)
      throw InvalidArgument(
          fmt::format("cross_entropy loss: label {} at index {} is outside [0, {}) "
                      "(ignore_index {})",
                      labels[i], i, classes, loss.ignore_index));
}

namespace {

ValueId all_mean(ir::GraphBuilder& b, ValueId v) {
  std::vector<int64_t> axes(b.shape(v).rank());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  return b.reduce_mean(v, axes, false);
}

ValueId cross_entropy(ir::GraphBuilder& b, const LossConfig& loss, ValueId logits, ValueId labels) {
  int64_t classes = b.shape(logits)[1];
  DType t = b.dtype(logits);
  ValueId logp = b.op(OpType::LogSoftmax, {logits}, {{"axis", int64_t{1}}});
  std::vector<int64_t> ids(classes);
  for (int64_t i = 0; i < classes; ++i) ids[i] = i;
  ValueId col = b.op(OpType::Unsqueeze, {labels, b.ints({1})});         // [N, 1]
  ValueId onehot = b.cast(b.op(OpType::Equal, {col, b.ints(ids)}), t);  // [N, C]
  ValueId nll = b.neg(b.reduce_sum(b.mul(onehot, logp), {1}, false));   // [N]
  ValueId per_row = nll;
  if (loss.label_smoothing > 0) {
    ValueId smooth = b.neg(b.reduce_mean(logp, {1}, false));
    per_row =
        b.add(b.scale(nll, 1.0 - loss.label_smoothing), b.scale(smooth, loss.label_smoothing));
  }
  ValueId ignore = b.scalar(static_cast<double>(loss.ignore_index), DType::i64);
  ValueId keep = b.cast(b.op(OpType::Not, {b.op(OpType::Equal, {labels, ignore})}), t);  // [N]
  ValueId total = b.reduce_sum(b.mul(per_row, keep), {0}, false);
  return b.div(total, b.reduce_sum(keep, {0}, false));
}

}  // namespace

ValueId append_loss(ir::GraphBuilder& b, const LossConfig& loss, ValueId output, ValueId target) {
  ir::TensorType want = loss_target_type(loss, b.type(output));
  if (b.type(target) != want)
    throw InvalidArgument(fmt::format("{} loss: target is {}, expected {} for model output {}",
                                      loss_name(loss.kind), b.type(target).str(), want.str(),
                                      b.type(output).str()));
  switch (loss.kind) {
    case LossKind::cross_entropy:
      return cross_entropy(b, loss, output, target);
    case LossKind::mse: {
      ValueId d = b.sub(output, target);
      return all_mean(b, b.mul(d, d));
    }
    case LossKind::bce_with_logits: {
      ValueId x = output;
      ValueId softplus =
          b.op(OpType::Log,
               {b.add(b.scalar_like(1.0, x), b.op(OpType::Exp, {b.neg(b.op(OpType::Abs, {x}))}))});
      return all_mean(b, b.add(b.sub(b.op(OpType::Relu, {x}), b.mul(x, target)), softplus));
    }
  }
  throw InvalidArgument("unknown loss kind");
}

}  // namespace mimic
