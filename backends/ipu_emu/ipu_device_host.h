// The worker side of ipu-emu: a `mimic-device ipu` process elaborates one SystemC system of IPUs
// (models/ipu) for a configuration (specs + number of IPUs) and serves the requests of
// backends/device_worker/program_host.h:
//   'L' program          -> u64 id       (load an executable's program and constants once)
//   'R' id, inputs       -> outputs, RunReport, recorded trace events
//   'U' id               -> nothing      (unload)
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/device_worker/device_host.h"
#include "models/ipu/ipu_spec.h"

namespace mimic::backends::ipu_emu {

// The configuration message a worker is started with.
std::vector<uint8_t> device_config(const models::ipu::IpuSpec& specs, uint32_t num_ipus);

std::unique_ptr<DeviceHost> make_device_host(const std::vector<uint8_t>& config);

}  // namespace mimic::backends::ipu_emu
