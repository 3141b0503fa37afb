// Tile memory: the batch-size loop IPU users write (compile_only over growing batches until the
// model stops fitting), checked against memory arithmetic; Poplar-style out-of-memory errors that
// name the tile, the bytes and the op; the memory report with allow_out_of_memory.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "base/error.h"
#include "tests/ipu/ipu_test_util.h"

namespace mimic {
namespace {

using namespace ipu_test;

constexpr double kTiles = 1472, kTileBytes = 638976;
constexpr int64_t kC = 64, kHW = 112;

// One 1x1 convolution, 64 -> 64 channels on 112 x 112 images: its memory is all activations.
ir::Graph stem_conv() {
  return conv_stack(kC, kHW, 1, 1, 1);
}

double activation_bytes(int64_t batch) {
  return double(batch) * kC * kHW * kHW * 4;
}

CompileOptions loop_options(int64_t batch, bool allow_oom) {
  CompileOptions o = options({}, batch);
  if (allow_oom) o.options["allow_out_of_memory"] = "true";
  o.compile_only = true;
  return o;
}

TEST(IpuMemory, BatchSizeLoopStopsWhereTheArithmeticSays) {
  ir::Graph g = stem_conv();
  Device gc200("ipu-emu:gc200");
  int64_t first_oom = 0;
  for (int64_t batch : {16, 32, 64, 128, 256}) {
    // The memory report of this batch, fitting or not.
    Executable report = compile(g, gc200, loop_options(batch, true));
    const auto& m = report.compile_report().metrics;
    const auto& plan = report.compile_report().tables.at("ipu_plans").rows.at(0);
    double plan_tiles = plan[6], temps = plan[8];
    // Arithmetic: while the convolution runs a tile holds its share of the input (streamed over
    // all tiles), of the output and of the weights (over the plan's tiles), the input rows and
    // weight block it received (the plan's temporaries), plus code and vertex state (<= 64 KiB
    // for a one-layer program).
    double act = activation_bytes(batch);
    double predicted = std::ceil(act / kTiles) + std::ceil(act / plan_tiles) + temps +
                       std::ceil(kC * kC * 4 / plan_tiles);
    double used = m.at("max_tile_bytes");
    EXPECT_GE(used, predicted) << "batch " << batch;
    EXPECT_LE(used, predicted + 65536) << "batch " << batch;
    // Every plan needs at least the input, the output and the received input window.
    double floor = 3 * act / kTiles;
    bool oom = m.at("out_of_memory") != 0;
    EXPECT_EQ(oom, used > kTileBytes) << "batch " << batch;
    if (floor > kTileBytes) {
      EXPECT_TRUE(oom) << "batch " << batch << " cannot fit: " << floor;
    }
    if (predicted + 65536 <= kTileBytes) {
      EXPECT_FALSE(oom) << "batch " << batch;
    }
    // The loop users write: compile_only, catch the error.
    try {
      compile(g, gc200, loop_options(batch, false));
      EXPECT_FALSE(oom) << "batch " << batch << " should not fit";
    } catch (const OutOfMemoryError& e) {
      EXPECT_TRUE(oom) << e.what();
      EXPECT_EQ(e.bytes_used(), static_cast<int64_t>(used));
      if (!first_oom) first_oom = batch;
    }
  }
  // 3 x activations / tiles passes 638,976 bytes between batch 64 (420 KiB) and 128 (837 KiB); at
  // 64 the plan keeps the whole weight block (16 KiB) on every tile and the program adds code.
  EXPECT_LT(3 * activation_bytes(64) / kTiles + 16384 + 65536, kTileBytes);
  EXPECT_GT(3 * activation_bytes(128) / kTiles, kTileBytes);
  EXPECT_EQ(first_oom, 128);
}

TEST(IpuMemory, OutOfMemoryErrorNamesTileBytesAndOp) {
  try {
    compile(stem_conv(), Device("ipu-emu:gc200"), loop_options(256, false));
    FAIL() << "batch 256 cannot fit";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
    EXPECT_GE(e.tile(), 0);
    EXPECT_LT(e.tile(), 1472);
    EXPECT_EQ(e.bytes_available(), 638976);
    EXPECT_GT(e.bytes_used(), e.bytes_available());
    EXPECT_NE(e.op().find("conv0"), std::string::npos) << e.op();
    std::string m = e.what();
    std::regex poplar(
        "^Out of memory on tile ([0-9]+): ([0-9]+) bytes used but tiles only have 638976 bytes");
    std::smatch match;
    ASSERT_TRUE(std::regex_search(m, match, poplar)) << m;
    EXPECT_EQ(std::stoll(match[1]), e.tile());
    EXPECT_EQ(std::stoll(match[2]), e.bytes_used());
    EXPECT_NE(m.find("'conv0' (Conv)"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line";
  }
}

TEST(IpuMemory, WeightsTooLargeForOneIpuSayHowMuchAndToShard) {
  // Sixteen 4096 x 4096 fp32 layers: 1.07 GB of weights, more than a GC200's 941 MB.
  ir::Graph g = wide_mlp(4096, 16);
  try {
    compile(g, Device("ipu-emu:gc200"), loop_options(16, false));
    FAIL() << "1.07 GB of weights cannot fit one IPU";
  } catch (const OutOfMemoryError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("the weights alone take 1073.7 MB of this IPU's 940.6 MB: shard the model "
                     "over more IPUs (option num_ipus; 1 pipeline stage(s) now)"),
              std::string::npos)
        << m;
  }
  CompileOptions four = loop_options(16, false);
  four.options["num_ipus"] = "4";
  EXPECT_NO_THROW(compile(g, Device("ipu-emu:gc200"), four)) << "sharded over four IPUs it fits";
  // An activation-bound program gets no such advice.
  try {
    compile(stem_conv(), Device("ipu-emu:gc200"), loop_options(256, false));
    FAIL() << "batch 256 cannot fit";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(std::string(e.what()).find("shard"), std::string::npos) << e.what();
  }
}

TEST(IpuMemory, AllowOutOfMemoryKeepsTheReportAndRuns) {
  ir::Graph g = stem_conv();
  CompileOptions o = loop_options(128, true);
  Executable e = compile(g, Device("ipu-emu:gc200"), o);
  const auto& r = e.compile_report();
  EXPECT_EQ(r.metrics.at("out_of_memory"), 1);
  const auto& t = r.tables.at("ipu_tile_memory");
  ASSERT_EQ(t.rows.size(), 1472u);
  EXPECT_GT(t.rows[0][2], 638976) << "rows are sorted fullest first";
  EXPECT_EQ(r.metrics.at("max_tile_bytes"), t.rows[0][2]);
  EXPECT_EQ(r.metrics.at("out_of_memory_tile"), t.rows[0][1]);
  bool noted = false;
  for (const auto& n : r.notes) noted = noted || n.rfind("Out of memory on tile", 0) == 0;
  EXPECT_TRUE(noted);
  // Like Poplar's IPUModel, an out-of-memory program still runs (timing only here).
  o.compile_only = false;
  o.timing_only = true;
  CaptureScope scope;
  Executable run = compile(g, Device("ipu-emu:gc200"), o);
  RunOutput out = run.run({ir::HostTensor(ir::DType::f32, run.graph().input_type(0).shape)});
  EXPECT_GT(out.report.cycles, 0u);
  EXPECT_EQ(out.report.metrics.at("out_of_memory"), 1);
  EXPECT_EQ(out.report.tables.at("ipu_tile_memory").rows.size(), 1472u);
  EXPECT_EQ(scope.sink.tables["ipu_tile_memory"].size(), 1472u);
}

TEST(IpuMemory, MemoryProportionBoundsTemporaries) {
  ir::Graph g = matmul_graph(512, 512, 512);
  for (const char* mp : {"0.05", "0.6"}) {
    CompileOptions o = options({{"memory_proportion", mp}});
    o.compile_only = true;
    Executable e = compile(g, Device("ipu-emu:gc200"), o);
    double temps = e.compile_report().tables.at("ipu_plans").rows.at(0)[8];
    EXPECT_LE(temps, std::stod(mp) * kTileBytes) << "memory_proportion " << mp;
  }
  // A tighter budget cannot give a faster plan.
  auto est = [&](const char* mp) {
    CompileOptions o = options({{"memory_proportion", mp}});
    o.compile_only = true;
    return compile(g, Device("ipu-emu:gc200"), o)
        .compile_report()
        .tables.at("ipu_plans")
        .rows.at(0)[7];
  };
  EXPECT_GE(est("0.05"), est("0.6"));
}

TEST(IpuMemory, SmallerTilesOverflowSooner) {
  // The same layer on gc2 (256 KiB tiles) stops fitting at a smaller batch than on gc200.
  ir::Graph g = stem_conv();
  auto fits = [&](const std::string& device, int64_t batch) {
    try {
      compile(g, Device(device), loop_options(batch, false));
      return true;
    } catch (const OutOfMemoryError&) {
      return false;
    }
  };
  EXPECT_TRUE(fits("ipu-emu:gc200", 32));
  EXPECT_FALSE(fits("ipu-emu:gc2", 32));
  EXPECT_TRUE(fits("ipu-emu:gc2", 16));
}

}  // namespace
}  // namespace mimic
