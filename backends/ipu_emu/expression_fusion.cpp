#include "backends/ipu_emu/expression_fusion.h"

#include "backends/ipu_emu/lowering.h"

namespace mimic::backends::ipu_emu {
namespace {

bool is_expression_op(const ir::Node& n) {
  return n.outputs.size() == 1 && lowerer_for(n) == lower_elementwise;
}

// A square x * x summed by `reader` (ReduceSum, ReduceMean): one SQUARE_ADD reduction.
bool is_summed_square(const ir::Node& producer, const ir::Node& reader) {
  return is_square(producer) &&
         (reader.op == ir::OpType::ReduceSum || reader.op == ir::OpType::ReduceMean) &&
         reader.inputs[0] == producer.outputs[0];
}

}  // namespace

bool is_square(const ir::Node& n) {
  return n.op == ir::OpType::Mul && n.inputs.size() == 2 && n.inputs[0] == n.inputs[1];
}

std::vector<bool> plan_expression_fusion(const ir::Graph& g, const std::vector<int>& order,
                                         const std::vector<uint32_t>& stage,
                                         const std::vector<bool>& kept) {
  std::vector<int> readers(g.num_values(), 0);
  for (const ir::Node& n : g.nodes())
    for (ir::ValueId v : n.inputs)
      if (v != ir::kNoValue) ++readers[v];
  for (ir::ValueId v : g.outputs()) ++readers[v];  // an output is read by the host
  std::vector<bool> fused(order.size(), false);
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    const ir::Node& producer = g.node(order[i]);
    const ir::Node& reader = g.node(order[i + 1]);
    // The same IPU and the same pass: a pipeline stashes what crosses from forward to backward.
    if (stage[i] != stage[i + 1] || producer.phase != reader.phase || !is_expression_op(producer))
      continue;
    ir::ValueId v = producer.outputs[0];
    if (is_summed_square(producer, reader)) {
      fused[i] = readers[v] == 1 && !kept[v];
      continue;
    }
    if (!is_expression_op(reader)) continue;
    bool reads = false;
    for (ir::ValueId u : reader.inputs) reads = reads || u == v;
    fused[i] = reads && readers[v] == 1 && !kept[v] &&
               g.value(v).type.shape.numel() == g.value(reader.outputs[0]).type.shape.numel();
  }
  return fused;
}

}  // namespace mimic::backends::ipu_emu
