// `mimic run`: build or load a model (zoo or ONNX file), compile it for a device, run it on example
// inputs (random, or .npy files) and print a summary (output checksum, time, per-op table, device
// figures, difference against cpu); --output-dir writes the outputs as .npy files.
#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "frontend/api/report_json.h"
#include "frontend/api/trace.h"
#include "frontend/api/train_graph.h"
#include "frontend/api/zoo.h"
#include "frontend/cli/cli_common.h"
#include "frontend/cli/run_io.h"
#include "frontend/cli/run_summary.h"
#include "frontend/onnx/onnx_import.h"

namespace mimic::cli {
namespace {

struct RunArgs {
  std::string model, onnx, device = "cpu", layout = "nchw", precision = "default", output_dir,
                           trace, tag;
  int64_t batch = 1, repeat = 1, warmup = 0, top = 10;
  bool batch_given = false;
  uint64_t seed = 0;
  bool json = false, strict = false, timing_only = false, compile_only = false, no_compare = false;
  std::vector<std::string> model_args, options, overrides, inputs;
};

struct LoadedModel {
  ir::Graph graph;
  int64_t int_input_high = 100;
  int64_t parameters = 0;
};

// An ONNX file: parameters are the elements of the initializers that would train
// (graph_parameters: weights, not shapes or scales).
LoadedModel load_onnx(const RunArgs& a) {
  if (!a.model.empty()) throw InvalidArgument("give either --model or --onnx, not both");
  check_onnx_layout(a.onnx, {a.layout});
  LoadedModel out{onnx_import::import_model(a.onnx).graph, 100, 0};
  for (const auto& [name, tensor] : graph_parameters(out.graph)) out.parameters += tensor.numel();
  return out;
}

LoadedModel load_model(const RunArgs& a) {
  if (!a.onnx.empty()) return load_onnx(a);
  if (a.model.empty())
    throw InvalidArgument("give a model: --model NAME (one of the zoo's) or --onnx FILE");
  zoo::ModelOptions o;
  o.layout = a.layout;
  o.seed = a.seed;
  o.params = parse_int_values(a.model_args, "--model-arg");
  zoo::Model m = zoo::make(a.model, o);
  LoadedModel out{
      nn::trace_module(*m.module, m.input_name, m.input_type.dtype, m.input_type.shape, a.model),
      m.int_input_high > 0 ? m.int_input_high : 100, m.module->parameter_count()};
  return out;
}

CompileOptions compile_options(const RunArgs& a, int64_t batch) {
  CompileOptions o;
  o.batch = batch;
  o.precision = a.precision;
  o.strict = a.strict;
  o.timing_only = a.timing_only;
  o.compile_only = a.compile_only;
  o.options = parse_key_values(a.options, "--option");
  o.overrides = parse_key_values(a.overrides, "--set");
  return o;
}

// What the trace's run table keeps as the run's config.
nlohmann::json run_config(const RunArgs& a) {
  return nlohmann::json{{"command", "mimic run"},
                        {"model_args", a.model_args},
                        {"options", a.options},
                        {"overrides", a.overrides},
                        {"seed", a.seed},
                        {"strict", a.strict},
                        {"timing_only", a.timing_only},
                        {"repeat", a.repeat},
                        {"warmup", a.warmup}};
}

struct Timing {
  double min = 0, median = 0;
};

Timing summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

// What the timed runs of `mimic run` gave.
struct Measured {
  RunOutput out;
  Timing timing, device_timing;
  std::vector<int64_t> trace_runs;
  std::vector<OutputStats> stats;
  bool compared = false;
  Difference diff;
};

// Warmup and timed runs (recorded in the trace when one is open), the outputs' statistics.
Measured measure(const RunArgs& a, Executable& exe, const std::vector<ir::HostTensor>& inputs,
                 std::optional<TraceScope>& trace) {
  exe.run_info().tag = a.tag.empty() ? "warmup" : a.tag + " warmup";
  for (int64_t i = 0; i < a.warmup; ++i) exe.run(inputs);
  exe.run_info().tag = a.tag;
  std::vector<double> walls, device_times;
  Measured m;
  for (int64_t i = 0; i < a.repeat; ++i) {
    m.out = exe.run(inputs);
    walls.push_back(m.out.report.wall_seconds);
    device_times.push_back(m.out.report.device_seconds);
  }
  if (trace) {
    trace->close();
    m.trace_runs = trace->run_ids();
  }
  m.timing = summarize(walls);
  m.device_timing = summarize(device_times);
  for (size_t i = 0; i < m.out.outputs.size(); ++i)
    m.stats.push_back(
        output_stats(exe.graph().value(exe.graph().outputs()[i]).name, m.out.outputs[i]));
  return m;
}

void print_run_json(const RunArgs& a, nlohmann::json j, const Measured& m) {
  j["wall_seconds"] = {{"min", m.timing.min}, {"median", m.timing.median}, {"runs", a.repeat}};
  j["device_seconds"] = {{"min", m.device_timing.min}, {"median", m.device_timing.median}};
  j["outputs"] = nlohmann::json::array();
  for (const auto& s : m.stats)
    j["outputs"].push_back(
        {{"name", s.name}, {"type", s.type}, {"sum", s.sum}, {"mean_abs", s.mean_abs}});
  if (m.compared)
    j["difference_vs_cpu"] = {{"max_abs", m.diff.max_abs},
                              {"max_rel", m.diff.max_rel},
                              {"of_scale", m.diff.of_scale},
                              {"nan_mismatches", m.diff.nan_mismatches}};
  j["report"] = mimic::to_json(m.out.report);
  if (!a.trace.empty()) j["trace"] = {{"file", a.trace}, {"runs", m.trace_runs}};
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void print_run_text(const RunArgs& a, const std::string& model_name, int64_t batch,
                    int64_t parameters, const Device& device, double compile_s, const Measured& m) {
  std::cout << fmt::format(
      "{:<12}{} (batch {}, {}, {} parameters)\n", "model", model_name, batch,
      a.onnx.empty() ? a.layout : (a.inputs.empty() ? "random inputs" : "inputs from .npy"),
      format_count(static_cast<double>(parameters), ""));
  std::cout << fmt::format("{:<12}{} ({})\n", "device", device.str(), device.info().description);
  if (!a.overrides.empty())  // the description is the preset's; these fields replace its values
    std::cout << fmt::format("{:<12}--set {}\n", "overrides", fmt::join(a.overrides, " --set "));
  for (const auto& s : m.stats)
    std::cout << fmt::format("{:<12}{} {}  checksum sum={:.6g} mean|x|={:.6g}\n", "output", s.name,
                             s.type, s.sum, s.mean_abs);
  std::cout << fmt::format("{:<12}{}\n", "compile", format_seconds(compile_s));
  if (a.repeat > 1)
    std::cout << fmt::format("{:<12}min {}  median {}  over {} runs\n", "runs",
                             format_seconds(m.timing.min), format_seconds(m.timing.median),
                             a.repeat);
  if (m.compared)
    std::cout << fmt::format(
        "{:<12}max abs {:.3g} = {:.2g}% of the largest cpu output; max rel per element {:.3g} (vs "
        "cpu)\n",
        "difference", m.diff.max_abs, 100 * m.diff.of_scale, m.diff.max_rel);
  if (m.compared && m.diff.nan_mismatches > 0)
    std::cout << fmt::format("{:<12}{} element(s) NaN in one run and not in the other\n",
                             "difference", m.diff.nan_mismatches);
  print_report(std::cout, m.out.report, static_cast<int>(a.top));
  if (!m.trace_runs.empty())
    std::cout << fmt::format(
        "\n{:<12}{} (run {}): `mimic trace summary {}`, `mimic report {} -o report.html`\n",
        "trace", a.trace, m.trace_runs.back(), a.trace, a.trace);
}

int run(const RunArgs& a) {
  if (a.batch <= 0) throw InvalidArgument(fmt::format("--batch must be positive, got {}", a.batch));
  if (a.repeat <= 0)
    throw InvalidArgument(fmt::format("--repeat must be positive, got {}", a.repeat));
  Device device(a.device);
  LoadedModel model = load_model(a);
  std::vector<ir::HostTensor> given = read_input_files(a.inputs, model.graph);
  if (!a.onnx.empty()) given = freeze_shape_inputs(model.graph, given);
  int64_t batch = a.batch_given || a.onnx.empty() ? a.batch : onnx_batch(model.graph, given);
  std::string model_name = a.onnx.empty() ? a.model : a.onnx;
  auto t0 = std::chrono::steady_clock::now();
  Executable exe = compile(model.graph, device, compile_options(a, batch));
  double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (batch == 0 && !exe.graph().inputs().empty() && exe.graph().input_type(0).shape.rank() > 0)
    batch = exe.graph().input_type(0).shape[0];
  exe.run_info().model = model_name;
  exe.run_info().layout = a.onnx.empty() ? a.layout : "";
  exe.run_info().config_json =
      run_config(a).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  nlohmann::json j{{"model", model_name},
                   {"device", device.str()},
                   {"batch", batch},
                   {"layout", a.layout},
                   {"parameters", model.parameters},
                   {"compile_seconds", compile_s},
                   {"compile", mimic::to_json(exe.compile_report())}};
  if (a.compile_only) {
    if (a.json)
      std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else
      std::cout << fmt::format("compiled {} (batch {}) for {} in {}\n", model_name, batch,
                               device.str(), format_seconds(compile_s));
    if (!a.json) print_compile_report(std::cout, exe.compile_report(), static_cast<int>(a.top));
    return 0;
  }
  // Opened once the model compiled (a bad device leaves no empty trace); records warmup (tagged)
  // and timed runs.
  std::optional<TraceScope> trace;
  if (!a.trace.empty()) trace.emplace(a.trace);
  std::vector<ir::HostTensor> inputs =
      given.empty() ? random_inputs(exe.graph(), a.seed + 1, model.int_input_high) : given;
  Measured m = measure(a, exe, inputs, trace);
  m.compared = device.backend() != "cpu" && !a.no_compare && !a.timing_only;
  if (m.compared) {
    CompileOptions cpu_options;
    cpu_options.batch = batch;
    m.diff = compare_outputs(m.out.outputs,
                             compile(model.graph, Device("cpu"), cpu_options).run(inputs).outputs);
  }
  if (!a.output_dir.empty()) write_output_files(a.output_dir, exe.graph(), m.out.outputs);
  if (a.json)
    print_run_json(a, std::move(j), m);
  else
    print_run_text(a, model_name, batch, model.parameters, device, compile_s, m);
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model on a device and print a summary");
  cmd->add_option("--model", a->model,
                  "Zoo model: " + fmt::format("{}", fmt::join(zoo::names(), ", ")));
  cmd->add_option("--onnx", a->onnx, "ONNX model file (instead of --model)");
  cmd->add_option("--input", a->inputs,
                  "ONNX model input name=file.npy (all inputs, or none for random ones)");
  cmd->add_option(
      "--output-dir", a->output_dir,
      "Write every output to DIR/<name>.npy (other characters than letters, digits, . _ - as _; a "
      "name written twice takes _<output index>)");
  cmd->add_option("--model-arg", a->model_args,
                  "Model parameter key=value (e.g. layers=2, hidden=256)");
  cmd->add_option("--device", a->device, "Device string (see `mimic devices`)")
      ->capture_default_str();
  cmd->add_option("--batch", a->batch,
                  "Batch size (ONNX: binds a symbolic batch; default from --input or 1)")
      ->capture_default_str()
      ->each([a](const std::string&) { a->batch_given = true; });
  cmd->add_option("--layout", a->layout, "CNN activation layout: nchw or nhwc")
      ->capture_default_str();
  cmd->add_option("--precision", a->precision,
                  "Matrix precision: default|high|highest (TPU), float32|float16 (IPU)")
      ->capture_default_str();
  cmd->add_option("--option", a->options, "Backend option key=value (e.g. num_ipus=2)");
  cmd->add_option("--set", a->overrides, "Preset field override key=value (e.g. mxu.rows=64)");
  cmd->add_flag("--strict", a->strict, "Fail instead of falling back to cpu for unsupported ops");
  cmd->add_flag("--timing-only", a->timing_only, "Emulators: cycles only, skip numerics");
  cmd->add_flag("--compile-only", a->compile_only, "Compile and report, do not run");
  cmd->add_flag("--no-compare", a->no_compare, "Do not compare outputs against the cpu backend");
  cmd->add_option("--seed", a->seed, "Seed for weights and inputs")->capture_default_str();
  cmd->add_option("--repeat", a->repeat, "Timed runs (min and median reported)")
      ->capture_default_str();
  cmd->add_option("--warmup", a->warmup, "Untimed runs first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--top", a->top, "Rows in the per-op table")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "Print JSON");
  add_memory_limit_option(cmd);
  cmd->add_option("--trace", a->trace,
                  "Record the runs to this SQLite trace file (created when missing)");
  cmd->add_option("--tag", a->tag,
                  "Tag stored with the runs in the trace (e.g. an experiment name)");
  return {cmd, [a]() { return run(*a); }};
}

}  // namespace mimic::cli
