// The largest tensor mimic agrees to allocate for a model, checked before any allocation: the
// ONNX importer checks every initializer and shape inference every inferred value against it, so a
// model whose shapes imply terabytes is refused with the numbers instead of exhausting the host.
// The limit is per tensor and process-wide; it defaults to half the machine's physical memory.
#pragma once

#include <cstdint>
#include <string>

namespace mimic::ir {

// Physical memory of this machine in bytes (sysconf), or 0 when unknown.
int64_t physical_memory_bytes();
// Half the physical memory, or 8 GiB when it is unknown.
int64_t default_max_tensor_bytes();
// The current limit: set_max_tensor_bytes' value, else the default.
int64_t max_tensor_bytes();
// Sets the process-wide limit; 0 restores the default. Negative values throw InvalidArgument.
void set_max_tensor_bytes(int64_t bytes);
// Parses "123", "64MiB", "2GiB", "1.5GB" (KB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB of 1024).
// Throws InvalidArgument naming `what` on anything else.
int64_t parse_byte_size(const std::string& text, const std::string& what);
// "6.2 GB (6240522216 bytes)".
std::string format_bytes(int64_t bytes);

}  // namespace mimic::ir
