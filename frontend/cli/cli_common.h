// Shared pieces of the `mimic` command: subcommand registration, exit codes, option parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "traces/format.h"

namespace mimic::cli {

// A subcommand registers itself on the app and returns what to run when it was selected.
using Action = std::function<int()>;
struct Command {
  CLI::App* app;
  Action action;
};

Command add_devices_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);
Command add_trace_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_conformance_command(CLI::App& app);
Command add_train_command(CLI::App& app);
Command add_scalesim_command(CLI::App& app);

// Exit status for an error kind: 2 bad input, 3 unsupported op, 4 compile/out of memory,
// 5 device unavailable, 6 files, 7 run-time failure.
int exit_code(ErrorKind kind);

// --layout picks a zoo model's activation layout; an ONNX graph keeps the layout it was written in
// (the compiler picks the physical one). Throws InvalidArgument when an ONNX model is given a
// layout other than the default nchw.
void check_onnx_layout(const std::string& onnx, const std::vector<std::string>& layouts);

// Adds --max-tensor-bytes SIZE: the process-wide limit of one tensor (ir::set_max_tensor_bytes),
// checked on the model's initializers and inferred shapes before anything is allocated.
void add_memory_limit_option(CLI::App* cmd);

// "k=v" items into a map; throws InvalidArgument naming `what` for items without '='.
std::map<std::string, std::string> parse_key_values(const std::vector<std::string>& items,
                                                    const std::string& what);
// Integer values of "k=v" items (e.g. --model-arg layers=2).
std::map<std::string, int64_t> parse_int_values(const std::vector<std::string>& items,
                                                const std::string& what);

// Human-readable quantities: "712.3 ms", "1.23 GB", "4.10 GFLOP".
std::string format_seconds(double s);
using traces::format_bytes;
std::string format_count(double n, const std::string& unit);

}  // namespace mimic::cli
