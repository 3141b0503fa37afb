// The one interface every backend implements (cpu, tpu-emu, ipu-emu, cuda): enumerate its
// devices, say which ops it supports, compile a graph into an Executable, run it.
// A device string is "<backend>[:<arg>]", e.g. "cpu", "cuda:0", "tpu-emu:v4", "ipu-emu:chip.json";
// the backend alone interprets <arg>.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/report.h"
#include "frontend/ir/graph.h"
#include "sim/event_sink.h"

namespace mimic::backends {

struct DeviceInfo {
  std::string name;     // "tpu-emu:v4"
  std::string backend;  // "tpu-emu"
  bool available = false;
  std::string reason;       // why it is unavailable
  std::string description;  // one line: what it is
};

struct CompileOptions {
  // Matrix precision: "default" | "high" | "highest" (TPU passes, cuda TF32 vs fp32),
  // "float32" | "float16" (IPU). Backends reject values they do not know.
  std::string precision = "default";
  bool strict = false;        // an op that must fall back to cpu is a compile error instead
  bool timing_only = false;   // emulators: cycles only, no numerics (outputs are zeros)
  bool compile_only = false;  // compile and report; run() raises
  std::map<std::string, std::string> options;    // backend options: "num_ipus" -> "2", ...
  std::map<std::string, std::string> overrides;  // preset fields: "mxu.rows" -> "64"
};

struct RunResult {
  std::vector<ir::HostTensor> outputs;
  RunReport report;
};

// A value the device keeps from one run to the next (a training step's parameters, optimizer
// state and BatchNorm statistics, as XLA's donated buffers or Poplar's on-chip weights): graph
// input `input` takes, after each run, the value graph output `output` had, unless `guard` names a
// graph output (one element) that is not finite; then the input keeps its value (a loss-scaled
// step whose gradients overflowed changes nothing).
struct Carry {
  int input = 0, output = 0, guard = -1;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Inputs in graph-input order with the compiled (bound) shapes. Emits to `sink`. The outputs
  // belong to the caller: the backend never writes their storage after run() returns (carried
  // values rely on it and keep them without a copy).
  virtual RunResult run(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink) = 0;
  virtual const CompileReport& compile_report() const = 0;

  // Carried values: after set_carries(), run_carried() takes the carried inputs from the device
  // (their entries in `inputs` are ignored and may be undefined) and returns carried outputs
  // undefined; they cross to the host only through read_carry() and write_carry(). The default
  // keeps them in host memory and feeds them to run(): right for a device whose memory is the
  // host's, and the fallback of one that cannot keep them (carries_on_device() says which).
  // Indices and types are checked by the front end (frontend/api/compile.h).
  virtual void set_carries(std::vector<Carry> carries, std::vector<ir::HostTensor> initial);
  virtual RunResult run_carried(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink);
  virtual ir::HostTensor read_carry(size_t carry);
  virtual void write_carry(size_t carry, const ir::HostTensor& value);
  virtual bool carries_on_device() const { return false; }

 protected:
  std::vector<Carry> carries_;
  std::vector<ir::HostTensor> carried_;  // the default's values, in host memory
};

// Whether a carry's guard lets its output through: no guard, or a finite first element.
bool carry_guard_passes(const std::vector<ir::HostTensor>& outputs, int guard);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // The devices to list in `mimic devices` (presets for emulators, GPUs for cuda).
  virtual std::vector<DeviceInfo> enumerate() const = 0;
  // Checks one device argument ("v4", "chip.json", "0"); never throws for bad args, it reports.
  virtual DeviceInfo probe(const std::string& arg) const = 0;
  virtual bool supports_op(const ir::Graph& g, const ir::Node& n, const std::string& arg,
                           const CompileOptions& options) const = 0;
  // Why supports_op() declines node `n`, one line, recorded with the cpu fallback; "" if untold.
  virtual std::string unsupported_reason(const ir::Graph& g, const ir::Node& n,
                                         const std::string& arg,
                                         const CompileOptions& options) const {
    return "";
  }
  // `g` is fully inferred with a bound batch and every node supported. Throws mimic::Error.
  virtual std::unique_ptr<Executable> compile(const ir::Graph& g, const std::string& arg,
                                              const CompileOptions& options) const = 0;
  // Options this backend accepts in CompileOptions::options, with one-line help each.
  virtual std::map<std::string, std::string> option_help() const { return {}; }
};

}  // namespace mimic::backends
