// NumPy .npy files (format versions 1.0 to 3.0, C order, little-endian) <-> HostTensors, for
// `mimic run --input name=x.npy --output-dir D`, `mimic train --data` and the entries of .npz
// checkpoints.
// dtypes: <f2 f16, <f4 f32, <f8 f64, |i1 i8, <i4 i32, <i8 i64, |b1 bool. numpy has no bfloat16:
// bf16 tensors are written as <f4 (exact, bf16 values are a subset of f32).
// Every malformed or unsupported file is an IoError naming the file.
#pragma once

#include <string>

#include "frontend/ir/host_tensor.h"

namespace mimic {

ir::HostTensor read_npy(const std::string& path);
void write_npy(const std::string& path, const ir::HostTensor& t);
// The same on bytes; `what` names them in errors ("'ckpt.npz' entry 'fc.weight'").
ir::HostTensor parse_npy(const std::string& bytes, const std::string& what);
std::string npy_bytes(const ir::HostTensor& t);

}  // namespace mimic
