// OpType: the closed set of IR ops and what the op table (op_table.h) says about each.
#pragma once

#include <cstdint>

#include "frontend/ir/op_table.h"

namespace mimic::ir {

enum class OpType : uint16_t {
#define MIMIC_ENUM_ENTRY(name, ...) name,
  MIMIC_OP_TABLE(MIMIC_ENUM_ENTRY)
#undef MIMIC_ENUM_ENTRY
};

// What kind of computation an op is (the op table's second column).
enum class OpClass : uint8_t {
  unary,       // elementwise, one input (some take scalar parameters as more inputs)
  binary,      // elementwise, two inputs with numpy broadcasting
  nary,        // elementwise, any number of broadcast inputs (Max, Min, Sum, Mean, Where)
  matmul,      // MatMul, Gemm
  conv,        // Conv, ConvTranspose
  pool,        // windowed and global pools
  norm,        // batch, layer, instance and local response normalization
  softmax,     // Softmax, LogSoftmax, Hardmax along one axis
  reduce,      // ReduceSum ... ReduceLogSumExp over axes given as an input
  arg_reduce,  // ArgMax, ArgMin
  scan,        // CumSum
  data,        // data movement, shape queries and generators
  recurrent,   // LSTM, GRU, RNN
};

// How autodiff treats an op (the op table's gradient column).
enum class OpGradient : uint8_t { rule, zero, unrolled };

const char* op_name(OpType op);
int op_count();
OpType op_at(int index);
OpClass op_class(OpType op);
OpGradient op_gradient(OpType op);
// One of the activations a matrix unit's epilogue may apply (the op table's last column).
bool is_epilogue_activation(OpType op);

inline bool is_unary_elementwise(OpType op) {
  return op_class(op) == OpClass::unary;
}
inline bool is_binary_elementwise(OpType op) {
  return op_class(op) == OpClass::binary;
}
// ReduceSum, ReduceMean, ..., ReduceLogSumExp: reductions over axes given as an input.
inline bool is_reduce(OpType op) {
  return op_class(op) == OpClass::reduce;
}
// Reshape-like ops whose output is a view of the input's storage.
bool is_view_op(OpType op);

}  // namespace mimic::ir
