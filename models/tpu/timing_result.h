// What one timed run of a program on the chip model produced: when each instruction ran, how busy
// each unit was, what each memory moved, and how full each core's on-chip memory got.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/tpu/program.h"

namespace mimic::models::tpu {

struct InstructionTiming {
  uint64_t start = 0, end = 0;  // cycles from the start of the run
  uint64_t busy = 0;  // cycles the unit did useful work (matrix units exclude weight stalls)
  uint64_t fetched_bytes = 0;  // weight bytes a matmul fetched from its weight source
  int32_t unit = -1;           // index into TimingResult::units
};

struct UnitStats {
  std::string name, kind;  // "core0.mxu1", "matrix" | "vector" | "dma" | "sync"
  uint64_t busy_cycles = 0;
  uint64_t instructions = 0;
};

struct MemoryStats {
  std::string name;  // "hbm", "core0.vmem", "pcie"
  Level level = Level::offchip;
  uint64_t bytes_read = 0, bytes_written = 0, transactions = 0;
  uint64_t busy_cycles = 0;
};

struct OccupancySample {
  uint64_t cycle = 0;
  int64_t bytes = 0;
};

struct TimingResult {
  uint64_t cycles = 0;
  std::vector<InstructionTiming> instructions;
  std::vector<UnitStats> units;
  std::vector<MemoryStats> memories;
  std::vector<std::vector<OccupancySample>> onchip_occupancy;  // per core
  std::vector<int64_t> onchip_peak_bytes;                      // per core
  uint64_t weight_stall_cycles = 0;                            // summed over matrix units
  double host_seconds = 0;                                     // wall time of the simulation
};

}  // namespace mimic::models::tpu
