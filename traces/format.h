// Human-readable figures for trace summaries and reports: "1.23 ms", "4.10 GFLOP", "12.0 MiB".
#pragma once

#include <string>

namespace mimic::traces {

std::string format_ns(double ns);                              // "812 ns", "3.40 us", "1.20 s"
std::string format_si(double value, const std::string& unit);  // "4.10 G" + unit
std::string format_bytes(double bytes);                        // "12.00 MiB"
std::string format_percent(double fraction);                   // 0.123 -> "12.3%"
// "2024-05-01 12:00:03 UTC" from Unix ns.
std::string format_utc(long long unix_ns);

}  // namespace mimic::traces
