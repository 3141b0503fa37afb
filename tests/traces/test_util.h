// Helpers shared by the trace tests: a temporary directory, file contents, running a command.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "traces/trace_writer.h"

namespace mimic::traces::test {

inline RunMeta meta(const std::string& model, int64_t batch = 0, const std::string& tag = "") {
  RunMeta m;
  m.model = model;
  m.batch = batch;
  m.tag = tag;
  return m;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mimic-traces-XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline bool exists(const std::string& path) {
  return std::filesystem::exists(path);
}

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs a shell command line, capturing stdout and stderr through files in `dir`.
inline CommandResult run_command(const std::string& command, const TempDir& dir) {
  std::string out = dir.file("cmd.out"), err = dir.file("cmd.err");
  int status = std::system((command + " >" + out + " 2>" + err).c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// A location where no file can be created, even by root.
inline std::string unwritable_dir(const TempDir& tmp) {
  if (geteuid() == 0) return "/proc";
  std::string d = tmp.file("readonly");
  mkdir(d.c_str(), 0555);
  return d;
}

}  // namespace mimic::traces::test
