// Internal state of one compilation, shared by the lowering files (tpu_compiler.cpp drives; matmul,
// vector and copy lowering emit kernels through it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backends/backend.h"
#include "backends/tpu_emu/emitter.h"
#include "backends/tpu_emu/fusion.h"
#include "backends/tpu_emu/hbm_plan.h"
#include "backends/tpu_emu/tpu_compiler.h"
#include "frontend/ir/graph.h"
#include "frontend/ir/nn_geometry.h"
#include "models/tpu/program.h"
#include "models/tpu/tpu_spec.h"

namespace mimic::backends::tpu_emu {

// First-fit allocation of one memory's address range, with reuse of freed ranges; remembers which
// dead tensors occupied a range so that writes to a new tensor can wait for their readers.
class RangeAllocator {
 public:
  explicit RangeAllocator(uint64_t capacity = 0) : capacity_(capacity) {}
  // Returns false when no free range is large enough.
  bool allocate(uint64_t bytes, uint64_t* address);
  void release(uint64_t address, uint64_t bytes, int32_t tensor);
  // Dead tensors whose ranges overlap [address, address + bytes) (forgotten once returned).
  std::vector<int32_t> previous_occupants(uint64_t address, uint64_t bytes);
  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  uint64_t peak() const { return peak_; }
  // The highest address ever allocated (its end): the memory the program's addresses need, which
  // fragmentation makes larger than peak().
  uint64_t span() const { return span_; }

 private:
  struct Range {
    uint64_t begin, end;
  };
  struct Dead {
    uint64_t begin, end;
    int32_t tensor;
  };
  uint64_t capacity_;
  std::vector<Range> free_;  // sorted, coalesced; beyond `top_` everything is free
  uint64_t top_ = 0, used_ = 0, peak_ = 0, span_ = 0;
  std::vector<Dead> dead_;
};

// Data of a constant as the chip holds it (f32); integer constants beyond kExactIntegerLimit are a
// CompileError naming the constant.
std::vector<float> constant_as_floats(const ir::HostTensor& t, const std::string& name);
// The same, for the constant value `v` of `g`.
inline std::vector<float> constant_floats(const ir::Graph& g, ir::ValueId v) {
  return constant_as_floats(*g.value(v).constant, g.value(v).name);
}
// Row-major element strides of `dims`.
inline std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}
// Product of dims[begin, end), clamped to the rank (all of them by default).
inline int64_t dims_product(const std::vector<int64_t>& dims, size_t begin = 0,
                            size_t end = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) p *= dims[i];
  return p;
}

struct Context {
  Context(const ir::Graph& graph, const models::tpu::TpuSpec& spec, const CompileOptions& options,
          models::tpu::Program& program, std::vector<std::vector<float>>& constants,
          const std::string& device);

