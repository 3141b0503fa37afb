#include "frontend/cli/cli_common.h"

#include <fmt/format.h>
#include <cmath>

#include "base/error.h"
#include "frontend/ir/memory_limit.h"

namespace mimic::cli {

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument:
    case ErrorKind::shape:
      return 2;
    case ErrorKind::unsupported_op:
      return 3;
    case ErrorKind::compile:
    case ErrorKind::out_of_memory:
      return 4;
    case ErrorKind::device_unavailable:
      return 5;
    case ErrorKind::io:
      return 6;
    case ErrorKind::runtime:
      return 7;
  }
  return 1;
}

void add_memory_limit_option(CLI::App* cmd) {
  cmd->add_option_function<std::string>(
      "--max-tensor-bytes",
      [](const std::string& text) {
        try {
          ir::set_max_tensor_bytes(ir::parse_byte_size(text, "--max-tensor-bytes"));
        } catch (const Error& e) {
          throw CLI::ValidationError(e.what());
        }
      },
      fmt::format(
          "Largest tensor a model may need, e.g. 2GiB (default: half the physical memory, {})",
          ir::format_bytes(ir::default_max_tensor_bytes())));
}

std::map<std::string, std::string> parse_key_values(const std::vector<std::string>& items,
                                                    const std::string& what) {
  std::map<std::string, std::string> out;
  for (const std::string& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InvalidArgument(fmt::format("{} '{}' must look like key=value", what, item));
    if (!out.emplace(item.substr(0, eq), item.substr(eq + 1)).second)
      throw InvalidArgument(fmt::format("{} '{}' is given twice (the last would silently win)",
                                        what, item.substr(0, eq)));
  }
  return out;
}

std::map<std::string, int64_t> parse_int_values(const std::vector<std::string>& items,
                                                const std::string& what) {
  std::map<std::string, int64_t> out;
  for (const auto& [k, v] : parse_key_values(items, what)) {
    try {
      size_t used = 0;
      out[k] = std::stoll(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
    } catch (const std::exception&) {
      throw InvalidArgument(fmt::format("{} '{}={}' needs an integer value", what, k, v));
    }
  }
  return out;
}

std::string format_seconds(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.2f} us", s * 1e6);
  return fmt::format("{:.0f} ns", s * 1e9);
}

void check_onnx_layout(const std::string& onnx, const std::vector<std::string>& layouts) {
  if (onnx.empty()) return;
  for (const std::string& layout : layouts)
    if (layout != "nchw")
      throw InvalidArgument(fmt::format(
          "--layout {} applies to zoo models: {} keeps the layout it was written in (the compiler "
          "picks the physical one, e.g. tpu-emu's --option layout=auto)",
          layout, onnx));
}

std::string format_count(double n, const std::string& unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (std::fabs(n) >= 1000 && i < 5) {
    n /= 1000;
    ++i;
  }
  std::string suffix = std::string(prefixes[i]) + unit;
  // Whole numbers below a thousand (4 parameters, 8 tiles) without decimals.
  std::string number =
      i == 0 && n == std::floor(n) ? fmt::format("{:.0f}", n) : fmt::format("{:.2f}", n);
  return suffix.empty() ? number : number + " " + suffix;
}

}  // namespace mimic::cli
