#include "backends/device_worker/kept_values.h"

namespace mimic::backends {

void write_carries(wire::Writer& w, const std::vector<Carry>& carries) {
  w.u64(carries.size());
  for (const Carry& c : carries) {
    w.u32(static_cast<uint32_t>(c.input));
    w.u32(static_cast<uint32_t>(c.output));
    w.i64(c.guard);
  }
}

std::vector<Carry> read_carries(wire::Reader& r) {
  std::vector<Carry> carries(r.u64());
  for (Carry& c : carries) {
    c.input = static_cast<int>(r.u32());
    c.output = static_cast<int>(r.u32());
    c.guard = static_cast<int>(r.i64());
  }
  return carries;
}

InputMode read_input_mode(wire::Reader& r) {
  uint8_t mode = r.u8();
  if (mode > static_cast<uint8_t>(InputMode::kept))
    throw RuntimeError(fmt::format("device worker protocol: input mode {}", int(mode)));
  return static_cast<InputMode>(mode);
}

void RemoteCarries::set(std::vector<Carry> carries, std::vector<ir::HostTensor> initial) {
  carries_ = std::move(carries);
  carry_of_input_.clear();
  carried_output_.clear();
  for (size_t i = 0; i < carries_.size(); ++i) {
    const auto input = static_cast<size_t>(carries_[i].input);
    const auto output = static_cast<size_t>(carries_[i].output);
    if (carry_of_input_.size() <= input) carry_of_input_.resize(input + 1, -1);
    if (carried_output_.size() <= output) carried_output_.resize(output + 1, false);
    carry_of_input_[input] = static_cast<int>(i);
    carried_output_[output] = true;
  }
  pending_.clear();
  for (const ir::HostTensor& t : initial) pending_.push_back(t.clone());
  held_ = false;
}

int RemoteCarries::carry_of_input(size_t input) const {
  return input < carry_of_input_.size() ? carry_of_input_[input] : -1;
}

InputMode RemoteCarries::mode(size_t input, uint64_t loads) const {
  int carry = carry_of_input(input);
  if (carry < 0) return InputMode::sent;
  if (pending_[carry].defined()) return InputMode::sent_and_kept;
  check_held(loads);
  return InputMode::kept;
}

bool RemoteCarries::carried_output(size_t output) const {
  return output < carried_output_.size() && carried_output_[output];
}

void RemoteCarries::sent(uint64_t loads) {
  for (ir::HostTensor& t : pending_) t = ir::HostTensor();
  held_ = true;
  held_since_load_ = loads;
}

const ir::HostTensor* RemoteCarries::unsent(size_t carry) const {
  const ir::HostTensor& t = pending_.at(carry);
  return t.defined() ? &t : nullptr;
}

void RemoteCarries::check_held(uint64_t loads) const {
  if (held_ && loads == held_since_load_) return;
  throw RuntimeError(fmt::format(
      "{}: the device worker was restarted after a failure and the values kept on the device (a "
      "training step's parameters and optimizer state) were lost with it; write them again "
      "(TrainStep::load_state_dict or load)",
      device_));
}

void WorkerExecutable::set_carries(std::vector<Carry> carries,
                                   std::vector<ir::HostTensor> initial) {
  device_carries_ = keeps(carries);
  if (!device_carries_) {
    remote_carries_.set({}, {});
    Executable::set_carries(std::move(carries), std::move(initial));
    return;
  }
  carries_ = carries;
  remote_carries_.set(std::move(carries), std::move(initial));
}

RunResult WorkerExecutable::run_carried(const std::vector<ir::HostTensor>& inputs,
                                        sim::EventSink& sink) {
  return device_carries_ ? run_program(inputs, sink, true) : Executable::run_carried(inputs, sink);
}

ir::HostTensor WorkerExecutable::read_carry(size_t carry) {
  if (!device_carries_) return Executable::read_carry(carry);
  if (const ir::HostTensor* t = remote_carries_.unsent(carry)) return t->clone();
  remote_carries_.check_held(remote().loads());
  size_t input = static_cast<size_t>(carries_.at(carry).input);
  ir::HostTensor value;
  remote().read_kept(static_cast<uint32_t>(input),
                     [&](wire::Reader& r) { value = read_kept(input, r); });
  return value;
}

void WorkerExecutable::write_carry(size_t carry, const ir::HostTensor& value) {
  if (device_carries_)
    remote_carries_.write(carry, value);
  else
    Executable::write_carry(carry, value);
}

}  // namespace mimic::backends
