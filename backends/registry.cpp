#include "backends/registry.h"

#include <fmt/format.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/ipu_emu/ipu_emu_backend.h"
#include "backends/tpu_emu/tpu_emu_backend.h"
#include "base/error.h"

// cuda is the one optional backend: it is built when CMake finds a CUDA toolkit.
#ifdef MIMIC_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

namespace mimic::backends {
namespace {

class MissingBackend final : public Backend {
 public:
  MissingBackend(std::string name, std::string reason, std::vector<std::string> args)
      : name_(std::move(name)), reason_(std::move(reason)), args_(std::move(args)) {}
  std::string name() const override { return name_; }
  std::vector<DeviceInfo> enumerate() const override {
    std::vector<DeviceInfo> out;
    for (const auto& a : args_) out.push_back(probe(a));
    return out;
  }
  DeviceInfo probe(const std::string& arg) const override {
    return DeviceInfo{arg.empty() ? name_ : name_ + ":" + arg, name_, false, reason_, ""};
  }
  bool supports_op(const ir::Graph&, const ir::Node&, const std::string&,
                   const CompileOptions&) const override {
    return false;
  }
  std::unique_ptr<Executable> compile(const ir::Graph&, const std::string& arg,
                                      const CompileOptions&) const override {
    throw DeviceUnavailableError(fmt::format("{}:{} is unavailable: {}", name_, arg, reason_));
  }

 private:
  std::string name_, reason_;
  std::vector<std::string> args_;
};

}  // namespace

std::unique_ptr<Backend> make_missing_backend(const std::string& name, const std::string& reason,
                                              std::vector<std::string> example_args) {
  return std::make_unique<MissingBackend>(name, reason, std::move(example_args));
}

Registry& Registry::global() {
  static Registry* registry = [] {
    auto* r = new Registry();
    r->add(cpu::make_backend());
    r->add(make_tpu_emu_backend());
    r->add(make_ipu_emu_backend());
#ifdef MIMIC_HAVE_CUDA
    r->add(make_cuda_backend());
#else
    r->add(make_missing_backend(
        "cuda", "mimic was built without CUDA (no CUDA toolkit found when configuring)", {"0"}));
#endif
    return r;
  }();
  return *registry;
}

void Registry::add(std::unique_ptr<Backend> backend) {
  backends_.push_back(std::move(backend));
}

const Backend* Registry::find(const std::string& name) const {
  for (const auto& b : backends_)
    if (b->name() == name) return b.get();
  return nullptr;
}

std::vector<const Backend*> Registry::all() const {
  std::vector<const Backend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

}  // namespace mimic::backends
