// `mimic report FILE.db [--run ID] -o report.html`: one run of a trace as a self-contained HTML
// page.
#include <fmt/format.h>

#include <iostream>

#include "frontend/cli/cli_common.h"
#include "frontend/cli/trace_print.h"
#include "traces/html_report.h"
#include "traces/output_file.h"
#include "traces/trace_reader.h"

namespace mimic::cli {

Command add_report_command(CLI::App& app) {
  struct ReportArgs {
    std::string file, run, output;
  };
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd =
      app.add_subcommand("report", "Write a self-contained HTML report of one run of a trace");
  cmd->add_option("file", a->file, "Trace file (.db)")->required();
  cmd->add_option("--run", a->run, "Run id or uuid (default: the last run)");
  cmd->add_option("-o,--output", a->output,
                  "HTML file (default: FILE without .db + -run<ID>.html)");
  return {cmd, [a]() {
            traces::TraceReader reader(a->file);
            int64_t id = reader.resolve_run(a->run);
            std::string out = a->output.empty() ? default_report_path(a->file, id) : a->output;
            traces::write_output_file(
                out, [&](std::ostream& os) { traces::write_html_report(reader, id, os); });
            if (out != "-")
              std::cout << fmt::format("wrote {} (run {} of {}); open it in a browser\n", out, id,
                                       a->file);
            return 0;
          }};
}

}  // namespace mimic::cli
