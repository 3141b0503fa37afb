// Every op case, and the zoo models at small sizes, lowered for the GPU and executed by the host
// emulator (program_emulator.h: the kernels' own per-element and per-row bodies, cuBLAS's
// column-major GEMM arguments), against the cpu backend. Runs without a GPU; checks the lowering,
// the kernel parameters, the GEMM/convolution geometry and the memory plan of every case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/common.h"
#include "backends/cuda/lower.h"
#include "frontend/api/compile.h"
#include "frontend/api/zoo.h"
#include "tests/conformance/op_cases.h"
#include "tests/cuda/program_emulator.h"

namespace mimic::testing {
namespace {

using backends::cuda::CudaOptions;

// The cases the cuda backend runs entirely on the GPU (op_conformance_test checks the others'
// expected fallbacks).
const std::vector<OpCase>& cases() {
  static const std::vector<OpCase> on_gpu = [] {
    std::vector<OpCase> out;
    for (OpCase& c : op_cases())
      if (runs_entirely_on("cuda", c)) out.push_back(std::move(c));
    return out;
  }();
  return on_gpu;
}

std::vector<ir::HostTensor> run_cpu(const ir::Graph& g, const std::vector<ir::HostTensor>& inputs) {
  return mimic::compile(g, Device("cpu")).run(inputs).outputs;
}

CudaOptions highest_with(const std::map<std::string, std::string>& options) {
  backends::CompileOptions o;
  o.precision = "highest";
  o.options = options;
  return backends::cuda::parse_options(o);
}

TEST(CudaCases, EveryCaseRunsEntirelyOnTheGpu) {
  for (const OpCase& c : cases()) {
    ir::Graph g = prepare_graph(c.graph, 0);
    for (const ir::Node& n : g.nodes())
      if (!backends::is_folded(g, n)) {
        EXPECT_EQ(backends::cuda::unsupported_reason(g, n), "") << c.name << ": node " << n.name;
      }
  }
}

class EmulatedOp : public ::testing::TestWithParam<size_t> {};

TEST_P(EmulatedOp, MatchesCpu) {
  const OpCase& c = cases()[GetParam()];
  SCOPED_TRACE(c.name);
  ir::Graph g = prepare_graph(c.graph, 0);
  backends::cuda::Program p = backends::cuda::lower(g, highest_with(c.options));
  std::vector<ir::HostTensor> want = run_cpu(c.graph, c.inputs);
  // The planned arena with the GPU's choice of index width, and separate buffers with 64-bit
  // indices.
  for (EmulatedMemory memory : {EmulatedMemory::planned_arena, EmulatedMemory::separate_buffers}) {
    EmulatedIndex index =
        memory == EmulatedMemory::planned_arena ? EmulatedIndex::automatic : EmulatedIndex::wide;
    std::vector<ir::HostTensor> got = emulate_program(p, c.inputs, memory, index);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      std::string diff = compare_tensors(got[i], want[i], tolerance_for(c, want[i].dtype(), false));
      EXPECT_EQ(diff, "") << "output " << i
                          << (memory == EmulatedMemory::planned_arena
                                  ? " (planned arena, 32-bit indices)"
                                  : " (64-bit)");
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string s = cases()[info.param].name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllCases, EmulatedOp, ::testing::Range<size_t>(0, cases().size()),
                         case_name);

TEST(EmulatedOp, OutOfRangeGatherIndexIsReported) {
  ir::Graph g("gather");
  ir::ValueId data = g.add_constant("table", ir::HostTensor(ir::DType::f32, ir::Shape({5, 2})));
  ir::ValueId idx = g.add_input("ids", ir::DType::i64, ir::Shape({3}));
  g.add_output(g.add_node(ir::OpType::Gather, "lookup", {data, idx})[0]);
  ir::Graph prepared = prepare_graph(g, 0);
  backends::cuda::Program p = backends::cuda::lower(prepared, CudaOptions{});
  ir::HostTensor ids(ir::DType::i64, ir::Shape({3}));
  ids.data<int64_t>()[1] = 5;
  try {
    emulate_program(p, {ids});
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("index 5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mimic::testing
