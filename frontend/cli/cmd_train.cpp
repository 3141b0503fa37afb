// `mimic train`: trains a zoo model or an ONNX file (its initializers are the parameters) with one
// compiled training step, on synthetic data (a fixed set of random batches with random class
// labels, cycled, so the loss falls as the model memorizes them) or on samples from two .npy files
// (--data x.npy y.npy: split into batches, the remainder dropped, cycled); prints the loss of every
// step and a summary, optionally saves a .npz checkpoint.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>

#include "frontend/api/npy.h"
#include "frontend/api/random.h"
#include "frontend/api/report_json.h"
#include "frontend/api/trace.h"
#include "frontend/api/train.h"
#include "frontend/api/zoo.h"
#include "frontend/cli/cli_common.h"
#include "frontend/onnx/onnx_import.h"
#include "traces/trace_reader.h"

namespace mimic::cli {
namespace {

struct TrainArgs {
  std::string model, onnx, layout = "nchw", device = "cpu", optimizer = "sgd",
                           loss = "cross_entropy", save, precision = "default",
                           schedule = "constant", loss_scale = "none", trace, tag,
                           recompute = "none", batch_norm_variance = "auto";
  std::vector<std::string> model_args, data, options, overrides, recompute_checkpoints;
  int64_t batch = 32, steps = 100, batches = 4, warmup_steps = 0, step_size = 30;
  double lr = 0.1, momentum = 0.0, weight_decay = 0.0, max_grad_norm = 0.0, gamma = 0.1,
         min_lr = 0.0;
  uint64_t seed = 0;
  bool quiet = false, json = false, timing_only = false, strict = false;
};

using Batches = std::vector<std::pair<ir::HostTensor, ir::HostTensor>>;

// Random batches: inputs uniform (token ids uniform over the vocabulary), targets uniform class
// indices or values.
Batches synthetic_data(const TrainStep& step, const ir::TensorType& in, int64_t token_ids,
                       const TrainArgs& a) {
  Random rng(a.seed + 1);
  const TrainGraph& t = step.train_graph();
  Batches out;
  for (int64_t i = 0; i < std::min(a.batches, a.steps); ++i) {  // no batch a step never reads
    ir::HostTensor x = rng.tensor(in.dtype, in.shape, token_ids > 0 ? token_ids : 100);
    ir::HostTensor y = t.target_type.dtype == ir::DType::i64
                           ? rng.tensor(ir::DType::i64, t.target_type.shape, t.output_type.shape[1])
                           : rng.tensor(t.target_type.dtype, t.target_type.shape);
    out.emplace_back(x, y);
  }
  return out;
}

// Rows [first, first + count) of a [S, ...] tensor.
ir::HostTensor rows(const ir::HostTensor& t, int64_t first, int64_t count) {
  std::vector<int64_t> dims = t.shape().dims();
  dims[0] = count;
  ir::HostTensor out(t.dtype(), ir::Shape(dims));
  size_t row_bytes = t.nbytes() / static_cast<size_t>(t.shape()[0]);
  std::memcpy(out.raw(), static_cast<const char*>(t.raw()) + first * row_bytes, out.nbytes());
  return out;
}

// `t` (from `path`) must hold samples of `want` (its first axis the batch): same dtype and
// per-sample shape.
void check_samples(const std::string& path, const ir::HostTensor& t, const ir::TensorType& want,
                   const std::string& what) {
  bool same =
      t.dtype() == want.dtype && t.shape().rank() == want.shape.rank() && t.shape().rank() >= 1;
  for (int i = 1; same && i < want.shape.rank(); ++i) same = t.shape()[i] == want.shape[i];
  std::vector<std::string> dims{"N"};
  for (int i = 1; i < want.shape.rank(); ++i) dims.push_back(std::to_string(want.shape[i]));
  if (!same)
    throw InvalidArgument(fmt::format("--data: {} is {}, {} must be {}[{}] (N samples)", path,
                                      t.type().str(), what, ir::dtype_name(want.dtype),
                                      fmt::join(dims, ",")));
}

// How many target rows one sample has: k when the model's output has batch * k rows (a language
// model's logits [B*S, V], its labels [B*S]), else 1. y may give them per sample ([N, k, ...],
// read as [N*k, ...]) or flat ([N*k, ...]); `samples` is N.
int64_t rows_per_sample(ir::HostTensor& y, const ir::TensorType& target, int64_t batch,
                        int64_t& samples) {
  const ir::Shape& want = target.shape;
  samples = y.shape().rank() > 0 ? y.shape()[0] : 0;
  if (want.rank() < 1 || want[0] % batch != 0 || want[0] == batch) return 1;
  const int64_t k = want[0] / batch;
  if (y.shape().rank() == want.rank() + 1 && y.shape()[1] == k) {
    std::vector<int64_t> dims = y.shape().dims();
    dims.erase(dims.begin());
    dims[0] = samples * k;
    y = y.reshaped(ir::Shape(dims));
  } else if (y.shape().rank() == want.rank() && samples % k == 0) {
    samples /= k;
  }
  return k;
}

// --data x.npy y.npy: x holds samples of the model input, y the loss targets (cross_entropy:
// i64 class indices [N], or [N, k] or [N*k] for a model whose output has k rows per sample; mse
// and bce_with_logits: f32 shaped like the model output).
Batches file_data(const TrainStep& step, const ir::TensorType& in, const TrainArgs& a) {
  ir::HostTensor x = read_npy(a.data[0]), y = read_npy(a.data[1]);
  const TrainGraph& t = step.train_graph();
  check_samples(a.data[0], x, in, "the model input");
  int64_t y_samples = 0;
  const int64_t k = rows_per_sample(y, t.target_type, a.batch, y_samples);
  check_samples(a.data[1], y, t.target_type,
                a.loss == "cross_entropy"
                    ? "the cross_entropy target (class indices; per token [N, S] or [N*S] for a "
                      "model whose output has S rows per sample)"
                    : "the " + a.loss + " target");
  if (x.shape()[0] != y_samples)
    throw InvalidArgument(fmt::format("--data: {} has {} samples, {} has {}", a.data[0],
                                      x.shape()[0], a.data[1], y_samples));
  if (x.shape()[0] < a.batch)
    throw InvalidArgument(fmt::format("--data: {} has {} samples, fewer than one batch of {}",
                                      a.data[0], x.shape()[0], a.batch));
  Batches out;
  for (int64_t first = 0; first + a.batch <= x.shape()[0]; first += a.batch)
    out.emplace_back(rows(x, first, a.batch), rows(y, first * k, a.batch * k));
  return out;
}

struct Totals {
  float first_loss, last_loss;
  double compile_s, wall_s, device_s;
};

void print_summary(const TrainArgs& a, const std::string& model, const TrainStep& step,
                   const Totals& t) {
  int64_t params = 0;
  for (const auto& [name, tensor] : step.parameters()) params += tensor.numel();
  std::set<std::string> fell_back;
  for (const auto& op : step.last_report().ops)
    if (op.fallback) fell_back.insert(op.op_type);
  std::cout << fmt::format("trained {} on {} ({} {} lr {}): {} steps of batch {}, {} parameters\n",
                           model, a.device, a.optimizer, a.loss, a.lr, a.steps, a.batch, params);
  if (a.recompute != "none") {
    int recomputed = 0;
    for (const ir::Node& n : step.train_graph().graph.nodes())
      recomputed += n.name.rfind("recompute/", 0) == 0;
    std::cout << fmt::format("recompute {}: {} forward ops run again in the backward pass\n",
                             a.recompute, recomputed);
  }
  if (step.skipped_steps() > 0 || a.loss_scale != "none")
    std::cout << fmt::format("loss scale {} after {} steps skipped for inf/NaN gradients\n",
                             step.loss_scale(), step.skipped_steps());
  std::cout << fmt::format("loss {:.6f} -> {:.6f}; compile {}, run {} wall, {} device\n",
                           t.first_loss, t.last_loss, format_seconds(t.compile_s),
                           format_seconds(t.wall_s), format_seconds(t.device_s));
  if (!fell_back.empty())
    std::cout << fmt::format("{} of {} ops ran on cpu (not lowered by {}): {}\n",
                             step.last_report().fallback_count(), step.last_report().ops.size(),
                             a.device, fmt::join(fell_back, ", "));
}

// Seconds of the last step by phase (forward, loss is forward, backward, update, allreduce): the
// backend's own account ("phase.<name>_cycles" metrics at its clock) when it gives one, else its
// ops summed by the phase their node names carry (traces::op_phase), and the rest as "other".
nlohmann::json phase_seconds(const backends::RunReport& r) {
  nlohmann::json out = nlohmann::json::object();
  const std::string prefix = "phase.", suffix = "_cycles";
  for (const auto& [key, value] : r.metrics)
    if (r.clock_hz > 0 && key.rfind(prefix, 0) == 0 && key.size() > prefix.size() + suffix.size() &&
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0)
      out[key.substr(prefix.size(), key.size() - prefix.size() - suffix.size())] =
          value / r.clock_hz;
  if (!out.empty()) return out;
  double ops = 0, total = r.cycles > 0 ? r.device_seconds : r.wall_seconds;
  for (const auto& op : r.ops) {
    if (r.cycles > 0 && op.fallback) continue;  // host time, outside an emulator's device time
    double s = op.device_seconds > 0 ? op.device_seconds : op.wall_ns * 1e-9;
    std::string phase = traces::op_phase(op.node);
    out[phase] = out.value(phase, 0.0) + s;
    ops += s;
  }
  // What no op accounts for: host transfers, synchronization, the runtime's own work.
  if (total > ops) out["other"] = total - ops;
  return out;
}

// `mimic train --json`: the run's configuration, the last step's report and what a sweep reads:
// the step time, samples per second, time by phase and the memory plan ("memory.*" metrics).
void print_json(const TrainArgs& a, const std::string& model, const TrainStep& step,
                const Totals& t) {
  const backends::RunReport& r = step.last_report();
  double step_s = r.cycles > 0 ? r.device_seconds : t.wall_s / double(a.steps);
  // Samples a step consumes: the batch, times what the backend adds (gradient accumulation).
  double samples =
      double(a.batch) *
      (r.metrics.count("train.batches_per_step") ? r.metrics.at("train.batches_per_step") : 1.0);
  nlohmann::json memory = nlohmann::json::object();
  for (const auto& [key, value] : r.metrics)
    if (key.rfind("memory.", 0) == 0) memory[key.substr(7)] = value;
  nlohmann::json j{{"model", model},
                   {"device", a.device},
                   {"batch", a.batch},
                   {"precision", a.precision},
                   {"recompute", a.recompute},
                   {"recompute_checkpoints", a.recompute_checkpoints},
                   {"options", a.options},
                   {"train",
                    {{"steps", a.steps},
                     {"first_loss", t.first_loss},
                     {"last_loss", t.last_loss},
                     {"step_seconds", step_s},
                     {"samples_per_step", samples},
                     {"samples_per_s", step_s > 0 ? samples / step_s : 0.0},
                     {"phases", phase_seconds(r)},
                     {"memory", memory}}},
                   {"compile", mimic::to_json(step.executable().compile_report())},
                   {"report", mimic::to_json(r)}};
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// The model to train and its input type with the batch bound: a zoo model (traced) or an ONNX
// file (its floating-point initializers are the parameters).
struct TrainModel {
  std::string name;
  ir::TensorType input;
  std::unique_ptr<TrainStep> step;
  int64_t token_ids = 0;  // > 0: integer inputs are ids in [0, token_ids) (a vocabulary)
};

TrainModel make_step(const TrainArgs& a, const TrainOptions& o) {
  if (!a.onnx.empty()) {
    if (!a.model.empty()) throw InvalidArgument("give either --model or --onnx, not both");
    check_onnx_layout(a.onnx, {a.layout});
    ir::Graph g = bind_model_batch(onnx_import::import_model(a.onnx).graph, a.batch);
    if (g.inputs().size() != 1)
      throw InvalidArgument(fmt::format("train: {} has {} inputs, training needs exactly one",
                                        a.onnx, g.inputs().size()));
    ir::TensorType in = g.input_type(0);
    int64_t token_ids = ir::is_floating(in.dtype) ? 0 : index_input_high(g, g.inputs()[0], 100);
    return {a.onnx, in, std::make_unique<TrainStep>(g, graph_parameters(g), Device(a.device), o),
            token_ids};
  }
  std::string name = a.model.empty() ? "mlp" : a.model;
  zoo::ModelOptions mo;
  mo.seed = a.seed;
  mo.layout = a.layout;
  mo.params = parse_int_values(a.model_args, "--model-arg");
  zoo::Model m = zoo::make(name, mo);
  ir::TensorType in{m.input_type.dtype, m.input_type.shape.bind_batch(a.batch)};
  return {name, in, std::make_unique<TrainStep>(*m.module, in, Device(a.device), o),
          m.int_input_high};
}

// Flags that would do nothing with the others given: refused rather than ignored.
void check_flag_combinations(const TrainArgs& a) {
  if (a.timing_only && !a.save.empty())
    throw InvalidArgument(
        "--save with --timing-only: a timing-only step computes no numbers, so the checkpoint "
        "would hold the initial weights");
  if (a.momentum != 0 && a.optimizer != "sgd")
    throw InvalidArgument(
        fmt::format("--momentum {} applies to sgd, not --optimizer {}", a.momentum, a.optimizer));
}

TrainOptions train_options(const TrainArgs& a) {
  check_flag_combinations(a);
  TrainOptions o;
  o.loss.kind = parse_loss(a.loss);
  o.optimizer.kind = parse_optimizer(a.optimizer);
  o.optimizer.lr = a.lr;
  o.optimizer.momentum = a.momentum;
  o.optimizer.weight_decay = a.weight_decay;
  o.optimizer.max_grad_norm = a.max_grad_norm;
  if (o.optimizer.kind == OptimizerKind::lamb) o.optimizer.eps = 1e-6;  // apex FusedLAMB's
  o.loss_scale = parse_loss_scale(a.loss_scale);
  o.schedule = make_schedule(a.schedule, a.steps, a.warmup_steps, a.step_size, a.gamma, a.min_lr);
  o.compile.precision = a.precision;
  o.compile.options = parse_key_values(a.options, "--option");
  o.compile.overrides = parse_key_values(a.overrides, "--set");
  o.compile.timing_only = a.timing_only;
  o.compile.strict = a.strict;
  o.recompute = parse_recompute(a.recompute);
  o.recompute_checkpoints = a.recompute_checkpoints;
  o.batch_norm_variance = parse_batch_norm_variance(a.batch_norm_variance);
  return o;
}

int run_train(const TrainArgs& a) {
  if (a.batch <= 0 || a.steps <= 0 || a.batches <= 0)
    throw InvalidArgument(fmt::format("--batch {}, --steps {} and --batches {} must be > 0",
                                      a.batch, a.steps, a.batches));
  TrainOptions o = train_options(a);
  auto t0 = std::chrono::steady_clock::now();
  TrainModel model = make_step(a, o);
  TrainStep& step = *model.step;
  const ir::TensorType& in = model.input;
  double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Batches data =
      a.data.empty() ? synthetic_data(step, in, model.token_ids, a) : file_data(step, in, a);
  float first = 0, last = 0;
  double device_s = 0;
  bool scheduled = !o.schedule.phases.empty();  // print each step's lr
  std::optional<TraceScope> trace;  // one run per step, ops tagged forward/backward/update
  if (!a.trace.empty()) trace.emplace(a.trace);
  step.run_info().tag = a.tag;
  step.run_info().model = model.name;
  t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < a.steps; ++i) {
    const auto& [x, y] = data[i % data.size()];
    double lr = step.lr();
    last = step.step(x, y);
    if (i == 0) first = last;
    device_s += step.last_report().device_seconds;
    if (a.json) continue;
    if (!a.quiet && scheduled)
      std::cout << fmt::format("step {:>5}/{}  lr {:.6g}  loss {:.6f}\n", i + 1, a.steps, lr, last);
    else if (!a.quiet)
      std::cout << fmt::format("step {:>5}/{}  loss {:.6f}\n", i + 1, a.steps, last);
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (a.json) {
    print_json(a, model.name, step, {first, last, compile_s, wall, device_s});
    return 0;
  }
  print_summary(a, model.name, step, {first, last, compile_s, wall, device_s});
  if (trace) {
    trace->close();
    std::cout << fmt::format("trace: {} ({} runs, one per step)\n", a.trace, a.steps);
  }
  if (!a.save.empty()) {
    step.save(a.save);
    std::cout << "checkpoint: " << a.save << "\n";
  }
  return 0;
}

// The learning rate and its schedule.
void add_schedule_options(CLI::App* cmd, TrainArgs& a) {
  cmd->add_option("--lr", a.lr, "Learning rate")->capture_default_str();
  cmd->add_option("--schedule", a.schedule,
                  "Learning-rate schedule after the warmup: constant, step, exponential, "
                  "linear (to 0 at the last step) or cosine (to --min-lr at the last step)")
      ->capture_default_str();
  cmd->add_option("--warmup-steps", a.warmup_steps,
                  "Linear learning-rate warmup from 0 over this many steps")
      ->capture_default_str();
  cmd->add_option("--step-size", a.step_size, "step schedule: decay every N steps")
      ->capture_default_str();
  cmd->add_option("--gamma", a.gamma, "step/exponential schedule: decay factor")
      ->capture_default_str();
  cmd->add_option("--min-lr", a.min_lr, "cosine schedule: the final learning rate")
      ->capture_default_str();
}

}  // namespace

Command add_train_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train a zoo or ONNX model on synthetic or .npy data with one compiled training step");
  auto a = std::make_shared<TrainArgs>();
  cmd->add_option("--model", a->model, "Zoo model (classifier: mlp, resnet18, ...; default mlp)");
  cmd->add_option("--onnx", a->onnx,
                  "Train an ONNX model instead (one input; its float initializers are trained)");
  cmd->add_option("--data", a->data,
                  "Train on samples from X.npy Y.npy instead of synthetic data: X holds model "
                  "inputs [N, ...]; Y the targets: cross_entropy i64 class indices [N], mse and "
                  "bce_with_logits f32 shaped like the model output [N, ...]")
      ->expected(2);
  cmd->add_option("--model-arg", a->model_args,
                  "Model parameter key=value (e.g. layers=2, hidden=256)");
  cmd->add_option("--layout", a->layout, "CNN activation layout: nchw or nhwc")
      ->capture_default_str();
  cmd->add_option("--device", a->device, "Device string (see `mimic devices`)")
      ->capture_default_str();
  cmd->add_option("--batch", a->batch, "Batch size")->capture_default_str();
  cmd->add_option("--steps", a->steps, "Training steps")->capture_default_str();
  cmd->add_option("--batches", a->batches, "Distinct synthetic batches, cycled")
      ->capture_default_str();
  cmd->add_option("--optimizer", a->optimizer, "sgd, adam, adamw or lamb")->capture_default_str();
  cmd->add_option("--loss", a->loss, "cross_entropy, mse or bce_with_logits")
      ->capture_default_str();
  add_schedule_options(cmd, *a);
  cmd->add_option("--momentum", a->momentum, "SGD momentum")->capture_default_str();
  cmd->add_option("--weight-decay", a->weight_decay, "Weight decay")->capture_default_str();
  cmd->add_option("--max-grad-norm", a->max_grad_norm,
                  "Clip gradients to this global norm (0: off)");
  cmd->add_option("--precision", a->precision,
                  "Matrix precision: default|high|highest (TPU), float32|float16 (IPU)")
      ->capture_default_str();
  cmd->add_option("--option", a->options, "Backend option key=value (e.g. replicas=2)");
  cmd->add_option("--set", a->overrides, "Preset field override key=value (e.g. mxu.rows=64)");
  cmd->add_flag("--strict", a->strict,
                "Fail instead of running ops the device cannot run on the cpu fallback");
  cmd->add_flag("--timing-only", a->timing_only,
                "Emulators: cycles and memory only, skip numerics (losses are meaningless)");
  cmd->add_flag("--json", a->json,
                "Print JSON: the last step's report, step time, samples/s, time by phase, memory");
  cmd->add_option("--recompute", a->recompute,
                  "Recompute activations in the backward pass instead of keeping them: none, "
                  "checkpoints (keep conv/matmul outputs) or full (keep ~sqrt(n) block outputs)")
      ->capture_default_str();
  cmd->add_option("--recompute-checkpoints", a->recompute_checkpoints,
                  "With --recompute full: the forward nodes whose outputs are kept, comma "
                  "separated (e.g. layer1.0.relu,layer2.0.relu), instead of ~sqrt(n) block outputs")
      ->delimiter(',');
  cmd->add_option("--batch-norm-variance", a->batch_norm_variance,
                  "BatchNorm's batch variance: auto (one-pass on tpu and ipu devices, as XLA and "
                  "PopART compute it; two-pass elsewhere, as PyTorch), one-pass (mean(x^2) - "
                  "mean^2) or "
                  "two-pass (mean((x - mean)^2))")
      ->capture_default_str();
  cmd->add_option("--loss-scale", a->loss_scale,
                  "fp16 loss scaling: none, dynamic (GradScaler's rule) or a fixed number")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed for weights and data")->capture_default_str();
  cmd->add_option("--save", a->save,
                  "Write a .npz checkpoint (parameters, optimizer state) at the end");
  cmd->add_option("--trace", a->trace,
                  "Record every step as a run in this SQLite trace (`mimic trace summary` shows "
                  "per-phase time: forward, backward, update)");
  cmd->add_option("--tag", a->tag,
                  "Tag stored with the step runs in the trace (e.g. an experiment name)");
  cmd->add_flag("--quiet", a->quiet, "Only the summary");
  add_memory_limit_option(cmd);
  return {cmd, [a]() { return run_train(*a); }};
}

}  // namespace mimic::cli
