// Converters of neural-network ONNX ops: matrix products, convolutions, pools, normalizations,
// the softmax family (flatten-to-2D before opset 13), reductions (axes attribute -> input) and
// the recurrent layers.
#include <fmt/format.h>

#include "base/error.h"
#include "frontend/onnx/import_context.h"

namespace mimic::onnx_import {
namespace {

using ir::OpType;

// MaxPool's optional second output (argmax indices) has no IR equivalent.
void max_pool(NodeConverter& c) {
  if (c.has_output(1)) c.unsupported("the Indices output");
  c.emit(OpType::MaxPool, {c.input(0)}, c.attributes({"storage_order"}), 0, 1);
}

// A training-mode BatchNormalization's running statistic (output 1: mean, 2: variance) as ONNX
// defines it: input * momentum + batch * (1 - momentum), the batch variance biased.
ir::ValueId running_statistic(NodeConverter& c, int output, int rank) {
  ir::ValueId x = c.input(0), running = c.input(output + 2);
  auto tx = c.type_of(x), ts = c.type_of(running);
  if (!tx || !ts || tx->dtype != ts->dtype)
    c.unsupported("running statistics whose dtype differs from X's (or is unknown)");
  std::vector<int64_t> axes;
  for (int i = 0; i < rank; ++i)
    if (i != 1) axes.push_back(i);
  ir::ValueId axes_value = c.constant_ints("axes", axes);
  auto mean = [&](ir::ValueId v, int64_t keepdims) {
    return c.emit_internal(OpType::ReduceMean, "ReduceMean", {v, axes_value},
                           {{"keepdims", keepdims}})[0];
  };
  ir::ValueId batch = mean(x, 0);
  if (output == 2) {
    ir::ValueId centered = c.emit_internal(OpType::Sub, "Sub", {x, mean(x, 1)})[0];
    batch = mean(c.emit_internal(OpType::Mul, "Mul", {centered, centered})[0], 0);
  }
  const double momentum = c.attr_float("momentum", 0.9);
  auto scaled = [&](ir::ValueId v, double factor) {
    return c.emit_internal(OpType::Mul, "Mul",
                           {v, c.constant_scalar("factor", tx->dtype, factor)})[0];
  };
  return c.emit_internal(OpType::Add, "Add",
                         {scaled(running, momentum), scaled(batch, 1.0 - momentum)})[0];
}

// Batch normalization. In inference mode, the running statistics normalize. In training mode
// (BatchNormalization-14/15 with training_mode=1, what torch.onnx.export writes with
// TrainingMode.TRAINING), the batch's statistics do: an IR BatchNormalization with
// training_mode=1, which compile() expands into batch-statistics ops and a train step trains like
// any BatchNormalization; the running statistics outputs are computed when something reads them.
// Not imported: per-activation statistics (spatial=0) and the training outputs before opset 14.
void batch_norm(NodeConverter& c) {
  if (c.version() < 9 && c.attr_int("spatial", 1) == 0)
    c.unsupported("spatial=0 (per-activation statistics)");
  const bool training = c.version() >= 14 && c.attr_int("training_mode", 0) != 0;
  for (int i = 1; i < c.num_outputs() && !training; ++i)
    if (c.has_output(i)) c.unsupported("the running mean/variance outputs without training_mode=1");
  std::vector<ir::ValueId> inputs;
  for (int i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.input(i));
  c.emit(OpType::BatchNormalization, inputs,
         c.attributes({"spatial", "is_test", "consumed_inputs"}), 0, 1);
  for (int output = 1; output < 3 && training; ++output) {
    if (!c.output_read(output)) continue;
    auto rank = c.rank_of(c.input(0));
    if (!rank) c.unsupported("running statistics of an input of unknown rank");
    c.bind_output(output, running_statistic(c, output, *rank));
  }
}

// Softmax, LogSoftmax and Hardmax before opset 13 flatten the input to 2-D at `axis` (default 1):
// the IR's coerce_2d=1 has exactly those semantics.
Converter softmax(OpType op) {
  return [op](NodeConverter& c) {
    ir::Attributes attrs;
    if (c.version() < 13) {
      attrs.set("axis", c.attr_int("axis", 1));
      attrs.set("coerce_2d", int64_t{1});
    } else {
      attrs.set("axis", c.attr_int("axis", -1));
    }
    c.emit(op, {c.input(0)}, attrs);
  };
}

// Reductions take axes as an attribute until ReduceSum-13 (the others until opset 18).
Converter reduce(OpType op) {
  return [op](NodeConverter& c) {
    bool axes_input = op == OpType::ReduceSum && c.version() >= 13;
    if (axes_input) return direct(op)(c);
    std::vector<ir::ValueId> inputs{c.input(0)};
    if (c.has_attr("axes")) inputs.push_back(c.constant_ints("axes", c.attr_ints("axes")));
    c.emit(op, inputs, c.attributes({"axes"}));
  };
}

}  // namespace

void add_nn_converters(std::map<std::string, Converter>& t) {
  t["MatMul"] = direct(OpType::MatMul);
  t["Gemm"] = direct(OpType::Gemm, {"broadcast"});
  t["Conv"] = direct(OpType::Conv);
  t["ConvTranspose"] = direct(OpType::ConvTranspose);
  t["MaxPool"] = max_pool;
  t["AveragePool"] = direct(OpType::AveragePool);
  t["GlobalAveragePool"] = direct(OpType::GlobalAveragePool);
  t["GlobalMaxPool"] = direct(OpType::GlobalMaxPool);
  t["BatchNormalization"] = batch_norm;
  t["InstanceNormalization"] = direct(OpType::InstanceNormalization);
  t["LRN"] = direct(OpType::LRN);
  t["LayerNormalization"] = direct(OpType::LayerNormalization);
  t["Softmax"] = softmax(OpType::Softmax);
  t["LogSoftmax"] = softmax(OpType::LogSoftmax);
  t["Hardmax"] = softmax(OpType::Hardmax);
  for (int i = 0; i < ir::op_count(); ++i)
    if (ir::is_reduce(ir::op_at(i))) t[ir::op_name(ir::op_at(i))] = reduce(ir::op_at(i));
  t["ArgMax"] = direct(OpType::ArgMax);
  t["ArgMin"] = direct(OpType::ArgMin);
  // LSTM/GRU/RNN before opset 7 carried `output_sequence` (Y is optional anyway since then).
  t["LSTM"] = direct(OpType::LSTM, {"output_sequence"});
  t["GRU"] = direct(OpType::GRU, {"output_sequence"});
  t["RNN"] = direct(OpType::RNN, {"output_sequence"});
}

}  // namespace mimic::onnx_import
