#include "backends/tpu_emu/tpu_emu_backend.h"

#include <fmt/format.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>

#include "backends/device_worker/kept_values.h"
#include "backends/device_worker/recording_sink.h"
#include "backends/device_worker/remote_program.h"
#include "backends/device_worker/wire.h"
#include "backends/device_worker/worker_process.h"
#include "backends/tpu_emu/layout_assignment.h"
#include "backends/tpu_emu/program_wire.h"
#include "backends/tpu_emu/reduction_split.h"
#include "backends/tpu_emu/tpu_compiler.h"
#include "base/error.h"
#include "base/numeric_formats.h"
#include "frontend/ir/recurrent.h"
#include "frontend/ir/recurrent_expand.h"

namespace mimic::backends {
namespace {

using namespace models::tpu;
using tpu_emu::CompiledProgram;

bool looks_like_file(const std::string& arg) {
  return arg.find('/') != std::string::npos ||
         (arg.size() > 5 && arg.substr(arg.size() - 5) == ".json");
}

// The chip for a device argument plus overrides (validated once; errors name the field).
TpuSpec resolve_spec(const std::string& arg, const std::map<std::string, std::string>& overrides) {
  if (arg.empty())
    throw InvalidArgument(
        "tpu-emu needs a preset or a chip file, e.g. tpu-emu:v4 or tpu-emu:chip.json");
  TpuSpec spec = looks_like_file(arg) ? spec_from_json_file(arg) : preset(arg);
  if (!overrides.empty()) apply_overrides(spec, overrides);
  return spec;
}

// Graph inputs and outputs the device program takes or gives channels-last ([N,H,W,C]) while the
// caller holds them channels-first: relaid on the host around the transfer (layout_assignment.h).
struct HostLayout {
  std::vector<bool> inputs_channels_last, outputs_channels_last;
};

const std::vector<float> kNoValues;

class TpuExecutable final : public WorkerExecutable {
 public:
  TpuExecutable(const ir::Graph& g, TpuSpec spec, CompiledProgram compiled,
                const CompileOptions& options, HostLayout host)
      : WorkerExecutable("tpu-emu:" + spec.name),
        spec_(std::move(spec)),
        options_(options),
        report_(std::move(compiled.report)),
        host_(std::move(host)) {
    host_.inputs_channels_last.resize(g.inputs().size(), false);
    host_.outputs_channels_last.resize(g.outputs().size(), false);
    for (ir::ValueId v : g.inputs()) input_types_.push_back(g.value(v).type);
    for (ir::ValueId v : g.outputs()) output_types_.push_back(g.value(v).type);
    std::string json = spec_to_json(spec_);
    program_ = std::move(compiled.program);
    constants_ = std::move(compiled.constants);
    remote_ = std::make_unique<RemoteProgram>("tpu", std::vector<uint8_t>(json.begin(), json.end()),
                                              [this](wire::Writer& w) {
                                                tpu_emu::write_program(w, program_);
                                                // Timing-only runs never read constants.
                                                w.u64(constants_.size());
                                                for (const auto& c : constants_)
                                                  w.pods(options_.timing_only ? kNoValues : c);
                                              });
  }

  RunResult run(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink) override {
    return run_program(inputs, sink, false);
  }

  const CompileReport& compile_report() const override { return report_; }

 private:
  // Carried values stay in the worker's memory, in the device's layout, unless the run is
  // timing-only (no values at all) or an input and its output are laid out differently.
  bool keeps(const std::vector<Carry>& carries) const override {
    if (options_.timing_only) return false;
    for (const Carry& c : carries)
      if (host_.inputs_channels_last[c.input] != host_.outputs_channels_last[c.output])
        return false;
    return true;
  }
  RemoteProgram& remote() override { return *remote_; }
  ir::HostTensor read_kept(size_t input, wire::Reader& r) const override {
    return read_tensor(r, input_types_[input], host_.inputs_channels_last[input]);
  }

