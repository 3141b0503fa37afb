// Single-GEMM cycle counts: the matrix unit's fold-by-fold schedule and the whole emulator
// (compiler, SystemC chip, report) must give exactly the closed-form dataflow formulas of
// models/tpu/dataflow.h for several shapes, array sizes, all three dataflows, with weight
// double-buffering off and on.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "models/tpu/dataflow.h"
#include "models/tpu/matrix_unit.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

using models::tpu::Dataflow;
using models::tpu::FoldPlan;
using models::tpu::FoldScheduler;
using models::tpu::GemmDims;
namespace tpu = models::tpu;

const Dataflow kDataflows[] = {Dataflow::weight_stationary, Dataflow::output_stationary,
                               Dataflow::input_stationary};

// Hand-checked instances of the closed forms.
TEST(DataflowFormula, KnownValues) {
  // WS, 4x4 array, M=10, K=8, N=4: F = 2 folds, T = 10, L = 6.
  EXPECT_EQ(tpu::gemm_cycles(Dataflow::weight_stationary, {10, 8, 4}, 4, 4, false, 1),
            2u * (4 + 10 + 6));
  EXPECT_EQ(tpu::gemm_cycles(Dataflow::weight_stationary, {10, 8, 4}, 4, 4, true, 1),
            4u + 1 * 10 + 10 + 6);
  // A fold shorter than the weight shift stalls for the difference: T = 2 < R = 4.
  EXPECT_EQ(tpu::gemm_cycles(Dataflow::weight_stationary, {2, 8, 4}, 4, 4, true, 1),
            4u + 1 * 4 + 2 + 6);
  // OS streams K; IS streams N.
  EXPECT_EQ(tpu::gemm_cycles(Dataflow::output_stationary, {8, 5, 8}, 4, 4, false, 1),
            4u * (4 + 5 + 6));
  EXPECT_EQ(tpu::gemm_cycles(Dataflow::input_stationary, {8, 4, 7}, 4, 4, false, 1),
            2u * (4 + 7 + 6));
  // Passes multiply the folds (precision high = 3 bf16 passes).
  EXPECT_EQ(tpu::gemm_cycles(Dataflow::weight_stationary, {10, 8, 4}, 4, 4, false, 3),
            6u * (4 + 10 + 6));
  // TPUv1: a 256x256 fold of B rows costs about B + 2*256 cycles without double-buffering.
  EXPECT_EQ(tpu::gemm_cycles(Dataflow::weight_stationary, {200, 256, 256}, 256, 256, false, 1),
            256u + 200 + 510);
}

// The unit's schedule (iterative, with weight-arrival times) reduces to the closed form when every
// weight tile is on chip in time, and only adds stall (not busy) cycles when tiles arrive late.
TEST(DataflowFormula, FoldScheduleEqualsClosedForm) {
  const std::pair<int64_t, int64_t> arrays[] = {{4, 4},     {8, 16},    {16, 8},
                                                {128, 128}, {256, 256}, {32, 64}};
  const GemmDims shapes[] = {{1, 1, 1},       {7, 9, 5},      {100, 300, 200},
                             {513, 129, 257}, {64, 2048, 64}, {3, 1000, 17}};
  int checked = 0;
  for (Dataflow d : kDataflows)
    for (auto [r, c] : arrays)
      for (const GemmDims& g : shapes)
        for (bool db : {false, true})
          for (int64_t passes : {1, 3}) {
            FoldPlan plan = tpu::fold_plan(d, g, r, c, passes);
            FoldScheduler s(r, c, db, plan.stream);
            for (int64_t f = 0; f < plan.folds; ++f) s.next(0);
            uint64_t want = tpu::gemm_cycles(d, g, r, c, db, passes);
            EXPECT_EQ(s.finish().end, want)
                << tpu::dataflow_name(d) << " " << r << "x" << c << " db " << db;
            EXPECT_EQ(s.finish().busy, want);
            ++checked;
          }
  EXPECT_EQ(checked, 3 * 6 * 6 * 2 * 2);
}

