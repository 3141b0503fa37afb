#include "frontend/onnx/onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <fmt/format.h>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "frontend/ir/memory_limit.h"

namespace mimic::onnx_import {
namespace {

namespace fs = std::filesystem;
using ir::DType;

// Copies `count` values of a repeated proto field into the tensor, converting each with `convert`.
template <typename Dst, typename Field, typename Convert>
void copy_field(ir::HostTensor& out, const Field& field, Convert convert) {
  Dst* dst = static_cast<Dst*>(out.raw());
  for (int64_t i = 0; i < out.numel(); ++i) dst[i] = convert(field.Get(static_cast<int>(i)));
}

int typed_field_size(const onnx::TensorProto& t, DType dtype) {
  switch (dtype) {
    case DType::f32:
      return t.float_data_size();
    case DType::f64:
      return t.double_data_size();
    case DType::i64:
      return t.int64_data_size();
    default:
      return t.int32_data_size();
  }
}

void fill_from_typed_field(const onnx::TensorProto& t, ir::HostTensor& out) {
  switch (out.dtype()) {
    case DType::f32:
      copy_field<float>(out, t.float_data(), [](float v) { return v; });
      break;
    case DType::f64:
      copy_field<double>(out, t.double_data(), [](double v) { return v; });
      break;
    case DType::i64:
      copy_field<int64_t>(out, t.int64_data(), [](int64_t v) { return v; });
      break;
    case DType::i32:
      copy_field<int32_t>(out, t.int32_data(), [](int32_t v) { return v; });
      break;
    case DType::i8:
      copy_field<int8_t>(out, t.int32_data(), [](int32_t v) { return static_cast<int8_t>(v); });
      break;
    case DType::boolean:
      copy_field<bool>(out, t.int32_data(), [](int32_t v) { return v != 0; });
      break;
    case DType::f16:
    case DType::bf16:
      // 16-bit floats are stored as their bit patterns in int32_data.
      copy_field<uint16_t>(out, t.int32_data(), [](int32_t v) { return static_cast<uint16_t>(v); });
      break;
  }
}

// Raw little-endian bytes (the host is little-endian); bools are normalized to 0/1.
void fill_from_bytes(const char* bytes, ir::HostTensor& out) {
  if (out.dtype() == DType::boolean) {
    bool* dst = out.data<bool>();
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = bytes[i] != 0;
    return;
  }
  if (out.nbytes()) std::memcpy(out.raw(), bytes, out.nbytes());
}

int64_t parse_size(const std::string& text, const std::string& key, const std::string& what) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    throw IoError(
        fmt::format("{}: external data {} '{}' is not a non-negative integer", what, key, text));
  return std::stoll(text);
}

// Resolves an external data location under `base_dir`, refusing paths that leave it.
fs::path external_path(const std::string& location, const std::string& base_dir,
                       const std::string& what) {
  fs::path rel(location);
  if (location.empty() || rel.is_absolute())
    throw IoError(fmt::format(
        "{}: external data location '{}' must be a path relative to the model", what, location));
  for (const auto& part : rel)
    if (part == "..")
      throw IoError(
          fmt::format("{}: external data location '{}' leaves the model's folder", what, location));
  return fs::path(base_dir.empty() ? "." : base_dir) / rel;
}

ir::HostTensor read_external(const onnx::TensorProto& t, const ir::TensorType& type, int64_t want,
                             const std::string& what, const std::string& base_dir) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : t.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset")
      offset = parse_size(entry.value(), "offset", what);
    else if (entry.key() == "length")
      length = parse_size(entry.value(), "length", what);
  }
  if (length >= 0 && length != want)
    throw IoError(fmt::format("{}: external data length {} does not match {} ({} bytes)", what,
                              length, type.str(), want));
  fs::path path = external_path(location, base_dir, what);
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec)
    throw IoError(fmt::format("{}: cannot read external data file '{}': {}", what, path.string(),
                              ec.message()));
  if (static_cast<uint64_t>(offset) > size || size - offset < static_cast<uint64_t>(want))
    throw IoError(fmt::format("{}: external data file '{}' has {} bytes, needs {} at offset {}",
                              what, path.string(), size, want, offset));
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<size_t>(want), '\0');
  in.seekg(offset);
  if (!in.read(bytes.data(), want))
    throw IoError(fmt::format("{}: reading {} bytes of '{}' failed", what, want, path.string()));
  ir::HostTensor out(type.dtype, type.shape);
  fill_from_bytes(bytes.data(), out);
  return out;
}

}  // namespace

