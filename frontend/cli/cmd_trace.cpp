// `mimic trace list|summary|export|diff`: query SQLite traces written by `mimic run --trace`.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "frontend/cli/cli_common.h"
#include "frontend/cli/trace_print.h"
#include "traces/export.h"
#include "traces/format.h"
#include "traces/output_file.h"
#include "traces/trace_reader.h"

namespace mimic::cli {
namespace {

using traces::TraceReader;

struct TraceArgs {
  std::string file, file_b, run, format, output, by = "type";
  std::vector<std::string> runs;
  int top = 0;
  bool json = false;
};

int list(const TraceArgs& a) {
  TraceReader reader(a.file);
  std::vector<traces::RunRecord> runs = reader.runs();
  if (a.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : runs) j.push_back(run_json(r));
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";  // trace text may be any bytes
    return 0;
  }
  print_run_list(std::cout, a.file, runs);
  return 0;
}

int summary(const TraceArgs& a) {
  if (a.by != "type" && a.by != "op")
    throw InvalidArgument(fmt::format("--by must be 'type' or 'op', got '{}'", a.by));
  if (a.top < 0) throw InvalidArgument(fmt::format("--top must be >= 0, got {}", a.top));
  TraceReader reader(a.file);
  int64_t id = reader.resolve_run(a.run);
  if (a.json) {
    std::cout
        << summary_json(reader, id).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
    return 0;
  }
  print_summary(std::cout, reader, id, a.by == "op", a.top);
  return 0;
}

int export_trace(const TraceArgs& a) {
  if (a.format != "chrome" && a.format != "csv")
    throw InvalidArgument(fmt::format("--format must be 'chrome' or 'csv', got '{}'", a.format));
  if (a.output.empty())
    throw InvalidArgument("give an output file: -o FILE (or -o - for standard output)");
  TraceReader reader(a.file);
  std::vector<int64_t> ids;
  for (const std::string& r : a.runs) ids.push_back(reader.resolve_run(r));
  traces::ExportStats stats;
  traces::write_output_file(a.output, [&](std::ostream& out) {
    stats = a.format == "chrome" ? traces::export_chrome(reader, ids, out)
                                 : traces::export_csv(reader, ids, out);
  });
  std::ostream& note = a.output == "-" ? std::cerr : std::cout;
  note << fmt::format("wrote {}: {} run(s), {} events", a.output, stats.runs, stats.events);
  if (a.format == "chrome")
    note << fmt::format(
        ", {} counter samples, {} tracks (open it in https://ui.perfetto.dev or chrome://tracing)",
        stats.counters, stats.threads);
  note << "\n";
  return 0;
}

int diff(const TraceArgs& a) {
  if (a.top < 0) throw InvalidArgument(fmt::format("--top must be >= 0, got {}", a.top));
  TraceReader reader_a(a.file);
  std::unique_ptr<TraceReader> second;
  if (!a.file_b.empty()) second = std::make_unique<TraceReader>(a.file_b);
  const TraceReader& reader_b = second ? *second : reader_a;
  int64_t run_a, run_b;
  if (second && a.runs.empty()) {
    run_a = reader_a.resolve_run("");
    run_b = reader_b.resolve_run("");
  } else if (a.runs.size() == 2) {
    run_a = reader_a.resolve_run(a.runs[0]);
    run_b = reader_b.resolve_run(a.runs[1]);
  } else {
    throw InvalidArgument(
        fmt::format("give two runs to compare: `mimic trace diff A.db B.db` (last run of each), or "
                    "--run X --run Y "
                    "(got {} file(s) and {} --run)",
                    second ? 2 : 1, a.runs.size()));
  }
  traces::RunDiff d = traces::diff_runs(reader_a, run_a, reader_b, run_b);
  if (a.json) {
    std::cout << diff_json(d).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  print_diff(std::cout, d, a.top == 0 ? 25 : a.top);
  return 0;
}

}  // namespace

Command add_trace_command(CLI::App& app) {
  auto a = std::make_shared<TraceArgs>();
  CLI::App* cmd =
      app.add_subcommand("trace", "Query SQLite traces: list runs, summarize, export, compare");
  cmd->require_subcommand(1);

  CLI::App* l = cmd->add_subcommand("list", "List the runs in a trace file");
  l->add_option("file", a->file, "Trace file (.db)")->required();
  l->add_flag("--json", a->json, "Print JSON");

  CLI::App* s =
      cmd->add_subcommand("summary", "Per-op-type table and per-unit utilization of one run");
  s->add_option("file", a->file, "Trace file (.db)")->required();
  s->add_option("--run", a->run, "Run id or uuid (default: the last run)");
  s->add_option("--by", a->by, "Group ops by 'type' or list each 'op'")->capture_default_str();
  s->add_option("--top", a->top, "Rows in the op table (0: all op types, 20 ops)");
  s->add_flag("--json", a->json, "Print JSON");

  CLI::App* e = cmd->add_subcommand("export", "Export runs as Chrome trace JSON (Perfetto) or CSV");
  e->add_option("file", a->file, "Trace file (.db)")->required();
  e->add_option("--format", a->format, "chrome or csv")->required();
  e->add_option("-o,--output", a->output, "Output file, - for standard output")->required();
  e->add_option("--run", a->runs, "Run id or uuid; repeat for several (default: every run)");

  CLI::App* d =
      cmd->add_subcommand("diff", "Compare two runs op by op (two files, or two --run in one)");
  d->add_option("file", a->file, "Trace file (.db)")->required();
  d->add_option("file_b", a->file_b, "Second trace file (.db)");
  d->add_option("--run", a->runs, "Run id or uuid, twice: run of A, run of B");
  d->add_option("--top", a->top, "Ops listed, largest change first (default 25)");
  d->add_flag("--json", a->json, "Print JSON");

  return {cmd, [a, l, s, e, d]() {
            if (l->parsed()) return list(*a);
            if (s->parsed()) return summary(*a);
            if (e->parsed()) return export_trace(*a);
            if (d->parsed()) return diff(*a);
            return 2;
          }};
}

}  // namespace mimic::cli
