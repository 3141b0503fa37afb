// A worker executable for tests: kind "echo" answers requests by command byte.
//   'e' -> echoes the rest; 'x' -> throws OutOfMemoryError-kind error; 'c' -> crashes (abort);
//   'r' -> records two events and returns the serialized recording.
#include <cstdlib>

#include "backends/device_worker/device_host.h"
#include "backends/device_worker/recording_sink.h"
#include "base/error.h"

namespace mimic::backends {
namespace {

class EchoHost final : public DeviceHost {
 public:
  explicit EchoHost(std::vector<uint8_t> config) : config_(std::move(config)) {
    if (!config_.empty() && config_[0] == 'F') throw InvalidArgument("echo: bad configuration");
  }
  std::vector<uint8_t> handle(const std::vector<uint8_t>& request) override {
    if (request.empty()) throw InvalidArgument("echo: empty request");
    switch (request[0]) {
      case 'e':
        return std::vector<uint8_t>(request.begin() + 1, request.end());
      case 'x':
        throw CompileError("tile 7 needs 700 bytes, has 600", ErrorKind::out_of_memory);
      case 'c':
        std::abort();
      case 'r': {
        RecordingSink rec;
        auto d = rec.add_device({"echo", "p", 1000, sim::TimeUnit::cycles, "{}"});
        auto t = rec.add_track(d, "unit0", "compute");
        auto op = rec.add_op({"n", "MatMul", "", "f32", 10, 1, 2, "echo", false});
        rec.event(t, op, "matmul", 5, 10);
        rec.event(t, op, "matmul", 20, 4);
        rec.counter(t, 7, 3.5);
        wire::Writer w;
        rec.serialize(w);
        return std::move(w.data());
      }
      default:
        throw InvalidArgument("echo: unknown command");
    }
  }

 private:
  std::vector<uint8_t> config_;
};

std::unique_ptr<DeviceHost> make_echo(const std::vector<uint8_t>& config) {
  return std::make_unique<EchoHost>(config);
}

}  // namespace

const std::vector<DeviceHostEntry>& device_hosts() {
  static const std::vector<DeviceHostEntry> hosts{{"echo", make_echo}};
  return hosts;
}

}  // namespace mimic::backends

int main(int argc, char** argv) {
  return mimic::backends::device_worker_main(argc, argv);
}
