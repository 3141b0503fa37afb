// What ipu-emu does differently for a training step (a graph whose nodes carry ir::StepPhase
// backward or update, from build_train_graph): which values are split into micro-batches, which
// stay resident on tiles between steps, the memory category of each buffer, and the supersteps
// a step adds around its ops (gradient accumulation, the replicas' gradient all-reduce, loading
// and storing optimizer state kept in streaming memory). Modeled on PopTorch's training loop:
// weights and optimizer state live on the IPU for the whole run, every micro-batch runs forward
// and backward with its gradients added into an accumulator, and the optimizer runs once per
// step on the accumulated (and, with replicas, all-reduced) gradients.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/ipu_emu/lowering.h"
#include "backends/ipu_emu/memory_plan.h"
#include "frontend/ir/graph.h"

namespace mimic::backends::ipu_emu {

bool is_training(const ir::Graph& g);

// Per value: parameters, optimizer state and BatchNorm statistics, and the step's outputs that
// update them (its graph outputs other than scalars: the loss and checks go to the host). They
// stay on the IPU across steps, are updated in place and are never streamed per step.
std::vector<bool> resident_values(const ir::Graph& g);

// The batch of a training step: the first data input's dimension 0.
int64_t training_batch(const ir::Graph& g);

// Per value of a training step, the axis that carries the batch (-1: none), which shrinks to
// one micro-batch: dimension 0 of the data inputs, followed through every op (elementwise ops
// and reductions keep it, MatMul keeps rows or columns and drops it when contracted, Transpose
// permutes it, reshapes keep it in the same outer block, so the [N*H*W, C*k*k] columns and the
// [C, N*H*W] gradients of an im2col convolution shrink too). Parameters, gradients, optimizer
// state, buffers and the weight-gradient products that contract the batch keep their shapes.
std::vector<int> batch_axes(const ir::Graph& g, int64_t batch);

// Pipeline stages of a training step's device nodes (`nodes`, in order): forward and loss nodes
// take `forward_stage` (a balanced split of the forward pass); a backward node runs on the stage
// of the forward values and parameters it reads (the latest one), else where its gradient inputs
// were made, so each IPU holds its layers' forward and backward ops and their stash; an update
// node runs with its parameter and gradient, and one that reads only step scalars (lr, bias
// corrections) runs where its first reader runs.
std::vector<uint32_t> training_stages(const ir::Graph& g, const std::vector<int>& nodes,
                                      const std::vector<uint32_t>& forward_stage);

// The memory category of value v before liveness refines it (saved activations).
Category base_category(const ir::Graph& g, ir::ValueId v);

// Parameter gradients produced on a stage (its accumulators and its all-reduce).
std::vector<ir::ValueId> stage_gradients(const ir::Graph& g, const std::vector<LoweredOp>& ops);

// One superstep adding every gradient into its accumulator on the tiles that hold it (a vector
// add per element, f32 or f16 as stored; one vertex per worker per tile, the gradients of a tile
// merged into one run of elements).
models::ipu::Superstep accumulate_step(const models::ipu::IpuSpec& s,
                                       const std::vector<Placement>& grads,
                                       models::ipu::NumberFormat format, uint32_t label);

// Moves `bytes` of optimizer state between streaming memory and every tile (remote buffers).
models::ipu::Superstep stream_state_step(const models::ipu::IpuSpec& s, uint64_t bytes, bool load,
                                         uint32_t label);

}  // namespace mimic::backends::ipu_emu
