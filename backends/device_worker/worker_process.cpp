#include "backends/device_worker/worker_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <map>

#include "backends/device_worker/wire.h"
#include "base/error.h"

extern char** environ;

namespace mimic::backends {
namespace frame {

static bool read_all(int fd, void* buf, size_t n, bool allow_eof_at_start) {
  auto* p = static_cast<uint8_t*>(buf);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (got == 0 && allow_eof_at_start) return false;
      throw RuntimeError(
          fmt::format("device worker connection closed after {} of {} bytes", got, n));
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

bool read(int fd, uint8_t& status, std::vector<uint8_t>& payload) {
  uint8_t header[5];
  if (!read_all(fd, header, sizeof(header), true)) return false;
  uint32_t length;
  std::memcpy(&length, header, 4);
  status = header[4];
  payload.resize(length);
  if (length) read_all(fd, payload.data(), length, false);
  return true;
}

bool write(int fd, uint8_t status, const std::vector<uint8_t>& payload) {
  if (payload.size() > UINT32_MAX) throw RuntimeError("device worker message larger than 4 GiB");
  uint8_t header[5];
  uint32_t length = static_cast<uint32_t>(payload.size());
  std::memcpy(header, &length, 4);
  header[4] = status;
  auto send_all = [fd](const void* buf, size_t n) {
    const auto* p = static_cast<const uint8_t*>(buf);
    while (n) {
      ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  };
  return send_all(header, sizeof(header)) && send_all(payload.data(), payload.size());
}

}  // namespace frame

namespace {

std::string describe_exit(pid_t pid) {
  int status = 0;
  pid_t r = waitpid(pid, &status, 0);
  if (r != pid) return "exit status unknown";
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "stopped";
}

[[noreturn]] void raise_remote(const std::vector<uint8_t>& payload) {
  wire::Reader r(payload);
  auto kind = static_cast<ErrorKind>(r.u8());
  std::string message = r.str();
  switch (kind) {
    case ErrorKind::invalid_argument:
      throw InvalidArgument(message);
    case ErrorKind::shape:
      throw ShapeError(message);
    case ErrorKind::unsupported_op:
      throw UnsupportedOpError(message);
    case ErrorKind::compile:
      throw CompileError(message);
    case ErrorKind::out_of_memory:
      throw CompileError(message, ErrorKind::out_of_memory);
    case ErrorKind::device_unavailable:
      throw DeviceUnavailableError(message);
    case ErrorKind::io:
      throw IoError(message);
    default:
      throw RuntimeError(message);
  }
}

}  // namespace

std::string worker_executable() {
  if (const char* env = std::getenv("MIMIC_DEVICE_WORKER"); env && *env) return env;
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = 0;
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    std::string candidate = dir + "/mimic-device";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return MIMIC_DEVICE_WORKER_PATH;
}

std::shared_ptr<WorkerProcess> WorkerProcess::start(const std::string& kind,
                                                    const std::vector<uint8_t>& config) {
  std::string exe = worker_executable();
  if (access(exe.c_str(), X_OK) != 0)
    throw DeviceUnavailableError(fmt::format(
        "device worker '{}' not found or not executable (set MIMIC_DEVICE_WORKER)", exe));
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw RuntimeError(
        fmt::format("cannot create a socket pair for the device worker: {}", strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 3);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  std::string fd_arg = "3";
  std::vector<char*> argv{const_cast<char*>(exe.c_str()), const_cast<char*>(kind.c_str()),
                          const_cast<char*>(fd_arg.c_str()), nullptr};
  std::vector<std::string> env_strings{"SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1"};
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw DeviceUnavailableError(
        fmt::format("cannot start device worker '{}': {}", exe, strerror(rc)));
  }
  std::shared_ptr<WorkerProcess> w(new WorkerProcess(kind, pid, fds[0]));
  w->call(config);
  return w;
}

WorkerProcess::~WorkerProcess() {
  close(fd_);  // the worker sees end of stream and exits
  if (alive_) {
    int status = 0;
    for (int i = 0; i < 200 && waitpid(pid_, &status, WNOHANG) == 0; ++i) usleep(10000);
    if (waitpid(pid_, &status, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
}

void WorkerProcess::fail_dead(const std::string& what) {
  alive_ = false;
  throw RuntimeError(
      fmt::format("device worker '{}' (pid {}) {}: {}", kind_, pid_, what, describe_exit(pid_)));
}

std::vector<uint8_t> WorkerProcess::call(const std::vector<uint8_t>& request) {
  std::vector<uint8_t> response;
  call(request, response);
  return response;
}

void WorkerProcess::call(const std::vector<uint8_t>& request, std::vector<uint8_t>& response) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!alive_)
    throw RuntimeError(
        fmt::format("device worker '{}' (pid {}) is no longer running", kind_, pid_));
  if (!frame::write(fd_, frame::ok, request)) fail_dead("stopped accepting requests");
  uint8_t status = 0;
  bool got = false;
  try {
    got = frame::read(fd_, status, response);
  } catch (const RuntimeError&) {
    got = false;
  }
  if (!got) fail_dead("died while handling a request");
  if (status == frame::error) raise_remote(response);
}

std::shared_ptr<WorkerProcess> shared_worker(const std::string& kind,
                                             const std::vector<uint8_t>& config) {
  static std::mutex pool_mutex;
  static std::map<std::pair<std::string, std::vector<uint8_t>>, std::shared_ptr<WorkerProcess>>
      pool;
  std::lock_guard<std::mutex> lock(pool_mutex);
  auto key = std::make_pair(kind, config);
  auto it = pool.find(key);
  if (it != pool.end() && it->second->alive()) return it->second;
  auto w = WorkerProcess::start(kind, config);
  pool[key] = w;
  return w;
}

}  // namespace mimic::backends
