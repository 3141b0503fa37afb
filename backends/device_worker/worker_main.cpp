// `mimic-device KIND FD`: the device models built into this binary (see device_worker_main).
#include "backends/device_worker/device_host.h"
#include "backends/ipu_emu/ipu_device_host.h"
#include "backends/tpu_emu/tpu_device_host.h"

namespace mimic::backends {

const std::vector<DeviceHostEntry>& device_hosts() {
  static const std::vector<DeviceHostEntry> hosts{
      {"tpu", tpu_emu::make_device_host},
      {"ipu", ipu_emu::make_device_host},
  };
  return hosts;
}

}  // namespace mimic::backends

int main(int argc, char** argv) {
  return mimic::backends::device_worker_main(argc, argv);
}
