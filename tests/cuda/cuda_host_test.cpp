// The cuda backend's host side, without a GPU: the unavailable path (devices, compile errors, CLI),
// option validation, and the planning logic (memory plan, memory pool, GEMM and convolution
// geometry, op support, lowering of whole models).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "backends/cuda/conv_plan.h"
#include "backends/cuda/cublas_loader.h"
#include "backends/cuda/cuda_options.h"
#include "backends/cuda/device_runtime.h"
#include "backends/cuda/gemm_plan.h"
#include "backends/cuda/lower.h"
#include "backends/cuda/memory_plan.h"
#include "backends/cuda/memory_pool.h"
#include "backends/registry.h"
#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/device.h"
#include "frontend/api/zoo.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::backends::cuda {
namespace {

bool has_gpu() {
  return !cuda_status().gpus.empty();
}

ir::Graph relu_graph() {
  ir::Graph g("relu");
  ir::ValueId x = g.add_input("x", ir::DType::f32, ir::Shape({2, 3}));
  g.add_output(g.add_node(ir::OpType::Relu, "relu", {x})[0]);
  ir::infer_shapes(g);
  return g;
}

const Backend& cuda_backend() {
  const Backend* b = Registry::global().find("cuda");
  EXPECT_NE(b, nullptr);
  return *b;
}

// ---- without a GPU: unavailable, with the reason ----

TEST(CudaUnavailable, DevicesListCuda0WithTheReason) {
  if (has_gpu())
    GTEST_SKIP() << "a GPU is present (" << cuda_status().gpus[0].name
                 << "): this tests the no-GPU path";
  bool found = false;
  for (const DeviceInfo& d : mimic::devices()) {
    if (d.name != "cuda:0") continue;
    found = true;
    EXPECT_FALSE(d.available);
    EXPECT_EQ(d.backend, "cuda");
    EXPECT_EQ(d.reason, cuda_status().unavailable_reason);
    // The CUDA runtime's own error, by name, is part of the reason.
    EXPECT_NE(d.reason.find("[cudaError"), std::string::npos) << d.reason;
    EXPECT_TRUE(d.reason.find("driver") != std::string::npos ||
                d.reason.find("device") != std::string::npos)
        << d.reason;
  }
  EXPECT_TRUE(found);
}

TEST(CudaUnavailable, CompileRaisesDeviceUnavailableWithTheReason) {
  if (has_gpu()) GTEST_SKIP() << "a GPU is present: this tests the no-GPU path";
  try {
    cuda_backend().compile(relu_graph(), "0", {});
    FAIL() << "compile on cuda:0 without a GPU must raise";
  } catch (const DeviceUnavailableError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::device_unavailable);
    EXPECT_NE(std::string(e.what()).find(cuda_status().unavailable_reason), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mimic::compile(relu_graph(), Device("cuda:0")), DeviceUnavailableError);
  EXPECT_THROW(mimic::compile(relu_graph(), Device("cuda")), DeviceUnavailableError);
}

TEST(CudaUnavailable, CliListsTheReason) {
  if (has_gpu()) GTEST_SKIP() << "a GPU is present: this tests the no-GPU path";
  FILE* p = popen(MIMIC_BIN " devices --json", "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) text.append(buf, n);
  ASSERT_EQ(pclose(p), 0);
  bool found = false;
  for (const auto& d : nlohmann::json::parse(text))
    if (d["name"] == "cuda:0") {
      found = true;
      EXPECT_FALSE(d["available"].get<bool>());
      EXPECT_EQ(d["reason"].get<std::string>(), cuda_status().unavailable_reason);
    }
  EXPECT_TRUE(found) << text;
  p = popen(MIMIC_BIN " run --model mlp --device cuda:0 2>&1", "r");
  ASSERT_NE(p, nullptr);
  text.clear();
  while (size_t n = fread(buf, 1, sizeof(buf), p)) text.append(buf, n);
  int status = pclose(p);
  EXPECT_NE(status, 0);
  EXPECT_NE(text.find("mimic: error: device 'cuda:0' is unavailable"), std::string::npos) << text;
}

TEST(CudaDevice, ArgumentsThatAreNotGpuIndices) {
  for (const char* arg : {"x", "-1", "0x", "gpu0"}) {
    DeviceInfo d = cuda_backend().probe(arg);
    EXPECT_FALSE(d.available) << arg;
    EXPECT_NE(d.reason.find("must be a GPU index"), std::string::npos) << d.reason;
    EXPECT_THROW(cuda_backend().compile(relu_graph(), arg, {}), InvalidArgument) << arg;
  }
  DeviceInfo d = cuda_backend().probe("7");
  EXPECT_FALSE(d.available);
  if (has_gpu() && cuda_status().gpus.size() <= 7) {
    EXPECT_NE(d.reason.find("there is no cuda:7"), std::string::npos) << d.reason;
  }
  if (!has_gpu()) {
    EXPECT_EQ(d.reason, cuda_status().unavailable_reason);
  }
}

TEST(CudaDevice, UnavailableReasonsNameTheCause) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
  std::string none = unavailable_reason("cudaErrorInsufficientDriver",
                                        "CUDA driver version is insufficient", 0, 13000);
  EXPECT_NE(none.find("no NVIDIA driver"), std::string::npos) << none;
  std::string old = unavailable_reason("cudaErrorInsufficientDriver",
                                       "CUDA driver version is insufficient", 12020, 13000);
  EXPECT_NE(old.find("supports CUDA 12.2, this build needs CUDA 13.0"), std::string::npos) << old;
  std::string nodev =
      unavailable_reason("cudaErrorNoDevice", "no CUDA-capable device is detected", 12080, 13000);
  EXPECT_NE(nodev.find("no CUDA device found"), std::string::npos) << nodev;
  EXPECT_NE(nodev.find("[cudaErrorNoDevice]"), std::string::npos) << nodev;
}

TEST(CudaDevice, PeakFiguresFromSmCountAndClock) {
  // H100 SXM5: 132 SMs. At 1.98 GHz FP32 is NVIDIA's 66.9 TFLOPS; at 1.83 GHz BF16 is 989.4 TFLOPS.
  EXPECT_NEAR(peak_flops(9, 0, 132, 1.98e9).fp32 / 1e12, 66.9, 0.1);
  EXPECT_NEAR(peak_flops(9, 0, 132, 1.83e9).half / 1e12, 989.4, 0.5);
  EXPECT_NEAR(peak_flops(9, 0, 132, 1.83e9).tf32 / 1e12, 494.7, 0.5);
  // A100: 108 SMs at 1.41 GHz: 19.5 / 156 / 312 TFLOPS.
  PeakFlops a100 = peak_flops(8, 0, 108, 1.41e9);
  EXPECT_NEAR(a100.fp32 / 1e12, 19.5, 0.1);
  EXPECT_NEAR(a100.tf32 / 1e12, 156.0, 0.5);
  EXPECT_NEAR(a100.half / 1e12, 311.9, 0.5);
  EXPECT_EQ(peak_flops(8, 6, 84, 1.7e9).fp32, 0.0);  // unknown architecture: no made-up figure
}

TEST(CudaDevice, CublasLoadsOnDemand) {
  // cuBLAS is not linked (processes that never use a GPU do not map it); it loads on first use,
  // which needs the library but not a GPU.
  const CublasApi& api = cublas();
  EXPECT_NE(api.create, nullptr);
  EXPECT_NE(api.gemm_strided_batched, nullptr);
  EXPECT_STRNE(api.status_string(CUBLAS_STATUS_NOT_INITIALIZED), "");
}

// ---- options ----

TEST(CudaOptions, PrecisionModes) {
  CompileOptions o;
  EXPECT_TRUE(parse_options(o).tf32);
  o.precision = "highest";
  EXPECT_FALSE(parse_options(o).tf32);
  for (const char* bad : {"high", "float16", "tf32", ""}) {
    o.precision = bad;
    try {
      parse_options(o);
      FAIL() << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("precision '{}'", bad)), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("highest"), std::string::npos) << e.what();
    }
  }
}

