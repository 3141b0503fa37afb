// Turns a timed run of a program (TimingResult) into mimic's RunReport and trace events: total and
// per-op cycles at the preset clock, per-unit busy cycles, bytes per memory level, achieved
// FLOP/s, operational intensity of each op against the chip's ridge point, one trace track per
// unit with an event per instruction, and on-chip occupancy counters.
#pragma once

#include <string>

#include "backends/report.h"
#include "models/tpu/program.h"
#include "models/tpu/timing_result.h"
#include "models/tpu/tpu_spec.h"
#include "sim/event_sink.h"

namespace mimic::backends::tpu_emu {

RunReport build_report(const models::tpu::TpuSpec& spec, const models::tpu::Program& program,
                       const models::tpu::TimingResult& timing, bool timing_only);

void record_trace(sim::EventSink& sink, const models::tpu::TpuSpec& spec,
                  const models::tpu::Program& program, const models::tpu::TimingResult& timing);

}  // namespace mimic::backends::tpu_emu