  RunResult run_program(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink,
                        bool carried) override {
    auto start = std::chrono::steady_clock::now();
    if (options_.compile_only)
      throw InvalidArgument(
          fmt::format("tpu-emu:{}: compiled with compile_only, it cannot run", spec_.name));
    check_fits();
    if (inputs.size() != input_types_.size())
      throw InvalidArgument(fmt::format("tpu-emu: the program takes {} inputs, got {}",
                                        input_types_.size(), inputs.size()));
    const bool record = dynamic_cast<sim::NullSink*>(&sink) == nullptr;
    auto write_inputs = [&](wire::Writer& w) {
      w.boolean(options_.timing_only);
      w.boolean(record);
      if (options_.timing_only) return;
      write_carries(w, carried ? remote_carries_.carries() : std::vector<Carry>{});
      w.u64(inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        InputMode mode = carried ? remote_carries_.mode(i, remote_->loads()) : InputMode::sent;
        w.u8(static_cast<uint8_t>(mode));
        if (mode == InputMode::kept) continue;
        const ir::HostTensor& t =
            mode == InputMode::sent_and_kept ? remote_carries_.pending(i) : inputs[i];
        check_input(t, i);
        write_f32(w, host_.inputs_channels_last[i] ? tpu_emu::to_channels_last(t) : t, i);
      }
    };
    RunResult result;
    remote_->run(write_inputs, [&](wire::Reader& r) {
      uint64_t n = r.u64();
      for (size_t i = 0; i < output_types_.size(); ++i) {
        const ir::TensorType& type = output_types_[i];
        if (i < n && carried && remote_carries_.carried_output(i)) {
          r.pods<float>();  // empty: the value stayed on the device
          result.outputs.emplace_back();
          continue;
        }
        result.outputs.push_back(i < n ? read_tensor(r, type, host_.outputs_channels_last[i])
                                       : ir::HostTensor(type.dtype, type.shape));
      }
      result.report = wire::read_report(r);
      if (r.boolean()) RecordingSink::replay(r, sink);
    });
    if (carried) remote_carries_.sent(remote_->loads());
    for (const auto& [key, value] : report_.metrics)  // the HBM plan, as the run's
      if (key.rfind("memory.", 0) == 0) result.report.metrics[key] = value;
    result.report.metrics["host.request_bytes"] = static_cast<double>(remote_->request_bytes());
    result.report.metrics["host.reply_bytes"] = static_cast<double>(remote_->reply_bytes());
    result.report.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }

  // A program compiled over HBM capacity (allow_out_of_memory) has no place on the chip.
  void check_fits() const {
    auto peak = report_.metrics.find("memory.peak_bytes");
    auto span = report_.metrics.find("hbm.address_span_bytes");
    auto capacity = report_.metrics.find("memory.capacity_bytes");
    if (peak == report_.metrics.end() || capacity == report_.metrics.end() ||
        std::max(peak->second, span == report_.metrics.end() ? 0.0 : span->second) <=
            capacity->second)
      return;
    throw OutOfMemoryError(
        fmt::format("tpu-emu:{}: the program needs {:.0f} bytes of {}, the chip has {:.0f}: it was "
                    "compiled with allow_out_of_memory=true for its memory plan and cannot run",
                    spec_.name, peak->second, spec_.offchip.name, capacity->second),
        -1, static_cast<int64_t>(peak->second), static_cast<int64_t>(capacity->second), "");
  }

  void check_input(const ir::HostTensor& t, size_t i) const {
    if (t.type() != input_types_[i])
      throw InvalidArgument(fmt::format("tpu-emu: input {} must be {}, got {}", i,
                                        input_types_[i].str(), t.type().str()));
  }

  void write_f32(wire::Writer& w, const ir::HostTensor& t, size_t i) const {
    w.u64(static_cast<uint64_t>(t.numel()));
    if (t.dtype() == ir::DType::f32) {
      w.bytes(t.raw(), t.nbytes());
      return;
    }
    std::vector<float> f(t.numel());
    if (t.dtype() == ir::DType::bf16)
      numeric::bf16_to_f32(static_cast<const uint16_t*>(t.raw()), f.data(), f.size());
    else if (t.dtype() == ir::DType::boolean)
      for (int64_t j = 0; j < t.numel(); ++j) f[j] = t.data<bool>()[j] ? 1.0f : 0.0f;
    else
      integers_to_f32(t, i, f);
    w.bytes(f.data(), f.size() * sizeof(float));
  }