// Weight tiles arriving every 1000 cycles (memory-bound): the array idles between folds. The
// idle time is stall, not busy time; each fold then pays its full load and stream.
TEST(DataflowFormula, LateWeightsAreStallsNotWork) {
  GemmDims g{32, 512, 128};  // 4 folds of 32 rows on a 128x128 array
  const uint64_t r = 128, t = 32, skew = 254;
  for (bool db : {false, true}) {
    FoldPlan plan = tpu::fold_plan(Dataflow::weight_stationary, g, 128, 128, 1);
    ASSERT_EQ(plan.folds, 4);
    FoldScheduler s(128, 128, db, plan.stream);
    for (int64_t f = 0; f < plan.folds; ++f) s.next(1000 * static_cast<uint64_t>(f + 1));
    EXPECT_EQ(s.finish().end, 4000 + r + t + skew) << db;  // the last tile arrives at 4000
    EXPECT_EQ(s.finish().busy, 4 * (r + t) + (db ? skew : 4 * skew)) << db;
    EXPECT_GE(s.finish().busy, tpu::gemm_cycles(Dataflow::weight_stationary, g, 128, 128, db, 1))
        << db;
  }
}

struct Case {
  Dataflow dataflow;
  int64_t rows, cols, m, k, n;
  bool db;
  std::string precision = "default";
};

// Through the whole emulator: one core with one matrix unit, memories large enough that the GEMM is
// one tile with its weights staged on chip; the unit's busy cycles must equal the formula.
TEST(DataflowEmulator, SingleGemmMatchesTheFormula) {
  std::vector<Case> cases;
  for (Dataflow d : kDataflows)
    for (bool db : {false, true}) {
      cases.push_back({d, 128, 128, 256, 384, 256, db});
      cases.push_back({d, 32, 32, 100, 70, 45, db});
      cases.push_back({d, 64, 16, 24, 200, 96, db});
    }
  cases.push_back({Dataflow::weight_stationary, 128, 128, 64, 256, 128, true, "high"});
  cases.push_back({Dataflow::output_stationary, 64, 64, 64, 64, 64, false, "highest"});
  for (const Case& t : cases) {
    auto o = tpu_test::options({{"cores", "1"},
                                {"mxu.per_core", "1"},
                                {"mxu.rows", std::to_string(t.rows)},
                                {"mxu.cols", std::to_string(t.cols)},
                                {"mxu.dataflow", tpu::dataflow_name(t.dataflow)},
                                {"mxu.weight_double_buffering", t.db ? "true" : "false"},
                                {"mxu.accumulator_bytes", "1073741824"},
                                {"onchip.bytes", "1073741824"}},
                               t.precision, true);
    auto r = tpu_test::run(tpu_test::matmul_graph(t.m, t.k, t.n), "tpu-emu:v4", o).report;
    const backends::UnitReport* mxu = tpu_test::unit(r, "core0_mxu0");
    ASSERT_NE(mxu, nullptr);
    int64_t passes = t.precision == "high" ? 3 : t.precision == "highest" ? 6 : 1;
    uint64_t want = tpu::gemm_cycles(t.dataflow, {t.m, t.k, t.n}, t.rows, t.cols, t.db, passes);
    EXPECT_EQ(mxu->busy_cycles, want)
        << fmt::format("{} {}x{} GEMM {}x{}x{} db {} {}", tpu::dataflow_name(t.dataflow), t.rows,
                       t.cols, t.m, t.k, t.n, t.db, t.precision);
    EXPECT_GE(r.cycles, want);  // plus DMA, epilogue and any weight stall
  }
}

// Double-buffering hides weight shifts: the same GEMM is faster with it, by about R cycles per
// fold.
TEST(DataflowEmulator, DoubleBufferingHidesWeightShifts) {
  auto cycles = [](bool db) {
    auto o = tpu_test::options({{"cores", "1"},
                                {"mxu.per_core", "1"},
                                {"mxu.weight_double_buffering", db ? "true" : "false"}},
                               "default", true);
    auto r = tpu_test::run(tpu_test::matmul_graph(512, 1024, 512), "tpu-emu:v4", o).report;
    return tpu_test::unit(r, "core0_mxu0")->busy_cycles;
  };
  uint64_t off = cycles(false), on = cycles(true);
  // 32 folds of 512 rows: off pays R + L = 382 more per fold.
  EXPECT_EQ(off - on,
            tpu::gemm_cycles(Dataflow::weight_stationary, {512, 1024, 512}, 128, 128, false, 1) -
                tpu::gemm_cycles(Dataflow::weight_stationary, {512, 1024, 512}, 128, 128, true, 1));
  EXPECT_GT(off, on + 32 * 300);
}

}  // namespace
}  // namespace mimic