TEST(CudaOptions, BackendOptions) {
  CompileOptions o;
  CudaOptions d = parse_options(o);
  EXPECT_TRUE(d.per_op_timing);
  EXPECT_EQ(d.workspace_bytes, int64_t{256} << 20);
  EXPECT_FALSE(d.use_graph);
  o.options = {{"timing", "run"}, {"workspace_mb", "64"}, {"graph", "on"}};
  CudaOptions p = parse_options(o);
  EXPECT_TRUE(p.use_graph);
  EXPECT_FALSE(p.per_op_timing);
  EXPECT_EQ(p.workspace_bytes, int64_t{64} << 20);
  for (auto [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"timing", "always"},
                                                        {"graph", "yes"},
                                                        {"workspace_mb", "0"},
                                                        {"workspace_mb", "abc"},
                                                        {"workspace_mb", "100000"},
                                                        {"workspace_mb", "-5"}}) {
    o.options = {{key, value}};
    try {
      parse_options(o);
      FAIL() << key << "=" << value;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(key + "=" + value), std::string::npos) << e.what();
    }
  }
  o.options = {{"num_ipus", "2"}};
  try {
    parse_options(o);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "unknown option 'num_ipus' (known: graph, timing, workspace_mb)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(cuda_backend().option_help().size(), 3u);
}

