// Liveness of a graph's values over an execution order: a value lives from the step of the node
// that defines it (graph inputs and constants: from before the first step) through its last
// reader (graph outputs: to the end). The bytes live at each step, their peak and its breakdown
// by category: what the emulators' memory plans start from and what recomputation changes.
// Aliasing (in-place ops) and fragmentation are not modeled: every value owns its bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::ir {

struct MemoryProfile {
  int64_t peak_bytes = 0;
  int peak_step = -1;  // index into the order at the peak (-1: before the first node)
  // At the peak, by category: ir::role_name() of the value's role, with "saved_activations" for
  // forward values still live because a backward node reads them, "inputs" for the inputs of an
  // inference graph and "weights" for constants.
  std::map<std::string, int64_t> bytes_by_category;
  std::vector<ValueId> live_at_peak;  // largest first
};

// The category a value counts under in bytes_by_category.
std::string memory_category(const Graph& g, ValueId v);

// `order` lists node indices in execution order; empty: the graph's own order.
MemoryProfile profile_memory(const Graph& g, const std::vector<int>& order = {});

}  // namespace mimic::ir
