#include "traces/format.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>

namespace mimic::traces {

std::string format_ns(double ns) {
  double a = std::fabs(ns);
  if (a >= 1e9) return fmt::format("{:.3f} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f} ms", ns / 1e6);
  if (a >= 1e3) return fmt::format("{:.2f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string format_si(double value, const std::string& unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(value) >= 1000 && i < 6) {
    value /= 1000;
    ++i;
  }
  return fmt::format("{:.2f} {}{}", value, prefixes[i], unit);
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (std::fabs(bytes) >= 1024 && i < 5) {
    bytes /= 1024;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, units[i]);
}

std::string format_percent(double fraction) {
  return fmt::format("{:.1f}%", 100.0 * fraction);
}

std::string format_utc(long long unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1000000000LL);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace mimic::traces
