// Observers of runs: an active observer (e.g. a trace file opened with mimic::TraceScope) gives
// every Executable::run inside its scope the event sink to emit to, and learns how the run ended.
#pragma once

#include <cstdint>
#include <string>

#include "sim/event_sink.h"

namespace mimic {

// What a run is, for the trace's run table.
struct RunInfo {
  std::string model;  // zoo model name, ONNX file, or graph name
  int64_t batch = 0;
  std::string layout;  // "nchw" | "nhwc" | ""
  std::string precision;
  std::string device;
  std::string config_json;  // compile options and anything else worth keeping
  std::string tag;          // e.g. a sweep id
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // Returns the sink for this run's events (valid until end_run).
  virtual sim::EventSink& begin_run(const RunInfo& info) = 0;
  virtual void end_run(bool ok, const std::string& error) = 0;
};

// The innermost active observer, or nullptr. Observers nest (a stack per process).
RunObserver* current_run_observer();
void push_run_observer(RunObserver* observer);
// Removes `observer` (the innermost one normally; anywhere in the stack if scopes end out of
// order).
void pop_run_observer(RunObserver* observer);

}  // namespace mimic