TEST(CudaOptions, BadOptionsAreReportedBeforeTheDevice) {
  CompileOptions o;
  o.precision = "float32";
  EXPECT_THROW(cuda_backend().compile(relu_graph(), "0", o), InvalidArgument);
  o.precision = "default";
  o.options = {{"timing", "sometimes"}};
  EXPECT_THROW(cuda_backend().compile(relu_graph(), "0", o), InvalidArgument);
}

TEST(CudaOptions, DeviceIndex) {
  EXPECT_EQ(parse_device_index(""), 0);
  EXPECT_EQ(parse_device_index("0"), 0);
  EXPECT_EQ(parse_device_index("3"), 3);
  EXPECT_EQ(parse_device_index("a"), -1);
  EXPECT_EQ(parse_device_index("-1"), -1);
  EXPECT_EQ(parse_device_index("123456"), -1);
}

// ---- memory plan ----

void expect_valid_plan(const std::vector<BufferLifetime>& b, const MemoryPlan& p, int64_t align) {
  ASSERT_EQ(p.offsets.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(p.offsets[i] % align, 0);
    EXPECT_LE(p.offsets[i] + b[i].bytes, p.total_bytes);
    for (size_t j = i + 1; j < b.size(); ++j) {
      bool live_together = b[i].first <= b[j].last && b[j].first <= b[i].last;
      bool disjoint =
          p.offsets[i] + b[i].bytes <= p.offsets[j] || p.offsets[j] + b[j].bytes <= p.offsets[i];
      if (live_together && b[i].bytes > 0 && b[j].bytes > 0) {
        EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j << " overlap while both are alive";
      }
    }
  }
  EXPECT_GE(p.total_bytes, p.peak_live_bytes);
}

TEST(CudaMemoryPlan, ChainReusesMemory) {
  // x0 -> x1 -> x2 -> x3: each buffer lives two steps; two slots suffice.
  std::vector<BufferLifetime> b = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryPlan p = plan_memory(b, 256);
  expect_valid_plan(b, p, 256);
  EXPECT_EQ(p.total_bytes, 2 * 1024);
  EXPECT_EQ(p.peak_live_bytes, 2 * 1024);
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
}

TEST(CudaMemoryPlan, RandomLifetimesNeverOverlap) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferLifetime> b;
    int steps = 30;
    for (int i = 0; i < 40; ++i) {
      int first = static_cast<int>(rng() % steps), len = static_cast<int>(rng() % 8);
      b.push_back({static_cast<int64_t>(rng() % 100000), first, std::min(steps, first + len)});
    }
    MemoryPlan p = plan_memory(b, 256);
    expect_valid_plan(b, p, 256);
    int64_t sum = 0;
    for (const auto& x : b) sum += align_up(std::max<int64_t>(x.bytes, 1), 256);
    EXPECT_LE(p.total_bytes, sum);
    EXPECT_LE(p.total_bytes, p.peak_live_bytes * 2) << "greedy-by-size stays near the lower bound";
  }
}

TEST(CudaMemoryPlan, RejectsBadLifetimes) {
  EXPECT_THROW(plan_memory({{10, 3, 1}}, 256), InvalidArgument);
  EXPECT_THROW(plan_memory({{-1, 0, 1}}, 256), InvalidArgument);
  EXPECT_THROW(plan_memory({{10, 0, 1}}, 0), InvalidArgument);
}

