// mimic::compile(graph, device, options) -> Executable; executable.run(inputs) -> outputs + report.
// The front end validates: the device must be available, the batch bound, inputs must match the
// compiled types exactly. Runs inside a TraceScope are recorded to its trace.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "frontend/api/device.h"
#include "frontend/api/run_observer.h"
#include "frontend/ir/batch_norm_train.h"
#include "frontend/ir/graph.h"

namespace mimic {

struct CompileOptions : backends::CompileOptions {
  int64_t batch = 0;  // binds the graph's symbolic batch; required when it has one
  // Largest tensor (bytes) the graph may need, checked on every inferred value before compiling;
  // 0: ir::max_tensor_bytes() (half the physical memory unless set).
  int64_t max_tensor_bytes = 0;
};

struct RunOutput {
  std::vector<ir::HostTensor> outputs;
  backends::RunReport report;
};

class Executable {
 public:
  // Checks count, dtype and shape of every input (InvalidArgument naming the input otherwise).
  RunOutput run(const std::vector<ir::HostTensor>& inputs) const;

  // Values kept on the device between runs (backends::Carry: a training step's parameters and
  // optimizer state). Checked here: inputs and outputs in range and each carried once, an input
  // and its output of one type, a guard a one-element f32 output, `initial` one value per carry of
  // its input's type. Replaces earlier carries.
  void set_carries(const std::vector<backends::Carry>& carries,
                   const std::vector<ir::HostTensor>& initial);
  // run() with the carried inputs taken from the device: their entries in `inputs` are ignored
  // (undefined tensors are fine); carried outputs come back undefined.
  RunOutput run_carried(const std::vector<ir::HostTensor>& inputs) const;
  ir::HostTensor read_carry(size_t carry) const;  // a copy of the device's value
  void write_carry(size_t carry, const ir::HostTensor& value) const;
  // False when the backend keeps carried values in host memory (cpu, a graph split by fallback).
  bool carries_on_device() const;

  const ir::Graph& graph() const;  // batch bound, shapes inferred, constants folded
  const Device& device() const;
  const CompileOptions& options() const;
  const backends::CompileReport& compile_report() const;
  // Metadata recorded with every run of this executable (model name, batch, layout, ...).
  RunInfo& run_info();
  const RunInfo& run_info() const;

 private:
  template <typename Run>
  RunOutput observed_run(Run&& run) const;
  void check_carry_value(size_t carry, const ir::HostTensor& value, int input) const;
  friend Executable compile(const ir::Graph&, const Device&, const CompileOptions&);
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

Executable compile(const ir::Graph& g, const Device& device, const CompileOptions& options = {});

// Throws InvalidArgument when `g` has a fixed batch (its first input's leading dimension) other
// than `batch` (> 0; 0 asks for none).
void check_fixed_batch(const ir::Graph& g, int64_t batch);

// Validates `g`, binds its batch (when symbolic; `batch` must then be > 0) and folds constants.
ir::Graph prepare_graph(const ir::Graph& g, int64_t batch, int64_t max_tensor_bytes = 0);

// The batch variance a device's training-mode BatchNormalizations compute: one pass on the TPU
// and IPU emulators (XLA's BatchNormExpander, PopART), two passes elsewhere (PyTorch).
ir::BatchNormVariance default_batch_norm_variance(const Device& device);

// The bound below which random values of integer graph input `input` stay valid: the smallest
// extent of the axis a Gather indexes with it (through views and casts), else `fallback`. Token
// ids of an embedding stay inside its vocabulary.
int64_t index_input_high(const ir::Graph& g, ir::ValueId input, int64_t fallback);

// Deterministic example inputs: floats ~ N(0, 1), integer inputs in [0, int_high) (an embedding's
// indices below its vocabulary, index_input_high), bools random.
std::vector<ir::HostTensor> random_inputs(const ir::Graph& g, uint64_t seed,
                                          int64_t int_high = 100);

}  // namespace mimic
