// cpu backend kernels: the reference semantics of every IR op.
//
// A kernel receives the node, its input tensors and output tensors already allocated with the
// inferred types (view ops receive an empty output and set it to a view of their input).
// Floating-point kernels compute in f32: the executor widens f16/bf16 inputs to f32 and rounds the
// results back to the node's dtype (round to nearest even), which is the reference behaviour the
// emulators are compared against.
#pragma once

#include <functional>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::backends::cpu {

struct KernelArgs {
  const ir::Graph& graph;
  const ir::Node& node;
  std::vector<const ir::HostTensor*> in;  // nullptr for omitted optional inputs
  std::vector<ir::HostTensor*> out;
  const ir::HostTensor& input(int i) const { return *in.at(i); }
  bool has_input(int i) const { return i < static_cast<int>(in.size()) && in[i] != nullptr; }
  ir::HostTensor& output(int i) const { return *out.at(i); }
};

using Kernel = void (*)(const KernelArgs&);

// Families (kernels_*.cpp).
void unary_kernel(const KernelArgs& a);
void binary_kernel(const KernelArgs& a);
void variadic_kernel(const KernelArgs& a);
void where_kernel(const KernelArgs& a);
void cast_kernel(const KernelArgs& a);
void matmul_kernel(const KernelArgs& a);
void gemm_kernel(const KernelArgs& a);
void conv_kernel(const KernelArgs& a);
void conv_transpose_kernel(const KernelArgs& a);
void pool_kernel(const KernelArgs& a);
void max_pool_grad_kernel(const KernelArgs& a);
void global_pool_kernel(const KernelArgs& a);
void batch_norm_kernel(const KernelArgs& a);
void layer_norm_kernel(const KernelArgs& a);
void instance_norm_kernel(const KernelArgs& a);
void lrn_kernel(const KernelArgs& a);
void softmax_kernel(const KernelArgs& a);
void reduce_kernel(const KernelArgs& a);
// The values of `n` consecutive input elements from flat offset `at`: a pointer into the input,
// or into `scratch` when they are computed (loop fusion); called from several threads at once.
using RunSource = std::function<const float*(int64_t at, int64_t n, std::vector<float>& scratch)>;
// ReduceSum/ReduceMean of f32 over `reduced` axes of `shape` without moving them, in the order
// and precision (double accumulators) every cpu path shares, so a fused reduction is bitwise the
// reference kernel's.
void sum_in_place(ir::OpType op, const ir::Shape& shape, const std::vector<bool>& reduced,
                  const RunSource& source, float* y);
void arg_reduce_kernel(const KernelArgs& a);
void cumsum_kernel(const KernelArgs& a);
void view_kernel(const KernelArgs& a);
void transpose_kernel(const KernelArgs& a);
void concat_kernel(const KernelArgs& a);
void split_kernel(const KernelArgs& a);
void slice_kernel(const KernelArgs& a);
void gather_kernel(const KernelArgs& a);
void gather_elements_kernel(const KernelArgs& a);
void scatter_nd_kernel(const KernelArgs& a);
void pad_kernel(const KernelArgs& a);
void tile_kernel(const KernelArgs& a);
void expand_kernel(const KernelArgs& a);
void shape_kernel(const KernelArgs& a);
void constant_kernel(const KernelArgs& a);
void range_kernel(const KernelArgs& a);
void space_depth_kernel(const KernelArgs& a);
void resize_kernel(const KernelArgs& a);
void trilu_kernel(const KernelArgs& a);
void eye_like_kernel(const KernelArgs& a);
void recurrent_kernel(const KernelArgs& a);

Kernel find_kernel(ir::OpType op);
// Ops whose kernels move bytes without arithmetic: they run in any dtype, no f32 widening.
bool is_data_movement(ir::OpType op);
// Ops whose kernels also compute in double for f64 tensors (elementwise, reductions, CumSum,
// Range, EyeLike and data movement); the others (matrix products, convolutions, pools,
// normalizations, softmax) run f32 only.
bool supports_f64(ir::OpType op);

}  // namespace mimic::backends::cpu