// ---- memory pool ----

class FakeDevice final : public RawAllocator {
 public:
  explicit FakeDevice(int64_t capacity) : capacity_(capacity) {}
  void* allocate(int64_t bytes) override {
    if (used_ + bytes > capacity_) return nullptr;
    used_ += bytes;
    ++allocations;
    void* p = ::operator new(static_cast<size_t>(bytes));
    sizes_[p] = bytes;
    return p;
  }
  void release(void* p) override {
    used_ -= sizes_.at(p);
    sizes_.erase(p);
    ++releases;
    ::operator delete(p);
  }
  int64_t available_bytes() const override { return capacity_ - used_; }
  int64_t used() const { return used_; }
  int allocations = 0, releases = 0;

 private:
  int64_t capacity_, used_ = 0;
  std::map<void*, int64_t> sizes_;
};

TEST(CudaMemoryPool, RoundsAndReusesBlocks) {
  EXPECT_EQ(MemoryPool::rounded_size(1), 512);
  EXPECT_EQ(MemoryPool::rounded_size(513), 1024);
  EXPECT_EQ(MemoryPool::rounded_size(int64_t{3} << 20), int64_t{4} << 20);
  FakeDevice dev(int64_t{1} << 30);
  MemoryPool pool(dev);
  void* a = pool.allocate(int64_t{5} << 20, "a");
  pool.release(a);
  void* b = pool.allocate((int64_t{5} << 20) - 100, "b");
  EXPECT_EQ(a, b) << "a released block of the same rounded size is reused";
  EXPECT_EQ(dev.allocations, 1);
  void* c =
      pool.allocate(int64_t{1} << 20, "c");  // the cached 6 MiB block is more than twice too large
  EXPECT_NE(c, b);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.device_allocations, 2);
  EXPECT_EQ(s.reuses, 1);
  EXPECT_EQ(s.in_use_bytes, (int64_t{6} << 20) + (int64_t{2} << 20));
  pool.release(b);
  pool.release(c);
  EXPECT_EQ(pool.stats().in_use_bytes, 0);
  EXPECT_EQ(pool.stats().cached_bytes, int64_t{8} << 20);
  pool.trim();
  EXPECT_EQ(dev.used(), 0);
  EXPECT_THROW(pool.release(reinterpret_cast<void*>(0x1234)), InvalidArgument);
}

TEST(CudaMemoryPool, RetriesAfterReturningTheCacheThenReportsOutOfMemory) {
  FakeDevice dev(int64_t{10} << 20);
  MemoryPool pool(dev);
  void* a = pool.allocate(int64_t{6} << 20, "a");
  pool.release(a);                                 // cached: 6 MiB of the 10 held by the pool
  void* b = pool.allocate(int64_t{8} << 20, "b");  // needs the cache returned first
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(dev.releases, 1);
  try {
    pool.allocate(int64_t{4} << 20, "the activations of 'resnet50'");
    FAIL();
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
    EXPECT_EQ(e.op(), "the activations of 'resnet50'");
    EXPECT_EQ(e.bytes_available(), int64_t{2} << 20);
    EXPECT_NE(std::string(e.what()).find("4194304 bytes"), std::string::npos) << e.what();
  }
  pool.release(b);
}

// ---- GEMM geometry ----

// Row-major reference C = op(A) op(B) and a column-major executor of GemmCalls.
void run_calls(const std::vector<GemmCall>& calls, const std::vector<float>& a,
               const std::vector<float>& b, std::vector<float>& c) {
  for (const GemmCall& call : calls) {
    const ColMajorGemm& g = call.g;
    for (int64_t bt = 0; bt < g.batch; ++bt)
      for (int64_t j = 0; j < g.n; ++j)
        for (int64_t i = 0; i < g.m; ++i) {
          double acc = 0;
          for (int64_t l = 0; l < g.k; ++l) {
            // cuBLAS's A is the row-major B and its B the row-major A.
            float av =
                b[call.b_offset + bt * g.stride_a + (g.trans_a ? l + i * g.lda : i + l * g.lda)];
            float bv =
                a[call.a_offset + bt * g.stride_b + (g.trans_b ? j + l * g.ldb : l + j * g.ldb)];
            acc += static_cast<double>(av) * bv;
          }
          c[call.c_offset + bt * g.stride_c + i + j * g.ldc] = static_cast<float>(acc);
        }
  }
}

