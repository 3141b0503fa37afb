// ipu-emu: Graphcore-style IPUs emulated by a cycle-approximate SystemC model (models/ipu).
// Device strings: "ipu-emu:gc2", "ipu-emu:gc200", "ipu-emu:bow" or "ipu-emu:path/to/device.json".
// The backend plans and compiles in the calling process (ipu_compiler.h) and runs the program in a
// `mimic-device ipu` worker process (ipu_device_host.h), one per (specs, num_ipus).
#pragma once

#include <memory>

#include "backends/backend.h"

namespace mimic::backends {

std::unique_ptr<Backend> make_ipu_emu_backend();

}  // namespace mimic::backends
