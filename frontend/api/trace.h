// mimic::TraceScope: while it lives, every Executable::run in this process is recorded as one run
// in an SQLite trace file (created when missing; many runs and processes may share a file).
//
//   {
//     mimic::TraceScope trace("runs.db");
//     exe.run(inputs);            // run row (model, batch, device, config), devices, tracks,
//     exe.run(other_inputs);      // ops, events; status done, or failed with the error
//     trace.close();              // optional: waits for the disk and reports write errors
//   }
//
// Opening errors (not an SQLite file, not a trace, read-only location, newer schema version) are
// mimic::IoError with a one-line message; the file is then left exactly as it was. Scopes nest:
// the innermost records. Runs on several threads at once are recorded as separate runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mimic {

struct TraceOptions {
  size_t batch_rows = 10000;    // rows per write batch
  int flush_interval_ms = 100;  // a partial batch waits at most this long
};

class TraceScope {
 public:
  explicit TraceScope(const std::string& path, const TraceOptions& options = {});
  ~TraceScope();  // stops recording and closes the file; never throws (use close() for errors)
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  const std::string& path() const;
  // Ids (in the file) of the runs recorded so far; waits until they are written.
  std::vector<int64_t> run_ids();
  // Stops recording, writes everything and closes the file. Throws IoError if writing failed.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mimic
