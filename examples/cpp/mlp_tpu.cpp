// The README's C++ example as a whole program: an MLP built from nn modules, run eagerly on the
// cpu, then compiled once for the emulated TPU v4 and run with a report. Built with the project
// (build/bin/example_mlp_tpu) and run by CTest; a program of your own links mimic_api the same way
// (examples/cpp/CMakeLists.txt).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/nn.h"

int main() {
  try {
    mimic::nn::Sequential model{std::make_shared<mimic::nn::Linear>(784, 256),
                                std::make_shared<mimic::nn::ReLU>(),
                                std::make_shared<mimic::nn::Linear>(256, 10)};
    std::vector<float> data(8 * 784);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
    auto x = mimic::Tensor::from<float>(data, {8, 784});
    std::vector<float> eager = model(x).to_floats();  // computed on x's device (cpu) when read

    mimic::ir::Graph g = mimic::nn::trace_module(model, "x", mimic::ir::DType::f32,
                                                 {mimic::ir::kBatch, 784}, "mlp");
    mimic::CompileOptions options;
    options.batch = 8;
    options.precision = "highest";  // fp32-faithful: the same numbers as the cpu's, within 1e-5
    auto exe = mimic::compile(g, "tpu-emu:v4", options);
    auto result = exe.run({x.host()});
    const float* tpu = result.outputs[0].data<float>();
    float worst = 0;
    for (size_t i = 0; i < eager.size(); ++i)
      worst = std::max(worst, std::abs(tpu[i] - eager[i]));
    std::printf("outputs %zu, cycles %llu, device %.3g s, max |tpu - cpu| %.3g\n", eager.size(),
                static_cast<unsigned long long>(result.report.cycles), result.report.device_seconds,
                worst);
    return worst < 1e-4f && result.report.cycles > 0 ? 0 : 1;
  } catch (const mimic::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
