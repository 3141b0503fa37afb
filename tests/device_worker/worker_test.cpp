// The device worker process: framing, error propagation with kinds, crash detection, the pool, the
// wire format's bounds checks, and the program table both emulators' workers share.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "backends/device_worker/program_host.h"
#include "backends/device_worker/recording_sink.h"
#include "backends/device_worker/wire.h"
#include "backends/device_worker/worker_process.h"
#include "base/error.h"

namespace mimic::backends {
namespace {

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("MIMIC_DEVICE_WORKER", TEST_WORKER_PATH, 1); }
};

std::vector<uint8_t> bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

TEST_F(WorkerTest, EchoesLargeMessages) {
  auto w = WorkerProcess::start("echo", bytes("cfg"));
  std::vector<uint8_t> big(5 << 20, 0x5a);
  big[0] = 'e';
  auto out = w->call(big);
  EXPECT_EQ(out.size(), big.size() - 1);
  EXPECT_EQ(out.back(), 0x5a);
}

TEST_F(WorkerTest, ErrorsKeepTheirKindAndMessage) {
  auto w = WorkerProcess::start("echo", bytes("cfg"));
  try {
    w->call(bytes("x"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory);
    EXPECT_STREQ(e.what(), "tile 7 needs 700 bytes, has 600");
  }
  EXPECT_EQ(w->call(bytes("eok")), bytes("ok"));  // still usable afterwards
}

TEST_F(WorkerTest, BadConfigurationAndUnknownKind) {
  EXPECT_THROW(WorkerProcess::start("echo", bytes("F")), InvalidArgument);
  EXPECT_THROW(WorkerProcess::start("nope", bytes("")), DeviceUnavailableError);
}

TEST_F(WorkerTest, CrashIsReportedWithTheSignalAndThePoolRecovers) {
  auto w = shared_worker("echo", bytes("pool"));
  try {
    w->call(bytes("c"));
    FAIL() << "expected the crash to be reported";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("signal 6"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(w->alive());
  auto again = shared_worker("echo", bytes("pool"));
  EXPECT_NE(again->pid(), w->pid());
  EXPECT_EQ(again->call(bytes("ehi")), bytes("hi"));
  EXPECT_EQ(shared_worker("echo", bytes("pool"))->pid(), again->pid());
}

TEST_F(WorkerTest, MissingExecutableIsUnavailable) {
  setenv("MIMIC_DEVICE_WORKER", "/nonexistent/mimic-device", 1);
  EXPECT_THROW(WorkerProcess::start("echo", {}), DeviceUnavailableError);
}

class CountingSink final : public sim::EventSink {
 public:
  sim::DeviceId add_device(const sim::DeviceDesc& d) override {
    clock = d.clock_hz;
    return 40;
  }
  sim::TrackId add_track(sim::DeviceId d, const std::string&, const std::string&) override {
    device = d;
    return 7;
  }
  sim::OpId add_op(const sim::OpDesc&) override { return 99; }
  void event(sim::TrackId t, sim::OpId op, std::string_view name, uint64_t ts,
             uint64_t dur) override {
    events++;
    last = {t, op, std::string(name), ts, dur};
  }
  void counter(sim::TrackId, uint64_t, double v) override { counter_value = v; }
  struct Last {
    sim::TrackId track;
    sim::OpId op;
    std::string name;
    uint64_t ts, dur;
  } last{};
  int events = 0;
  uint64_t clock = 0;
  sim::DeviceId device = -1;
  double counter_value = 0;
};

TEST_F(WorkerTest, RecordedEventsReplayWithRemappedIds) {
  auto w = WorkerProcess::start("echo", {});
  auto payload = w->call(bytes("r"));
  wire::Reader r(payload);
  CountingSink sink;
  RecordingSink::replay(r, sink);
  EXPECT_EQ(sink.events, 2);
  EXPECT_EQ(sink.device, 40);
  EXPECT_EQ(sink.clock, 1000u);
  EXPECT_EQ(sink.last.track, 7);
  EXPECT_EQ(sink.last.op, 99);
  EXPECT_EQ(sink.last.name, "matmul");
  EXPECT_EQ(sink.last.ts, 20u);
  EXPECT_EQ(sink.counter_value, 3.5);
}

TEST(Wire, ReportAndTensorRoundTrip) {
  RunReport rep;
  rep.device = "tpu-emu:v4";
  rep.cycles = 1234;
  rep.ops.push_back(OpReport{});
  rep.ops[0].node = "fc1";
  rep.units.push_back({"mxu0", "matrix", 1000, 0.81});
  rep.bytes_moved["hbm"] = 4096;
  rep.tables["memory"] = Table{{"tile", "bytes"}, {{1, 2}, {3, 4}}};
  ir::HostTensor t(ir::DType::i32, ir::Shape({2, 3}));
  t.data<int32_t>()[5] = 42;
  wire::Writer w;
  wire::write_report(w, rep);
  w.tensor(t);
  wire::Reader r(w.data());
  RunReport back = wire::read_report(r);
  ir::HostTensor t2 = r.tensor();
  EXPECT_TRUE(r.done());
  EXPECT_EQ(back.ops[0].node, "fc1");
  EXPECT_EQ(back.units[0].utilization, 0.81);
  EXPECT_EQ(back.tables["memory"].rows[1][0], 3);
  EXPECT_EQ(t2.data<int32_t>()[5], 42);
}

TEST(Wire, TruncatedAndCorruptMessagesThrow) {
  wire::Writer w;
  w.str("hello");
  std::vector<uint8_t> data = w.data();
  data.pop_back();
  wire::Reader r(data);
  EXPECT_THROW(r.str(), RuntimeError);
  wire::Writer huge;
  huge.u64(~0ull);
  wire::Reader r2(huge.data());
  EXPECT_THROW(r2.pods<double>(), RuntimeError);
}

// A device whose programs are one number: run returns it; the program 13 makes the model fail.
class NumberHost final : public ProgramHost {
 public:
  NumberHost() : ProgramHost("number-emu") {}

 private:
  struct Number final : LoadedProgram {
    uint64_t value = 0;
  };
  std::unique_ptr<LoadedProgram> load(wire::Reader& r) override {
    auto p = std::make_unique<Number>();
    p->value = r.u64();
    return p;
  }
  void run(LoadedProgram& program, wire::Reader& r, wire::Writer& w) override {
    uint64_t value = static_cast<Number&>(program).value;
    if (r.u64() != 1) throw InvalidArgument("number-emu: runs take one input");
    w.u64(run_model([&] {
      if (value == 13) throw std::runtime_error("unit 2 still holds work");
      return value;
    }));
  }
};

std::vector<uint8_t> request(uint8_t kind, uint64_t a, std::optional<uint64_t> b = {}) {
  wire::Writer w;
  w.u8(kind);
  w.u64(a);
  if (b) w.u64(*b);
  return std::move(w.data());
}

uint64_t answer(const std::vector<uint8_t>& response) {
  wire::Reader r(response);
  return r.u64();
}

TEST(ProgramHost, LoadsRunsAndUnloadsPrograms) {
  NumberHost host;
  uint64_t seven = answer(host.handle(request(kLoadProgram, 7)));
  uint64_t nine = answer(host.handle(request(kLoadProgram, 9)));
  EXPECT_NE(seven, nine);
  EXPECT_EQ(answer(host.handle(request(kRunProgram, seven, 1))), 7u);
  EXPECT_EQ(answer(host.handle(request(kRunProgram, nine, 1))), 9u);
  EXPECT_THROW(host.handle(request(kRunProgram, nine, 2)), InvalidArgument);
  EXPECT_EQ(answer(host.handle(request(kRunProgram, nine, 1))), 9u) << "a bad input breaks nothing";
  EXPECT_TRUE(host.handle(request(kUnloadProgram, seven)).empty());
  try {
    host.handle(request(kRunProgram, seven, 1));
    FAIL() << "program was unloaded";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "number-emu worker: no loaded program 1 (was it unloaded?)");
  }
  try {
    host.handle(request('Z', 0));
    FAIL() << "unknown request";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "number-emu worker: unknown request 'Z' (byte 90)");
  }
  try {
    host.handle(request('\n', 0));
    FAIL() << "unknown request";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "number-emu worker: unknown request (byte 10)") << "one line";
  }
}

TEST(ProgramHost, AModelThatFailedNeverRunsAgain) {
  NumberHost host;
  uint64_t ok = answer(host.handle(request(kLoadProgram, 5)));
  uint64_t bad = answer(host.handle(request(kLoadProgram, 13)));
  try {
    host.handle(request(kRunProgram, bad, 1));
    FAIL() << "the model fails";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "number-emu: the hardware model failed: unit 2 still holds work");
  }
  try {
    host.handle(request(kRunProgram, ok, 1));
    FAIL() << "a failed model must not run again";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(),
                 "number-emu: the hardware model failed in an earlier run (unit 2 still holds "
                 "work) and cannot run again");
  }
}

}  // namespace
}  // namespace mimic::backends
