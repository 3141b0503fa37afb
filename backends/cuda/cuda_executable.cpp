#include "backends/cuda/cuda_executable.h"

#include <fmt/format.h>
#include <atomic>
#include <chrono>
#include <cstring>

#include "backends/cuda/device_runtime.h"
#include "backends/cuda/executor.h"
#include "backends/cuda/memory_plan.h"
#include "base/error.h"

namespace mimic::backends::cuda {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<uint64_t> next_correlation{1};

uint64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return static_cast<uint64_t>(
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count()));
}

// A pool block returned when the run ends, after the stream has drained.
class ArenaLease {
 public:
  ArenaLease(DeviceContext& ctx, int64_t bytes, const std::string& what) : ctx_(ctx) {
    if (bytes > 0) ptr_ = static_cast<char*>(ctx.pool().allocate(bytes, what));
  }
  ~ArenaLease() {
    if (!ptr_) return;
    cudaStreamSynchronize(ctx_.stream());
    ctx_.pool().release(ptr_);
  }
  char* get() const { return ptr_; }

 private:
  DeviceContext& ctx_;
  char* ptr_ = nullptr;
};

class CudaExecutable final : public Executable {
 public:
  CudaExecutable(DeviceContext& ctx, Program program, const CudaOptions& options, bool compile_only,
                 CompileReport report)
      : ctx_(ctx),
        prog_(std::move(program)),
        options_(options),
        compile_only_(compile_only),
        report_(std::move(report)) {
    device_name_ = fmt::format("cuda:{}", ctx_.info().ordinal);
    if (compile_only_) return;
    try {
      ctx_.activate();
      upload_constants();
      allocate_staging();
      int events = 4 + (options_.per_op_timing ? 2 * static_cast<int>(prog_.steps.size()) : 0);
      events_.resize(events, nullptr);
      for (auto& e : events_) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    } catch (...) {
      release_all();
      throw;
    }
  }

  ~CudaExecutable() override { release_all(); }

  const CompileReport& compile_report() const override { return report_; }

