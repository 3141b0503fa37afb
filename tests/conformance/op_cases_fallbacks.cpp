// Where each backend runs an op case's node on the cpu fallback by design, and why (op_cases.h).
// The reasons are the chips' own limits or a lowering not written yet; op_conformance_test fails
// when a backend's placement and this list disagree in either direction.
#include "tests/conformance/op_cases.h"

#include <algorithm>

namespace mimic::testing {

namespace {

using ir::OpType;

// Elementwise and data-movement ops that the emulators lower for floating-point tensors only.
const std::vector<OpType> kIntegerArithmetic = {
    OpType::Abs,       OpType::Neg,        OpType::Sign,       OpType::Relu,   OpType::Clip,
    OpType::Add,       OpType::Sub,        OpType::Mul,        OpType::Div,    OpType::Mod,
    OpType::Greater,   OpType::Equal,      OpType::Sum,        OpType::Where,  OpType::ReduceSum,
    OpType::ReduceMax, OpType::ReduceMean, OpType::ReduceProd, OpType::ArgMax, OpType::ArgMin,
    OpType::CumSum,    OpType::Transpose,  OpType::Concat,     OpType::Slice,  OpType::Trilu,
    OpType::Pad,       OpType::Expand};

// `ops` less `removed`.
std::vector<OpType> except(const std::vector<OpType>& ops, const std::vector<OpType>& removed) {
  std::vector<OpType> out;
  for (OpType op : ops)
    if (std::find(removed.begin(), removed.end(), op) == removed.end()) out.push_back(op);
  return out;
}

std::vector<ExpectedFallback> tpu_fallbacks() {
  const std::string tpu = "tpu-emu";
  return {
      {tpu, {}, "*/f16*|*_f16*|Split/sizes_axis0", "f16 tensors: the TPU computes in bf16 and f32"},
      {tpu,
       {OpType::Cast},
       "Cast/f32_to_i8|Cast/i64_to_f32|Cast/i32_to_i64|Cast/i64_to_i32",
       "casts from or to i8 and i64 (i32 <-> f32 only)"},
      {tpu, {OpType::Pow}, "Pow/i64_base*", "integer powers"},
      {tpu,
       except(kIntegerArithmetic, {OpType::Greater, OpType::Equal, OpType::Where, OpType::Transpose,
                                   OpType::Concat, OpType::Slice, OpType::Expand}),
       "*i8*|*i32*|*i64*",
       "integer arithmetic: the vector unit's integer lowering covers comparisons, Where and "
       "moves"},
      {tpu, {OpType::Equal, OpType::Greater}, "Equal/bool|*i8*", "bool and i8 comparisons"},
      {tpu,
       {OpType::CumSum, OpType::Hardmax, OpType::LRN, OpType::GatherElements, OpType::EyeLike,
        OpType::Tile, OpType::Trilu},
       "*",
       "no TPU lowering"},
      {tpu, {OpType::ScatterND}, "ScatterND/elements_*", "ScatterND of elements, not whole rows"},
      {tpu,
       {OpType::Pad},
       "Pad/edge|Pad/reflect|Pad/wrap|Pad/negative_crop",
       "only constant, non-negative padding is lowered"},
      {tpu,
       {OpType::MatMul},
       "MatMul/broadcast_batch|MatMul/broadcast_b_batch",
       "partially broadcast batch dimensions"},
      {tpu,
       {OpType::MatMul},
       "MatMul/vector_matrix|MatMul/matrix_vector|MatMul/vector_vector",
       "matrix-vector products"},
      {tpu, {OpType::Conv}, "Conv/bf16_bias", "convolutions take f32 weights"},
      {tpu,
       {OpType::MaxPoolGrad},
       "MaxPoolGrad/pool3d*",
       "3-D MaxPoolGrad: its window ops end in a 3-D ConvTranspose"},
      {tpu,
       {OpType::BatchNormalization},
       "BatchNormalization/*params_as_inputs",
       "batch normalization with runtime (non-constant) statistics"},
      {tpu,
       {OpType::LayerNormalization},
       "LayerNormalization/axis1_broadcast_scale_with_stats|LayerNormalization/"
       "scale_bias_as_inputs",
       "layer normalization with runtime scale or extra statistics outputs"},
      {tpu,
       {OpType::ReduceProd, OpType::ReduceL1, OpType::ReduceL2, OpType::ReduceLogSum,
        OpType::ReduceLogSumExp},
       "Reduce*/axes_0_2_dropped",
       "reductions over non-adjacent axes that do not split into adjacent-axis ones"},
      {tpu, {}, "ReduceSumSquare/noop_with_empty_axes", "a reduction over no axes"},
  };
}

std::vector<ExpectedFallback> ipu_fallbacks() {
  const std::string ipu = "ipu-emu";
  return {
      {ipu, {}, "*bf16*|*i8*", "no bf16 or int8 arithmetic on GC2/GC200"},
      {ipu, except(kIntegerArithmetic, {OpType::Equal, OpType::Greater, OpType::Trilu}), "*i64*",
       "int64 arithmetic: the IPU has no 64-bit integers (int64 inputs of comparisons, casts and "
       "Trilu's k are streamed as int32)"},
      {ipu,
       {OpType::Cast, OpType::Trilu},
       "Cast/*to_i64*|Trilu/*i64*",
       "int64 results: the IPU has no 64-bit integers"},
      {ipu, {OpType::Pow}, "Pow/i64_base*", "int64 powers: the IPU has no 64-bit integers"},
      {ipu, {OpType::ArgMax, OpType::ArgMin}, "*", "int64 results: the IPU has no 64-bit integers"},
  };
}

}  // namespace

const std::vector<ExpectedFallback>& expected_fallbacks() {
  static const std::vector<ExpectedFallback> list = [] {
    std::vector<ExpectedFallback> out = {{"cuda",
                                          {OpType::ScatterND},
                                          "ScatterND/elements_*",
                                          "ScatterND of elements, not whole rows"}};
    for (std::vector<ExpectedFallback> part : {tpu_fallbacks(), ipu_fallbacks()})
      out.insert(out.end(), part.begin(), part.end());
    return out;
  }();
  return list;
}

}  // namespace mimic::testing
