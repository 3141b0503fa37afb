// Carried values (backends::Carry) on an emulated device: a training step's parameters and
// optimizer state stay in the worker's memory, as they stay in a chip's HBM or tile memory, and
// only the batch, the scalars and the loss cross between mimic and the worker each step.
//
// With each run the parent sends the carries and, per graph input, a mode: the value travels
// (sent), travels and stays on the device (sent_and_kept: the first step, or a value written by
// load_state_dict), or is the one the device holds (kept, no bytes). After the run, each carry's
// output becomes its input's kept value (when its guard output is finite) and does not travel
// back; the parent reads a kept value on demand with the 'K' request (program_host.h).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/device_worker/remote_program.h"
#include "backends/device_worker/wire.h"
#include "base/error.h"

namespace mimic::backends {

enum class InputMode : uint8_t { sent = 0, sent_and_kept = 1, kept = 2 };

void write_carries(wire::Writer& w, const std::vector<Carry>& carries);
std::vector<Carry> read_carries(wire::Reader& r);
InputMode read_input_mode(wire::Reader& r);

// Worker side: the kept values of one loaded program, by graph input.
template <typename Value>
class KeptValues {
 public:
  const Value& get(size_t input, const std::string& device) const {
    auto it = kept_.find(input);
    if (it == kept_.end())
      throw RuntimeError(
          fmt::format("{}: input {} has no value kept on the device", device, input));
    return it->second;
  }
  void keep(size_t input, Value value) { kept_[input] = std::move(value); }
  // After a run: each carry's output becomes its input's kept value when `finite(guard output)`
  // (or it has no guard), and the output's slot gets the value the input held before, a buffer of
  // the same size the caller may reuse. Carried outputs do not travel back.
  template <typename Finite>
  void advance(const std::vector<Carry>& carries, std::vector<Value>& outputs, Finite finite) {
    std::vector<bool> take;
    for (const Carry& c : carries) take.push_back(c.guard < 0 || finite(outputs.at(c.guard)));
    for (size_t i = 0; i < carries.size(); ++i)
      if (take[i]) std::swap(kept_[carries[i].input], outputs.at(carries[i].output));
  }

 private:
  std::map<size_t, Value> kept_;
};

// Parent side: which carried values the device holds and which travel with the next run.
class RemoteCarries {
 public:
  explicit RemoteCarries(std::string device) : device_(std::move(device)) {}
  // Every value travels with the next run.
  void set(std::vector<Carry> carries, std::vector<ir::HostTensor> initial);
  bool active() const { return !carries_.empty(); }
  const std::vector<Carry>& carries() const { return carries_; }
  // The mode of graph input `input` in the next run. `loads` counts the program's loads on a
  // worker (RemoteProgram::loads()): values kept by an earlier worker were lost with it.
  InputMode mode(size_t input, uint64_t loads) const;
  // The value an input in mode sent_and_kept travels with.
  const ir::HostTensor& pending(size_t input) const { return pending_[carry_of_input(input)]; }
  bool carried_output(size_t output) const;
  // The run that sent the pending values succeeded: the device holds every carried value.
  void sent(uint64_t loads);
  // The value to give for read_carry(carry) without asking the device, if one is pending.
  const ir::HostTensor* unsent(size_t carry) const;
  void write(size_t carry, const ir::HostTensor& value) { pending_.at(carry) = value.clone(); }
  // Throws when the device no longer holds what it kept (its worker was replaced).
  void check_held(uint64_t loads) const;

 private:
  int carry_of_input(size_t input) const;

  std::string device_;
  std::vector<Carry> carries_;
  std::vector<int> carry_of_input_;      // by graph input: its carry, or -1
  std::vector<bool> carried_output_;     // by graph output
  std::vector<ir::HostTensor> pending_;  // per carry: defined until sent
  bool held_ = false;
  uint64_t held_since_load_ = 0;
};

// An emulated device's Executable whose carried values stay in its worker: tpu-emu's and
// ipu-emu's derive from it and say how a run is sent and a kept value read.
class WorkerExecutable : public Executable {
 public:
  void set_carries(std::vector<Carry> carries, std::vector<ir::HostTensor> initial) override;
  RunResult run_carried(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink) override;
  ir::HostTensor read_carry(size_t carry) override;
  void write_carry(size_t carry, const ir::HostTensor& value) override;
  bool carries_on_device() const override { return device_carries_; }

 protected:
  explicit WorkerExecutable(std::string device) : remote_carries_(std::move(device)) {}
  // Whether the worker can keep `carries` (false: they stay in host memory, the base class's way).
  virtual bool keeps(const std::vector<Carry>& carries) const = 0;
  // One run; with `carried`, remote_carries_ says each input's mode and which outputs stay.
  virtual RunResult run_program(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink,
                                bool carried) = 0;
  virtual RemoteProgram& remote() = 0;
  // Graph input `input`'s kept value as the worker writes it (ProgramHost::write_kept).
  virtual ir::HostTensor read_kept(size_t input, wire::Reader& r) const = 0;

  RemoteCarries remote_carries_;
  bool device_carries_ = false;
};

}  // namespace mimic::backends
