// The device program: the contract between the TPU compiler (backends/tpu_emu) and the chip
// model. It knows nothing of the graph IR.
//
// A program is a list of tile-level instructions, each issued by one core's sequencer to one
// unit: a DMA engine (move `bytes` between memory levels), a matrix unit (stream a GEMM block
// through the systolic array), the vector unit (elementwise, reductions, pooling, ...) or the
// sync unit (wait for dependencies). Dependencies are explicit (`deps`: instruction indices that
// must complete first), computed by the compiler from buffer hazards, so units run as far ahead
// as the data allows. Timing uses the instruction fields; numerics use the kernel descriptor the
// instruction points at plus the instruction's region, so both results come from the same stream.
//
// Tensors live in a home memory level between kernels (host, off-chip HBM/DDR, or on chip);
// staging copies in VMEM/UB are implied by DMA instructions and are views for numerics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/tpu/tpu_spec.h"

namespace mimic::models::tpu {

enum class Level : uint8_t { host, offchip, onchip };
const char* level_name(Level l);

enum class Opcode : uint8_t { dma, matmul, vector, sync };
const char* opcode_name(Opcode o);

// How values are rounded when a kernel stores its output.
enum class Rounding : uint8_t {
  none,
  bf16,  // the graph tensor is bf16
  int8,  // int8 chips: activations are requantized to int8 with a per-tensor scale (fake-quant)
};

// Elementwise and reduction functions of the vector unit.
// Every function of the vector unit, once: X(name, ALU operations per element), with what its
// parameters or its cost mean. The enum, the names and the costs (program.cpp) expand from it.
// clang-format off
#define MIMIC_VECTOR_FUNCS(X) \
  /* unary (p0, p1 parameters where noted) */ \
  X(identity, 1) \
  X(relu, 1) \
  X(clip, 2) /* p0 lo, p1 hi */ \
  X(leaky_relu, 2) /* p0 */ \
  X(elu, 8) /* p0 */ \
  X(selu, 8) /* p0 alpha, p1 gamma */ \
  X(sigmoid, 8) \
  X(hard_sigmoid, 2) /* p0 alpha, p1 beta */ \
  X(hard_swish, 4) \
  X(tanh, 8) \
  X(exp, 8) \
  X(log, 8) \
  X(sqrt, 4) \
  X(reciprocal, 4) \
  X(abs, 1) \
  X(neg, 1) \
  X(erf, 8) \
  X(gelu, 12) \
  X(gelu_tanh, 12) \
  X(softplus, 8) \
  X(softsign, 4) \
  X(floor, 1) \
  X(ceil, 1) \
  X(round, 1) \
  X(sign, 1) \
  X(sin, 8) \
  X(cos, 8) \
  X(tan, 8) \
  X(scale, 1) /* p0: x * p0 */ \
  X(trunc, 1) /* toward zero: casts to integer types */ \
  X(nonzero, 1) /* x != 0: casts to bool */ \
  X(logical_not, 1) \
  X(is_nan, 1) \
  X(is_inf, 2) /* p0: detect +inf, p1: detect -inf; compare + select */ \
  X(asin, 8) \
  X(acos, 8) \
  X(atan, 8) \
  X(sinh, 8) \
  X(cosh, 8) \
  X(asinh, 8) \
  X(acosh, 8) \
  X(atanh, 8) \
  X(thresholded_relu, 2) /* p0 alpha */ \
  X(celu, 8) /* p0 alpha */ \
  X(shrink, 4) /* p0 bias, p1 lambd */ \
  /* binary */ \
  X(add, 1) \
  X(sub, 1) \
  X(mul, 1) \
  X(div, 4) \
  X(max, 1) \
  X(min, 1) \
  X(pow, 8) \
  X(prelu, 2) \
  X(mod, 6) /* sign of the divisor (fmod=0): Newton divide, truncate, multiply-subtract, fix */ \
  X(fmod, 6) /* sign of the dividend (fmod=1): as mod */ \
  X(equal, 1) \
  X(less, 1) \
  X(less_equal, 1) \
  X(greater, 1) \
  X(greater_equal, 1) \
  X(logical_and, 1) \
  X(logical_or, 1) \
  X(logical_xor, 1) \
  /* n-ary elementwise (up to 3 inputs) */ \
  X(where, 1) /* in0 ? in1 : in2 */ \
  X(clamp, 2) /* min(max(in0, in1), in2); compare + select */ \
  /* reductions */ \
  X(sum, 1) \
  X(mean, 1) \
  X(reduce_max, 1) \
  X(reduce_min, 1) \
  X(prod, 1) \
  X(l1, 1) \
  X(l2, 2) \
  X(sum_square, 2) \
  X(log_sum, 8) \
  X(arg_max, 2) /* index (p0 != 0: last of equal maxima); compare + select, index kept */ \
  X(arg_min, 2) /* compare + select, index kept */ \
  X(inv_std_dev, 4) /* LayerNormalization's 1 / sqrt(var + eps): mean, squares, one rsqrt */ \
  X(log_sum_exp, 8) \
  /* others (kernel-specific) */ \
  X(softmax, 12) /* max, exp, sum, scale */ \
  X(log_softmax, 12) /* max, exp, sum, scale */ \
  X(layer_norm, 8) /* mean, variance, normalize, affine */ \
  X(scale_shift, 2) \
  X(max_pool, 1) /* per window element */ \
  X(avg_pool, 1) /* per window element */ \
  X(max_pool_grad, 1) /* SelectAndScatter: in0 x, in1 y, in2 dy; work counts its compares, adds */ \
  X(depthwise_conv, 2) /* multiply + add per tap */ \
  X(conv_transpose_taps, 2) /* ConvTranspose, one output channel per group: multiply + add per tap */ \
  X(matvec, 2) /* multiply + add per tap */ \
  X(copy, 1) \
  X(transpose, 1) \
  X(gather, 1) /* rows of in0 picked by indices in1 over [outer, axis, inner]; p0 = indices */ \
  X(scatter, 1) /* rows of in0, with rows of in2 written (p1 = 0) or added (p1 = 1) at indices in1 \
                   over [axis, inner]; p0 = indices */
// clang-format on

enum class VectorFunc : uint8_t {
#define MIMIC_VECTOR_ENUM(name, ops) name,
  MIMIC_VECTOR_FUNCS(MIMIC_VECTOR_ENUM)
#undef MIMIC_VECTOR_ENUM
};
const char* vector_func_name(VectorFunc f);

// 2-D window geometry of convolutions and pools (one image row-major, ONNX semantics).
struct Window {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t m = 0, oh = 0, ow = 0;       // output channels and size
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;  // ph/pw: begin padding
  int64_t groups = 1;
  bool channels_last = false;
  bool count_include_pad = false;  // average pooling
  // Vector window ops on NCHW: instruction rows are (n, output channel, oh) instead of (n, oh),
  // so that layers whose every channel does not fit on chip for one output row still tile.
  bool channel_rows = false;
  // End padding: with count_include_pad, an average pool's divisor counts the padded taps up to
  // h + ph_end (w + pw_end), not the taps a ceil_mode window reaches past them (ONNX, PyTorch).
  int64_t ph_end = 0, pw_end = 0;
  // Activations laid out batch-minor (the batch on the 128 lanes, channels on the 8 sublanes),
  // as XLA lays them out at batch 64 and more (backends/tpu_emu: Context::batch_minor).
  bool batch_minor = false;
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> dims;
  Level home = Level::offchip;
  int32_t alias_of = -1;  // shares storage (and dims' element count) with another tensor
  bool constant = false;  // data shipped once with the program
  uint64_t address = 0;   // in its home memory (per core for on-chip homes)
  int64_t numel() const;
};

struct Epilogue {
  int32_t bias = -1;      // tensor of N values added per output column
  int32_t residual = -1;  // tensor with the output's shape, added after the bias
  VectorFunc activation = VectorFunc::identity;
  float p0 = 0, p1 = 0;  // activation parameters
  float alpha = 1;       // Gemm's alpha (scales A x W)
  Rounding store = Rounding::none;
};

// Y = A x W (per batch) with the epilogue, as a GEMM of [batch][M x K] x [K x N].
struct GemmDesc {
  // filter: a weight gradient read in place. `conv` is the forward convolution (channels last,
  // one group); A's rows are (c, kh, kw), its K the forward's output positions (n, oh, ow), each
  // element the input x under that tap; W is dy as stored ([N*OH*OW, M]); Y is [C*KH*KW, M].
  enum class AView : uint8_t { matrix, conv, filter };
  // How W is stored: as the GEMM reads it ([batch][K][N], or [N, K] with w_transposed), or as a
  // runtime 2-D convolution filter in ONNX's order that the matrix units read in place (`conv`
  // gives its dims): [M][C/groups][KH][KW] for a Conv, [C][M/groups][KH][KW] for a ConvTranspose
  // (read flipped, its channels swapped). The numerics gather it into [batch][K][N] order.
  enum class WView : uint8_t { matrix, conv_filter, conv_transpose_filter };
  int32_t a = -1, w = -1, y = -1;
  AView a_view = AView::matrix;
  WView w_view = WView::matrix;
  // A ConvTranspose's kernel taps within its filter (filter_tap): one sub-pixel phase of a strided
  // one takes taps (filter_ph + jh * filter_step_h, filter_pw + jw * filter_step_w) of a filter
  // filter_kw wide (0: the kernel's own width, every tap).
  int64_t filter_kw = 0, filter_ph = 0, filter_pw = 0, filter_step_h = 1, filter_step_w = 1;
  bool a_transposed = false, w_transposed = false;  // matrix views: stored [.., K, M] / [.., N, K]
  int64_t batch = 1, m = 0, k = 0, n = 0;
  // Element offset between consecutive batch matrices (0: broadcast along the batch).
  int64_t a_batch_stride = 0, w_batch_stride = 0, y_batch_stride = 0;
  Window conv;  // conv view: implicit GEMM, M = n*oh*ow, K = kh*kw*c/groups, N = m/groups, batch =
                // groups
  bool on_vpu = false;  // matrix-vector products run on the vector unit in fp32 (jax#16349)
  Epilogue epi;
};

// Index (kh * width + kw) in a ConvTranspose's filter of tap q of the GEMM's (sub-)kernel.
inline int64_t filter_tap(const GemmDesc& g, int64_t q) {
  const int64_t jh = q / g.conv.kw, jw = q % g.conv.kw;
  const int64_t width = g.filter_kw > 0 ? g.filter_kw : g.conv.kw;
  return (g.filter_ph + jh * g.filter_step_h) * width + g.filter_pw + jw * g.filter_step_w;
}

// Everything the vector unit and the copy engine compute.
struct VectorDesc {
  VectorFunc func = VectorFunc::identity;
  float p0 = 0, p1 = 0;
  std::vector<int32_t> in;  // tensors
  int32_t out = -1;
  // Elementwise/copy: iteration shape and per-input element strides (0 broadcasts), plus offsets.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> in_strides;
  std::vector<int64_t> out_strides;
  std::vector<int64_t> in_offsets;
  int64_t out_offset = 0;
  // Reductions/softmax/normalization over a [outer, axis, inner] view (reduced axes adjacent).
  int64_t outer = 1, axis = 1, inner = 1;
  float epsilon = 0;
  Window window;  // pooling, depthwise convolution
  Epilogue epi;   // depthwise convolution, rounding of every vector kernel's output
};

enum class KernelKind : uint8_t { gemm, vector };

struct Kernel {
  KernelKind kind = KernelKind::vector;
  int32_t op = -1;  // program.ops index
  GemmDesc gemm;
  VectorDesc vec;
};

struct Instruction {
  Opcode opcode = Opcode::sync;
  uint8_t core = 0;
  uint16_t unit = 0;    // DMA engine or MXU index within the core
  int32_t kernel = -1;  // kernel computed (numerics) and op charged (reports); -1 for none
  uint32_t dep_begin = 0, dep_count = 0;
  int64_t onchip_alloc = 0;  // bytes of the core's on-chip memory taken when it starts
  int64_t onchip_free = 0;   // ... and released when it ends
  // dma
  Level src = Level::offchip, dst = Level::onchip;
  uint64_t bytes = 0;  // read at the source, layout padding included
  uint64_t dst_bytes =
      0;              // written at the destination when it differs (relayout on the way); 0: same
  uint64_t runs = 1;  // contiguous pieces (each costs at least the memory's access granule)
  uint64_t src_address = 0, dst_address = 0;
  // matmul: this instruction's GEMM block on its MXU
  int64_t m = 0, k = 0, n = 0, passes = 1;
  Level weight_source = Level::onchip;
  uint64_t weight_address = 0;
  // vector
  uint64_t elements = 0;  // 32-bit elements processed, padded to vreg tiles
  uint32_t ops_per_element = 1;
  // numerics: the region of the kernel this instruction computes (meaning per kernel: GEMM
  // batch/rows/cols [r0, r1) x [c0, c1) with `batch`; vector element or outer ranges [r0, r1)).
  int64_t batch = 0, r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  bool computes = false;  // false for DMA/sync and for instructions that only model time
};

// Graph-level information carried for reports and traces (one per graph node).
struct OpInfo {
  std::string node, op_type, shapes, dtype;
  int64_t flops = 0, bytes_in = 0, bytes_out = 0;
  std::string phase = "forward";  // of a training step: forward, loss, backward, update
  // Bytes of parameter gradients this op completes: with data parallelism they are all-reduced
  // over the replicas once it ends.
  int64_t gradient_bytes = 0;
  bool reads_gradients = false;  // waits for the all-reduce with data parallelism
};

struct Program {
  std::string name, precision = "default";
  int64_t passes = 1;
  MatrixNumerics numerics = MatrixNumerics::bf16;
  std::vector<TensorInfo> tensors;
  std::vector<Kernel> kernels;
  std::vector<Instruction> instructions;
  std::vector<uint32_t> deps;
  std::vector<OpInfo> ops;
  std::vector<int32_t> inputs, outputs;        // tensors, in graph order
  std::vector<int32_t> constants;              // tensors whose data ships with the program
  std::vector<int64_t> resident_onchip_bytes;  // per core: tensors homed on chip (occupancy floor)
  int64_t replicas = 1;  // data parallelism: copies of the program, gradients all-reduced
};

// Vector-unit ALU operations per element of `f` (relative costs; transcendental functions run on
// a multi-cycle unit). [assumed] values, documented in vector_costs.cpp.
uint32_t vector_ops_per_element(VectorFunc f);

}  // namespace mimic::models::tpu
