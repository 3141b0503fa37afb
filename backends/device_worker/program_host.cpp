#include "backends/device_worker/program_host.h"

#include <fmt/format.h>

#include <cctype>

#include "base/error.h"

namespace mimic::backends {

std::vector<uint8_t> ProgramHost::handle(const std::vector<uint8_t>& request) {
  wire::Reader r(request);
  uint8_t kind = r.u8();
  switch (kind) {
    case kLoadProgram: {
      std::unique_ptr<LoadedProgram> program = load(r);
      uint64_t id = next_id_++;
      programs_[id] = std::move(program);
      wire::Writer w;
      w.u64(id);
      return std::move(w.data());
    }
    case kRunProgram:
      return run_request(r);
    case kUnloadProgram:
      programs_.erase(r.u64());
      return {};
    default:  // the byte as a character only when printable: the message stays one line
      throw RuntimeError(fmt::format("{} worker: unknown request {}(byte {})", device_,
                                     std::isprint(kind) ? fmt::format("'{}' ", char(kind)) : "",
                                     int(kind)));
  }
}

std::vector<uint8_t> ProgramHost::run_request(wire::Reader& r) {
  if (!broken_.empty())
    throw RuntimeError(
        fmt::format("{}: the hardware model failed in an earlier run ({}) and cannot run again",
                    device_, broken_));
  uint64_t id = r.u64();
  auto it = programs_.find(id);
  if (it == programs_.end())
    throw RuntimeError(
        fmt::format("{} worker: no loaded program {} (was it unloaded?)", device_, id));
  wire::Writer w;
  run(*it->second, r, w);
  return std::move(w.data());
}

void ProgramHost::throw_model_failure() const {
  throw RuntimeError(fmt::format("{}: the hardware model failed: {}", device_, broken_));
}

}  // namespace mimic::backends
