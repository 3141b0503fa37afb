// libFuzzer target: trace databases given to `mimic trace list|summary|export|diff` and
// `mimic report` (a corrupted, truncated or hand-edited SQLite file). The input is written to a
// scratch file, opened with TraceReader and every read the commands make is done on up to three
// of its runs. Every input must end in output or a mimic::Error; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "base/error.h"
#include "frontend/cli/trace_print.h"
#include "tests/fuzz/fuzz_file.h"
#include "traces/export.h"
#include "traces/html_report.h"
#include "traces/run_diff.h"
#include "traces/trace_reader.h"

namespace {

using namespace mimic;

void read_run(const traces::TraceReader& r, int64_t id) {
  std::ostringstream out;
  cli::print_summary(out, r, id, false, 0);
  cli::print_summary(out, r, id, true, 20);
  cli::summary_json(r, id).dump(
      2, ' ', false, nlohmann::json::error_handler_t::replace);  // as `mimic trace summary --json`
  traces::export_chrome(r, {id}, out);
  traces::export_csv(r, {id}, out);
  traces::write_html_report(r, id, out);
  traces::RunDiff diff = traces::diff_runs(r, id, r, id);
  cli::print_diff(out, diff, 10);
  cli::diff_json(diff).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile db(".db");
  for (const char* suffix : {"-wal", "-shm", "-journal"}) std::remove((db.path() + suffix).c_str());
  try {
    traces::TraceReader r(db.write(data, size));
    std::vector<traces::RunRecord> runs = r.runs();
    std::ostringstream out;
    cli::print_run_list(out, db.path(), runs);
    for (const auto& run : runs)
      cli::run_json(run).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    r.resolve_run("");
    for (size_t i = 0; i < runs.size() && i < 3; ++i) {
      try {
        read_run(r, runs[i].id);
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