  const ir::Graph& g;
  const models::tpu::TpuSpec& spec;
  const CompileOptions& options;
  models::tpu::Program& p;
  std::vector<std::vector<float>>& constants;
  std::string device;
  std::unique_ptr<Emitter> em;
  std::unordered_map<ir::ValueId, int32_t> tensor_of;
  // offchip takes every tensor (its capacity unbounded): `hbm` plans the off-chip bytes and the
  // driver checks its peak against offchip_capacity once the program is complete.
  RangeAllocator offchip, onchip;  // onchip: the resident region of core 0 (v1/edge)
  uint64_t offchip_capacity = 0;   // one replica's: per core on v2/v3
  HbmPlan hbm;
  uint64_t host_cursor = 0;
  uint64_t weight_bytes = 0;  // constants as stored for the matrix units
  std::vector<std::string> notes;
  int32_t current_op = -1;
  int kernel_row_splits = 0;  // GEMMs whose reduction splits a wide kernel's rows (matmul_tiler.h)
  int filters_in_place = 0;   // runtime 2-D conv filters read without a relayout (lower_matmul.cpp)
  // Per value: loop fusion keeps it on chip (loop_fusion.h); empty when loop fusion is off.
  std::vector<bool> kept_on_chip;
  // Per node: the values it reads from a sibling loop's tiles (loop_fusion.h: plan_sibling_reads);
  // empty when loop fusion is off. emit_group puts the tensors of the node being lowered in
  // `from_sibling`.
  std::vector<std::vector<ir::ValueId>> sibling_reads;
  std::unordered_set<int32_t> from_sibling;
  // Residuals that a strided ConvTranspose's phases update in place (lower_by_phases): they die
  // at that group, whose output takes their storage (deaths() keeps it alive for the output).
  std::unordered_set<ir::ValueId> residual_in_place;
  // Option activation_dtype=bf16 (bf16 chips): see stored_bf16().
  bool bf16_activations = false;
  // Rank-4 activations laid out batch-minor (layout.h: batch_minor_elements), as XLA lays them
  // out when the module's most common convolution batch is 64 or more ("Cloud TPU: Profile
  // TensorFlow workloads", tf.nn.conv_n_d: batch padded to 128 and features to 8 for forward and
  // backward convolutions, the reverse for the weight gradients', which read the same layout
  // transposed); below 64, features on the lanes, the graph's last two dims tiled (8, 128).
  bool batch_minor = false;
  // Mixed precision as a bf16 TPU step runs it (Flax's half_precision, Keras's mixed_bfloat16
  // policy): the f32 values the forward and backward passes compute are stored in bf16 (2 bytes,
  // rounded to nearest even when written); parameters, their gradients, optimizer state, the
  // loss phase, the optimizer's temporaries and graph inputs stay f32.
  bool stored_bf16(ir::ValueId v) const;

  // Tensor of a value: constants get one on first use (home per chip), others must exist.
  int32_t tensor(ir::ValueId v);
  // A tensor loop fusion keeps on chip: no storage anywhere, readers take it from vector memory.
  bool fused(int32_t tensor) const;
  // An operand a vector kernel streams from its home memory: neither on chip nor in the tiles a
  // sibling loop streamed (from_sibling).
  bool streams(int32_t tensor) const;
  // The tensor whose storage `tensor` is (aliases resolved).
  int32_t root_tensor(int32_t tensor) const;
  // Creates the tensor of a produced value, homed by the chip's rule (on chip when it fits for
  // v1/edge, else off-chip, else host), waiting for readers of any storage it reuses.
  int32_t produce(ir::ValueId v);
  // A kernel-internal tensor with no graph value (e.g. Gemm's broadcast C), 4-byte elements or
  // those of `like` (a copy of that tensor's data: 2 bytes for bf16 activations), homed like
  // produced values; release() it after its last reader.
  int32_t scratch(const std::string& name, std::vector<int64_t> dims, int32_t like = -1);
  // The HBM buffer a training step's next batch of graph input v arrives in while the step runs
  // (an "inputs" tensor of v's dims and element bytes, live for the whole program).
  int32_t next_batch_buffer(ir::ValueId v);
  // A training step: some graph input is a weight.
  bool trains() const { return trains_; }
  int32_t alias(ir::ValueId v, int32_t of);
  // A constant tensor with the given data (weights prepared by the compiler).
  int32_t add_constant(const std::string& name, std::vector<int64_t> dims, std::vector<float> data,
                       int64_t stored_element_bytes);
  void release(int32_t tensor);
  // Bytes per element of a tensor in its home memory.
  int64_t element_bytes(int32_t tensor) const;
  // Elements of a tensor in its home layout, (8, 128) tile padding included: the graph's layout
  // with its last two dimensions tiled, the least-padding one of parameters (and their aliases),
  // or batch-minor for rank-4 activations when `batch_minor`.
  int64_t tiled_elements(int32_t tensor) const;
  models::tpu::Level home(int32_t tensor) const { return p.tensors.at(tensor).home; }
  // Rounding applied when a kernel stores value v.
  models::tpu::Rounding store_rounding(ir::ValueId v) const;
  int32_t add_kernel(models::tpu::Kernel k);
  // "Conv 'layer1.0.conv1'" for messages.
  std::string describe(const ir::Node& n) const;
  // Raises OutOfMemoryError: node cannot be tiled into one half of on-chip memory.
  [[noreturn]] void untileable(const ir::Node& n, uint64_t needed, const std::string& detail) const;