std::vector<float> iota_values(int64_t n, float scale) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 % 11) - 5) * scale;
  return v;
}

TEST(CudaGemmPlan, RowMajorProductAsColumnMajorCall) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      int64_t m = 3, n = 4, k = 5;
      std::vector<float> a = iota_values(m * k, 0.5f), b = iota_values(k * n, 0.25f), c(m * n, 0);
      GemmCall call =
          row_major_gemm(m, n, k, {0, ta ? m : k, 0, ta}, {0, tb ? k : n, 0, tb}, {0, n, 0, false});
      EXPECT_EQ(call.g.m, n);
      EXPECT_EQ(call.g.n, m);
      run_calls({call}, a, b, c);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t l = 0; l < k; ++l)
            want += static_cast<double>(ta ? a[l * m + i] : a[i * k + l]) *
                    (tb ? b[j * k + l] : b[l * n + j]);
          EXPECT_FLOAT_EQ(c[i * n + j], static_cast<float>(want))
              << ta << tb << " " << i << "," << j;
        }
    }
}

TEST(CudaGemmPlan, MatmulBroadcastingBecomesFewCalls) {
  EXPECT_EQ(plan_matmul(ir::Shape({4, 5, 6}), ir::Shape({6, 3})).calls.size(),
            1u);  // one tall GEMM
  EXPECT_EQ(plan_matmul(ir::Shape({4, 5, 6}), ir::Shape({6, 3})).calls[0].g.n, 20);
  MatmulPlan batched = plan_matmul(ir::Shape({2, 3, 5, 6}), ir::Shape({2, 3, 6, 4}));
  ASSERT_EQ(batched.calls.size(), 1u);
  EXPECT_EQ(batched.calls[0].g.batch, 6);
  MatmulPlan shared_a = plan_matmul(ir::Shape({5, 6}), ir::Shape({3, 6, 4}));
  ASSERT_EQ(shared_a.calls.size(), 1u);
  EXPECT_EQ(shared_a.calls[0].g.stride_b, 0)
      << "the row-major A is shared by every matrix of the batch";
  MatmulPlan cross = plan_matmul(ir::Shape({2, 1, 4, 5}), ir::Shape({3, 5, 6}));
  EXPECT_EQ(cross.calls.size(), 2u);
  EXPECT_EQ(cross.batches, 6);
  // Numerically: [2,1,4,5] x [3,5,6] against a direct loop.
  std::vector<float> a = iota_values(2 * 4 * 5, 0.5f), b = iota_values(3 * 5 * 6, 0.3f),
                     c(2 * 3 * 4 * 6, 0);
  run_calls(cross.calls, a, b, c);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int r = 0; r < 4; ++r)
        for (int q = 0; q < 6; ++q) {
          double want = 0;
          for (int l = 0; l < 5; ++l)
            want += static_cast<double>(a[(i * 4 + r) * 5 + l]) * b[(j * 5 + l) * 6 + q];
          EXPECT_FLOAT_EQ(c[((i * 3 + j) * 4 + r) * 6 + q], static_cast<float>(want));
        }
}

// ---- convolution geometry ----

ir::WindowGeometry conv_geometry(ir::Shape x, ir::Shape w, ir::Attributes attrs) {
  ir::Graph g;
  ir::ValueId xi = g.add_input("x", ir::DType::f32, x);
  ir::ValueId wi = g.add_input("w", ir::DType::f32, w);
  g.add_node(ir::OpType::Conv, "conv", {xi, wi}, attrs);
  ir::infer_shapes(g);
  return ir::window_geometry(g, g.node(0));
}

