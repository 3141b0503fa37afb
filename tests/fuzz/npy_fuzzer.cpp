// libFuzzer target: the .npy files users give to `mimic run --input name=file.npy`. Every input
// must end in a tensor or an IoError naming the file; a tensor read must write back and read
// again to the same type and bytes (an exception or a mismatch there is a finding).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "frontend/api/npy.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static mimic::fuzz::ScratchFile in(".npy"), out("_out.npy");
  mimic::ir::HostTensor t;
  try {
    t = mimic::read_npy(in.write(data, size));
  } catch (const mimic::Error&) {
    return 0;
  }
  mimic::write_npy(out.path(), t);
  mimic::ir::HostTensor back = mimic::read_npy(out.path());
  if (back.type() != t.type() || std::memcmp(back.raw(), t.raw(), t.nbytes()) != 0) std::abort();
  return 0;
}
