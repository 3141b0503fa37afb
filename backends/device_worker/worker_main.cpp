// `mimic-device KIND FD`: the device models built into this binary (see device_worker_main).
#include "backends/device_worker/device_host.h"

#ifdef MIMIC_HAVE_TPU_EMU
#include "backends/tpu_emu/tpu_device_host.h"
#endif
#ifdef MIMIC_HAVE_IPU_EMU
#include "backends/ipu_emu/ipu_device_host.h"
#endif

namespace mimic::backends {

const std::vector<DeviceHostEntry>& device_hosts() {
  static const std::vector<DeviceHostEntry> hosts{
#ifdef MIMIC_HAVE_TPU_EMU
      {"tpu", tpu_emu::make_device_host},
#endif
#ifdef MIMIC_HAVE_IPU_EMU
      {"ipu", ipu_emu::make_device_host},
#endif
  };
  return hosts;
}

}  // namespace mimic::backends

int main(int argc, char** argv) {
  return mimic::backends::device_worker_main(argc, argv);
}
