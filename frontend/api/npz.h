// NumPy .npz archives (a zip of .npy files, stored uncompressed as np.savez writes them) <->
// named HostTensors, for training checkpoints. Written here rather than through libzip: the
// format needs only stored entries and CRC-32, and numpy reads the result with np.load.
// dtypes: f32 <f4, f64 <f8, i32 <i4, i64 <i8. Entries must be stored (np.savez, not
// np.savez_compressed); every malformed or unsupported file is an IoError naming file and entry.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "frontend/ir/host_tensor.h"

namespace mimic {

void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, ir::HostTensor>>& tensors);
std::vector<std::pair<std::string, ir::HostTensor>> read_npz(const std::string& path);

}  // namespace mimic
