// mimic::TrainStep: one compiled training step (forward, loss, backward, optimizer update; see
// train_graph.h) plus the state it owns between steps: parameters, BatchNorm running statistics,
// optimizer state and the step count. The tensors stay on the device from step to step (carried
// values, backends::Carry): step(x, y) sends the batch and the scalars and reads the loss back;
// parameters() and state_dict() read the tensors back when asked, load_state_dict() writes them.
// Checkpoints are .npz files keyed by name (npz.h).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "frontend/api/compile.h"
#include "frontend/api/loss_scale.h"
#include "frontend/api/lr_schedule.h"
#include "frontend/api/nn.h"
#include "frontend/api/recompute.h"
#include "frontend/api/train_graph.h"

namespace mimic {

struct TrainOptions {
  LossConfig loss;
  OptimizerConfig optimizer;
  CompileOptions compile;
  LossScaleConfig loss_scale;  // fp16: scale the loss, unscale gradients, skip steps with inf/NaN
  LrSchedule schedule;         // of optimizer.lr (the base lr); empty: constant
  Recompute recompute = Recompute::none;  // recompute.h: fewer activations kept, more cycles
  std::vector<std::string> recompute_checkpoints;  // recompute full: nodes whose outputs are kept
  uint64_t seed = 0;  // dropout masks: step k's masks come from (seed, k), so runs repeat exactly
  // BatchNormalization's batch variance (train_graph.h); unset: one_pass on tpu and ipu devices
  // (what XLA and PopART compute there), two_pass elsewhere (PyTorch's).
  std::optional<BatchNormVariance> batch_norm_variance;
};

class TrainStep {
 public:
  // `forward` has one input (the batch, concrete shape) and one output; `params` are matched to
  // its constants by storage (nn::Module::named_parameters() gives them). Initial values are
  // copied: the step never writes the caller's tensors.
  TrainStep(const ir::Graph& forward, const NamedTensors& params, const Device& device,
            const TrainOptions& options);
  // Traces `module` on an input of `input_type`.
  TrainStep(nn::Module& module, const ir::TensorType& input_type, const Device& device,
            const TrainOptions& options);
  // One step owns one copy of the state on the device: a copy would share it, so there is none.
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;
  TrainStep(TrainStep&&) = default;
  TrainStep& operator=(TrainStep&&) = default;

  // One step on a batch; returns the loss before the update (with loss scaling, a step whose
  // gradients hold an inf or NaN changes no parameter: see loss_scale.h). The target is checked
  // first (type, labels in range): InvalidArgument naming the offending value.
  float step(const ir::HostTensor& input, const ir::HostTensor& target);

  // Trainable parameters and BatchNorm running statistics, by name.
  NamedTensors parameters() const;
  // parameters() plus optimizer state ("<param>.<slot>") and "optimizer.step" (and, with loss
  // scaling, "loss_scale.scale" f32 and "loss_scale.good_steps" i64).
  NamedTensors state_dict() const;
  // Replaces values by name; every name must be known and every type equal. Names absent from
  // `values` keep their current value.
  void load_state_dict(const NamedTensors& values);
  void save(const std::string& path) const;  // .npz of state_dict()
  void load(const std::string& path);

  // The lr the next step uses (the schedule's value at steps_taken()).
  double lr() const { return options_.schedule.lr_at(lr_, step_); }
  // Sets the base lr that the schedule scales (with no schedule, the lr of every later step).
  void set_lr(double lr);
  int64_t steps_taken() const { return step_; }
  // Loss scaling: the scale the next step uses (1 without scaling) and the steps skipped so far.
  double loss_scale() const { return scaling() ? scaler_.scale() : 1.0; }
  int64_t skipped_steps() const { return skipped_; }
  const TrainGraph& train_graph() const { return *graph_; }
  const Executable& executable() const { return exe_; }
  // What a trace records with each step's run (model name, tag).
  RunInfo& run_info() { return exe_.run_info(); }
  // Whether parameters and optimizer state live in the device's memory between steps (false: in
  // host memory, as on cpu or when cpu fallback splits the step).
  bool state_on_device() const { return exe_.carries_on_device(); }
  const backends::RunReport& last_report() const { return last_report_; }

 private:
  bool scaling() const { return options_.loss_scale.mode != LossScaleMode::none; }
  void load_scaler_entry(const std::string& name, const ir::HostTensor& v);
  void carry_state(std::vector<ir::HostTensor> initial);
  void describe_run(const ir::Graph& forward, const TrainOptions& options);
  // Carried value `carry` (params, then buffers, then state), read from the device once per step.
  const ir::HostTensor& carried(size_t carry) const;

  std::shared_ptr<TrainGraph> graph_;
  Executable exe_;
  TrainOptions options_;
  std::vector<std::string> carry_names_;  // params, buffers, state: the carries' order
  std::vector<ir::TensorType> carry_types_;
  mutable std::vector<ir::HostTensor> read_back_;  // per carry; undefined: not read this step
  double lr_;
  int64_t step_ = 0, skipped_ = 0;
  LossScaler scaler_;
  backends::RunReport last_report_;
};

// `g` with its symbolic batch, if any, bound to `batch` (constants folded on the cpu backend):
// imported models (graph_parameters() for their parameters) are traced with a symbolic batch.
ir::Graph bind_model_batch(const ir::Graph& g, int64_t batch);

}  // namespace mimic
