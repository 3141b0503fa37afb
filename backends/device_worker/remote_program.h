// The parent side of one compiled program on an emulated device (program_host.h is the worker
// side): it loads the program on the device's shared worker at the first run, again whenever the
// worker was replaced (after a crash), sends runs, and unloads the program when destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/device_worker/wire.h"
#include "backends/device_worker/worker_process.h"

namespace mimic::backends {

class RemoteProgram {
 public:
  // `kind` and `config` select the worker (`mimic-device <kind>` with that configuration);
  // `write_program` writes the emulator's program as its ProgramHost::load reads it. It is called
  // when the program is loaded (never for an executable that does not run), so what it reads must
  // live as long as this object.
  RemoteProgram(std::string kind, std::vector<uint8_t> config,
                std::function<void(wire::Writer&)> write_program);
  ~RemoteProgram();
  RemoteProgram(const RemoteProgram&) = delete;
  RemoteProgram& operator=(const RemoteProgram&) = delete;

  // Loads the program on the device's worker unless it is there (run does this too; calling it
  // at compile time reports a program the device refuses before the first run).
  void load() { loaded_worker(); }
  // One run: `write_run` writes what the emulator's ProgramHost::run reads, `read_reply` reads its
  // answer. Runs of one program are serialized; the request and reply buffers are reused from run
  // to run, so that a training step's hundreds of MB of tensors land in memory the process has
  // already mapped (a fresh buffer costs a page fault per 4 KiB every step).
  void run(const std::function<void(wire::Writer&)>& write_run,
           const std::function<void(wire::Reader&)>& read_reply);
  // Reads the value the program keeps for graph input `input` (kept_values.h) from the worker it
  // is loaded on; RuntimeError if that worker is gone.
  void read_kept(uint32_t input, const std::function<void(wire::Reader&)>& read_reply);
  // How many times the program was loaded on a worker: a new load (the worker was replaced after
  // a failure) starts without the values an earlier one kept.
  uint64_t loads() const { return loads_; }
  // Bytes of the latest run's request and reply (host traffic between mimic and the worker).
  size_t request_bytes() const { return request_.data().size(); }
  size_t reply_bytes() const { return reply_.size(); }
  // Host seconds of the latest load of the program on a worker (0 before the first run).
  double load_seconds() const { return load_seconds_; }

 private:
  std::shared_ptr<WorkerProcess> loaded_worker();

  std::string kind_;
  std::vector<uint8_t> config_;
  std::function<void(wire::Writer&)> write_program_;
  std::weak_ptr<WorkerProcess> worker_;
  uint64_t id_ = 0, loads_ = 0;
  double load_seconds_ = 0;
  std::mutex run_mutex_;
  wire::Writer request_;
  std::vector<uint8_t> reply_;
};

}  // namespace mimic::backends
