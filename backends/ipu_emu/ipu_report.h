// Turns a simulated run (models/ipu RunStats) into mimic's RunReport: cycles and seconds at the
// preset clock, per-op cycles (replica 0, summed over micro-batches), per-unit busy cycles, tile
// balance (max / mean busy over tiles), achieved vs peak FLOP/s and the per-superstep table.
#pragma once

#include "backends/ipu_emu/ipu_program.h"
#include "backends/report.h"
#include "models/ipu/ipu_system.h"

namespace mimic::backends::ipu_emu {

RunReport make_report(const DeviceProgram& p, const models::ipu::IpuSpec& specs,
                      const models::ipu::RunStats& stats, const std::string& device);

}  // namespace mimic::backends::ipu_emu
