// Element types of mimic tensors. f16 and bf16 are stored as raw 16-bit patterns; conversions
// live in base/numeric_formats.h. f64 exists for imported models (ONNX double): the cpu
// backend runs it for elementwise, reduction, cumulative and data-movement ops only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mimic::ir {

enum class DType : uint8_t { f32, f16, bf16, i8, i32, i64, boolean, f64 };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16,    DType::i8,
                                       DType::i32, DType::i64, DType::boolean, DType::f64};

size_t dtype_size(DType t);
const char* dtype_name(DType t);
// Accepts mimic names (f32, bf16, bool, ...) and common aliases (float32, float16, int64, ...).
std::optional<DType> parse_dtype(std::string_view name);
bool is_floating(DType t);
bool is_integer(DType t);

// 16-bit float storage types: plain bit patterns, so that typed access stays honest.
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// Maps a C++ storage type to its DType (for HostTensor's typed accessors).
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<Float16> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<BFloat16> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::i8;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::boolean;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::f64;
};

}  // namespace mimic::ir
