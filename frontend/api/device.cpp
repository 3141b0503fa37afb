#include "frontend/api/device.h"

#include <fmt/format.h>

#include "backends/registry.h"
#include "base/error.h"

namespace mimic {

Device::Device(const std::string& spec) {
  if (spec.empty())
    throw InvalidArgument("empty device string (try 'cpu', 'tpu-emu:v4', 'ipu-emu:gc200')");
  auto colon = spec.find(':');
  backend_ = spec.substr(0, colon);
  arg_ = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (!backends::Registry::global().find(backend_)) {
    std::string known;
    for (const auto* b : backends::Registry::global().all())
      known += (known.empty() ? "" : ", ") + b->name();
    throw InvalidArgument(fmt::format("unknown device '{}': known backends are {}", spec, known));
  }
}

backends::DeviceInfo Device::info() const {
  return backends::Registry::global().find(backend_)->probe(arg_);
}

void Device::require_available() const {
  backends::DeviceInfo i = info();
  if (!i.available)
    throw DeviceUnavailableError(fmt::format("device '{}' is unavailable: {}", str(), i.reason));
}

std::vector<backends::DeviceInfo> devices() {
  std::vector<backends::DeviceInfo> out;
  for (const auto* b : backends::Registry::global().all())
    for (auto& d : b->enumerate()) out.push_back(std::move(d));
  return out;
}

}  // namespace mimic
