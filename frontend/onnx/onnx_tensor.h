// ONNX tensors to mimic HostTensors: element types, the typed and raw data fields of TensorProto,
// external data files, and serialized TensorProto files (the ONNX test data's input_0.pb).
// Every size is checked against the declared dims before anything is copied, so a malformed file
// is an IoError and an element type mimic has no dtype for is an UnsupportedOpError.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "frontend/ir/host_tensor.h"

namespace onnx {
class TensorProto;
}

namespace mimic::onnx_import {

// ONNX TensorProto.DataType -> mimic dtype: FLOAT f32, DOUBLE f64, FLOAT16 f16, BFLOAT16 bf16,
// INT8 i8, INT32 i32, INT64 i64, BOOL bool. Others (UINT8, INT16, STRING, ...) have none.
std::optional<ir::DType> dtype_from_onnx(int32_t elem_type);
// "FLOAT", "UINT8", ... ("type 42" for values outside the enum).
std::string onnx_dtype_name(int32_t elem_type);
// The ONNX enum value of a mimic dtype.
int32_t onnx_dtype(ir::DType dtype);

// Largest element count accepted for one tensor (2^31): bigger dims are a malformed file.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 31;

// Checked element count of ONNX dims; throws IoError naming `what` for negative or huge dims.
int64_t checked_numel(const int64_t* dims, int rank, const std::string& what);

// Converts one TensorProto. `what` names it in errors ("initializer 'conv1.weight'");
// `base_dir` is where external data files live (the model's folder). The declared size is checked
// against the data and against `max_bytes` (0: ir::max_tensor_bytes()) before anything is
// allocated.
ir::HostTensor tensor_from_proto(const onnx::TensorProto& t, const std::string& what,
                                 const std::string& base_dir, int64_t max_bytes = 0);

// Reads a file holding one serialized TensorProto. Its name (may be empty) goes to `name`.
// `uint16_is_bf16` reads UINT16 tensors as bf16 bit patterns: the ONNX test data stores bfloat16
// tensors that way (numpy has no bfloat16).
ir::HostTensor read_tensor_file(const std::string& path, std::string* name = nullptr,
                                bool uint16_is_bf16 = false);

// Whole file contents; IoError when it cannot be read.
std::string read_file_bytes(const std::string& path);

}  // namespace mimic::onnx_import
