#include "backends/tpu_emu/tpu_device_host.h"

#include <fmt/format.h>
#include <chrono>
#include <map>
#include <string>

#include "backends/device_worker/recording_sink.h"
#include "backends/tpu_emu/program_codec.h"
#include "backends/tpu_emu/run_report.h"
#include "base/error.h"
#include "models/tpu/numerics.h"
#include "models/tpu/tpu_chip.h"

namespace mimic::backends::tpu_emu {
namespace {

using namespace models::tpu;

struct Loaded {
  Program program;
  std::vector<std::vector<float>> constants;  // moved into `numerics` on first numeric run
  std::unique_ptr<Numerics> numerics;
};

class TpuDeviceHost final : public DeviceHost {
 public:
  explicit TpuDeviceHost(const std::vector<uint8_t>& config)
      : spec_(
            spec_from_json_text(std::string(config.begin(), config.end()), "device configuration")),
        chip_(std::make_unique<TpuChip>("tpu", spec_)) {}

  std::vector<uint8_t> handle(const std::vector<uint8_t>& request) override {
    if (broken_)
      throw RuntimeError(
          "tpu device: the chip model failed in an earlier run and cannot run again");
    wire::Reader r(request);
    uint8_t kind = r.u8();
    switch (kind) {
      case kLoad:
        return load(r);
      case kRun:
        return run(r);
      case kUnload: {
        programs_.erase(r.u64());
        return {};
      }
      default:
        throw RuntimeError(
            fmt::format("tpu device: unknown request '{}'", static_cast<char>(kind)));
    }
  }

 private:
  std::vector<uint8_t> load(wire::Reader& r) {
    auto loaded = std::make_unique<Loaded>();
    loaded->program = read_program(r);
    uint64_t n = r.u64();
    if (n != loaded->program.constants.size())
      throw RuntimeError(fmt::format("tpu device: {} constants for a program that has {}", n,
                                     loaded->program.constants.size()));
    for (uint64_t i = 0; i < n; ++i) loaded->constants.push_back(r.pods<float>());
    uint64_t id = next_id_++;
    programs_[id] = std::move(loaded);
    wire::Writer w;
    w.u64(id);
    return std::move(w.data());
  }

  std::vector<uint8_t> run(wire::Reader& r) {
    uint64_t id = r.u64();
    auto it = programs_.find(id);
    if (it == programs_.end())
      throw RuntimeError(fmt::format("tpu device: no loaded program {}", id));
    Loaded& l = *it->second;
    RunFlags flags;
    flags.timing_only = r.boolean();
    flags.record_events = r.boolean();
    const Program& p = l.program;
    std::vector<std::vector<float>> outputs;
    if (!flags.timing_only) {
      uint64_t n = r.u64();
      if (n != p.inputs.size())
        throw InvalidArgument(
            fmt::format("tpu device: {} inputs for a program that takes {}", n, p.inputs.size()));
      std::vector<const float*> inputs;
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t count = r.u64();
        if (static_cast<int64_t>(count) != p.tensors[p.inputs[i]].numel())
          throw InvalidArgument(fmt::format("tpu device: input {} has {} values, expected {}", i,
                                            count, p.tensors[p.inputs[i]].numel()));
        inputs.push_back(reinterpret_cast<const float*>(r.bytes(count * sizeof(float))));
      }
      if (!l.numerics) l.numerics = std::make_unique<Numerics>(p, std::move(l.constants));
      outputs = l.numerics->run(inputs);
    }
    TimingResult timing;
    try {
      timing = chip_->run(p);
    } catch (const std::exception& e) {
      broken_ = true;  // units may hold unfinished work: never reuse this simulation
      throw RuntimeError(fmt::format("tpu device: {}", e.what()));
    }
    RunReport report = build_report(spec_, p, timing, flags.timing_only);
    wire::Writer w;
    w.u64(outputs.size());
    for (const auto& o : outputs) w.pods(o);
    wire::write_report(w, report);
    w.boolean(flags.record_events);
    if (flags.record_events) {
      RecordingSink rec;
      record_trace(rec, spec_, p, timing);
      rec.serialize(w);
    }
    return std::move(w.data());
  }

  TpuSpec spec_;
  std::unique_ptr<TpuChip> chip_;
  std::map<uint64_t, std::unique_ptr<Loaded>> programs_;
  uint64_t next_id_ = 1;
  bool broken_ = false;
};

}  // namespace

std::unique_ptr<DeviceHost> make_device_host(const std::vector<uint8_t>& config) {
  return std::make_unique<TpuDeviceHost>(config);
}

}  // namespace mimic::backends::tpu_emu
