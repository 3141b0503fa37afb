// The chip's numerics: executes a device program's instructions in program order on host buffers,
// under the chip's precision rules, with oneDNN's sgemm (base/gemm.h) and Eigen doing the
// arithmetic.
//
// Rules (sheet sections A.2 and C):
//   bf16 chips (v2+), matrix units: each f32 operand is split into bf16 parts (RNE) and the
//     products of parts accumulate in fp32. precision default = 1 pass (hi x hi); high = 3 passes
//     (hi x hi + hi x lo + lo x hi, 2-way split); highest = 6 passes (3-way split: hi x hi,
//     hi x mid, mid x hi, hi x lo, lo x hi, mid x mid), low-order terms summed first. Products of
//     two bf16 values are exact in fp32, so a pass is an fp32 GEMM on rounded operands.
//   int8 chips (v1, edge): weights are quantized per output channel with scale max|w|/127
//     (symmetric, round half to even); activations per tensor with scale max|x|/127 computed over
//     the whole input tensor at run time (as if calibrated on that very input); int8 x int8
//     products accumulate exactly in int32 (computed in fp32 when K*127^2 < 2^24, else fp64);
//     the int32 sum is rescaled by both scales to fp32, the epilogue (bias, residual, activation)
//     runs in fp32, and the stored activations are requantized to int8 (per-tensor scale of the
//     kernel's output), i.e. kept on the int8 grid. Depthwise convolutions (vector-unit kernels)
//     take the same int8 operands: taps quantized per output channel, the input per tensor.
//   Grouped and depthwise convolutions (feature_group_count > 1) follow the same precision rule
//     as every other convolution: the precision config belongs to the convolution HLO whatever
//     its group count, JAX's jax_default_matmul_precision and torch_xla's set_mat_mul_precision
//     document it for "matrix multiplication and convolution" on TPU (default: "downcasting an
//     FP32 to BF16 before multiplying"), and XLA's ConvolutionGroupConverter carries the
//     convolution's precision_config onto every rewrite of a grouped convolution. The one
//     documented exception, matrix-vector products in fp32 (jax#16349), names no convolution.
//     Grouped convolutions run as one GEMM per group on the matrix units; depthwise ones are
//     computed by the vector-unit kernel (numerics_vector.cpp) with the same bf16 passes, each
//     tap costing the passes' products. Which unit a real TPU uses for depthwise convolutions
//     is not published (XLA's TPU backend is closed): the Cloud TPU TensorFlow performance
//     guide pads tf.nn.depthwise_conv2d's feature dimensions to 8 or 128 like every
//     convolution's, so XLA lowers them as convolutions, but their mapping onto the MXU is not
//     documented; timing keeps them on the vector unit.
//   Vector unit: fp32 (matrix-vector products too, as TPUs do them on the VPU, jax#16349).
//   Outputs of bf16 graph tensors are rounded to bf16 when stored.
// Operand parts, layouts (NCHW inputs are relaid to channels-last once) and quantizations are
// computed once per tensor and cached for the run; weight parts once per loaded program. DMA and
// sync instructions move no values here: on-chip staging copies are views of the tensors.
// A kernel's computing instructions write disjoint regions of its output from inputs that are
// complete before the kernel starts, so their order does not change any value: the engine
// collects a kernel's regions and, when they tile the whole output, computes it in a few large
// row blocks (large GEMMs) instead of one small call per tile; otherwise region by region.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/tpu/program.h"

namespace mimic::models::tpu {

// One product of bf16 operand parts (0 = hi, 1 = mid, 2 = lo) of a matrix pass.
struct Pass {
  int a, w;
};

// Products of bf16 parts per precision (passes 1, 3 or 6), low-order terms first, as summed in
// fp32 (products of two bf16 values are exact in fp32) (numerics_gemm.cpp).
std::vector<Pass> passes_for(int64_t passes);

// The epilogue of a GEMM block over n contiguous outputs (numerics_gemm.cpp).
void gemm_epilogue(const float* src, int64_t n, const float* bias_vec, float bias,
                   const float* residual, float* dst, const Epilogue& e);

// A float buffer without initialization (kernels write every element they own).
struct Buffer {
  std::unique_ptr<float[]> data;
  size_t capacity = 0;
};

class Numerics {
 public:
  // `constants[i]` holds the data of tensor program.constants[i] (f32, row-major).
  Numerics(const Program& program, std::vector<std::vector<float>> constants);
  ~Numerics();

