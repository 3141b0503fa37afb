#include "frontend/api/trace.h"

#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "frontend/api/run_observer.h"
#include "traces/trace_writer.h"

namespace mimic {

// The observer: begin_run/end_run pairs come from the same thread (Executable::run), so each
// thread has its own stack of open runs.
struct TraceScope::Impl final : RunObserver {
  explicit Impl(const std::string& path, const TraceOptions& o) : writer(path, writer_options(o)) {}

  static traces::WriterOptions writer_options(const TraceOptions& o) {
    traces::WriterOptions w;
    w.batch_rows = o.batch_rows;
    w.flush_interval = std::chrono::milliseconds(o.flush_interval_ms);
    return w;
  }

  sim::EventSink& begin_run(const RunInfo& info) override {
    traces::RunMeta meta{info.model,  info.batch, info.layout,     info.precision,
                         info.device, info.tag,   info.config_json};
    std::unique_ptr<traces::RunWriter> run = writer.begin_run(meta);
    traces::RunWriter& sink = *run;
    std::lock_guard<std::mutex> lock(mu);
    open[std::this_thread::get_id()].push_back(std::move(run));
    return sink;
  }

  void end_run(bool ok, const std::string& error) override {
    std::unique_ptr<traces::RunWriter> run;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = open.find(std::this_thread::get_id());
      if (it == open.end() || it->second.empty()) return;
      run = std::move(it->second.back());
      it->second.pop_back();
      if (it->second.empty()) open.erase(it);
    }
    run->finish(ok, error);
  }

  traces::TraceWriter writer;
  std::mutex mu;
  std::map<std::thread::id, std::vector<std::unique_ptr<traces::RunWriter>>> open;
  bool active = true;
};

TraceScope::TraceScope(const std::string& path, const TraceOptions& options)
    : impl_(std::make_unique<Impl>(path, options)) {
  push_run_observer(impl_.get());
}

TraceScope::~TraceScope() {
  try {
    close();
  } catch (const std::exception&) {
    // Destructors do not throw; close() reports write errors to callers that ask.
  }
}

const std::string& TraceScope::path() const {
  return impl_->writer.path();
}

std::vector<int64_t> TraceScope::run_ids() {
  return impl_->writer.run_ids();
}

void TraceScope::close() {
  if (impl_->active) {
    pop_run_observer(impl_.get());
    impl_->active = false;
  }
  impl_->writer.close();
}

}  // namespace mimic
