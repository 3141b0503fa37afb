// The zoo models at small sizes, lowered for the GPU and run by the host emulator, against the cpu
// backend (fp32 GEMMs: precision=highest). No GPU needed.
#include <gtest/gtest.h>

#include "backends/cuda/lower.h"
#include "frontend/api/compile.h"
#include "frontend/api/zoo.h"
#include "tests/conformance/op_cases.h"
#include "tests/cuda/program_emulator.h"

namespace mimic::testing {
namespace {

struct ZooCase {
  std::string model, layout;
  std::map<std::string, int64_t> params;
  int64_t batch;
};

void PrintTo(const ZooCase& z, std::ostream* os) {
  *os << z.model << " " << z.layout << " batch " << z.batch;
}

class EmulatedZoo : public ::testing::TestWithParam<ZooCase> {};

TEST_P(EmulatedZoo, MatchesCpu) {
  const ZooCase& z = GetParam();
  zoo::ModelOptions o{z.layout, 5, z.params};
  zoo::Model m = zoo::make(z.model, o);
  ir::Graph g = zoo::build(z.model, o);
  CompileOptions co;
  co.batch = z.batch;
  Executable cpu = compile(g, Device("cpu"), co);
  std::vector<ir::HostTensor> inputs =
      random_inputs(cpu.graph(), 11, m.int_input_high > 0 ? m.int_input_high : 100);
  std::vector<ir::HostTensor> want = cpu.run(inputs).outputs;
  backends::CompileOptions bo;
  bo.precision = "highest";
  backends::cuda::Program p = backends::cuda::lower(cpu.graph(), backends::cuda::parse_options(bo));
  std::vector<ir::HostTensor> got = emulate_program(p, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(compare_tensors(got[i], want[i], {1e-3, 1e-3}), "")
        << z.model << " " << z.layout << " output " << i;
}

std::vector<ZooCase> zoo_cases() {
  std::map<std::string, int64_t> small{{"image_size", 32}, {"classes", 10}};
  return {{"mlp", "nchw", {{"layers", 2}, {"hidden", 32}, {"in_features", 20}}, 3},
          {"resnet18", "nchw", small, 2},
          {"resnet18", "nhwc", small, 2},
          {"resnet50", "nchw", small, 2},
          {"resnet50", "nhwc", small, 1},
          {"mobilenet_v2", "nchw", small, 2},
          {"mobilenet_v2", "nhwc", small, 2},
          {"bert",
           "nchw",
           {{"layers", 2}, {"hidden", 64}, {"heads", 4}, {"seq", 16}, {"vocab", 100}},
           2}};
}

std::string zoo_name(const ::testing::TestParamInfo<ZooCase>& info) {
  return info.param.model + "_" + info.param.layout;
}

INSTANTIATE_TEST_SUITE_P(Models, EmulatedZoo, ::testing::ValuesIn(zoo_cases()), zoo_name);

}  // namespace
}  // namespace mimic::testing
