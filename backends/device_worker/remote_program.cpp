#include "backends/device_worker/remote_program.h"

#include <chrono>

#include "backends/device_worker/program_host.h"
#include "base/error.h"

namespace mimic::backends {

RemoteProgram::RemoteProgram(std::string kind, std::vector<uint8_t> config,
                             std::function<void(wire::Writer&)> write_program)
    : kind_(std::move(kind)),
      config_(std::move(config)),
      write_program_(std::move(write_program)) {}

RemoteProgram::~RemoteProgram() {
  auto worker = worker_.lock();
  if (!worker || !worker->alive()) return;
  try {
    wire::Writer w;
    w.u8(kUnloadProgram);
    w.u64(id_);
    worker->call(w.data());
  } catch (const std::exception&) {
    // The worker is gone or failing: nothing left to free.
  }
}

std::shared_ptr<WorkerProcess> RemoteProgram::loaded_worker() {
  std::shared_ptr<WorkerProcess> worker = shared_worker(kind_, config_);
  if (worker == worker_.lock()) return worker;
  auto start = std::chrono::steady_clock::now();
  wire::Writer request;
  request.u8(kLoadProgram);
  write_program_(request);
  std::vector<uint8_t> answer = worker->call(request.data());
  wire::Reader r(answer);
  id_ = r.u64();
  ++loads_;
  worker_ = worker;
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return worker;
}

void RemoteProgram::run(const std::function<void(wire::Writer&)>& write_run,
                        const std::function<void(wire::Reader&)>& read_reply) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  std::shared_ptr<WorkerProcess> worker = loaded_worker();
  request_.clear();
  request_.u8(kRunProgram);
  request_.u64(id_);
  write_run(request_);
  worker->call(request_.data(), reply_);
  wire::Reader r(reply_);
  read_reply(r);
}

}  // namespace mimic::backends

namespace mimic::backends {

void RemoteProgram::read_kept(uint32_t input,
                              const std::function<void(wire::Reader&)>& read_reply) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  std::shared_ptr<WorkerProcess> worker = worker_.lock();
  if (!worker || !worker->alive())
    throw RuntimeError("device worker: the values kept on the device were lost with its worker");
  wire::Writer request;
  request.u8(kKeptValue);
  request.u64(id_);
  request.u32(input);
  std::vector<uint8_t> reply;
  worker->call(request.data(), reply);
  wire::Reader r(reply);
  read_reply(r);
}

}  // namespace mimic::backends
