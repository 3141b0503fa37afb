#include "traces/output_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/error.h"

namespace mimic::traces {
namespace {

namespace fs = std::filesystem;

// Writes to a device, FIFO or other non-regular file in place (a rename would replace the node).
void write_in_place(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  write(out);
  out.flush();
  if (!out) throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
}

// Whether `path` is an SQLite database (a trace, most likely): its first 16 bytes.
bool is_sqlite_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  return in.read(header, sizeof header) && std::memcmp(header, "SQLite format 3", 16) == 0;
}

// The file that writing `path` replaces (a symbolic link's target: the link stays), after the
// checks of check_output_path.
std::string output_target(const std::string& path) {
  if (path.empty()) throw IoError("output file name is empty");
  std::error_code ec;
  std::string target = path;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    target = fs::weakly_canonical(path, ec).string();
    if (ec) throw IoError(fmt::format("cannot write '{}': {}", path, ec.message()));
  }
  fs::path parent = fs::path(target).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw IoError(
        fmt::format("cannot write '{}': directory '{}' does not exist", path, parent.string()));
  fs::file_status status = fs::status(target, ec);
  if (fs::is_directory(status))
    throw IoError(fmt::format("cannot write '{}': it is a directory", path));
  if (fs::is_regular_file(status) && is_sqlite_file(target))
    throw IoError(fmt::format(
        "refusing to write '{}': it is an SQLite database (a trace?); choose another file", path));
  return target;
}

}  // namespace

void check_output_path(const std::string& path) {
  if (path != "-") output_target(path);
}

void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    if (!std::cout) throw IoError("could not write to standard output");
    return;
  }
  const std::string target = output_target(path);
  std::error_code ec;
  fs::file_status status = fs::status(target, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) return write_in_place(target, write);
  std::string tmp = fmt::format("{}.tmp{}", target, getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    try {
      write(out);
    } catch (...) {
      out.close();
      std::remove(tmp.c_str());
      throw;
    }
    out.flush();
    if (!out) {
      int err = errno;
      out.close();
      std::remove(tmp.c_str());
      throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
    }
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
  }
}

}  // namespace mimic::traces
