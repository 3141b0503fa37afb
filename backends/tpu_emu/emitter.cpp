#include "backends/tpu_emu/emitter.h"

#include <fmt/format.h>
#include <algorithm>
#include <unordered_set>

#include "base/error.h"

namespace mimic::backends::tpu_emu {

using tpu::Instruction;
using tpu::Opcode;

namespace {
// Slot resources are negative so that they never collide with tensor ids.
int64_t slot_resource(int core, int half, int id) {
  return -1 - ((static_cast<int64_t>(core) * 2 + half) << 16) - id;
}
bool is_slot(int64_t r) {
  return r < 0;
}
}  // namespace

Emitter::Emitter(tpu::Program& program, const tpu::TpuSpec& spec, uint64_t resident_bytes)
    : program_(program), spec_(spec), resident_(resident_bytes) {
  uint64_t cap = spec.onchip.bytes;
  half_bytes_ = cap > resident_ ? (cap - resident_) / 2 : 0;
  first_instruction_.assign(spec.cores, -1);
  kernel_instructions_.assign(spec.cores, {});
  slot_cursor_.assign(spec.cores, 0);
  half_release_.assign(spec.cores, std::vector<int64_t>(2, -1));
}

void Emitter::begin_kernel(int32_t kernel) {
  kernel_ = kernel;
  ++kernels_started_;
  std::fill(first_instruction_.begin(), first_instruction_.end(), -1);
  for (auto& v : kernel_instructions_) v.clear();
  std::fill(slot_cursor_.begin(), slot_cursor_.end(), 0);
  slot_address_.clear();
}

Emitter::Slot Emitter::slot(int core, int id, uint64_t bytes) {
  int half = static_cast<int>(kernels_started_ % 2);
  int64_t resource = slot_resource(core, half, id);
  auto it = slot_address_.find(resource);
  if (it != slot_address_.end()) return Slot{resource, it->second};
  uint64_t address = resident_ + half * half_bytes_ + slot_cursor_[core];
  slot_cursor_[core] += (bytes + 511) / 512 * 512;
  if (slot_cursor_[core] > half_bytes_)
    throw CompileError(fmt::format(
        "tpu_emu.compile: internal: kernel {} of '{}' reserves {} bytes of on-chip slots on "
        "core {}, more than its half ({} bytes)",
        kernel_, program_.ops.at(program_.kernels.at(kernel_).op).node, slot_cursor_[core], core,
        half_bytes_));
  slot_address_[resource] = address;
  return Slot{resource, address};
}

// Deduplicated in emit() (a slot read by thousands of kernels, e.g. an unrolled recurrent
// layer's weights, gives its next writer that many dependencies: linear, not quadratic).
void Emitter::add_dep(std::vector<uint32_t>& deps, uint32_t d) {
  deps.push_back(d);
}

uint32_t Emitter::emit(Instruction in, const std::vector<int64_t>& reads,
                       const std::vector<int64_t>& writes) {
  const uint32_t index = static_cast<uint32_t>(program_.instructions.size());
  std::vector<uint32_t> deps;
  bool touches_slot = false;
  for (int64_t r : reads) {
    touches_slot |= is_slot(r);
    auto it = hazards_.find(r);
    if (it != hazards_.end())
      for (uint32_t w : it->second.writers) add_dep(deps, w);
  }
  for (int64_t w : writes) {
    touches_slot |= is_slot(w);
    auto it = hazards_.find(w);
    if (it == hazards_.end()) continue;
    for (uint32_t r : it->second.readers) add_dep(deps, r);
    if (is_slot(w))
      for (uint32_t x : it->second.writers) add_dep(deps, x);
  }
  if (kernel_ >= 0) {
    in.kernel = in.kernel >= 0 ? in.kernel : kernel_;
    int half = static_cast<int>(kernels_started_ % 2);
    int64_t release = half_release_[in.core][half];
    if (touches_slot && release >= 0) add_dep(deps, static_cast<uint32_t>(release));
    if (first_instruction_[in.core] < 0) first_instruction_[in.core] = index;
    kernel_instructions_[in.core].push_back(index);
  }
  std::unordered_set<uint32_t> seen;
  deps.erase(std::remove_if(deps.begin(), deps.end(),
                            [&seen](uint32_t d) { return !seen.insert(d).second; }),
             deps.end());
  in.dep_begin = static_cast<uint32_t>(program_.deps.size());
  in.dep_count = static_cast<uint32_t>(deps.size());
  program_.deps.insert(program_.deps.end(), deps.begin(), deps.end());
  program_.instructions.push_back(in);
  for (int64_t r : reads)
    if (is_slot(r)) hazards_[r].readers.push_back(index);
  for (int64_t w : writes) {
    if (!is_slot(w)) continue;
    Hazard& h = hazards_[w];
    h.writers.assign(1, index);
    h.readers.clear();
  }
  // Host transfers that stage graph inputs/outputs write whole tensors: they are their writers.
  if (kernel_ < 0)
    for (int64_t w : writes)
      if (!is_slot(w)) hazards_[w].writers.assign(1, index);
  return index;
}

void Emitter::end_kernel(const std::vector<int32_t>& inputs, const std::vector<int32_t>& outputs) {
  std::vector<uint32_t> syncs;
  int half = static_cast<int>(kernels_started_ % 2);
  for (int c = 0; c < spec_.cores; ++c) {
    if (kernel_instructions_[c].empty()) continue;
    Instruction s;
    s.opcode = Opcode::sync;
    s.core = static_cast<uint8_t>(c);
    s.kernel = kernel_;
    s.onchip_free = static_cast<int64_t>(slot_cursor_[c]);
    program_.instructions[first_instruction_[c]].onchip_alloc =
        static_cast<int64_t>(slot_cursor_[c]);
    s.dep_begin = static_cast<uint32_t>(program_.deps.size());
    s.dep_count = static_cast<uint32_t>(kernel_instructions_[c].size());
    program_.deps.insert(program_.deps.end(), kernel_instructions_[c].begin(),
                         kernel_instructions_[c].end());
    uint32_t index = static_cast<uint32_t>(program_.instructions.size());
    program_.instructions.push_back(s);
    syncs.push_back(index);
    half_release_[c][half] = index;
  }
  for (int32_t t : outputs) hazards_[t].writers = syncs;
  for (int32_t t : inputs) {
    auto& readers = hazards_[t].readers;
    readers.insert(readers.end(), syncs.begin(), syncs.end());
  }
  kernel_ = -1;
}

void Emitter::reuse_storage(int32_t fresh, int32_t dead) {
  auto it = hazards_.find(dead);
  if (it == hazards_.end()) return;
  auto& readers = hazards_[fresh].readers;
  readers.insert(readers.end(), it->second.readers.begin(), it->second.readers.end());
}

}  // namespace mimic::backends::tpu_emu
