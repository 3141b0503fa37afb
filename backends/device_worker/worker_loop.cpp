// The worker's main loop: the first message configures (elaborates) the device; every later
// message is a request for it. Failures are sent back as error frames (kind + message); the process
// never aborts on bad input.
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "backends/device_worker/device_host.h"
#include "backends/device_worker/wire.h"
#include "backends/device_worker/worker_process.h"
#include "base/error.h"

namespace mimic::backends {

namespace {

std::vector<uint8_t> error_payload(ErrorKind kind, const std::string& message) {
  wire::Writer w;
  w.u8(static_cast<uint8_t>(kind));
  w.str(message);
  return std::move(w.data());
}

// Runs fn and turns any exception into an error frame; returns false when the parent is gone.
template <typename Fn>
bool answer(int fd, Fn fn) {
  try {
    return frame::write(fd, frame::ok, fn());
  } catch (const Error& e) {
    return frame::write(fd, frame::error, error_payload(e.kind(), e.what()));
  } catch (const std::exception& e) {
    return frame::write(fd, frame::error, error_payload(ErrorKind::runtime, e.what()));
  }
}

// Tensors come from the host cache (host_memory.h), but a run allocates other large blocks too
// (the reply it writes, the numerics' scratch): hundreds of MB in a training step. glibc maps each
// large block anew and unmaps it on free, so every step paid a page fault per 4 KiB touched. The
// worker's heap keeps what it frees instead and reuses it: its memory stays at the largest step's,
// as a device's memory would. ResNet-50 b8 train step with it and without: 5.7 / 9.2 s on ipu-emu,
// 4.4 / 7.2 s on tpu-emu.
static void keep_freed_memory() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
}

static int serve(const std::string& kind, int fd) {
  DeviceHostFactory make = nullptr;
  for (const auto& h : device_hosts())
    if (kind == h.kind) make = h.make;
  std::unique_ptr<DeviceHost> host;
  uint8_t status = 0;
  std::vector<uint8_t> message;
  if (!frame::read(fd, status, message)) return 0;
  bool ok = answer(fd, [&]() -> std::vector<uint8_t> {
    if (!make) throw DeviceUnavailableError("this mimic-device has no '" + kind + "' device model");
    host = make(message);
    return {};
  });
  if (!ok || !host) return ok ? 1 : 0;
  while (frame::read(fd, status, message))
    if (!answer(fd, [&] { return host->handle(message); })) break;
  return 0;
}

}  // namespace

int device_worker_main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mimic-device KIND FD (started by mimic, not by hand)\n");
    return 2;
  }
  keep_freed_memory();
  try {
    return serve(argv[1], std::atoi(argv[2]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mimic-device %s: %s\n", argv[1], e.what());
    return 1;
  }
}

}  // namespace mimic::backends
