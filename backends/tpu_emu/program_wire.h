// Binary encoding of device programs, chip specs and run requests between the parent process (the
// compiler) and the `mimic-device tpu` worker (the model), on top of device_worker/wire.h.
//
// Requests (first byte):
//   'L' load:   program, constants                       -> u64 program id
//   'R' run:    id, flags (timing_only, record), inputs  -> outputs, RunReport, recording
//   'U' unload: id                                       -> (empty)
#pragma once

#include <cstdint>
#include <vector>

#include "backends/device_worker/wire.h"
#include "models/tpu/program.h"

namespace mimic::backends::tpu_emu {

void write_program(wire::Writer& w, const models::tpu::Program& p);
models::tpu::Program read_program(wire::Reader& r);

struct RunFlags {
  bool timing_only = false;
  bool record_events = true;
};

}  // namespace mimic::backends::tpu_emu