  RunResult run(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink) override {
    if (compile_only_)
      throw InvalidArgument(
          fmt::format("{}: compiled with compile_only, it cannot run", device_name_));
    check_inputs(inputs);
    Clock::time_point start = Clock::now();
    std::lock_guard<std::mutex> lock(ctx_.run_mutex());
    ctx_.activate();
    cudaStream_t s = ctx_.stream();
    // A captured graph holds the addresses it was captured with, so its activations stay put.
    ArenaLease arena(ctx_, options_.use_graph ? 0 : prog_.arena_bytes,
                     fmt::format("{} bytes of activations", prog_.arena_bytes));
    DeviceBuffers buffers = resolve(options_.use_graph ? graph_arena() : arena.get());
    check_cuda(cudaMemsetAsync(error_slot_, 0, sizeof(ErrorSlot), s), "cudaMemsetAsync");
    Clock::time_point gpu_zero = Clock::now();
    record(kRunStart);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].nbytes() == 0) continue;
      std::memcpy(pinned_ + input_offsets_[i], inputs[i].raw(), inputs[i].nbytes());
      check_cuda(cudaMemcpyAsync(buffers.ptr(prog_.inputs[i]), pinned_ + input_offsets_[i],
                                 inputs[i].nbytes(), cudaMemcpyHostToDevice, s),
                 "copy of the inputs to the device");
    }
    record(kInputsDone);
    std::vector<Launch> launches =
        options_.use_graph ? launch_graph(buffers, start) : enqueue_steps(buffers, start);
    record(kComputeDone);
    for (size_t i = 0; i < prog_.outputs.size(); ++i)
      if (output_bytes(i) > 0)
        check_cuda(cudaMemcpyAsync(pinned_ + output_offsets_[i], buffers.ptr(prog_.outputs[i]),
                                   output_bytes(i), cudaMemcpyDeviceToHost, s),
                   "copy of the outputs to the host");
    check_cuda(cudaMemcpyAsync(pinned_ + error_offset_, error_slot_, sizeof(ErrorSlot),
                               cudaMemcpyDeviceToHost, s),
               "copy of the error slot");
    record(kRunEnd);
    check_cuda(cudaEventSynchronize(events_[kRunEnd]), "running the program");
    check_bad_index();
    RunResult result;
    for (size_t i = 0; i < prog_.outputs.size(); ++i) {
      ir::HostTensor t(prog_.output_types[i].dtype, prog_.output_types[i].shape);
      if (t.nbytes() > 0) std::memcpy(t.raw(), pinned_ + output_offsets_[i], t.nbytes());
      result.outputs.push_back(std::move(t));
    }
    result.report = report(launches, start, gpu_zero, sink);
    return result;
  }

 private:
  enum : int { kRunStart = 0, kInputsDone = 1, kComputeDone = 2, kRunEnd = 3 };

  struct Launch {
    uint64_t correlation = 0, host_ts = 0, host_dur = 0;
  };

  void release_all() {
    if (compile_only_) return;
    cudaSetDevice(ctx_.info().ordinal);
    cudaStreamSynchronize(ctx_.stream());
    for (auto e : events_)
      if (e) cudaEventDestroy(e);
    events_.clear();
    if (pinned_) cudaFreeHost(pinned_);
    pinned_ = nullptr;
    if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
    graph_exec_ = nullptr;
    if (graph_arena_) ctx_.pool().release(graph_arena_);
    graph_arena_ = nullptr;
    if (error_slot_) ctx_.pool().release(error_slot_);
    error_slot_ = nullptr;
    if (constants_) ctx_.pool().release(constants_);
    constants_ = nullptr;
  }

  // While capturing, an event is recorded only when the graph is replayed if it is marked
  // external (CUDA Runtime API, cudaEventRecordWithFlags).
  void record(int index) {
    check_cuda(
        cudaEventRecordWithFlags(events_[index], ctx_.stream(),
                                 capturing_ ? cudaEventRecordExternal : cudaEventRecordDefault),
        "cudaEventRecord");
  }

  char* graph_arena() {
    if (!graph_arena_ && prog_.arena_bytes > 0)
      graph_arena_ = static_cast<char*>(ctx_.pool().allocate(
          prog_.arena_bytes, fmt::format("{} bytes of activations", prog_.arena_bytes)));
    return graph_arena_;
  }

  // graph=on: the first run captures the steps' launches (per-op events included) as one CUDA
  // graph; every run then replays it with a single launch. Host launch times are those of the
  // capture on the first run and zero on replays, where nothing is launched per op.
  std::vector<Launch> launch_graph(const DeviceBuffers& buffers, Clock::time_point start) {
    std::vector<Launch> launches(prog_.steps.size());
    if (!graph_exec_) {
      launches = capture_graph(buffers, start);
    } else {
      for (Launch& l : launches) l.correlation = next_correlation++;
    }
    check_cuda(cudaGraphLaunch(graph_exec_, ctx_.stream()), "cudaGraphLaunch");
    return launches;
  }

  std::vector<Launch> capture_graph(const DeviceBuffers& buffers, Clock::time_point start) {
    cudaStream_t s = ctx_.stream();
    check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture");
    capturing_ = true;
    std::vector<Launch> launches;
    cudaGraph_t graph = nullptr;
    try {
      launches = enqueue_steps(buffers, start);
    } catch (...) {
      capturing_ = false;
      cudaStreamEndCapture(s, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    capturing_ = false;
    check_cuda(cudaStreamEndCapture(s, &graph), "capturing the run as a CUDA graph");
    cudaError_t e = cudaGraphInstantiate(&graph_exec_, graph, 0);
    cudaGraphDestroy(graph);
    check_cuda(e, "cudaGraphInstantiate");
    return launches;
  }
  int step_begin(size_t k) const { return 4 + 2 * static_cast<int>(k); }

  void check_inputs(const std::vector<ir::HostTensor>& inputs) const {
    if (inputs.size() != prog_.inputs.size())
      throw InvalidArgument(fmt::format("{}: the program takes {} inputs, got {}", device_name_,
                                        prog_.inputs.size(), inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].type() != prog_.input_types[i])
        throw InvalidArgument(fmt::format("{}: input {} must be {}, got {}", device_name_, i,
                                          prog_.input_types[i].str(), inputs[i].type().str()));
  }

  size_t output_bytes(size_t i) const {
    return static_cast<size_t>(prog_.output_types[i].shape.numel()) *
           ir::dtype_size(prog_.output_types[i].dtype);
  }

  void upload_constants() {
    constexpr int64_t kAlign = 256;
    std::vector<int64_t> offsets;
    int64_t total = 0;
    for (const ir::HostTensor& c : prog_.constants) {
      offsets.push_back(total);
      total += align_up(static_cast<int64_t>(c.nbytes()), kAlign);
    }
    if (total > 0)
      constants_ =
          static_cast<char*>(ctx_.pool().allocate(total, "the program's constants (weights)"));
    for (size_t i = 0; i < prog_.constants.size(); ++i) {
      const ir::HostTensor& c = prog_.constants[i];
      if (c.nbytes() > 0)
        check_cuda(cudaMemcpyAsync(constants_ + offsets[i], c.raw(), c.nbytes(),
                                   cudaMemcpyHostToDevice, ctx_.stream()),
                   "upload of the constants");
    }
    check_cuda(cudaStreamSynchronize(ctx_.stream()), "upload of the constants");
    constant_ptrs_.resize(prog_.constants.size());
    for (size_t i = 0; i < offsets.size(); ++i) constant_ptrs_[i] = constants_ + offsets[i];
    prog_.constants.clear();  // the device copy is the one that is used from now on
    error_slot_ =
        static_cast<ErrorSlot*>(ctx_.pool().allocate(sizeof(ErrorSlot), "the error slot"));
  }

  void allocate_staging() {
    size_t total = 0;
    for (const ir::TensorType& t : prog_.input_types) {
      input_offsets_.push_back(total);
      total += static_cast<size_t>(
          align_up(static_cast<int64_t>(t.shape.numel() * ir::dtype_size(t.dtype)), 64));
    }
    for (size_t i = 0; i < prog_.outputs.size(); ++i) {
      output_offsets_.push_back(total);
      total += static_cast<size_t>(align_up(static_cast<int64_t>(output_bytes(i)), 64));
    }
    error_offset_ = total;
    total += sizeof(ErrorSlot);
    check_cuda(cudaMallocHost(reinterpret_cast<void**>(&pinned_), total),
               "cudaMallocHost (staging buffers)");
  }

  DeviceBuffers resolve(char* arena) const {
    DeviceBuffers b;
    b.error = error_slot_;
    for (const BufferDesc& d : prog_.buffers)
      b.base.push_back(d.kind == BufferKind::constant ? constant_ptrs_[d.constant]
                                                      : arena + d.offset);
    return b;
  }

  std::vector<Launch> enqueue_steps(const DeviceBuffers& buffers, Clock::time_point start) {
    std::vector<Launch> launches(prog_.steps.size());
    for (size_t k = 0; k < prog_.steps.size(); ++k) {
      const Step& step = prog_.steps[k];
      Clock::time_point t0 = Clock::now();
      launches[k].correlation = next_correlation++;
      if (options_.per_op_timing) record(step_begin(k));
      for (size_t i = step.first; i < step.end; ++i)
        enqueue(prog_.instrs[i], buffers, ctx_.stream(), ctx_.blas());
      cudaError_t e = cudaPeekAtLastError();
      if (e != cudaSuccess)
        check_cuda(e, fmt::format("launching node '{}' ({})", step.name, step.op_type));
      if (options_.per_op_timing) record(step_begin(k) + 1);
      launches[k].host_ts = ns_between(start, t0);
      launches[k].host_dur = ns_between(t0, Clock::now());
    }
    return launches;
  }

  void check_bad_index() const {
    ErrorSlot slot;
    std::memcpy(&slot, pinned_ + error_offset_, sizeof(slot));
    if (slot.node_plus_one == 0) return;
    int node = static_cast<int>(slot.node_plus_one - 1);
    std::string name = "?", op = "?";
    for (const Step& s : prog_.steps)
      if (s.node == node) {
        name = s.name;
        op = s.op_type;
      }
    throw RuntimeError(fmt::format("{}: node '{}' ({}): index {} is out of range", device_name_,
                                   name, op, slot.index));
  }

  double elapsed_s(int a, int b) const {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, events_[a], events_[b]) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return ms * 1e-3;
  }

  double peak_for_modes() const {
    const PeakFlops& p = ctx_.info().peak;
    double peak = 0;
    for (const std::string& m : prog_.matrix_modes)
      peak = std::max(peak, m == "tf32" ? p.tf32 : m == "fp32" ? p.fp32 : p.half);
    return prog_.matrix_modes.empty() ? p.fp32 : peak;
  }

  RunReport report(const std::vector<Launch>& launches, Clock::time_point start,
                   Clock::time_point gpu_zero, sim::EventSink& sink) const {
    const GpuInfo& info = ctx_.info();
    const CudaStatus& st = cuda_status();
    sim::DeviceId device = sink.add_device(
        sim::DeviceDesc{"cuda", "", 1'000'000'000, sim::TimeUnit::ns,
                        info.properties_json(st.driver_version, st.runtime_version)});
    sim::TrackId gpu_track = sink.add_track(device, "stream 0", "compute");
    sim::TrackId host_track = sink.add_track(device, "host launch", "host");
    uint64_t zero = ns_between(start, gpu_zero);
    auto gpu_ts = [&](int e) {
      return zero + static_cast<uint64_t>(elapsed_s(kRunStart, e) * 1e9);
    };
    RunReport r;
    r.device = device_name_;
    r.backend = "cuda";
    r.precision = precision_name();
    sink.event(gpu_track, sim::kNoOp, "inputs host to device", gpu_ts(kRunStart),
               gpu_ts(kInputsDone) - gpu_ts(kRunStart));
    uint64_t last_end = gpu_ts(kInputsDone);
    int64_t total_flops = 0, traffic = 0;
    for (size_t k = 0; k < prog_.steps.size(); ++k) {
      const Step& s = prog_.steps[k];
      sim::OpId op = sink.add_op(sim::OpDesc{s.name, s.op_type, s.shapes, s.dtype, s.flops,
                                             s.bytes_in, s.bytes_out, "cuda", false});
      std::string name = fmt::format("{} [corr {}]", s.name, launches[k].correlation);
      sink.event(host_track, op, name, launches[k].host_ts, launches[k].host_dur);
      double dev_s = 0;
      if (options_.per_op_timing && s.end > s.first) {
        uint64_t ts = std::max(gpu_ts(step_begin(k)), last_end);
        uint64_t end = std::max(gpu_ts(step_begin(k) + 1), ts);
        sink.event(gpu_track, op, name, ts, end - ts);
        last_end = end;
        dev_s = elapsed_s(step_begin(k), step_begin(k) + 1);
      }
      OpReport o;
      o.node = s.name;
      o.op_type = s.op_type;
      o.backend = "cuda";
      o.shapes = s.shapes;
      o.flops = s.flops;
      o.bytes_in = s.bytes_in;
      o.bytes_out = s.bytes_out;
      o.wall_ns = static_cast<double>(launches[k].host_dur);
      o.device_seconds = dev_s;
      int64_t bytes = s.bytes_in + s.bytes_out;
      o.intensity = bytes > 0 ? static_cast<double>(s.flops) / bytes : 0;
      r.ops.push_back(o);
      total_flops += s.flops;
      traffic += bytes;
    }
    uint64_t out_ts = std::max(gpu_ts(kComputeDone), last_end);
    sink.event(gpu_track, sim::kNoOp, "outputs device to host", out_ts,
               std::max(gpu_ts(kRunEnd), out_ts) - out_ts);
    r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.device_seconds = elapsed_s(kInputsDone, kComputeDone);
    r.peak_flops_per_s = peak_for_modes();
    r.achieved_flops_per_s = r.device_seconds > 0 ? total_flops / r.device_seconds : 0;
    r.ridge_intensity =
        info.memory_bytes_per_s > 0 ? r.peak_flops_per_s / info.memory_bytes_per_s : 0;
    for (OpReport& o : r.ops)
      if (r.ridge_intensity > 0 && (o.flops > 0 || o.bytes_in + o.bytes_out > 0))
        o.bound = o.intensity >= r.ridge_intensity ? "compute" : "memory";
    add_metrics(r, traffic);
    return r;
  }

  // Bytes moved, the GPU's figures, the memory pool and the options' notes.
  void add_metrics(RunReport& r, int64_t traffic) const {
    const GpuInfo& info = ctx_.info();
    int64_t in_bytes = 0, out_bytes = 0;
    for (const ir::TensorType& t : prog_.input_types)
      in_bytes += t.shape.numel() * ir::dtype_size(t.dtype);
    for (size_t i = 0; i < prog_.outputs.size(); ++i) out_bytes += output_bytes(i);
    r.bytes_moved["host_to_device"] = in_bytes;
    r.bytes_moved["device_to_host"] = out_bytes;
    r.bytes_moved["hbm"] = traffic;
    r.metrics["h2d_seconds"] = elapsed_s(kRunStart, kInputsDone);
    r.metrics["d2h_seconds"] = elapsed_s(kComputeDone, kRunEnd);
    r.metrics["gpu_total_seconds"] = elapsed_s(kRunStart, kRunEnd);
    r.metrics["arena_bytes"] = static_cast<double>(prog_.arena_bytes);
    r.metrics["constant_bytes"] = static_cast<double>(prog_.constant_bytes);
    r.metrics["instructions"] = static_cast<double>(prog_.instrs.size());
    r.metrics["sm_count"] = info.sm_count;
    r.metrics["sm_clock_hz"] = info.sm_clock_hz;
    r.metrics["memory_bytes_per_s"] = info.memory_bytes_per_s;
    PoolStats ps = ctx_.pool().stats();
    r.metrics["pool_peak_bytes"] = static_cast<double>(ps.peak_in_use_bytes);
    r.metrics["pool_device_allocations"] = static_cast<double>(ps.device_allocations);
    if (!options_.per_op_timing)
      r.notes.push_back("cuda: timing=run: per-op GPU times were not measured");
    if (options_.use_graph)
      r.notes.push_back(
          fmt::format("cuda: graph=on: the compute ran as one CUDA graph launch of "
                      "{} instructions",
                      prog_.instrs.size()));
  }

  std::string precision_name() const {
    if (prog_.matrix_modes.empty()) return "fp32";
    std::string s;
    for (const std::string& m : prog_.matrix_modes) s += (s.empty() ? "" : "+") + m;
    return s;
  }

  DeviceContext& ctx_;
  Program prog_;
  CudaOptions options_;
  bool compile_only_;
  CompileReport report_;
  std::string device_name_;
  char* constants_ = nullptr;
  std::vector<char*> constant_ptrs_;
  ErrorSlot* error_slot_ = nullptr;
  char* pinned_ = nullptr;
  std::vector<size_t> input_offsets_, output_offsets_;
  size_t error_offset_ = 0;
  std::vector<cudaEvent_t> events_;
  cudaGraphExec_t graph_exec_ = nullptr;
  char* graph_arena_ = nullptr;
  bool capturing_ = false;
};

}  // namespace

std::unique_ptr<Executable> make_executable(DeviceContext& device, Program program,
                                            const CudaOptions& options, bool compile_only,
                                            CompileReport report) {
  return std::make_unique<CudaExecutable>(device, std::move(program), options, compile_only,
                                          std::move(report));
}

}  // namespace mimic::backends::cuda
