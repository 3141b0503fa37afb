// For fuzz targets whose API reads a path (.npy inputs, trace databases): each input is written to
// one scratch file per process, in $TMPDIR (default /tmp), removed at exit.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mimic::fuzz {

class ScratchFile {
 public:
  explicit ScratchFile(const char* suffix) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/mimic_fuzz_" + std::to_string(getpid()) +
            suffix;
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  // Replaces the file's contents with `data`; returns its path.
  const std::string& write(const uint8_t* data, size_t size) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) std::abort();
    if (size && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace mimic::fuzz
