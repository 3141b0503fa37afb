// The program table every emulated device's worker keeps, and the one request protocol the
// parent speaks to it (backends/<emulator>/*_emu_backend.cpp):
//   'L' <emulator's program>      -> u64 id   (load a compiled program and its constants once)
//   'R' id <emulator's run data>  -> <emulator's results>
//   'U' id                        -> nothing  (unload)
//   'K' id u32 input              -> <emulator's value> (a carried value it keeps: kept_values.h)
// A new emulator's worker derives from ProgramHost and writes `load` and `run`; the table, the
// request dispatch, unknown ids and requests, and the rule that a hardware model which failed
// mid-run is never run again (its units may hold unfinished work) come from here.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/device_worker/device_host.h"
#include "backends/device_worker/wire.h"

namespace mimic::backends {

enum ProgramRequest : uint8_t {
  kLoadProgram = 'L',
  kRunProgram = 'R',
  kUnloadProgram = 'U',
  kKeptValue = 'K'
};

// One program as an emulator's worker keeps it (its device program, constants, numerics).
class LoadedProgram {
 public:
  virtual ~LoadedProgram() = default;
};

class ProgramHost : public DeviceHost {
 public:
  // `device` names the emulator in error messages ("tpu-emu:v4").
  explicit ProgramHost(std::string device) : device_(std::move(device)) {}
  std::vector<uint8_t> handle(const std::vector<uint8_t>& request) final;

 protected:
  // Reads one program (after the 'L' byte) and prepares it to run.
  virtual std::unique_ptr<LoadedProgram> load(wire::Reader& request) = 0;
  // Runs `program` with the rest of the 'R' request and writes the results; errors it throws
  // reach the parent with their kind and message.
  virtual void run(LoadedProgram& program, wire::Reader& request, wire::Writer& results) = 0;
  // Writes the value `program` keeps for graph input `input` (kept_values.h); the default: this
  // device keeps none.
  virtual void write_kept(LoadedProgram& program, uint32_t input, wire::Writer& results);
  // Runs the hardware model (`run` calls it around the SystemC simulation): whatever it throws
  // marks the model broken for good and reaches the parent as a RuntimeError.
  template <typename Simulate>
  auto run_model(Simulate&& simulate) -> decltype(simulate()) {
    try {
      return simulate();
    } catch (const std::exception& e) {
      broken_ = e.what();
      throw_model_failure();
    }
  }

 private:
  std::vector<uint8_t> run_request(wire::Reader& r);
  LoadedProgram& find(uint64_t id);
  [[noreturn]] void throw_model_failure() const;

  std::string device_;
  std::map<uint64_t, std::unique_ptr<LoadedProgram>> programs_;
  uint64_t next_id_ = 1;
  std::string broken_;  // why the model cannot run again ("" while it can)
};

}  // namespace mimic::backends
