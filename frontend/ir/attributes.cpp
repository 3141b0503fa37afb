#include "frontend/ir/attributes.h"

#include <fmt/format.h>
#include <cmath>

#include "base/error.h"

namespace mimic::ir {
namespace {

[[noreturn]] void wrong_type(const std::string& name, const char* want) {
  throw ShapeError(fmt::format("attribute '{}' is not {}", name, want));
}

template <typename T>
std::string join(const std::vector<T>& v) {
  return fmt::format("[{}]", fmt::join(v, ","));
}

}  // namespace

int64_t Attributes::get_int(const std::string& name, int64_t fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* p = std::get_if<int64_t>(&it->second)) return *p;
  // A float attribute holding a whole number in range reads as that integer.
  if (auto* p = std::get_if<double>(&it->second))
    if (std::trunc(*p) == *p && std::fabs(*p) < 9.2e18) return static_cast<int64_t>(*p);
  wrong_type(name, "an integer");
}

int64_t Attributes::require_int(const std::string& name) const {
  if (!has(name)) throw ShapeError(fmt::format("attribute '{}' is required", name));
  return get_int(name, 0);
}

double Attributes::get_float(const std::string& name, double fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* p = std::get_if<double>(&it->second)) return *p;
  if (auto* p = std::get_if<int64_t>(&it->second)) return static_cast<double>(*p);
  wrong_type(name, "a number");
}

std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* p = std::get_if<std::string>(&it->second)) return *p;
  wrong_type(name, "a string");
}

std::vector<int64_t> Attributes::get_ints(const std::string& name,
                                          const std::vector<int64_t>& fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* p = std::get_if<std::vector<int64_t>>(&it->second)) return *p;
  if (auto* p = std::get_if<int64_t>(&it->second)) return {*p};
  wrong_type(name, "a list of integers");
}

std::vector<double> Attributes::get_floats(const std::string& name,
                                           const std::vector<double>& fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* p = std::get_if<std::vector<double>>(&it->second)) return *p;
  if (auto* p = std::get_if<double>(&it->second)) return {*p};
  wrong_type(name, "a list of numbers");
}

const HostTensor* Attributes::get_tensor(const std::string& name) const {
  auto it = map_.find(name);
  if (it == map_.end()) return nullptr;
  if (auto* p = std::get_if<HostTensor>(&it->second)) return p;
  wrong_type(name, "a tensor");
}

std::string Attributes::str() const {
  std::string out;
  for (const auto& [name, value] : map_) {
    if (!out.empty()) out += " ";
    out += name + "=";
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, HostTensor>) {
            out += v.type().str();
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                               std::is_same_v<T, std::vector<double>> ||
                               std::is_same_v<T, std::vector<std::string>>) {
            out += join(v);
          } else {
            out += fmt::format("{}", v);
          }
        },
        value);
  }
  return out;
}

}  // namespace mimic::ir
