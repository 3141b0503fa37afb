// SCALE-Sim v2 compatibility model: the numbers SCALE-Sim v2 (Samajdar et al., ISPASS 2020;
// github.com/scalesim-project/scale-sim-v2) reports for one convolution or GEMM layer on one
// systolic array, in its CALC and USER interface-bandwidth modes, computed without building its
// operand, demand and trace matrices.
//
// What is reproduced, cycle for cycle and count for count (the semantics of SCALE-Sim's
// operand_matrix, systolic_compute_{os,ws,is}, double_buffered_scratchpad, the estimate-bandwidth
// read buffer and the write buffer; no code of it is used):
//   - the GEMM view of a conv: Sr x T times T x Sc with (os) Sr = ofmap pixels, Sc = filters,
//     T = window; (ws) Sr = window, Sc = filters, T = pixels; (is) Sr = window, Sc = pixels,
//     T = filters; folds ordered column fold outer, row fold inner;
//   - per-fold demand rows: os T + R + C - 2, ws and is 2R + C + T - 2 (the stationary block
//     loads in R rows, then skew and an inter-fold gap of C - 1 or R - 1 null rows);
//   - Total Cycles = demand rows - 1 + stalls (SCALE-Sim reports the cycle of the last ofmap
//     write, one less than the number of cycles);
//   - Mapping Efficiency and Compute Util averaged over folds with CPython >= 3.12's float sum
//     (Neumaier compensation; Python 3.11 and older differ in the last digits), the per-fold
//     compute-util cycles being os T + R + C - 2, ws/is 2R + 2C + T - 3;
//   - SRAM reads/writes: the shapes of the demand blocks (conv windows that overrun the ifmap
//     count as reads), plus R + C phantom ofmap writes per fold in os;
//   - DRAM reads of the ifmap/filter read buffers: SCALE-Sim's estimate buffer keeps the distinct
//     addresses seen since the last of its prefetch epochs (50 sets of floor(words/100) words),
//     so reads = distinct addresses per epoch, emulated here address by address;
//   - DRAM writes of the ofmap write buffer: its line/drain bookkeeping (lines of ArrayWidth
//     words, forced flushes of partial lines that later drain as full ones) and the write stalls
//     it raises, emulated element count by element count;
//   - the start/stop cycles of every SRAM and DRAM stream, including the negative DRAM start
//     cycles of the first prefetch.
// In the USER interface-bandwidth mode (ArchConfig::user_bandwidth > 0) the ifmap and filter
// buffers are SCALE-Sim's stalling read buffers instead (scalesim_read_buffer.h), fed in the
// prefetch order of its create_*_prefetch_mat (the folds' blocks, read along anti-diagonals where
// the demand is skewed), and the ofmap buffer drains `user_bandwidth` words per cycle: stalls are
// the largest of the three buffers' per demand row, as SCALE-Sim adds them.
// Layers where SCALE-Sim itself fails (a division by zero in its CALC-mode bandwidth estimate
// when two prefetch epochs end in one cycle) raise an error naming the layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/tpu/tpu_spec.h"

namespace mimic::models::tpu::scalesim {

// [architecture_presets] of a SCALE-Sim config, and its interface-bandwidth mode.
struct ArchConfig {
  int64_t rows = 0, cols = 0;  // ArrayHeight, ArrayWidth
  int64_t ifmap_sram_kb = 0, filter_sram_kb = 0, ofmap_sram_kb = 0;
  int64_t ifmap_offset = 0, filter_offset = 10000000, ofmap_offset = 20000000;
  Dataflow dataflow = Dataflow::weight_stationary;
  // InterfaceBandwidth USER: the first Bandwidth value (words per cycle, SCALE-Sim uses it for all
  // three buffers); 0: CALC.
  int64_t user_bandwidth = 0;
};

// One topology row (a GEMM M,N,K row is the conv M x K ifmap, 1 x K filter, N filters).
struct Layer {
  std::string name;
  int64_t ifmap_h = 0, ifmap_w = 0, filter_h = 0, filter_w = 0, channels = 0, num_filters = 0;
  int64_t stride_h = 1, stride_w = 1;
};

// The GEMM a layer maps to: M ofmap pixels, K window elements, N filters.
struct LayerGemm {
  int64_t ofmap_h = 0, ofmap_w = 0, m = 0, k = 0, n = 0;
};
LayerGemm layer_gemm(const Layer& l);

// First and last cycle of one access stream as SCALE-Sim prints them (Python floats).
struct Span {
  int64_t start = 0, stop = 0;
};

// One row of COMPUTE_REPORT, BANDWIDTH_REPORT and DETAILED_ACCESS_REPORT.
struct LayerReport {
  int64_t total_cycles = 0, stall_cycles = 0;
  double overall_util_pct = 0, mapping_eff_pct = 0, compute_util_pct = 0;
  Span sram_ifmap, sram_filter, sram_ofmap, dram_ifmap, dram_filter, dram_ofmap;
  int64_t sram_ifmap_reads = 0, sram_filter_reads = 0, sram_ofmap_writes = 0;
  int64_t dram_ifmap_reads = 0, dram_filter_reads = 0, dram_ofmap_writes = 0;
  double avg_sram_bw[3] = {0, 0, 0};  // ifmap, filter, ofmap words per cycle
  double avg_dram_bw[3] = {0, 0, 0};
};

// Throws InvalidArgument for parameters SCALE-Sim cannot run (zero sizes, a filter larger than the
// ifmap) and CompileError where SCALE-Sim itself fails on the layer.
LayerReport simulate_layer(const ArchConfig& arch, const Layer& layer);

// CPython >= 3.12 sum() of floats (Neumaier-compensated), as SCALE-Sim's fold averages use.
double python_sum(const std::vector<double>& values);

}  // namespace mimic::models::tpu::scalesim