  // Runs every computing instruction; `inputs` in program.inputs order (f32 row-major, sizes
  // checked). `out` gets the outputs in program.outputs order; its vectors are reused when they
  // hold enough room (the previous run's: no fresh pages for a training step's hundreds of MB).
  void run(const std::vector<const float*>& inputs, std::vector<std::vector<float>>& out);

  // Scale used for an int8 tensor in the last run (for tests); 0 when none.
  float last_scale(int32_t tensor) const;

 private:
  struct Operand;           // a cached prepared operand (parts / quantized / relaid)
  friend struct GemmBlock;  // one instruction's GEMM block (numerics_gemm.cpp)

  int32_t base(int32_t t) const;
  Buffer take(size_t elements);  // from the pool, or new
  float* data(int32_t t);
  void allocate(int32_t t);
  void release(int32_t t);
  void execute(const Instruction& in);
  // Runs the collected regions of `kernel` (merged when they cover its whole output).
  void run_kernel(int32_t kernel);
  void finish_kernel(int32_t kernel);
  void run_gemm(const Instruction& in, const Kernel& k);
  void store_block(const Instruction& in, const GemmDesc& g, bool transposed);
  void run_vector(const Instruction& in, const Kernel& k);
  // Operand parts of a tensor for matrix passes: part 0 = hi, 1 = mid, 2 = lo; with
  // `channels_last` a rank-4 NCHW tensor is returned as NHWC. int8 chips: part 0 is quantized.
  const float* operand(int32_t t, int part, bool channels_last, const Window* conv);
  // W of GEMM kernel `kernel`, whose filter is read in place (GemmDesc::w_view), gathered into
  // [batch][K][N] (kept per kernel: a Conv and the ConvTransposes of its gradient gather the same
  // filter differently).
  const float* filter_operand(const GemmDesc& g, int32_t kernel, int part);
  float tensor_scale(int32_t t);  // int8: per-tensor activation scale
  // Constant weights [batch][K][N]: bf16 part, or int8-quantized per output column (scales in
  // weight_scales_), prepared once and kept across runs.
  const float* weight(int32_t t, int part);

  const Program& program_;
  std::vector<Buffer> store_;                // per tensor (aliases resolve to base)
  std::vector<int32_t> last_use_;            // per base tensor: last instruction reading/writing it
  std::vector<std::vector<int32_t>> frees_;  // per instruction: tensors released after it
  std::vector<int32_t> kernel_last_;         // per kernel: its last computing instruction
  std::vector<uint32_t> pending_;            // computing instructions of the kernel in progress
  std::unordered_map<int64_t, Buffer> operands_;  // key: (tensor * 4 + part) * 2 + layout
  std::unordered_map<int64_t, Buffer> filters_;   // key: kernel * 4 + part
  const float* keep_operand(Buffer& slot, Buffer out, int32_t t, int part, const float* src,
                            int64_t n);
  std::unordered_map<int64_t, Buffer> weights_;                    // key: tensor * 8 + part
  std::unordered_map<int32_t, std::vector<float>> weight_scales_;  // int8: per column, per W tensor
  std::unordered_map<int32_t, float> scales_;                      // int8: per tensor, this run
  std::vector<Buffer> pool_;                                       // released buffers for reuse
  // im2col blocks kept between instructions that share them (the matrix units of one row tile,
  // the column tiles of one row tile); a few entries, least recently used replaced.
  struct Im2colEntry {
    int64_t key[5] = {-1, -1, -1, -1, -1};
    Buffer block;
    uint64_t used = 0;
  };
  std::vector<Im2colEntry> im2col_ = std::vector<Im2colEntry>(8);
  uint64_t im2col_clock_ = 0;
  const float* im2col_block(const int64_t key[5], size_t elements, bool* fresh);
  std::vector<float> block_;  // one GEMM output block
};

}  // namespace mimic::models::tpu
