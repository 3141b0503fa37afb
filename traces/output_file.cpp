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

void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path.empty()) throw IoError("output file name is empty");
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    if (!std::cout) throw IoError("could not write to standard output");
    return;
  }
  namespace fs = std::filesystem;
  fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw IoError(
        fmt::format("cannot write '{}': directory '{}' does not exist", path, parent.string()));
  if (fs::is_directory(path, ec))
    throw IoError(fmt::format("cannot write '{}': it is a directory", path));
  std::string tmp = fmt::format("{}.tmp{}", path, getpid());
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
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
  }
}

}  // namespace mimic::traces
