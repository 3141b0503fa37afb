#include "backends/tpu_emu/tpu_device_host.h"

#include <fmt/format.h>
#include <cmath>
#include <string>

#include "backends/device_worker/kept_values.h"
#include "backends/device_worker/program_host.h"
#include "backends/device_worker/recording_sink.h"
#include "backends/tpu_emu/program_wire.h"
#include "backends/tpu_emu/tpu_report.h"
#include "base/error.h"
#include "models/tpu/numerics.h"
#include "models/tpu/tpu_chip.h"

namespace mimic::backends::tpu_emu {
namespace {

using namespace models::tpu;

const std::vector<float> kNoValues;

struct Loaded final : LoadedProgram {
  Program program;
  std::vector<std::vector<float>> constants;  // moved into `numerics` on first numeric run
  std::unique_ptr<Numerics> numerics;
  KeptValues<std::vector<float>> kept;      // carried inputs' values (kept_values.h)
  std::vector<std::vector<float>> outputs;  // the last run's, reused as the next run's buffers
};

class TpuDeviceHost final : public ProgramHost {
 public:
  explicit TpuDeviceHost(const std::vector<uint8_t>& config)
      : ProgramHost("tpu-emu"),
        spec_(
            spec_from_json_text(std::string(config.begin(), config.end()), "device configuration")),
        chip_(std::make_unique<TpuChip>("tpu", spec_)) {}

 private:
  std::unique_ptr<LoadedProgram> load(wire::Reader& r) override {
    auto loaded = std::make_unique<Loaded>();
    loaded->program = read_program(r);
    uint64_t n = r.u64();
    if (n != loaded->program.constants.size())
      throw RuntimeError(fmt::format("tpu-emu: {} constants for a program that has {}", n,
                                     loaded->program.constants.size()));
    for (uint64_t i = 0; i < n; ++i) loaded->constants.push_back(r.pods<float>());
    return loaded;
  }

  void run(LoadedProgram& program, wire::Reader& r, wire::Writer& w) override {
    Loaded& l = static_cast<Loaded&>(program);
    RunFlags flags;
    flags.timing_only = r.boolean();
    flags.record_events = r.boolean();
    const Program& p = l.program;
    std::vector<std::vector<float>>& outputs = l.outputs;
    std::vector<Carry> carries;
    if (!flags.timing_only) {
      carries = read_carries(r);
      run_numerics(l, r);
    }
    TimingResult timing = run_model([&] { return chip_->run(p); });
    l.kept.advance(carries, outputs, [](const std::vector<float>& guard) {
      return !guard.empty() && std::isfinite(guard[0]);
    });
    RunReport report = build_report(spec_, p, timing, flags.timing_only);
    std::vector<bool> stays(outputs.size(), false);
    for (const Carry& c : carries) stays.at(c.output) = true;
    w.u64(flags.timing_only ? 0 : outputs.size());
    for (size_t i = 0; i < outputs.size() && !flags.timing_only; ++i)
      w.pods(stays[i] ? kNoValues : outputs[i]);
    wire::write_report(w, report);
    w.boolean(flags.record_events);
    if (flags.record_events) {
      RecordingSink rec;
      record_trace(rec, spec_, p, timing);
      rec.serialize(w);
    }
  }

  void run_numerics(Loaded& l, wire::Reader& r) {
    const Program& p = l.program;
    uint64_t n = r.u64();
    if (n != p.inputs.size())
      throw InvalidArgument(
          fmt::format("tpu-emu: {} inputs for a program that takes {}", n, p.inputs.size()));
    std::vector<const float*> inputs;
    for (uint64_t i = 0; i < n; ++i) {
      InputMode mode = read_input_mode(r);
      int64_t want = p.tensors[p.inputs[i]].numel();
      if (mode == InputMode::kept) {
        const std::vector<float>& kept = l.kept.get(i, "tpu-emu");
        check_count(i, kept.size(), want);
        inputs.push_back(kept.data());
        continue;
      }
      uint64_t count = r.u64();
      check_count(i, count, want);
      const float* values = reinterpret_cast<const float*>(r.bytes(count * sizeof(float)));
      if (mode == InputMode::sent_and_kept) {
        l.kept.keep(i, std::vector<float>(values, values + count));
        values = l.kept.get(i, "tpu-emu").data();
      }
      inputs.push_back(values);
    }
    if (!l.numerics) l.numerics = std::make_unique<Numerics>(p, std::move(l.constants));
    l.numerics->run(inputs, l.outputs);
  }

  void write_kept(LoadedProgram& program, uint32_t input, wire::Writer& w) override {
    w.pods(static_cast<Loaded&>(program).kept.get(input, "tpu-emu"));
  }

  static void check_count(uint64_t input, uint64_t count, int64_t want) {
    if (static_cast<int64_t>(count) != want)
      throw InvalidArgument(
          fmt::format("tpu-emu: input {} has {} values, expected {}", input, count, want));
  }

  TpuSpec spec_;
  std::unique_ptr<TpuChip> chip_;
};

}  // namespace

std::unique_ptr<DeviceHost> make_device_host(const std::vector<uint8_t>& config) {
  return std::make_unique<TpuDeviceHost>(config);
}

}  // namespace mimic::backends::tpu_emu
