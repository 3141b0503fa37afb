// The `mimic` command. Every failure is one line on stderr ("mimic: error: ...") and a nonzero exit
// status that tells the kind of error (see exit_code in cli_common.h).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "base/error.h"
#include "frontend/cli/cli_common.h"
#include "frontend/cli/process_pool.h"

namespace {

// A command's exit status once its output has reached standard output: a full disk turns success
// into a file error, so that a truncated listing never looks complete.
int flushed(int status) {
  std::cout.flush();
  if (std::fflush(stdout) == 0 && std::cout && !std::ferror(stdout)) return status;
  int err = errno;
  std::cerr << "mimic: error: could not write to standard output: " << std::strerror(err) << "\n";
  return status == 0 ? mimic::cli::exit_code(mimic::ErrorKind::io) : status;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mimic::cli;
  exit_with_parent_if_asked();
  CLI::App app{"mimic: run ML models on emulated TPUs and IPUs and on real devices"};
  app.set_version_flag("--version", MIMIC_VERSION);
  app.require_subcommand(1);
  std::vector<Command> commands{add_devices_command(app), add_run_command(app),
                                add_sweep_command(app),   add_trace_command(app),
                                add_report_command(app),  add_conformance_command(app),
                                add_train_command(app),   add_scalesim_command(app)};
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const Command& c : commands) {
      known = known || c.app->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + c.app->get_name();
    }
    if (!known) {
      std::cerr << "mimic: error: unknown command '" << argv[1] << "' (commands: " << names
                << ")\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "mimic: error: " << e.what() << " (see mimic --help)\n";
    return 2;
  }
  try {
    for (const Command& c : commands)
      if (c.app->parsed()) return flushed(c.action());
  } catch (const mimic::Error& e) {
    std::cerr << "mimic: error: " << e.what() << "\n";
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "mimic: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
