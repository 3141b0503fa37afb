// Serializes a bound, inferred graph (values with their types, constants, nodes with attributes)
// so that the device worker can execute the same graph the parent compiled. Value and node ids
// are preserved, and so are the training roles of values and the step phases of nodes (the
// worker attributes cycles to phases from them).
#pragma once

#include "backends/device_worker/wire.h"
#include "frontend/ir/graph.h"

namespace mimic::backends::ipu_emu {

// With `constants_data` false, constants travel as empty tensors (their types are kept): enough
// for timing-only programs, which never read them.
void write_graph(wire::Writer& w, const ir::Graph& g, bool constants_data = true);
ir::Graph read_graph(wire::Reader& r);

}  // namespace mimic::backends::ipu_emu
