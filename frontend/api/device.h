// mimic::Device: a device string parsed once. "cpu", "cuda:0", "tpu-emu:v4",
// "tpu-emu:path/to/chip.json", "ipu-emu:gc200". The part after the first ':' belongs to the
// backend.
#pragma once

#include <string>
#include <vector>

#include "backends/backend.h"

namespace mimic {

class Device {
 public:
  Device() : Device("cpu") {}
  // Throws InvalidArgument for an empty string or an unknown backend (listing the known ones).
  Device(const std::string& spec);  // NOLINT: implicit, so "cpu" converts where a Device is taken
  Device(const char* spec) : Device(std::string(spec)) {}  // NOLINT

  const std::string& backend() const { return backend_; }
  const std::string& arg() const { return arg_; }
  std::string str() const { return arg_.empty() ? backend_ : backend_ + ":" + arg_; }
  // Availability and description, asked of the backend each time (cheap).
  backends::DeviceInfo info() const;
  bool available() const { return info().available; }
  // Throws DeviceUnavailableError with the backend's reason unless available.
  void require_available() const;

  bool operator==(const Device& o) const { return backend_ == o.backend_ && arg_ == o.arg_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  std::string backend_, arg_;
};

// Every device known to this build (each backend's presets or GPUs), available or not.
std::vector<backends::DeviceInfo> devices();

}  // namespace mimic
