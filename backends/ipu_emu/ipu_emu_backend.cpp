#include "backends/ipu_emu/ipu_emu_backend.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "backends/device_worker/kept_values.h"
#include "backends/device_worker/recording_sink.h"
#include "backends/device_worker/remote_program.h"
#include "backends/device_worker/wire.h"
#include "backends/device_worker/worker_process.h"
#include "backends/ipu_emu/ipu_compiler.h"
#include "backends/ipu_emu/ipu_device_host.h"
#include "base/error.h"
#include "frontend/ir/recurrent.h"
#include "frontend/ir/recurrent_expand.h"

namespace mimic::backends {
namespace {

using ipu_emu::IpuCompilation;
using ipu_emu::IpuOptions;
using models::ipu::IpuSpec;

// Specs of a device argument with overrides applied (a bad one throws SpecError, an
// InvalidArgument).
IpuSpec resolve(const std::string& arg, const std::map<std::string, std::string>& overrides) {
  bool file = arg.size() > 5 && arg.compare(arg.size() - 5, 5, ".json") == 0;
  if (file && !std::ifstream(arg))
    throw IoError(fmt::format("ipu-emu: cannot read device file '{}'", arg));
  IpuSpec s = models::ipu::resolve_specs(arg);
  models::ipu::apply_overrides(s, overrides);
  return s;
}

class IpuExecutable final : public WorkerExecutable {
 public:
  IpuExecutable(IpuCompilation c, IpuSpec specs, IpuOptions options, std::string device)
      : WorkerExecutable(device),
        c_(std::move(c)),
        specs_(std::move(specs)),
        options_(std::move(options)),
        device_(std::move(device)),
        remote_("ipu", ipu_emu::device_config(specs_, options_.num_ipus),
                [this](wire::Writer& w) { ipu_emu::write_program(w, c_.program); }) {}

  // Starts (or reuses) the worker and loads the program; again after a worker crash.
  void load() {
    remote_.load();
    c_.report.metrics["load_seconds"] = remote_.load_seconds();
  }

  RunResult run(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink) override {
    return run_program(inputs, sink, false);
  }

  const CompileReport& compile_report() const override { return c_.report; }

 private:
  // Carried values stay in the worker's memory, as weights and optimizer state stay in tile
  // memory between a Poplar program's runs; timing-only programs have no values.
  bool keeps(const std::vector<Carry>&) const override { return !options_.timing_only; }
  RemoteProgram& remote() override { return remote_; }
  ir::HostTensor read_kept(size_t, wire::Reader& r) const override { return r.tensor(); }

  RunResult run_program(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink,
                        bool carried) override {
    if (options_.compile_only)
      throw InvalidArgument(
          fmt::format("{} was compiled with compile_only: it cannot run", device_));
    auto t0 = std::chrono::steady_clock::now();
    RunResult result;
    auto write_inputs = [&](wire::Writer& w) {
      write_carries(w, carried ? remote_carries_.carries() : std::vector<Carry>{});
      w.u64(inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        InputMode mode = carried ? remote_carries_.mode(i, remote_.loads()) : InputMode::sent;
        w.u8(static_cast<uint8_t>(mode));
        if (mode == InputMode::kept) continue;
        const ir::HostTensor& t =
            mode == InputMode::sent_and_kept ? remote_carries_.pending(i) : inputs[i];
        // Timing-only programs never read their inputs: only their count travels.
        w.tensor(options_.timing_only ? ir::HostTensor(t.dtype(), ir::Shape({0})) : t);
      }
    };
    remote_.run(write_inputs, [&](wire::Reader& r) {
      for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
        ir::HostTensor t = r.tensor();
        bool stayed = carried && remote_carries_.carried_output(i);  // an empty placeholder
        result.outputs.push_back(stayed ? ir::HostTensor() : std::move(t));
      }
      const ir::Graph& g = c_.program.graph;  // timing-only: zeros, made here
      for (size_t i = result.outputs.size(); i < g.outputs().size(); ++i)
        result.outputs.emplace_back(g.value(g.outputs()[i]).type.dtype,
                                    g.value(g.outputs()[i]).type.shape);
      result.report = wire::read_report(r);
      RecordingSink::replay(r, sink);
    });
    if (carried) remote_carries_.sent(remote_.loads());
    c_.report.metrics["load_seconds"] = remote_.load_seconds();
    finish_report(result.report, sink);
    result.report.metrics["host.request_bytes"] = static_cast<double>(remote_.request_bytes());
    result.report.metrics["host.reply_bytes"] = static_cast<double>(remote_.reply_bytes());
    result.report.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
  }