std::optional<DType> dtype_from_onnx(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return DType::f32;
    case onnx::TensorProto::DOUBLE:
      return DType::f64;
    case onnx::TensorProto::FLOAT16:
      return DType::f16;
    case onnx::TensorProto::BFLOAT16:
      return DType::bf16;
    case onnx::TensorProto::INT8:
      return DType::i8;
    case onnx::TensorProto::INT32:
      return DType::i32;
    case onnx::TensorProto::INT64:
      return DType::i64;
    case onnx::TensorProto::BOOL:
      return DType::boolean;
    default:
      return std::nullopt;
  }
}

std::string onnx_dtype_name(int32_t elem_type) {
  if (onnx::TensorProto::DataType_IsValid(elem_type))
    return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(elem_type));
  return fmt::format("type {}", elem_type);
}

int32_t onnx_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return onnx::TensorProto::FLOAT;
    case DType::f64:
      return onnx::TensorProto::DOUBLE;
    case DType::f16:
      return onnx::TensorProto::FLOAT16;
    case DType::bf16:
      return onnx::TensorProto::BFLOAT16;
    case DType::i8:
      return onnx::TensorProto::INT8;
    case DType::i32:
      return onnx::TensorProto::INT32;
    case DType::i64:
      return onnx::TensorProto::INT64;
    case DType::boolean:
      return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

// The product of the nonzero dims is bounded too, so strides of empty tensors cannot overflow.
int64_t checked_numel(const int64_t* dims, int rank, const std::string& what) {
  int64_t n = 1, nonzero = 1;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] < 0 || dims[i] > kMaxTensorElements)
      throw IoError(fmt::format("{}: dimension {} is {}", what, i, dims[i]));
    n *= dims[i];
    if (dims[i] > 0) nonzero *= dims[i];
    if (nonzero > kMaxTensorElements)
      throw IoError(fmt::format("{}: more than {} elements", what, kMaxTensorElements));
  }
  return n;
}

ir::HostTensor tensor_from_proto(const onnx::TensorProto& t, const std::string& what,
                                 const std::string& base_dir, int64_t max_bytes) {
  auto dtype = dtype_from_onnx(t.data_type());
  if (!dtype)
    throw UnsupportedOpError(
        fmt::format("{}: element type {} is not supported (mimic has f32, f64, f16, "
                    "bf16, i8, i32, i64 and bool)",
                    what, onnx_dtype_name(t.data_type())),
        {"dtype " + onnx_dtype_name(t.data_type())});
  if (t.has_segment())
    throw UnsupportedOpError(fmt::format("{}: segmented tensors are not supported", what));
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  int64_t numel = checked_numel(dims.data(), static_cast<int>(dims.size()), what);
  // Everything is checked before the tensor is allocated: a few bytes of file may declare GBs.
  ir::TensorType type{*dtype, ir::Shape(dims)};
  int64_t nbytes = numel * static_cast<int64_t>(ir::dtype_size(*dtype));
  int64_t limit = max_bytes > 0 ? max_bytes : ir::max_tensor_bytes();
  if (nbytes > limit)
    throw IoError(
        fmt::format("{}: {} needs {}, over the tensor memory limit of {} (--max-tensor-bytes)",
                    what, type.str(), ir::format_bytes(nbytes), ir::format_bytes(limit)));
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return read_external(t, type, nbytes, what, base_dir);
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != nbytes)
      throw IoError(fmt::format("{}: raw data has {} bytes, {} needs {}", what, t.raw_data().size(),
                                type.str(), nbytes));
    ir::HostTensor out(type.dtype, type.shape);
    fill_from_bytes(t.raw_data().data(), out);
    return out;
  }
  int have = typed_field_size(t, *dtype);
  if (have != numel)
    throw IoError(fmt::format("{}: holds {} values, {} needs {}", what, have, type.str(), numel));
  ir::HostTensor out(type.dtype, type.shape);
  fill_from_typed_field(t, out);
  return out;
}

std::string read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw IoError(fmt::format("'{}' is a directory, not a file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw IoError(fmt::format("reading '{}' failed", path));
  return bytes;
}

ir::HostTensor read_tensor_file(const std::string& path, std::string* name, bool uint16_is_bf16) {
  std::string bytes = read_file_bytes(path);
  onnx::TensorProto t;
  if (bytes.size() > INT_MAX || !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw IoError(
        fmt::format("'{}' is not a serialized ONNX TensorProto ({} bytes)", path, bytes.size()));
  if (name) *name = t.name();
  if (uint16_is_bf16 && t.data_type() == onnx::TensorProto::UINT16)
    t.set_data_type(onnx::TensorProto::BFLOAT16);
  std::string base = fs::path(path).parent_path().string();
  return tensor_from_proto(t, fmt::format("tensor file '{}'", path), base);
}

}  // namespace mimic::onnx_import
