// The off-chip (HBM) memory plan of a compiled program, as XLA's buffer assignment reports it:
// every tensor homed in off-chip memory is live from the kernel that allocates it to the last
// kernel that reads it, in the order the compiled program executes (graph inputs from the start,
// graph outputs to the end). Each tensor counts under a category (ir::role_name(): weights,
// gradients, optimizer_state, buffers, inputs, activations; saved_activations for forward values a
// backward node reads; workspace for the compiler's own scratch). The plan keeps the peak of the
// live bytes, what was live there and under which op, so a program that does not fit fails with
// XLA's "Ran out of memory in memory space hbm" and the breakdown.
// Sizes are those allocated: (8, 128)-tiled and rounded up to the allocator's 512-byte granule.
// Fragmentation is not counted (XLA's heap simulator packs the buffers; the peak is a lower bound).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mimic::backends::tpu_emu {

class HbmPlan {
 public:
  struct Tensor {
    std::string name, category, shape;  // shape: "f32[64,1024]"
    std::string producer;               // "Conv 'conv1'", "graph input", "workspace of ..."
    uint64_t bytes = 0;
  };

  // `tensor` is the program's tensor id; `op` the op being compiled when it is allocated.
  void allocate(int32_t tensor, Tensor info, const std::string& op);
  void release(int32_t tensor);

  uint64_t peak_bytes() const { return peak_; }
  const std::string& peak_op() const { return peak_op_; }
  // Bytes per category at the peak (every category present in the program, zeros included).
  std::map<std::string, uint64_t> breakdown() const;
  // The largest tensors live at the peak, largest first.
  std::vector<Tensor> largest(size_t n) const;

 private:
  std::vector<int32_t> live_at_peak() const;

  std::map<int32_t, Tensor> tensors_;
  std::vector<std::pair<int32_t, bool>> events_;  // (tensor, allocated) in program order
  std::map<int32_t, bool> live_;
  uint64_t live_bytes_ = 0, peak_ = 0;
  size_t peak_events_ = 0;  // events_[0, peak_events_) are applied at the peak
  std::string peak_op_;
};

// "1.50G", "12.0M", "512B" (binary units, as XLA's messages).
std::string human_bytes(uint64_t bytes);

// XLA's one-line out-of-memory message for a plan over `capacity` bytes of `space` ("hbm").
// The liveness plan fits but the compiler's buffers do not: the allocator held `allocated` bytes
// at once and its addresses reach `span` (padding the plan does not see, and fragmentation).
std::string address_space_message(const HbmPlan& plan, uint64_t allocated, uint64_t span,
                                  uint64_t capacity, const std::string& space,
                                  const std::string& device);
std::string out_of_memory_message(const HbmPlan& plan, uint64_t capacity, const std::string& space,
                                  const std::string& device);

}  // namespace mimic::backends::tpu_emu