TEST(CudaConvPlan, PicksTheAlgorithm) {
  using Ints = std::vector<int64_t>;
  ConvPlan dw = plan_conv(
      conv_geometry(ir::Shape({1, 8, 9, 9}), ir::Shape({8, 1, 3, 3}), {{"group", int64_t{8}}}), 4,
      1 << 20);
  EXPECT_EQ(dw.algo, ConvAlgo::depthwise);
  ConvPlan pw =
      plan_conv(conv_geometry(ir::Shape({2, 8, 9, 9}), ir::Shape({4, 8, 1, 1}), {}), 4, 1 << 20);
  EXPECT_EQ(pw.algo, ConvAlgo::pointwise);
  EXPECT_EQ(pw.col_elements, 0);
  EXPECT_EQ(conv_gemm_calls(pw, 0, 2)[0].g.batch, 2);
  ConvPlan strided = plan_conv(
      conv_geometry(ir::Shape({2, 8, 9, 9}), ir::Shape({4, 8, 1, 1}), {{"strides", Ints{2, 2}}}), 4,
      1 << 20);
  EXPECT_EQ(strided.algo, ConvAlgo::im2col);
  ir::Attributes nhwc{
      {"layout", std::string("NHWC")}, {"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{2}}};
  ConvPlan cl =
      plan_conv(conv_geometry(ir::Shape({4, 9, 9, 8}), ir::Shape({6, 4, 3, 3}), nhwc), 4, 1 << 20);
  EXPECT_EQ(cl.algo, ConvAlgo::im2col);
  EXPECT_TRUE(cl.reorder_weights);
  EXPECT_EQ(cl.k, 36);
  std::vector<GemmCall> calls = conv_gemm_calls(cl, 0, 4);
  ASSERT_EQ(calls.size(), 2u);  // one per group
  EXPECT_EQ(calls[1].c_offset, 3) << "group 1 writes output channels 3..5 of every pixel";
}

TEST(CudaConvPlan, ChunksTheBatchToTheWorkspace) {
  ir::WindowGeometry g = conv_geometry(ir::Shape({64, 64, 56, 56}), ir::Shape({64, 64, 3, 3}),
                                       {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  int64_t per_image = 64 * 9 * 56 * 56 * 4;  // 7.2 MB of im2col per image
  ConvPlan p = plan_conv(g, 4, int64_t{256} << 20);
  EXPECT_EQ(p.chunk_images, (int64_t{256} << 20) / per_image);
  EXPECT_LE(p.col_elements * 4, int64_t{256} << 20);
  EXPECT_EQ(plan_conv(g, 4, 1).chunk_images, 1) << "at least one image per chunk";
  EXPECT_EQ(plan_conv(g, 4, int64_t{1} << 40).chunk_images, 64) << "never more than the batch";
}

TEST(CudaConvPlan, ReordersWeightsForChannelsLast) {
  ir::HostTensor w(ir::DType::f32, ir::Shape({2, 3, 2, 2}));
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i);
  ir::HostTensor r = reorder_weights_channels_last(w);
  EXPECT_EQ(r.shape(), ir::Shape({2, 4, 3}));
  for (int m = 0; m < 2; ++m)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(r.data<float>()[(m * 4 + k) * 3 + c], w.data<float>()[(m * 3 + c) * 4 + k]);
}

// ---- op support and lowering ----

TEST(CudaSupport, SaysWhyAnOpStaysOnCpu) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", ir::DType::i8, ir::Shape({4, 8}));
  ir::ValueId b = g.add_input("b", ir::DType::i8, ir::Shape({8, 3}));
  ir::ValueId f = g.add_input("f", ir::DType::f32, ir::Shape({1, 2, 4, 4, 4, 4}));
  ir::ValueId w = g.add_input("w", ir::DType::f32, ir::Shape({2, 2, 1, 1, 1, 1}));
  ir::ValueId x = g.add_input("x", ir::DType::f32, ir::Shape({2, 3}));
  ir::ValueId lo = g.add_input("lo", ir::DType::f32, ir::Shape());
  g.add_node(ir::OpType::MatMul, "int8_matmul", {a, b});
  g.add_node(ir::OpType::Conv, "conv4d", {f, w});
  g.add_node(ir::OpType::Dropout, "dropout_mask", {x}, {}, 2);
  g.add_node(ir::OpType::Clip, "clip_input_bound", {x, lo});
  g.add_node(ir::OpType::Relu, "relu", {x});
  ir::ValueId d = g.add_input("d", ir::DType::f64, ir::Shape({2, 3}));
  g.add_node(ir::OpType::Cast, "to_double", {x}, {{"to", std::string("f64")}});
  g.add_node(ir::OpType::CumSum, "double_cumsum",
             {d, g.add_constant("axis", ir::HostTensor(ir::DType::i64, ir::Shape()))});
  ir::infer_shapes(g);
  EXPECT_EQ(unsupported_reason(g, g.node(5)), "Cast on f64");
  EXPECT_EQ(unsupported_reason(g, g.node(6)), "CumSum on f64");
  EXPECT_EQ(unsupported_reason(g, g.node(0)), "MatMul on i8");
  EXPECT_NE(unsupported_reason(g, g.node(1)).find("4 spatial dims"), std::string::npos);
  EXPECT_EQ(unsupported_reason(g, g.node(2)), "Dropout's mask output");
  EXPECT_EQ(unsupported_reason(g, g.node(3)), "Clip bounds that are not constants");
  EXPECT_EQ(unsupported_reason(g, g.node(4)), "");
  EXPECT_FALSE(cuda_backend().supports_op(g, g.node(0), "0", {}));
  EXPECT_TRUE(cuda_backend().supports_op(g, g.node(4), "0", {}));
}

ir::Graph zoo_graph(const std::string& name, const zoo::ModelOptions& o, int64_t batch) {
  return prepare_graph(zoo::build(name, o), batch);
}

TEST(CudaLowering, ResNet50PlansOneArenaAndUploadsWeightsOnce) {
  ir::Graph g = zoo_graph("resnet50", {}, 8);
  CudaOptions o;
  Program p = lower(g, o);
  int64_t params = 0, activations = 0, gemms = 0, im2col = 0;
  for (int i = 0; i < g.num_values(); ++i) {
    const ir::Value& v = g.value(i);
    if (v.constant && v.type.dtype == ir::DType::f32)
      params += static_cast<int64_t>(v.constant->nbytes());
    else if (!v.constant)
      activations += v.type.shape.numel() * 4;
  }
  for (const Instr& i : p.instrs) {
    gemms += std::holds_alternative<GemmInstr>(i);
    im2col += std::holds_alternative<Im2colInstr>(i);
  }
  size_t device_nodes = 0;
  for (const ir::Node& n : g.nodes()) device_nodes += !backends::is_folded(g, n);
  EXPECT_EQ(p.steps.size(), device_nodes);
  EXPECT_GE(gemms, 53) << "every convolution and the classifier run on cuBLAS";
  EXPECT_GT(im2col, 0);
  EXPECT_LT(p.arena_bytes, activations / 3) << "buffers are reused across the network";
  EXPECT_GE(p.arena_bytes, p.peak_live_bytes);
  // Weights and folded batch-norm parameters, uploaded once; no copy of the 25.6M parameters twice.
  EXPECT_GT(p.constant_bytes, 90'000'000);
  EXPECT_LT(p.constant_bytes, params + 2'000'000);
  EXPECT_EQ(p.matrix_modes, std::set<std::string>({"tf32"}));
  o.tf32 = false;
  EXPECT_EQ(lower(g, o).matrix_modes, std::set<std::string>({"fp32"}));
}

TEST(CudaLowering, BertRunsEveryNodeOnTheGpu) {
  ir::Graph g = zoo_graph(
      "bert",
      {"nchw", 0, {{"layers", 2}, {"hidden", 64}, {"heads", 4}, {"seq", 16}, {"vocab", 100}}}, 2);
  for (const ir::Node& n : g.nodes())
    if (!backends::is_folded(g, n)) {
      EXPECT_EQ(unsupported_reason(g, n), "") << n.name;
    }
  Program p = lower(g, CudaOptions{});
  EXPECT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(p.output_types[0].shape, ir::Shape({2, 16, 64}));
}

TEST(CudaLowering, UnsupportedNodesAreRefusedByName) {
  ir::Graph g;
  ir::ValueId a = g.add_input("a", ir::DType::i8, ir::Shape({4, 8}));
  ir::ValueId b = g.add_input("b", ir::DType::i8, ir::Shape({8, 3}));
  g.add_output(g.add_node(ir::OpType::MatMul, "qmm", {a, b})[0]);
  ir::infer_shapes(g);
  try {
    lower(g, CudaOptions{});
    FAIL();
  } catch (const UnsupportedOpError& e) {
    EXPECT_NE(std::string(e.what()).find("'qmm'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mimic::backends::cuda
