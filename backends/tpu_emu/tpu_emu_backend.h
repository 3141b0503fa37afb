// tpu-emu: the emulated TPU backend. Device strings `tpu-emu:<preset>` (v1, v2, v3, v4, v5e, v6e,
// edge) or `tpu-emu:<file.json>` (a chip defined by, or overriding, a preset); CompileOptions::
// overrides ("mxu.rows" -> "64") change preset fields. The graph is compiled here (parent process)
// into a device program; a `mimic-device tpu` worker per distinct chip runs it on the SystemC
// model and computes the chip's numerics.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace mimic::backends {

std::unique_ptr<Backend> make_tpu_emu_backend();

}  // namespace mimic::backends
