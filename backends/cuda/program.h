// The CUDA backend's device program: what lowering (lower.h) produces from a graph and what the
// executor runs on the GPU. Buffers are constants (uploaded once per executable) or slices of one
// arena placed by memory_plan.h; instructions are kernel launches with their parameters (params.h)
// and cuBLAS calls, grouped into steps (one per graph node) that are timed with CUDA events.
// The program holds no device pointers, so it can be built, inspected and executed on the host
// (tests/cuda's emulator) without a GPU.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "backends/cuda/gemm_plan.h"
#include "backends/cuda/kernels/params.h"
#include "frontend/ir/host_tensor.h"

namespace mimic::backends::cuda {

// A byte offset into one buffer.
struct BufRef {
  int32_t buffer = -1;
  int64_t offset = 0;
  bool valid() const { return buffer >= 0; }
  BufRef at(int64_t bytes) const { return {buffer, offset + bytes}; }
};

enum class BufferKind { arena, constant };

struct BufferDesc {
  BufferKind kind = BufferKind::arena;
  int64_t bytes = 0;
  int first_step = 0, last_step = 0;  // arena lifetime (steps; -1 = filled before step 0)
  int64_t offset = 0;                 // arena placement
  int constant = -1;                  // index into Program::constants
  std::string what;                   // "value 'conv1:0'", "im2col of 'conv1'"
};

struct GemmInstr {
  ColMajorGemm g;
  DT a_dt, b_dt, c_dt;  // of the row-major operands a, b, c
  bool tf32 = false;
  float alpha = 1, beta = 0;
  BufRef a, b, c;  // row-major A, B, C (cuBLAS gets b as its first operand, see gemm_plan.h)
};
struct UnaryInstr {
  UnaryParams p;
  BufRef x, y;
};
struct BinaryInstr {
  BinaryParams p;
  BufRef a, b, y;
};
struct VariadicInstr {
  VariadicParams p;
  std::vector<BufRef> inputs;
  BufRef y;
};
struct WhereInstr {
  WhereParams p;
  BufRef cond, x, y, out;
};
struct CastInstr {
  CastParams p;
  BufRef x, y;
};
struct CopyInstr {
  CopyParams p;
  BufRef x, y;
};
struct Copy2dInstr {
  Copy2dParams p;
  BufRef x, y;
};
struct GatherInstr {
  GatherParams p;
  BufRef data, indices, y;
};
struct ScatterRowsInstr {
  ScatterRowsParams p;
  BufRef indices, updates, y;
};
struct GatherElementsInstr {
  GatherElementsParams p;
  BufRef data, indices, y;
};
struct PadInstr {
  PadParams p;
  BufRef x, y;
};
struct TriluInstr {
  TriluParams p;
  BufRef x, y;
};
struct Im2colInstr {
  Im2colParams p;
  BufRef x, col;
};
struct Col2imInstr {
  Col2imParams p;
  BufRef col, y;
};
struct DepthwiseInstr {
  DepthwiseParams p;
  BufRef x, w, bias, y;
};
struct BiasInstr {
  BiasParams p;
  BufRef x, bias, y;
};  // bias may be invalid (conversion only)
struct PoolInstr {
  PoolParams p;
  BufRef x, y;
};
struct BatchNormInstr {
  BatchNormParams p;
  BufRef x, mul, add, y;
};
struct BnPrepInstr {
  BnPrepParams p;
  BufRef scale, bias, mean, var, mul, add;
};
struct LrnInstr {
  LrnParams p;
  BufRef x, y;
};
struct ReduceInstr {
  ReduceParams p;
  BufRef x, y;
};
struct ArgReduceInstr {
  ArgReduceParams p;
  BufRef x, y;
};
struct SoftmaxInstr {
  SoftmaxParams p;
  BufRef x, y;
};
struct RowNormInstr {
  RowNormParams p;
  BufRef x, scale, bias, y, mean, inv_std;
};
struct CumSumInstr {
  CumSumParams p;
  BufRef x, y;
};

using Instr =
    std::variant<GemmInstr, UnaryInstr, BinaryInstr, VariadicInstr, WhereInstr, CastInstr,
                 CopyInstr, Copy2dInstr, GatherInstr, GatherElementsInstr, PadInstr, TriluInstr,
                 Im2colInstr, Col2imInstr, DepthwiseInstr, BiasInstr, PoolInstr, BatchNormInstr,
                 BnPrepInstr, LrnInstr, ReduceInstr, ArgReduceInstr, SoftmaxInstr, RowNormInstr,
                 CumSumInstr, ScatterRowsInstr>;

// Short name of an instruction's kind ("gemm", "im2col", ...).
const char* instr_name(const Instr& instr);

// One graph node: its instructions [first, end) and what the reports say about it.
struct Step {
  int node = -1;
  std::string name, op_type, shapes, dtype;
  int64_t flops = 0, bytes_in = 0, bytes_out = 0;
  size_t first = 0, end = 0;
  bool host_computed = false;  // evaluated at compile time (data-independent), uploaded as constant
};

struct Program {
  std::vector<BufferDesc> buffers;
  std::vector<ir::HostTensor> constants;
  std::vector<Instr> instrs;
  std::vector<Step> steps;
  std::vector<BufRef> inputs, outputs;
  std::vector<ir::TensorType> input_types, output_types;
  int64_t arena_bytes = 0, peak_live_bytes = 0, constant_bytes = 0;
  std::set<std::string> matrix_modes;  // "fp32", "tf32", "bf16", "fp16": what the GEMMs ran in
  std::vector<std::string> notes;
};

}  // namespace mimic::backends::cuda
