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
    case kKeptValue: {
      LoadedProgram& program = find(r.u64());
      wire::Writer w;
      write_kept(program, r.u32(), w);
      return std::move(w.data());
    }
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
  LoadedProgram& program = find(r.u64());
  wire::Writer w;
  run(program, r, w);
  return std::move(w.data());
}

LoadedProgram& ProgramHost::find(uint64_t id) {
  auto it = programs_.find(id);
  if (it == programs_.end())
    throw RuntimeError(
        fmt::format("{} worker: no loaded program {} (was it unloaded?)", device_, id));
  return *it->second;
}

void ProgramHost::write_kept(LoadedProgram&, uint32_t input, wire::Writer&) {
  throw RuntimeError(fmt::format("{} worker: keeps no value for input {}", device_, input));
}

void ProgramHost::throw_model_failure() const {
  throw RuntimeError(fmt::format("{}: the hardware model failed: {}", device_, broken_));
}

}  // namespace mimic::backends
