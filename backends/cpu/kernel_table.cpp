#include "backends/cpu/kernels.h"

namespace mimic::backends::cpu {

using ir::OpType;

Kernel find_kernel(OpType op) {
  if (ir::is_view_op(op)) return view_kernel;
  if (op == OpType::Cast) return cast_kernel;
  if (ir::is_unary_elementwise(op)) return unary_kernel;
  if (ir::is_binary_elementwise(op)) return binary_kernel;
  // One row per op kind:
  // clang-format off
  switch (op) {
    case OpType::Max: case OpType::Min: case OpType::Sum: case OpType::Mean: return variadic_kernel;
    case OpType::Where: return where_kernel;
    case OpType::MatMul: return matmul_kernel;
    case OpType::Gemm: return gemm_kernel;
    case OpType::Conv: return conv_kernel;
    case OpType::ConvTranspose: return conv_transpose_kernel;
    case OpType::MaxPool: case OpType::AveragePool: return pool_kernel;
    case OpType::MaxPoolGrad: return max_pool_grad_kernel;
    case OpType::GlobalAveragePool: case OpType::GlobalMaxPool: return global_pool_kernel;
    case OpType::BatchNormalization: return batch_norm_kernel;
    case OpType::LayerNormalization: return layer_norm_kernel;
    case OpType::InstanceNormalization: return instance_norm_kernel;
    case OpType::LRN: return lrn_kernel;
    case OpType::Softmax: case OpType::LogSoftmax: case OpType::Hardmax: return softmax_kernel;
    case OpType::ArgMax: case OpType::ArgMin: return arg_reduce_kernel;
    case OpType::CumSum: return cumsum_kernel;
    case OpType::Transpose: return transpose_kernel;
    case OpType::Concat: return concat_kernel;
    case OpType::Split: return split_kernel;
    case OpType::Slice: return slice_kernel;
    case OpType::Gather: return gather_kernel;
    case OpType::GatherElements: return gather_elements_kernel;
    case OpType::ScatterND: return scatter_nd_kernel;
    case OpType::Pad: return pad_kernel;
    case OpType::Tile: return tile_kernel;
    case OpType::Expand: return expand_kernel;
    case OpType::Shape: case OpType::Size: return shape_kernel;
    case OpType::Constant: case OpType::ConstantOfShape: return constant_kernel;
    case OpType::Range: return range_kernel;
    case OpType::DepthToSpace: case OpType::SpaceToDepth: return space_depth_kernel;
    case OpType::Resize: return resize_kernel;
    case OpType::Trilu: return trilu_kernel;
    case OpType::EyeLike: return eye_like_kernel;
    case OpType::LSTM: case OpType::GRU: case OpType::RNN: return recurrent_kernel;
    default: break;
  }
  return ir::is_reduce(op) ? reduce_kernel : nullptr;
}

bool is_data_movement(OpType op) {
  switch (op) {
    case OpType::Cast: case OpType::Where: case OpType::Transpose: case OpType::Concat:
    case OpType::Split: case OpType::Slice: case OpType::Gather: case OpType::GatherElements:
    case OpType::Pad: case OpType::Tile: case OpType::Expand: case OpType::Shape: case OpType::Size:
    case OpType::Constant: case OpType::ConstantOfShape: case OpType::DepthToSpace:
    case OpType::SpaceToDepth: case OpType::Trilu: case OpType::EyeLike:
      return true;
    default: return ir::is_view_op(op);
  }
}
// clang-format on

bool supports_f64(OpType op) {
  if (is_data_movement(op) || ir::is_unary_elementwise(op) || ir::is_binary_elementwise(op))
    return true;
  Kernel k = find_kernel(op);
  return k == variadic_kernel || k == reduce_kernel || k == arg_reduce_kernel ||
         k == resize_kernel || k == cumsum_kernel || k == range_kernel || k == scatter_nd_kernel;
}

}  // namespace mimic::backends::cpu
