// Instruction emission for the TPU compiler: dependencies from buffer hazards, per-kernel on-chip
// working areas, and kernel boundaries.
//
// Hazards are tracked on resources: tensors (written once per kernel by many instructions, so a
// kernel ends with a per-core sync that stands for "this kernel's output is complete") and
// on-chip slots (tile buffers, each written by one instruction per use). An instruction depends
// on the writers of what it reads (RAW) and on the readers and writer of what it overwrites
// (WAR, WAW), so double-buffered slots let DMA of tile t+1 overlap compute of tile t exactly as
// far as the two buffers allow.
//
// On-chip memory of each core: [0, resident) holds tensors homed on chip (v1/edge activations,
// cached parameters); the rest is split in two halves used by consecutive kernels in turn, so a
// kernel can start loading while the previous one drains. A kernel's working set must fit in
// one half.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/tpu/program.h"
#include "models/tpu/tpu_spec.h"

namespace mimic::backends::tpu_emu {

namespace tpu = models::tpu;

class Emitter {
 public:
  Emitter(tpu::Program& program, const tpu::TpuSpec& spec, uint64_t resident_bytes);

  // Starts a kernel: instructions emitted until end_kernel() belong to it and use on-chip half
  // (kernel count % 2). Its slots must fit that half (the lowering checks before reserving).
  void begin_kernel(int32_t kernel);
  // Ends the kernel: one sync per core that ran something (carrying the release of the working
  // set); `outputs` become readable by later kernels once those syncs complete, and `inputs`
  // record these syncs as their readers (for storage reused by later tensors).
  void end_kernel(const std::vector<int32_t>& inputs, const std::vector<int32_t>& outputs);
  // Tensor `fresh` reuses the storage of dead tensor `dead`: writes to `fresh` wait for `dead`'s
  // readers.
  void reuse_storage(int32_t fresh, int32_t dead);

  // Slot `id` of the current kernel's half on `core` and its address (for TLM transactions). The
  // first call for an id reserves `bytes` (0 for buffers outside on-chip memory, such as the
  // matrix units' accumulators); the sum of a core's slots is the kernel's working set there.
  struct Slot {
    int64_t resource;
    uint64_t address;
  };
  Slot slot(int core, int id, uint64_t bytes = 0);
  int64_t tensor_resource(int32_t tensor) const { return tensor; }

  // Emits `in` (core, unit, fields set by the caller) with dependencies from `reads`/`writes`.
  uint32_t emit(tpu::Instruction in, const std::vector<int64_t>& reads,
                const std::vector<int64_t>& writes);

  uint64_t half_bytes() const { return half_bytes_; }
  uint64_t resident_bytes() const { return resident_; }
  int64_t kernel_count() const { return kernels_started_; }

 private:
  struct Hazard {
    std::vector<uint32_t> writers, readers;
  };
  void add_dep(std::vector<uint32_t>& deps, uint32_t d);

  tpu::Program& program_;
  const tpu::TpuSpec& spec_;
  uint64_t resident_, half_bytes_;
  std::unordered_map<int64_t, Hazard> hazards_;
  int32_t kernel_ = -1;
  int64_t kernels_started_ = 0;
  std::vector<int64_t> first_instruction_;  // per core, in the current kernel (-1: none)
  std::vector<std::vector<uint32_t>> kernel_instructions_;  // per core
  std::vector<uint64_t> slot_cursor_;                       // per core: bytes of slots reserved
  std::unordered_map<int64_t, uint64_t> slot_address_;      // current kernel's slots
  std::vector<std::vector<int64_t>> half_release_;  // per core, per half: sync of its last user
};

}  // namespace mimic::backends::tpu_emu
