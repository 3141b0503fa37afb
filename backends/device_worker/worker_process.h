// The parent side of an emulated device: a `mimic-device` child process connected by a socket pair,
// exchanging framed messages (u32 length, u8 status, payload). Errors raised in the worker come
// back as mimic::Error of the same kind; a worker that dies (crash, kill) is reported with its exit
// status, and the next use of the pool starts a fresh one.
#pragma once

#include <sys/types.h>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mimic::backends {

class WorkerProcess {
 public:
  // Starts `mimic-device <kind>` and sends it `config`; throws if the worker cannot start or
  // rejects the configuration.
  static std::shared_ptr<WorkerProcess> start(const std::string& kind,
                                              const std::vector<uint8_t>& config);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // One request, one response (calls are serialized).
  std::vector<uint8_t> call(const std::vector<uint8_t>& request);
  // The same, the response written into `response` (whose memory is reused when large enough).
  void call(const std::vector<uint8_t>& request, std::vector<uint8_t>& response);
  bool alive() const { return alive_; }
  pid_t pid() const { return pid_; }
  const std::string& kind() const { return kind_; }

 private:
  WorkerProcess(std::string kind, pid_t pid, int fd) : kind_(std::move(kind)), pid_(pid), fd_(fd) {}
  [[noreturn]] void fail_dead(const std::string& what);

  std::string kind_;
  pid_t pid_;
  int fd_;
  bool alive_ = true;
  std::mutex mutex_;
};

// One live worker per (kind, configuration) in this process, reused by every executable compiled
// for that device; a dead worker is replaced.
std::shared_ptr<WorkerProcess> shared_worker(const std::string& kind,
                                             const std::vector<uint8_t>& config);

// Path of the `mimic-device` executable: $MIMIC_DEVICE_WORKER, else next to the running executable,
// else the build directory's.
std::string worker_executable();

// Framing, shared with the worker's main loop.
namespace frame {
enum Status : uint8_t { ok = 0, error = 1 };
// Returns false on a clean end of stream before the header; throws on a partial frame.
bool read(int fd, uint8_t& status, std::vector<uint8_t>& payload);
// Returns false when the peer has gone away.
bool write(int fd, uint8_t status, const std::vector<uint8_t>& payload);
}  // namespace frame

}  // namespace mimic::backends
