// Fusion of a matrix op with what follows it into one matmul pass (XLA-style output fusion):
//   Conv -> [BatchNormalization] -> [Add bias] -> [Add residual] -> [activation]
//   MatMul/Gemm -> [Add bias] -> [Add residual] -> [activation]
//   depthwise Conv -> [BatchNormalization] -> [Add bias] -> [activation]   (on the vector unit)
// Each follower must be the only consumer of the value before it, which must not be a graph
// output. BatchNormalization (inference, constant parameters) folds into the weights and bias at
// compile time; the bias, the residual and the activation run in the vector unit on the matmul's
// output tiles before they are stored, so the intermediate tensors never reach off-chip memory.
#pragma once

#include <vector>

#include "frontend/ir/graph.h"
#include "models/tpu/program.h"

namespace mimic::backends::tpu_emu {

struct FusionPlan {
  std::vector<std::vector<int>> groups;  // node indices, head first
  std::vector<int> group_of;             // per node: group index or -1
  std::vector<int> emit_at;              // per node: index of the node at which it is emitted
  int fused_nodes = 0;                   // followers folded into heads
  // Per node: a weight gradient's Conv (ir::match_weight_gradient_conv) that reads x and dy where
  // they are (lower_matmul.cpp). The Transposes (and the crop) that made its operands are read by
  // it alone, are emitted with it (emit_at) and never run.
  std::vector<bool> weight_grad_in_place;
};

// A node that heads a matmul group: Conv (not depthwise), MatMul, Gemm.
bool is_fusion_head(const ir::Graph& g, const ir::Node& n);
// A node that heads any group: the above and depthwise convolutions.
bool heads_group(const ir::Graph& g, const ir::Node& n);
// Depthwise convolution: one input channel per group (runs on the vector unit).
bool is_depthwise(const ir::Graph& g, const ir::Node& n);
// `in_place_weight_grads`: plan weight gradients that read their operands in place (bf16 chips).
FusionPlan plan_fusion(const ir::Graph& g, bool in_place_weight_grads);
// A 2-D ConvTranspose whose groups each have one output channel, with constant weights (a pooling
// gradient's scatter, a depthwise transposed convolution): the vector unit runs it on bf16 chips
// (lower_vector.cpp), as it runs depthwise convolutions; it heads no matrix-unit group.
bool is_vector_conv_transpose(const ir::Graph& g, const ir::Node& n);

// Elementwise functions of the vector unit for unary/activation nodes and binary nodes; false when
// the op (or its parameters) has no vector-unit equivalent.
bool unary_func(const ir::Graph& g, const ir::Node& n, models::tpu::VectorFunc* f, float* p0,
                float* p1);
bool binary_func(ir::OpType op, models::tpu::VectorFunc* f);

}  // namespace mimic::backends::tpu_emu
