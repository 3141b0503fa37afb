// Node attributes, named and typed after ONNX's (so importing a model is a near pass-through).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "frontend/ir/host_tensor.h"

namespace mimic::ir {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, HostTensor>;

class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  bool has(const std::string& name) const { return map_.count(name) != 0; }
  void set(const std::string& name, AttrValue v) { map_[name] = std::move(v); }
  void erase(const std::string& name) { map_.erase(name); }

  // Getters throw ShapeError (naming the attribute) on a type mismatch; `fallback` when absent.
  int64_t get_int(const std::string& name, int64_t fallback) const;
  int64_t require_int(const std::string& name) const;
  double get_float(const std::string& name, double fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name,
                                const std::vector<int64_t>& fallback = {}) const;
  std::vector<double> get_floats(const std::string& name,
                                 const std::vector<double>& fallback = {}) const;
  const HostTensor* get_tensor(const std::string& name) const;

  const std::map<std::string, AttrValue>& items() const { return map_; }
  // "kernel_shape=[3,3] strides=[2,2]" (tensors shown by type only).
  std::string str() const;

 private:
  std::map<std::string, AttrValue> map_;
};

}  // namespace mimic::ir
