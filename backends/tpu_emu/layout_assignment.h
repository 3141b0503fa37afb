// Layout assignment: the TPU compiler, not the framework, picks the physical layout of
// activations.
//
// XLA's layout assignment chooses the physical dimension order of every HLO value for the TPU's
// tiled memory, whatever order the framework wrote the graph in: a PyTorch or ONNX model written
// NCHW and a TensorFlow model written NHWC compile to the same channels-minor convolutions, and the
// framework's order costs one transpose where the graph's inputs and outputs meet it. This pass
// does the same for 2-D graphs written channels-first: every 2-D Conv, MaxPool, AveragePool, global
// pool and BatchNormalization runs channels-last (the IR's `layout` attribute), and the elementwise
// ops, Concats on the channel axis and per-channel constants between them follow, so consecutive
// layers exchange channels-last tensors and a Transpose appears only where a channels-first
// consumer (or a graph output) needs the tensor. Values are unchanged; only the device program's
// layout is. A Transpose or a constant-bound Slice of a value that exists channels-last reads
// that version (a weight gradient's operands then stay where their producers wrote them).
//
// Graph inputs read only channels-last are delivered channels-last and outputs produced only
// channels-last are returned so: the executable relays them out on the host while staging the
// transfer, as XLA's transfer manager writes infeed and parameters in the device's layout, so
// the device program carries no transpose for them. A transpose that moves only size-1 dims
// ([N,C,1,1] <-> [N,1,1,C]) is a reshape: no data moves.
//
// Not rewritten: ConvTranspose (lowered channels-first only), 1-D and 3-D windows, nodes with more
// than one output (MaxPool indices, BatchNormalization statistics), graphs already channels-last.
// The compile option layout=as_given turns the pass off, to price the graph's own layout.
#pragma once

#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::backends::tpu_emu {

struct LayoutAssignment {
  ir::Graph graph;        // same inputs and outputs (names, order) as the given graph
  int channels_last = 0;  // nodes moved to channels-last
  int transposes = 0;     // Transpose nodes added where channels-first values meet them
  // Per graph input / output: true when `graph` takes or gives it [N,H,W,C] instead of [N,C,H,W].
  std::vector<bool> inputs_channels_last, outputs_channels_last;
};

// Returns the graph unchanged (channels_last == 0) when no 2-D channels-first window op is found.
LayoutAssignment assign_channels_last(const ir::Graph& g);

// Host-side relayout of a rank-4 tensor, any dtype: [N,C,H,W] -> [N,H,W,C] and back.
ir::HostTensor to_channels_last(const ir::HostTensor& t);
ir::HostTensor to_channels_first(const ir::HostTensor& t);

}  // namespace mimic::backends::tpu_emu