  // Integer inputs (gather indices) ride in fp32 lanes: exact only within +-2^24.
  static void integers_to_f32(const ir::HostTensor& t, size_t i, std::vector<float>& f) {
    for (int64_t j = 0; j < t.numel(); ++j) {
      int64_t v = t.dtype() == ir::DType::i32 ? t.data<int32_t>()[j] : t.data<int64_t>()[j];
      if (v > tpu_emu::kExactIntegerLimit || v < -tpu_emu::kExactIntegerLimit)
        throw InvalidArgument(fmt::format(
            "tpu-emu: input {} holds the integer {} at element {}, beyond the +-2^24 the chip "
            "holds exactly",
            i, v, j));
      f[j] = static_cast<float>(v);
    }
  }

  // A tensor of `type` as the caller expects it (relaid channels-first when the device holds it
  // channels-last).
  static ir::HostTensor read_tensor(wire::Reader& r, ir::TensorType type, bool channels_last) {
    if (!channels_last) return read_values(r, type);
    const ir::Shape& s = type.shape;
    type.shape = ir::Shape({s[0], s[2], s[3], s[1]});
    return tpu_emu::to_channels_first(read_values(r, type));
  }

  static ir::HostTensor read_values(wire::Reader& r, const ir::TensorType& type) {
    std::vector<float> v = r.pods<float>();
    ir::HostTensor t(type.dtype, type.shape);
    if (static_cast<int64_t>(v.size()) != t.numel())
      throw RuntimeError(fmt::format("tpu-emu: device returned {} values for an output of type {}",
                                     v.size(), type.str()));
    switch (type.dtype) {
      case ir::DType::f32:
        std::copy(v.begin(), v.end(), t.data<float>());
        break;
      case ir::DType::bf16:
        numeric::f32_to_bf16(v.data(), static_cast<uint16_t*>(t.raw()), v.size());
        break;
      case ir::DType::boolean:
        for (size_t j = 0; j < v.size(); ++j) t.data<bool>()[j] = v[j] != 0;
        break;
      case ir::DType::i32:
        for (size_t j = 0; j < v.size(); ++j) t.data<int32_t>()[j] = static_cast<int32_t>(v[j]);
        break;
      case ir::DType::i64:
        for (size_t j = 0; j < v.size(); ++j) t.data<int64_t>()[j] = static_cast<int64_t>(v[j]);
        break;
      default:
        throw RuntimeError(
            fmt::format("tpu-emu: the chip cannot return {} outputs", ir::dtype_name(type.dtype)));
    }
    return t;
  }

  TpuSpec spec_;
  CompileOptions options_;
  CompileReport report_;
  std::vector<ir::TensorType> input_types_, output_types_;
  HostLayout host_;
  models::tpu::Program program_;               // sent to the worker when loaded
  std::vector<std::vector<float>> constants_;  // program_.constants' data
  std::unique_ptr<RemoteProgram> remote_;
};

class TpuEmuBackend final : public Backend {
 public:
  std::string name() const override { return "tpu-emu"; }

  std::vector<DeviceInfo> enumerate() const override {
    std::vector<DeviceInfo> out;
    for (const auto& p : preset_names()) out.push_back(probe(p));
    return out;
  }

  DeviceInfo probe(const std::string& arg) const override {
    DeviceInfo info{"tpu-emu" + (arg.empty() ? std::string() : ":" + arg), "tpu-emu", false, "",
                    ""};
    try {
      TpuSpec spec = resolve_spec(arg, {});
      std::string exe = worker_executable();
      if (access(exe.c_str(), X_OK) != 0) {
        info.reason =
            fmt::format("the device worker '{}' is missing (set MIMIC_DEVICE_WORKER)", exe);
        return info;
      }
      info.available = true;
      info.description = fmt::format(
          "{} [{}]", spec.description.empty() ? spec.name : spec.description, spec.summary());
    } catch (const Error& e) {
      info.reason = e.what();
    }
    return info;
  }

  bool supports_op(const ir::Graph& g, const ir::Node& n, const std::string&,
                   const CompileOptions&) const override {
    return tpu_emu::supports_node(g, n);
  }

  std::string unsupported_reason(const ir::Graph& g, const ir::Node& n, const std::string&,
                                 const CompileOptions&) const override {
    std::string why;
    return tpu_emu::supports_node(g, n, &why) ? "" : why;
  }

