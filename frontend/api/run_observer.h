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

// The innermost active observer, or nullptr. Observers nest (a stack per process: a run on any
// thread goes to the innermost one).
RunObserver* current_run_observer();

// One run's hold on the innermost observer (none when there is none): from construction to
// destruction the observer stays alive, for a run on another thread may end its scope meanwhile.
class ObservedRun {
 public:
  ObservedRun();
  ~ObservedRun();
  ObservedRun(const ObservedRun&) = delete;
  ObservedRun& operator=(const ObservedRun&) = delete;
  RunObserver* observer() const { return observer_; }

 private:
  RunObserver* observer_ = nullptr;
};

void push_run_observer(RunObserver* observer);
// Removes `observer` (the innermost one normally; anywhere in the stack if scopes end out of
// order), then waits until the runs that hold it (ObservedRun) have ended, so that the caller may
// destroy it.
void pop_run_observer(RunObserver* observer);

}  // namespace mimic