 private:
  // parameter_layout: stored in the layout that pads least (see parameter_bytes), not the graph's.
  int32_t produce_tensor(const std::string& name, std::vector<int64_t> dims, int64_t eb,
                         HbmPlan::Tensor info, bool parameter_layout);
  // The plan's category and origin of value v (graph input, produced by a node).
  HbmPlan::Tensor plan_info(ir::ValueId v) const;
  std::string current_op_name() const;
  std::string constant_category() const;
  bool trains_ = false;                 // a training step: some input is a weight
  std::vector<bool> read_by_backward_;  // per value: a backward-phase node reads it
  std::vector<ir::ValueRole> role_;     // per value: its role, or that of its aliases
  int32_t new_tensor(const std::string& name, std::vector<int64_t> dims, int64_t element_bytes,
                     bool constant);
  uint64_t storage_bytes(const std::vector<int64_t>& dims, int64_t element_bytes,
                         models::tpu::Level home) const;
  std::unordered_map<int32_t, int64_t> element_bytes_;
  std::unordered_map<int32_t, uint64_t> home_bytes_;  // per produced tensor: bytes it took at home
  std::unordered_set<int32_t> least_padding_;         // tensors stored in the least-padding layout
  std::unordered_set<int32_t> batch_minor_tensors_;   // activations stored batch-minor
  std::unordered_set<int32_t> fused_;                 // loop fusion's on-chip tensors (no storage)
};

// Lowering entry points. `nodes` is a fused group (matmul-like node first); `weight_grad_in_place`:
// the head is a weight gradient's Conv that reads x and dy in place (FusionPlan).
void lower_matmul_group(Context& c, const std::vector<int>& nodes, bool weight_grad_in_place);
// A strided 2-D ConvTranspose group lowered by sub-pixel phases (lower_matmul.cpp), and the
// residual its fused Add sums in (kNoValue: none).
bool runs_by_phases(const ir::Graph& g, const std::vector<int>& nodes);
ir::ValueId phased_residual(const ir::Graph& g, const std::vector<int>& nodes);
// Residuals of such groups that die there (`last_use`: per value, the emission step of its last
// reader), whose storage the group's output takes over: added to `in_place`, their last use
// extended to the output's. `kept`: loop fusion's kept_on_chip.
void plan_residuals_in_place(const ir::Graph& g, const FusionPlan& plan,
                             const std::vector<bool>& kept, std::vector<int>& last_use,
                             std::unordered_set<ir::ValueId>* in_place);
void lower_vector_node(Context& c, const ir::Node& n);
void lower_depthwise_group(Context& c, const std::vector<int>& nodes);
// A ConvTranspose with one output channel per group on the vector unit (is_vector_conv_transpose).
void lower_transposed_window(Context& c, const ir::Node& n);
void lower_copy_node(Context& c, const ir::Node& n);
// ConvTranspose's input x [N, C, H, W] dilated by strides (sh, sw) (XLA's lhs_dilation) and
// placed at offsets (ph, pw) of a zero scratch tensor [N, C, hs, ws] (negative offsets crop):
// a fill kernel, then one strided copy. Returns the scratch tensor; release() it after its reader.
int32_t dilate_input(Context& c, const ir::Node& n, int32_t x, const models::tpu::Window& in,
                     int64_t hs, int64_t ws);
