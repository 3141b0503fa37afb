#include "frontend/cli/process_pool.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "base/error.h"

extern char** environ;

namespace mimic::cli {
namespace {

struct Child {
  size_t index;
  pid_t pid;
  int out_fd, err_fd;
  ProcessResult result;
  std::chrono::steady_clock::time_point start;
};

// The environment of children: ours, plus OMP_NUM_THREADS = cores / parallel unless already set.
std::vector<std::string> child_environment(int parallel) {
  std::vector<std::string> env;
  bool has_threads = false;
  for (char** e = environ; *e; ++e) {
    env.emplace_back(*e);
    has_threads = has_threads || env.back().rfind("OMP_NUM_THREADS=", 0) == 0;
  }
  env.push_back(fmt::format("MIMIC_EXIT_WITH_PARENT={}", getpid()));
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (!has_threads)
    env.push_back(
        fmt::format("OMP_NUM_THREADS={}", std::max<long>(1, cores / std::max(1, parallel))));
  return env;
}

Child spawn(const std::string& exe, const std::vector<std::string>& args, size_t index,
            std::vector<std::string>& env) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    throw RuntimeError(fmt::format("cannot create pipes: {}", strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<char*> argv{const_cast<char*>(exe.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    throw RuntimeError(fmt::format("cannot start '{}': {}", exe, strerror(rc)));
  }
  return Child{index, pid, out[0], err[0], {}, std::chrono::steady_clock::now()};
}

// Reads what is available; returns false at end of stream.
bool drain(int fd, std::string& into) {
  char buf[65536];
  ssize_t n = read(fd, buf, sizeof(buf));
  if (n > 0) {
    into.append(buf, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && (errno == EINTR || errno == EAGAIN);
}

void finish(Child& c) {
  int status = 0;
  waitpid(c.pid, &status, 0);
  if (WIFEXITED(status)) c.result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) c.result.signal = WTERMSIG(status);
  c.result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
}

// Reads both pipes of a child until they close.
void read_to_end(Child& c) {
  while (c.out_fd >= 0 || c.err_fd >= 0) {
    pollfd fds[2] = {{c.out_fd, POLLIN, 0}, {c.err_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR)
      throw RuntimeError(fmt::format("poll failed: {}", strerror(errno)));
    int* fd[2] = {&c.out_fd, &c.err_fd};
    std::string* into[2] = {&c.result.out, &c.result.err};
    for (int k = 0; k < 2; ++k)
      if (*fd[k] >= 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) &&
          !drain(*fd[k], *into[k])) {
        close(*fd[k]);
        *fd[k] = -1;
      }
  }
}

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = (end > start ? dirs.substr(start, end - start) : ".") + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  throw RuntimeError(fmt::format("'{}' not found on PATH ({})", name, dirs));
}

}  // namespace

ProcessResult run_command(const std::vector<std::string>& argv) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("MIMIC_EXIT_WITH_PARENT=", 0) != 0) env.emplace_back(*e);
  Child c = spawn(find_in_path(argv.at(0)), {argv.begin() + 1, argv.end()}, 0, env);
  read_to_end(c);
  finish(c);
  return c.result;
}

void exit_with_parent_if_asked() {
  const char* parent = std::getenv("MIMIC_EXIT_WITH_PARENT");
  if (!parent || !*parent) return;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died before prctl took effect.
  if (std::to_string(getppid()) != parent) std::_Exit(1);
}

std::string self_executable() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw RuntimeError("cannot find the running executable (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

void run_processes(const std::string& exe, const std::vector<std::vector<std::string>>& lists,
                   int parallel, const std::function<void(size_t, const ProcessResult&)>& on_done) {
  std::vector<Child> running;
  size_t next = 0;
  parallel = std::max(1, parallel);
  std::vector<std::string> env = child_environment(parallel);
  while (next < lists.size() || !running.empty()) {
    while (next < lists.size() && static_cast<int>(running.size()) < parallel) {
      running.push_back(spawn(exe, lists[next], next, env));
      ++next;
    }
    std::vector<pollfd> fds;
    for (const Child& c : running) {
      fds.push_back({c.out_fd, POLLIN, 0});
      fds.push_back({c.err_fd, POLLIN, 0});
    }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      throw RuntimeError(fmt::format("poll failed: {}", strerror(errno)));
    for (size_t i = 0; i < running.size(); ++i) {
      Child& c = running[i];
      if (c.out_fd >= 0 && (fds[2 * i].revents & (POLLIN | POLLHUP)) &&
          !drain(c.out_fd, c.result.out)) {
        close(c.out_fd);
        c.out_fd = -1;
      }
      if (c.err_fd >= 0 && (fds[2 * i + 1].revents & (POLLIN | POLLHUP)) &&
          !drain(c.err_fd, c.result.err)) {
        close(c.err_fd);
        c.err_fd = -1;
      }
    }
    for (auto it = running.begin(); it != running.end();) {
      if (it->out_fd < 0 && it->err_fd < 0) {
        finish(*it);
        on_done(it->index, it->result);
        it = running.erase(it);
      } else {
        // Keep polling a closed pipe harmlessly: poll ignores negative fds.
        ++it;
      }
    }
  }
}

void Progress::update(size_t done, const std::string& last_line, double elapsed) {
  double eta = done ? elapsed / static_cast<double>(done) * static_cast<double>(total_ - done) : 0;
  if (!terminal_) {
    std::cerr << fmt::format("[{}/{}] {}\n", done, total_, last_line);
    return;
  }
  const int width = 30;
  int filled = total_ ? static_cast<int>(width * done / total_) : width;
  std::cerr << fmt::format("\r[{}{}] {}/{} points  ETA {:.0f}s   ", std::string(filled, '#'),
                           std::string(width - filled, '.'), done, total_, eta)
            << std::flush;
}

void Progress::finish() {
  if (terminal_) std::cerr << "\n";
}

}  // namespace mimic::cli
