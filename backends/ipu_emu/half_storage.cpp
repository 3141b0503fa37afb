#include "backends/ipu_emu/half_storage.h"

#include <cmath>

#include "backends/ipu_emu/expression_fusion.h"
#include "base/numeric_formats.h"

namespace mimic::backends::ipu_emu {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

float stochastic_round_f16(float x, uint64_t random) {
  float nearest = numeric::round_to_f16(x);
  if (nearest == x || !std::isfinite(x) || !std::isfinite(nearest)) return nearest;
  // The other neighbour: one fp16 step of magnitude away from `nearest`, towards x.
  uint16_t bits = numeric::f32_to_f16(nearest);
  uint16_t magnitude = bits & 0x7FFF, sign = bits & 0x8000;
  bool nearest_is_larger = std::fabs(nearest) > std::fabs(x);
  if (nearest_is_larger && magnitude == 0) return nearest;
  uint16_t other_bits =
      sign | static_cast<uint16_t>(nearest_is_larger ? magnitude - 1 : magnitude + 1);
  float other = numeric::f16_to_f32(other_bits);
  if (!std::isfinite(other)) return nearest;
  float below = std::fmin(nearest, other), above = std::fmax(nearest, other);
  double up = (static_cast<double>(x) - below) / (static_cast<double>(above) - below);
  double u = static_cast<double>(random >> 11) * 0x1.0p-53;
  return u < up ? above : below;
}

HalfStorage::HalfStorage(const ir::Graph& g, bool half, bool fp32_master, bool stochastic)
    : g_(g),
      half_(half),
      fp32_master_(fp32_master),
      stochastic_(stochastic),
      summed_square_(g.num_values(), false) {
  // Graph outputs count as readers that are no sums.
  std::vector<int> readers(g.num_values(), 0), sums(g.num_values(), 0);
  for (ir::ValueId v : g.outputs()) ++readers[v];
  for (const ir::Node& n : g.nodes())
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] == ir::kNoValue) continue;
      ++readers[n.inputs[k]];
      sums[n.inputs[k]] +=
          k == 0 && (n.op == ir::OpType::ReduceSum || n.op == ir::OpType::ReduceMean);
    }
  for (const ir::Node& n : g.nodes())
    if (is_square(n))
      summed_square_[n.outputs[0]] =
          readers[n.outputs[0]] > 0 && readers[n.outputs[0]] == sums[n.outputs[0]];
}

bool HalfStorage::is_master(ir::ValueId v) const {
  const ir::Value& val = g_.value(v);
  if (val.role == ir::ValueRole::weight || val.role == ir::ValueRole::optimizer_state ||
      val.role == ir::ValueRole::buffer)
    return true;
  return val.producer >= 0 && g_.node(val.producer).phase == ir::StepPhase::update;
}

bool HalfStorage::stored_half(ir::ValueId v) const {
  return half_ && g_.value(v).type.dtype == ir::DType::f32 && !(fp32_master_ && is_master(v)) &&
         !summed_square_[v];
}

bool HalfStorage::read_as_half(ir::ValueId v, const ir::Node& reader) const {
  return half_ && fp32_master_ && reader.phase != ir::StepPhase::update &&
         g_.value(v).type.dtype == ir::DType::f32 && is_master(v);
}

void HalfStorage::round(float* data, int64_t n, ir::ValueId v, uint64_t run) const {
  if (!stochastic_) {
    numeric::round_to_f16(data, static_cast<size_t>(n));
    return;
  }
  const uint64_t stream = splitmix64(run * 0x100000001B3ull ^ static_cast<uint64_t>(v));
  for (int64_t i = 0; i < n; ++i)
    data[i] = stochastic_round_f16(data[i], splitmix64(stream + static_cast<uint64_t>(i)));
}

ir::HostTensor HalfStorage::rounded_copy(const ir::HostTensor& t, ir::ValueId v,
                                         uint64_t run) const {
  ir::HostTensor c = t.clone();
  round(c.data<float>(), c.numel(), v, run);
  return c;
}

}  // namespace mimic::backends::ipu_emu
