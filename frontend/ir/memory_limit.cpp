#include "frontend/ir/memory_limit.h"

#include <unistd.h>

#include <fmt/format.h>
#include <atomic>
#include <cmath>

#include "base/error.h"

namespace mimic::ir {
namespace {

std::atomic<int64_t> g_limit{0};

}  // namespace

int64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<int64_t>(pages) * page;
}

int64_t default_max_tensor_bytes() {
  int64_t physical = physical_memory_bytes();
  return physical > 0 ? physical / 2 : int64_t{8} << 30;
}

int64_t max_tensor_bytes() {
  int64_t v = g_limit.load();
  return v > 0 ? v : default_max_tensor_bytes();
}

void set_max_tensor_bytes(int64_t bytes) {
  if (bytes < 0)
    throw InvalidArgument(fmt::format("tensor memory limit must be >= 0 bytes, got {}", bytes));
  g_limit.store(bytes);
}

int64_t parse_byte_size(const std::string& text, const std::string& what) {
  static const struct {
    const char* suffix;
    double scale;
  } units[] = {{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
               {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
               {"B", 1.0}};
  std::string number = text;
  double scale = 1.0;
  for (const auto& u : units) {
    std::string s = u.suffix;
    if (number.size() > s.size() && number.compare(number.size() - s.size(), s.size(), s) == 0) {
      number.resize(number.size() - s.size());
      scale = u.scale;
      break;
    }
  }
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  double bytes = value * scale;
  if (used == 0 || used != number.size() || !std::isfinite(bytes) || bytes < 0 || bytes > 9.2e18)
    throw InvalidArgument(
        fmt::format("{}: '{}' is not a byte size (e.g. 512MiB, 4GB, 1000000)", what, text));
  return static_cast<int64_t>(bytes);
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 1000) return fmt::format("{} bytes", bytes);
  static const char* names[] = {"kB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes);
  int i = -1;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.1f} {} ({} bytes)", v, names[i], bytes);
}

}  // namespace mimic::ir