  void finish_report(RunReport& report, sim::EventSink& sink) const {
    report.device = device_;
    report.tables["ipu_tile_memory"] = c_.memory_table;
    nlohmann::json columns = c_.memory_table.columns;
    std::string columns_json = columns.dump();
    for (const auto& row : c_.memory_table.rows)
      sink.table_row("ipu_tile_memory", columns_json, nlohmann::json(row).dump());
    for (const auto& [k, v] : c_.report.metrics)
      if (k.find("tile_bytes") != std::string::npos || k == "memory_used_fraction" ||
          k == "out_of_memory" || k.rfind("memory.", 0) == 0)
        report.metrics[k] = v;
    if (report.device_seconds > 0)
      report.metrics["samples_per_second"] = static_cast<double>(c_.batch) / report.device_seconds;
    if (c_.out_of_memory)
      report.notes.push_back(
          "program does not fit (allow_out_of_memory): timing as if memory were unlimited");
  }

  IpuCompilation c_;
  IpuSpec specs_;
  IpuOptions options_;
  std::string device_;
  RemoteProgram remote_;
};

class IpuEmuBackend final : public Backend {
 public:
  std::string name() const override { return "ipu-emu"; }

  std::vector<DeviceInfo> enumerate() const override {
    std::vector<DeviceInfo> out;
    for (const auto& p : models::ipu::preset_names()) out.push_back(probe(p));
    return out;
  }

  DeviceInfo probe(const std::string& arg) const override {
    DeviceInfo info{arg.empty() ? "ipu-emu" : "ipu-emu:" + arg, "ipu-emu", false, "", ""};
    try {
      IpuSpec s = resolve(arg, {});
      info.description = fmt::format(
          "emulated IPU {}: {} tiles x {} KiB SRAM, {:.2f} GHz, {:.1f} TFLOPS fp16 / {:.1f} fp32",
          s.name, s.tiles, s.tile_sram_bytes / 1024, s.clock_hz * 1e-9,
          s.peak_flops_per_s(s.amp_fp16_fp16_macs_per_cycle) * 1e-12,
          s.peak_flops_per_s(s.amp_fp32_macs_per_cycle) * 1e-12);
    } catch (const Error& e) {
      info.reason = e.what();
      return info;
    }
    std::string worker = worker_executable();
    if (access(worker.c_str(), X_OK) != 0) {
      info.reason =
          fmt::format("the device worker '{}' is missing (set MIMIC_DEVICE_WORKER)", worker);
      return info;
    }
    info.available = true;
    return info;
  }

  bool supports_op(const ir::Graph& g, const ir::Node& n, const std::string&,
                   const CompileOptions&) const override {
    return ipu_emu::ipu_supports(g, n);
  }

  std::string unsupported_reason(const ir::Graph& g, const ir::Node& n, const std::string&,
                                 const CompileOptions&) const override {
    std::string why;
    return ipu_emu::ipu_supports(g, n, &why) ? "" : why;
  }

  std::unique_ptr<Executable> compile(const ir::Graph& g, const std::string& arg,
                                      const CompileOptions& options) const override {
    IpuSpec specs = resolve(arg, options.overrides);
    IpuOptions o = ipu_emu::parse_options(options, specs);
    std::string device = "ipu-emu:" + arg;
    // Recurrent layers and MaxPoolGrad (admitted by ipu_supports) run unrolled into matrix and
    // vector ops.
    bool expand = std::any_of(g.nodes().begin(), g.nodes().end(),
                              [](const ir::Node& n) { return ir::runs_expanded(n.op); });
    std::optional<ir::Graph> unrolled;
    if (expand)
      unrolled = ir::unroll_recurrent(g, [](const ir::Node& n) { return ir::runs_expanded(n.op); });
    IpuCompilation c = ipu_emu::compile_ipu(unrolled ? *unrolled : g, specs, o, device);
    if (unrolled) c.report.notes.push_back(ir::unroll_note(g, *unrolled));
    auto exe = std::make_unique<IpuExecutable>(std::move(c), std::move(specs), o, device);
    if (!o.compile_only) exe->load();
    return exe;
  }

  std::map<std::string, std::string> option_help() const override { return ipu_emu::option_help(); }
};

}  // namespace

std::unique_ptr<Backend> make_ipu_emu_backend() {
  return std::make_unique<IpuEmuBackend>();
}

}  // namespace mimic::backends
