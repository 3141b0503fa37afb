// The worker side of tpu-emu: a `mimic-device tpu` process elaborates one TpuChip from the chip
// spec it is configured with (canonical JSON), keeps loaded programs with their numerics, and
// runs them: numerics (unless timing-only) in program order, then timing on the SystemC model;
// it answers with the outputs, the RunReport and the recorded trace events.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/device_worker/device_host.h"

namespace mimic::backends::tpu_emu {

std::unique_ptr<DeviceHost> make_device_host(const std::vector<uint8_t>& config);

}  // namespace mimic::backends::tpu_emu
