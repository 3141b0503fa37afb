// The worker side of an emulated device: a `mimic-device` process hosts exactly one elaborated
// hardware model (SystemC 2.3 allows one simulation per process and no new modules after
// elaboration), built from a configuration, and answers requests from the parent process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mimic::backends {

class DeviceHost {
 public:
  virtual ~DeviceHost() = default;
  // Handles one request and returns the response. Throw mimic::Error to report a failure: the
  // parent re-raises it with the same kind and message.
  virtual std::vector<uint8_t> handle(const std::vector<uint8_t>& request) = 0;
};

using DeviceHostFactory = std::unique_ptr<DeviceHost> (*)(const std::vector<uint8_t>& config);

struct DeviceHostEntry {
  const char* kind;  // "tpu", "ipu"
  DeviceHostFactory make;
};

// The hosts built into this worker executable (defined by the executable: worker_main.cpp for
// `mimic-device`, a test's own file for test workers).
const std::vector<DeviceHostEntry>& device_hosts();

// main() of a worker executable: `NAME KIND FD`.
int device_worker_main(int argc, char** argv);

}  // namespace mimic::backends