  std::unique_ptr<Executable> compile(const ir::Graph& g, const std::string& arg,
                                      const CompileOptions& options) const override {
    TpuSpec spec = resolve_spec(arg, options.overrides);
    tpu_emu::ProgramOptions program =
        tpu_emu::parse_program_options(options, spec, "tpu-emu:" + arg);
    spec = tpu_emu::replica_spec(spec, program.replicas);
    tpu_emu::precision_passes(options.precision, spec);  // rejects unknown precisions
    // Recurrent layers and 3-D MaxPoolGrad (admitted by supports_node) run unrolled into matrix
    // and vector ops.
    auto unrolls = [&g](const ir::Node& n) { return tpu_emu::runs_unrolled(g, n); };
    std::optional<ir::Graph> unrolled;
    if (std::any_of(g.nodes().begin(), g.nodes().end(), unrolls))
      unrolled = ir::unroll_recurrent(g, unrolls);
    const ir::Graph& expanded = unrolled ? *unrolled : g;
    std::optional<ir::Graph> split = tpu_emu::split_reductions(expanded);
    const ir::Graph& graph = split ? *split : expanded;
    HostLayout host;
    CompiledProgram compiled =
        compile_with_layout(graph, spec, options, "tpu-emu:" + arg, program, host);
    if (unrolled) compiled.report.notes.push_back(ir::unroll_note(g, *unrolled));
    return std::make_unique<TpuExecutable>(graph, std::move(spec), std::move(compiled), options,
                                           std::move(host));
  }

  std::map<std::string, std::string> option_help() const override {
    return {{"layout",
             "auto (default: the compiler picks channels-last for 2-D convolutions and pools, as "
             "XLA's layout assignment does) or as_given (the graph's own layout)"},
            {"replicas",
             "N or all (default 1): data parallelism, N copies of the step (each on its own "
             "batch) with the gradients all-reduced over ICI; at most chips x (cores on v2/v3)"},
            {"allow_out_of_memory",
             "true: a program over HBM capacity compiles with its memory plan in the report (and "
             "cannot run) instead of failing"},
            {"loop_fusion",
             "true (default) or false: elementwise intermediates, and the broadcasts between "
             "them, stay on chip for their elementwise and reduction readers (XLA's loop and "
             "input fusions)"},
            {"activation_dtype",
             "f32 (default) or bf16: mixed precision as a bf16 TPU step runs it, the values "
             "the forward and backward passes compute stored in bf16 (parameters, gradients, "
             "optimizer state and the loss stay f32)"}};
  }

 private:
  // Compiles the channels-last form of the graph when layout assignment rewrites it. Like a real
  // compiler's layout heuristic, a choice that cannot be compiled (a window whose channels-last
  // tile does not fit on-chip memory, where the channels-first one does) falls back to the
  // graph's own layout, with the reason in the compile notes. When neither compiles, the error is
  // the channels-last program's, the one the user's default asked for.
  static CompiledProgram compile_with_layout(const ir::Graph& g, const TpuSpec& spec,
                                             const CompileOptions& options,
                                             const std::string& device,
                                             const tpu_emu::ProgramOptions& program,
                                             HostLayout& host) {
    tpu_emu::LayoutAssignment layout;
    if (program.auto_layout) layout = tpu_emu::assign_channels_last(g);
    if (layout.channels_last == 0)
      return tpu_emu::compile_program(g, spec, options, device, program);
    std::string why;
    std::exception_ptr channels_last_error;
    try {
      CompiledProgram compiled =
          tpu_emu::compile_program(layout.graph, spec, options, device, program);
      host = {layout.inputs_channels_last, layout.outputs_channels_last};
      compiled.report.notes.push_back(fmt::format(
          "layout assignment: {} op(s) run channels-last, {} transpose(s) where channels-first "
          "values meet them (option layout=as_given keeps the graph's layout)",
          layout.channels_last, layout.transposes));
      return compiled;
    } catch (const CompileError& e) {
      why = e.what();
      channels_last_error = std::current_exception();
    }
    try {
      CompiledProgram compiled = tpu_emu::compile_program(g, spec, options, device, program);
      compiled.report.notes.push_back("layout assignment not applied: " + why);
      return compiled;
    } catch (const CompileError&) {
      std::rethrow_exception(channels_last_error);  // neither compiles: the default layout's error
    }
  }
};

}  // namespace

std::unique_ptr<Backend> make_tpu_emu_backend() {
  return std::make_unique<TpuEmuBackend>();
}

}  // namespace mimic::backends
