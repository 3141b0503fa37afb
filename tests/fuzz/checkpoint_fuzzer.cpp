// libFuzzer target: the training checkpoints users hand to a train step (`step.load(path)` in
// Python, TrainStep::load in C++): the .npz reader (zip directory, stored entries, the .npy inside)
// and load_state_dict's checks of every name and type against the step's state. The step is the
// zoo mlp of `mimic train --model mlp --model-arg layers=1 in_features=4 classes=3 --momentum 0.9`
// (what wrote the seeds). Every input must load or end in a mimic::Error; a loaded state must save
// and read back to the same tensors, and a step must run on it. The state is restored after each
// input, so inputs do not depend on each other.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "frontend/api/npz.h"
#include "frontend/api/train.h"
#include "frontend/api/zoo.h"
#include "tests/fuzz/fuzz_file.h"

namespace {

struct Fixture {
  mimic::zoo::Model model;
  mimic::ir::TensorType input;
  std::unique_ptr<mimic::TrainStep> step;
  mimic::NamedTensors initial;
};

Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    mimic::zoo::ModelOptions mo;
    mo.params = {{"layers", 1}, {"in_features", 4}, {"classes", 3}};
    x.model = mimic::zoo::make("mlp", mo);
    x.input = {x.model.input_type.dtype, x.model.input_type.shape.bind_batch(2)};
    mimic::TrainOptions o;
    o.optimizer.momentum = 0.9;
    x.step = std::make_unique<mimic::TrainStep>(*x.model.module, x.input, mimic::Device("cpu"), o);
    x.initial = x.step->state_dict();
    return x;
  }();
  return f;
}

bool same(const mimic::ir::HostTensor& a, const mimic::ir::HostTensor& b) {
  return a.type() == b.type() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static mimic::fuzz::ScratchFile in(".npz"), out("_out.npz");
  Fixture& f = fixture();
  try {
    f.step->load(in.write(data, size));
  } catch (const mimic::Error&) {
    f.step->load_state_dict(f.initial);
    return 0;
  }
  mimic::NamedTensors loaded = f.step->state_dict();
  f.step->save(out.path());
  mimic::NamedTensors back = mimic::read_npz(out.path());
  if (back.size() != loaded.size()) std::abort();
  for (size_t i = 0; i < back.size(); ++i)
    if (back[i].first != loaded[i].first || !same(back[i].second, loaded[i].second)) std::abort();
  mimic::ir::HostTensor x(f.input.dtype, f.input.shape);
  mimic::ir::HostTensor y(mimic::ir::DType::i64, mimic::ir::Shape({f.input.shape[0]}));
  f.step->step(x, y);
  f.step->load_state_dict(f.initial);
  return 0;
}
