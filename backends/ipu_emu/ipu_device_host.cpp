#include "backends/ipu_emu/ipu_device_host.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "backends/device_worker/kept_values.h"
#include "backends/device_worker/program_host.h"
#include "backends/device_worker/recording_sink.h"
#include "backends/device_worker/wire.h"
#include "backends/ipu_emu/ipu_numerics.h"
#include "backends/ipu_emu/ipu_program.h"
#include "backends/ipu_emu/ipu_report.h"
#include "base/error.h"
#include "models/ipu/ipu_system.h"

namespace mimic::backends::ipu_emu {

namespace {

struct Loaded final : LoadedProgram {
  std::unique_ptr<DeviceProgram> program;
  std::unique_ptr<IpuNumerics> numerics;
  KeptValues<ir::HostTensor> kept;  // carried inputs' values (kept_values.h)
};

class IpuDeviceHost final : public ProgramHost {
 public:
  explicit IpuDeviceHost(const std::vector<uint8_t>& config) : ProgramHost("ipu-emu") {
    wire::Reader r(config);
    std::string json = r.str();
    uint32_t ipus = r.u32();
    try {
      specs_ = models::ipu::specs_from_json(json, "device configuration");
      system_ = std::make_unique<models::ipu::IpuSystem>(specs_, ipus);
    } catch (const std::invalid_argument& e) {
      throw InvalidArgument(e.what());
    }
    device_string_ = fmt::format("ipu-emu:{}", specs_.name);
  }

 private:
  std::unique_ptr<LoadedProgram> load(wire::Reader& r) override {
    auto l = std::make_unique<Loaded>();
    l->program = std::make_unique<DeviceProgram>(read_program(r));
    try {
      system_->check(l->program->bsp);
    } catch (const std::invalid_argument& e) {
      throw InvalidArgument(e.what());
    }
    if (!l->program->timing_only) l->numerics = std::make_unique<IpuNumerics>(*l->program);
    return l;
  }

  void run(LoadedProgram& program, wire::Reader& r, wire::Writer& w) override {
    Loaded& l = static_cast<Loaded&>(program);
    const DeviceProgram& p = *l.program;
    std::vector<Carry> carries = read_carries(r);
    std::vector<ir::HostTensor> inputs = read_inputs(l, r);
    RecordingSink rec;
    models::ipu::TraceTarget trace;
    trace.sink = &rec;
    trace.device = rec.add_device(sim::DeviceDesc{
        "ipu-emu", p.preset, specs_.clock_hz, sim::TimeUnit::cycles, models::ipu::to_json(specs_)});
    for (const auto& op : p.ops) trace.op_ids.push_back(rec.add_op(op));
    auto t0 = std::chrono::steady_clock::now();
    models::ipu::RunStats stats = run_model([&] { return system_->run(p.bsp, trace); });
    auto t1 = std::chrono::steady_clock::now();
    // Timing-only programs compute no values: none travel back (the host makes the zeros).
    std::vector<ir::HostTensor> outputs;
    if (!p.timing_only) outputs = l.numerics->run(inputs);
    auto t2 = std::chrono::steady_clock::now();
    if (!p.timing_only) l.kept.advance(carries, outputs, finite_guard);
    for (const Carry& c : carries)  // stayed on the device: an empty placeholder travels
      outputs.at(c.output) = ir::HostTensor(ir::DType::f32, ir::Shape({0}));
    RunReport report = make_report(p, specs_, stats, device_string_);
    // Host time of the worker's two halves (the SystemC timing model and the numerics).
    report.metrics["host_simulation_seconds"] = std::chrono::duration<double>(t1 - t0).count();
    report.metrics["host_numerics_seconds"] = std::chrono::duration<double>(t2 - t1).count();
    w.u64(outputs.size());
    for (const auto& t : outputs) w.tensor(t);
    wire::write_report(w, report);
    rec.serialize(w);
  }

  static std::vector<ir::HostTensor> read_inputs(Loaded& l, wire::Reader& r) {
    std::vector<ir::HostTensor> inputs(r.u64());
    if (inputs.size() != l.program->graph.inputs().size())
      throw InvalidArgument(fmt::format("ipu-emu: program takes {} inputs, got {}",
                                        l.program->graph.inputs().size(), inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      InputMode mode = read_input_mode(r);
      if (mode == InputMode::kept) {
        inputs[i] = l.kept.get(i, "ipu-emu");
        continue;
      }
      inputs[i] = r.tensor();
      if (mode == InputMode::sent_and_kept) l.kept.keep(i, inputs[i]);
    }
    return inputs;
  }

  static bool finite_guard(const ir::HostTensor& guard) {
    return guard.dtype() == ir::DType::f32 && guard.numel() == 1 &&
           std::isfinite(guard.data<float>()[0]);
  }

  void write_kept(LoadedProgram& program, uint32_t input, wire::Writer& w) override {
    w.tensor(static_cast<Loaded&>(program).kept.get(input, "ipu-emu"));
  }

  models::ipu::IpuSpec specs_;
  std::unique_ptr<models::ipu::IpuSystem> system_;
  std::string device_string_;
};

}  // namespace

std::unique_ptr<DeviceHost> make_device_host(const std::vector<uint8_t>& config) {
  return std::make_unique<IpuDeviceHost>(config);
}

}  // namespace mimic::backends::ipu_emu