// [N, C, H, W], or [N, H, W, C] when channels_last.
std::vector<int64_t> placed_dims(int64_t n, int64_t c, int64_t h, int64_t w, bool channels_last);
// A ConvTranspose's sub-pixel phase images x [N, C, in.h, in.w] placed into its output y
// [N, C, in.oh, in.ow] (lower_matmul.cpp: lower_by_phases): fill_placed zeroes y, or copies the
// residual r (r >= 0) into it; place_phase copies x to every in.sh-th row and in.sw-th column from
// (in.ph, in.pw), or adds it to r there (one rounding, `store`, of each sum).
void fill_placed(Context& c, const ir::Node& n, int32_t r, const models::tpu::Window& in,
                 int32_t y);
void place_phase(Context& c, const ir::Node& n, int32_t x, int32_t r, const models::tpu::Window& in,
                 int32_t y, models::tpu::Rounding store);
// A strided copy of tensor x (dims, element strides and offset into x) into a contiguous scratch
// tensor of those dims; release() it after its reader.
int32_t relayout(Context& c, const ir::Node& n, int32_t x, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& strides, int64_t offset);
// Conv's 3-D input x [N, C, D, H, W] unfolded over depth into 2-D images [N*OD, C*KD, H, W]:
// image (n, od), channel g*KD*Cg + kd*Cg + c (group g) holds depth plane od*sd - pd + kd*dd of
// input channel g*Cg + c, zero in the padding. A fill when any plane falls in the padding, then
// one strided copy per depth tap. Returns the scratch tensor; release() it after its reader.
int32_t unfold_depth(Context& c, const ir::Node& n, int32_t x, const ir::WindowGeometry& wg);
// The 2-D conv's output [N*OD, M, OH, OW] (scratch `src`) moved to the 3-D one [N, M, OD, OH, OW].
void fold_depth(Context& c, const ir::Node& n, int32_t src, int32_t dst,
                const ir::WindowGeometry& wg);

// Tiles `rows` of a vector kernel across cores and chunks that fit half of on-chip memory, with
// per-row input/output bytes (tiled) and vector work; raises untileable() when one row does not
// fit.
struct VectorTiling {
  int64_t rows = 0;
  std::vector<int32_t> inputs;  // tensors streamed per chunk (by their share of rows)
  std::vector<double> input_bytes_per_row;
  std::vector<int32_t> whole_inputs;  // tensors loaded whole once per core (small operands)
  int32_t output = -1;
  double output_bytes_per_row = 0;
  double elements_per_row = 0;  // vector work, tiled elements
  uint32_t ops = 1;
  bool vector_instruction = true;  // false: pure data movement (the store computes)
  double runs_per_row = 0;         // data movement: contiguous pieces per row (strided DMA)
};
void emit_vector_kernel(Context& c, const ir::Node& n, int32_t kernel, const VectorTiling& t);
// The vector-unit kernel of `d`.
models::tpu::Kernel vector_kernel(const models::tpu::VectorDesc& d);

// Adds the kernel of `d` (d.out already produced, d.epi.store set) and tiles it by `rows`; `work`
// is the tiled elements per row (0: the output's, or the first input's for reductions).
void emit_vector_desc(Context& c, const ir::Node& n, models::tpu::VectorDesc d, int64_t rows,
                      double work);
// The 2-D window of a convolution or pool of spatial rank 1 (length as H, W = 1) or 2.
models::tpu::Window window_2d(const ir::WindowGeometry& wg, bool count_include_pad);
// Element strides of a tensor of `in` dims broadcast to `out` (numpy rules; 0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& out);
// Lowerings in lower_select.cpp (comparisons, logic, Where, variadic, Cast, ArgMax, Gather, ...).
bool lower_select_node(Context& c, const ir::Node& n);
// LayerNormalization's Mean and InvStdDev outputs, when the graph uses them.
void lower_layer_norm_stats(Context& c, const ir::Node& n);

}  // namespace mimic::backends::tpu_emu
