// Graph builders and helpers shared by the ipu-emu tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/api/compile.h"
#include "frontend/api/run_observer.h"
#include "frontend/ir/graph.h"

namespace mimic::ipu_test {

// x[m, k] @ W[k, n] with W a random constant.
ir::Graph matmul_graph(int64_t m, int64_t k, int64_t n, uint64_t seed = 1);
// Conv2d (NCHW), optionally depthwise (group = channels), with a bias.
ir::Graph conv_graph(int64_t batch, int64_t in_c, int64_t out_c, int64_t hw, int64_t kernel,
                     int64_t stride, int64_t group, uint64_t seed = 1);
// x[B, C, H, W] -> `layers` x (conv kxk C->C, same padding -> relu), symbolic batch.
ir::Graph conv_stack(int64_t channels, int64_t hw, int layers, uint64_t seed = 1,
                     int64_t kernel = 3);
// x[B, width] -> `layers` x (matmul width x width -> relu), symbolic batch, zero weights.
ir::Graph wide_mlp(int64_t width, int layers);

CompileOptions options(std::map<std::string, std::string> opts = {}, int64_t batch = 0);

// Largest |a - b| over all elements, relative to the largest |b| (the output's scale), so that
// outputs near zero from cancelling sums do not dominate.
double max_rel_diff(const ir::HostTensor& a, const ir::HostTensor& b);

// Records what runs emit (events per track, table rows) while in scope.
class CaptureSink final : public sim::EventSink {
 public:
  sim::DeviceId add_device(const sim::DeviceDesc& d) override;
  sim::TrackId add_track(sim::DeviceId, const std::string& name, const std::string& kind) override;
  sim::OpId add_op(const sim::OpDesc& op) override;
  void event(sim::TrackId track, sim::OpId op, std::string_view name, uint64_t ts,
             uint64_t dur) override;
  void counter(sim::TrackId, uint64_t, double) override {}
  void table_row(const std::string& table, const std::string& columns,
                 const std::string& row) override;

  std::vector<sim::DeviceDesc> devices;
  std::vector<std::string> tracks;
  std::vector<sim::OpDesc> ops;
  struct Event {
    std::string track, name;
    sim::OpId op;
    uint64_t ts, dur;
  };
  std::vector<Event> events;
  std::map<std::string, std::vector<std::string>> tables;
};

class CaptureScope final : public RunObserver {
 public:
  CaptureScope() { push_run_observer(this); }
  ~CaptureScope() override { pop_run_observer(this); }
  sim::EventSink& begin_run(const RunInfo&) override { return sink; }
  void end_run(bool, const std::string&) override {}
  CaptureSink sink;
};

}  // namespace mimic::ipu_test
