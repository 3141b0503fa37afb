// Lowering of graph nodes to BSP supersteps on one IPU: each node gets its tiles (a span taken
// round-robin), the supersteps that exchange its operands and compute it, the placement of its
// outputs, the temporaries it needs while it runs and the constants it stores. Matrix products
// and windowed ops go through the planner (linear_plan.h); elementwise ops run where their input
// lives; reductions reduce locally then across tiles; data movement is exchange plus copies.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backends/ipu_emu/ipu_options.h"
#include "backends/ipu_emu/ipu_program.h"
#include "backends/ipu_emu/tile_layout.h"
#include "frontend/ir/graph.h"
#include "frontend/ir/nn_geometry.h"
#include "models/ipu/ipu_spec.h"

namespace mimic::backends::ipu_emu {

// Superstep labels, interned into the program's label table.
class Labels {
 public:
  uint32_t id(const std::string& name);
  std::vector<std::string> names;

 private:
  std::map<std::string, uint32_t> ids_;
};

struct LoweredOp {
  int node = -1;
  std::vector<models::ipu::Superstep> steps;
  std::vector<Placement> outputs;  // per node output
  bool view = false;               // outputs alias input 0 (no new memory)
  bool fused_into_next = false;    // its result is fused into the next op (expression_fusion.h)
  TileSpan temp_span;              // temporaries while the op runs
  uint64_t temp_exchange = 0, temp_partials = 0;
  std::vector<std::pair<ir::ValueId, Placement>> stored;  // constants this op placed
  OpRecipe recipe;
  std::string plan;  // one line for reports
  uint64_t est_cycles = 0;
  // Matrix/window ops: the chosen split (groups, rows, cols, K) and tiles.
  bool planned = false;
  uint32_t split[4] = {1, 1, 1, 1};
  uint32_t plan_tiles = 0;
};

struct LowerContext {
  const models::ipu::IpuSpec& specs;
  const IpuOptions& options;
  const ir::Graph& graph;
  std::vector<ir::Shape> shapes;     // per value: bound shapes scaled to one micro-batch
  std::vector<Placement> placement;  // per value, once produced or stored
  std::vector<bool> placed;
  TileCursor cursor;
  uint32_t ipu = 0;
  Labels* labels = nullptr;
  int32_t op_index = -1;  // superstep op id of the node being lowered
};

// Device storage format and bytes of a value.
models::ipu::NumberFormat value_format(const LowerContext& c, ir::ValueId v);
uint64_t value_bytes(const LowerContext& c, ir::ValueId v);
uint64_t element_bytes(const LowerContext& c, ir::ValueId v);
// True for inputs that are device data (not shape/axis parameters read at compile time).
bool is_data_input(const ir::Graph& g, const ir::Node& n, int input);

// Whether ipu-emu can run node `n` (else it falls back to cpu).
bool ipu_supports(const ir::Graph& g, const ir::Node& n, std::string* why = nullptr);

LoweredOp lower_node(LowerContext& c, int node);

// Families (lower_linear.cpp, lower_vector.cpp).
LoweredOp lower_matmul(LowerContext& c, const ir::Node& n);
LoweredOp lower_conv(LowerContext& c, const ir::Node& n);
LoweredOp lower_pool(LowerContext& c, const ir::Node& n);
LoweredOp lower_elementwise(LowerContext& c, const ir::Node& n);
// Whether lower_elementwise has a vertex cost for n's op.
bool has_element_cost(const ir::Node& n);
using LowerFn = LoweredOp (*)(LowerContext& c, const ir::Node& n);
// The lowering of node n's op (views aside), or nullptr when the IPU has none.
LowerFn lowerer_for(const ir::Node& n);
LoweredOp lower_reduction(LowerContext& c, const ir::Node& n);
LoweredOp lower_copy(LowerContext& c, const ir::Node& n);

// Shared helpers.
// Tiles for a tensor of `elements` spread linearly (a minimum share per tile, as Poplar's grain).
uint32_t linear_tiles(const LowerContext& c, uint64_t elements);
// The current placement of value v; constants not yet placed are stored on `span` (recorded in
// `op.stored`).
Placement operand(LowerContext& c, LoweredOp& op, ir::ValueId v, TileSpan span);
// operand() with a fresh linear span for a constant not placed yet.
Placement locate(LowerContext& c, LoweredOp& op, ir::ValueId v);
// Records outputs of `op` spread over `span`.
void place_outputs(LowerContext& c, LoweredOp& op, const ir::Node& n, TileSpan span);
// Window ops (lower_linear.cpp): input pixels (per channel) that `rows` consecutive output pixels
// read with the taps of kernel block `kb` (empty: the whole kernel), the planner's
// LinearProblem::input_pixels; and the kernel's spatial extents, outermost first.
std::function<uint64_t(uint64_t, const std::vector<uint64_t>&)> window_input_pixels(
    const ir::WindowGeometry& g);
std::vector<uint64_t> kernel_dims(const ir::WindowGeometry& g);

}  // namespace mimic::backends::ipu_emu
