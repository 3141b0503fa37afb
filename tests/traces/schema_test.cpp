// Schema: creation, versioning, and a round trip of every kind of row through writer and reader.
// Opening files that must not be touched: not SQLite, another application's database, a newer
// schema version, a read-only location.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/traces/test_util.h"
#include "traces/schema.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace mimic::traces {
namespace {

using test::TempDir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(TraceSchema, NewFileGetsVersionApplicationIdMetaTablesAndViews) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  { TraceWriter w(path); }
  TraceReader r(path);
  EXPECT_EQ(r.query("PRAGMA user_version")[0][0], std::to_string(kSchemaVersion));
  EXPECT_EQ(r.query("PRAGMA application_id")[0][0], std::to_string(kApplicationId));
  EXPECT_EQ(r.query("PRAGMA journal_mode")[0][0], "wal");
  EXPECT_EQ(r.query("SELECT value FROM meta WHERE key = 'format'")[0][0], "mimic-trace");
  EXPECT_EQ(r.query("SELECT value FROM meta WHERE key = 'schema_version'")[0][0],
            std::to_string(kSchemaVersion));
  for (const char* table : {"meta", "string", "run", "device", "track", "op", "event", "counter",
                            "run_table", "run_table_row"})
    EXPECT_EQ(r.query(std::string(
                          "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '") +
                      table + "'")[0][0],
              "1")
        << table;
  for (const char* view :
       {"device_v", "track_v", "op_v", "event_ns", "counter_ns", "device_span", "run_time",
        "op_summary", "op_type_summary", "unit_utilization", "run_overview", "run_compare"})
    EXPECT_EQ(
        r.query(std::string("SELECT COUNT(*) FROM sqlite_master WHERE type = 'view' AND name = '") +
                view + "'")[0][0],
        "1")
        << view;
}

TEST(TraceSchema, ReopeningMigratesNothingAndKeepsRuns) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  for (int i = 0; i < 3; ++i) {
    TraceWriter w(path);
    auto run = w.begin_run(test::meta("m", i + 1));
    run->finish(true);
  }
  TraceReader r(path);
  EXPECT_EQ(r.runs().size(), 3u);
  EXPECT_EQ(r.query("SELECT COUNT(*) FROM sqlite_master WHERE name = 'event'")[0][0], "1");
  EXPECT_EQ(r.runs()[2].batch, 3);
}

TEST(TraceSchema, RoundTripOfEveryRowKind) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  std::string uuid;
  {
    TraceWriter w(path);
    auto run = w.begin_run(
        RunMeta{"resnet50", 8, "nhwc", "bf16", "tpu-emu:v4", "sweep-1", R"({"seed":3})"});
    uuid = run->uuid();
    auto dev = run->add_device(
        sim::DeviceDesc{"tpu-emu", "v4", 1'050'000'000, sim::TimeUnit::cycles, R"({"mxus":4})"});
    auto mxu = run->add_track(dev, "mxu0", "matrix");
    auto dma = run->add_track(dev, "dma", "dma");
    auto op = run->add_op(sim::OpDesc{"conv1", "Conv", "bf16[8,3,224,224] -> bf16[8,64,112,112]",
                                      "bf16", 1000, 200, 300, "tpu-emu", false});
    auto fb = run->add_op(sim::OpDesc{"argmax", "ArgMax", "f32[8,1000] -> i64[8]", "i64", 0, 32000,
                                      64, "cpu", false});
    run->event(mxu, op, "matmul", 100, 50);
    run->event(dma, op, "dma_in", 0, 100);
    run->event(dma, sim::kNoOp, "sync", 150, 5);
    run->counter(dma, 10, 2.5);
    run->table_row("tile_memory", R"(["tile","bytes"])", R"([0, 1024])");
    run->table_row("tile_memory", R"(["tile","bytes"])", R"([1, 2048])");
    run->finish(true);
    EXPECT_EQ(fb, 1);
  }
  TraceReader r(path);
  ASSERT_EQ(r.runs().size(), 1u);
  RunRecord run = r.run(r.resolve_run(""));
  EXPECT_EQ(run.uuid, uuid);
  EXPECT_EQ(run.status, "done");
  EXPECT_EQ(run.model, "resnet50");
  EXPECT_EQ(run.batch, 8);
  EXPECT_EQ(run.layout, "nhwc");
  EXPECT_EQ(run.precision, "bf16");
  EXPECT_EQ(run.device, "tpu-emu:v4");
  EXPECT_EQ(run.tag, "sweep-1");
  EXPECT_EQ(run.config_json, R"({"seed":3})");
  EXPECT_EQ(run.tool_version, MIMIC_VERSION);
  EXPECT_GT(run.ended_ns, run.started_ns);
  EXPECT_EQ(run.pid, getpid());
  EXPECT_EQ(run.events, 3);

  auto devices = r.devices(run.id);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].backend, "tpu-emu");
  EXPECT_EQ(devices[0].preset, "v4");
  EXPECT_EQ(devices[0].clock_hz, 1'050'000'000);
  EXPECT_EQ(devices[0].time_unit, "cycles");
  EXPECT_EQ(devices[0].properties_json, R"({"mxus":4})");
  EXPECT_EQ(devices[0].start, 0);
  EXPECT_EQ(devices[0].end, 155);

  auto tracks = r.tracks(run.id);
  ASSERT_EQ(tracks.size(), 2u);
  EXPECT_EQ(tracks[0].name, "mxu0");
  EXPECT_EQ(tracks[0].kind, "matrix");
  EXPECT_EQ(tracks[1].name, "dma");

  auto ops = r.ops(run.id);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].node, "conv1");
  EXPECT_EQ(ops[0].shapes, "bf16[8,3,224,224] -> bf16[8,64,112,112]");
  EXPECT_EQ(ops[0].flops, 1000);
  EXPECT_EQ(ops[0].bytes_in, 200);
  EXPECT_EQ(ops[0].bytes_out, 300);
  EXPECT_FALSE(ops[0].fallback);
  EXPECT_TRUE(ops[1].fallback) << "an op run by cpu in a tpu-emu run is a fallback";
  EXPECT_EQ(ops[0].events, 2);

  std::vector<EventRecord> events;
  r.for_each_event(run.id, [&](const EventRecord& e) { events.push_back(e); });
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].name, "matmul");
  EXPECT_EQ(events[0].ts, 100);
  EXPECT_EQ(events[0].dur, 50);
  EXPECT_EQ(events[1].name, "dma_in");
  EXPECT_EQ(events[2].name, "sync");
  EXPECT_EQ(events[2].op_id, -1);

  int counters = 0;
  r.for_each_counter(run.id, [&](const CounterRecord& c) {
    EXPECT_EQ(c.ts, 10);
    EXPECT_DOUBLE_EQ(c.value, 2.5);
    ++counters;
  });
  EXPECT_EQ(counters, 1);

  auto tables = r.tables(run.id);
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].name, "tile_memory");
  EXPECT_EQ(tables[0].columns, (std::vector<std::string>{"tile", "bytes"}));
  EXPECT_EQ(tables[0].rows_json, (std::vector<std::string>{"[0,1024]", "[1,2048]"}));
  EXPECT_EQ(r.query("PRAGMA integrity_check")[0][0], "ok");
  // Strings are interned: "dma" names a track and nothing else; each distinct string once.
  EXPECT_EQ(r.query("SELECT COUNT(*) FROM string WHERE value = 'dma'")[0][0], "1");
  EXPECT_EQ(r.query("SELECT COUNT(*) FROM string")[0][0],
            r.query("SELECT COUNT(DISTINCT value) FROM string")[0][0]);
  // The run's rows are found through the rowid ranges recorded with each batch.
  EXPECT_EQ(
      r.query("SELECT first_event_rowid, last_event_rowid, first_counter_rowid, last_counter_rowid "
              "FROM run")[0],
      (std::vector<std::string>{"1", "3", "1", "1"}));
}

TEST(TraceSchema, NewerSchemaVersionIsRefusedAndFileUntouched) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  { TraceWriter w(path); }
  {
    Db db(path, Db::Mode::read_write_create);
    db.exec("PRAGMA user_version = 99", "test");
  }
  std::string before = test::read_file(path);
  std::string w = error_of([&] { TraceWriter writer(path); });
  EXPECT_NE(w.find("schema version 99"), std::string::npos) << w;
  EXPECT_NE(w.find("newer"), std::string::npos) << w;
  EXPECT_EQ(w.find('\n'), std::string::npos);
  std::string r = error_of([&] { TraceReader reader(path); });
  EXPECT_NE(r.find("schema version 99"), std::string::npos) << r;
  EXPECT_EQ(test::read_file(path), before);
}

// A damaged header (a negative user_version, as the trace_db fuzzer wrote) is refused before any
// migration reads its table of steps.
TEST(TraceSchema, NegativeSchemaVersionIsRefusedAndFileUntouched) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  { TraceWriter w(path); }
  {
    Db db(path, Db::Mode::read_write_create);
    db.exec("PRAGMA user_version = -1", "test");
  }
  std::string before = test::read_file(path);
  std::string w = error_of([&] { TraceWriter writer(path); });
  EXPECT_NE(w.find("schema version -1, which no mimic writes"), std::string::npos) << w;
  EXPECT_EQ(w.find('\n'), std::string::npos);
  std::string r = error_of([&] { TraceReader reader(path); });
  EXPECT_NE(r.find("schema version -1"), std::string::npos) << r;
  EXPECT_EQ(test::read_file(path), before);
}

TEST(TraceSchema, FileThatIsNotSqliteIsRefusedAndUntouched) {
  TempDir tmp;
  std::string path = tmp.file("notes.db");
  std::string text = "these are my notes, not a database\n";
  test::write_file(path, text);
  std::string w = error_of([&] { TraceWriter writer(path); });
  EXPECT_NE(w.find("not an SQLite database"), std::string::npos) << w;
  EXPECT_NE(w.find(path), std::string::npos) << w;
  std::string r = error_of([&] { TraceReader reader(path); });
  EXPECT_NE(r.find("not an SQLite database"), std::string::npos) << r;
  EXPECT_EQ(test::read_file(path), text);
  EXPECT_FALSE(test::exists(path + "-wal"));
}

TEST(TraceSchema, AnotherApplicationsDatabaseIsRefused) {
  TempDir tmp;
  std::string path = tmp.file("other.db");
  {
    Db db(path, Db::Mode::read_write_create);
    db.exec("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT)", "test");
  }
  std::string before = test::read_file(path);
  std::string w = error_of([&] { TraceWriter writer(path); });
  EXPECT_NE(w.find("not a mimic trace"), std::string::npos) << w;
  EXPECT_EQ(test::read_file(path), before);
  std::string r = error_of([&] { TraceReader reader(path); });
  EXPECT_NE(r.find("not a mimic trace"), std::string::npos) << r;
}

TEST(TraceSchema, ReadOnlyLocationIsRefused) {
  TempDir tmp;
  std::string path = test::unwritable_dir(tmp) + "/mimic-trace-test.db";
  std::string w = error_of([&] { TraceWriter writer(path); });
  EXPECT_NE(w.find("cannot"), std::string::npos) << w;
  EXPECT_NE(w.find(path), std::string::npos) << w;
  EXPECT_EQ(w.find('\n'), std::string::npos);
  EXPECT_FALSE(test::exists(path));
}

// A trace in WAL mode that the reader may not write, in a directory it may not write either (an
// archived or another user's trace): readable. Root writes anything, so the reader is a child
// process running as 'nobody'.
TEST(TraceSchema, ReadOnlyTraceInReadOnlyDirectoryIsReadable) {
  TempDir tmp;
  std::string dir = tmp.file("archive"), path = dir + "/t.db";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  {
    TraceWriter w(path);
    w.begin_run(test::meta("m", 3))->finish(true);
  }
  ASSERT_EQ(chmod(path.c_str(), 0444), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0555), 0);
  ASSERT_EQ(chmod(tmp.path().c_str(), 0755), 0);  // mkdtemp made it 0700
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(2);
    try {
      TraceReader r(path);
      _exit(r.runs().size() == 1 && r.runs()[0].batch == 3 ? 0 : 3);
    } catch (const std::exception&) {
      _exit(4);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: cannot drop privileges, 3: wrong rows, 4: refused";
  chmod(dir.c_str(), 0755);
}

TEST(TraceSchema, MissingDirectoryAndMissingFileAreNamed) {
  TempDir tmp;
  std::string w = error_of([&] { TraceWriter writer(tmp.file("no/such/dir/t.db")); });
  EXPECT_NE(w.find("does not exist"), std::string::npos) << w;
  std::string r = error_of([&] { TraceReader reader(tmp.file("missing.db")); });
  EXPECT_NE(r.find("does not exist"), std::string::npos) << r;
  std::string d = error_of([&] { TraceWriter writer(tmp.path()); });
  EXPECT_NE(d.find("is a directory"), std::string::npos) << d;
}

TEST(TraceSchema, EmptyFileBecomesATraceForWritersButIsNotOneForReaders) {
  TempDir tmp;
  std::string path = tmp.file("empty.db");
  test::write_file(path, "");
  std::string r = error_of([&] { TraceReader reader(path); });
  EXPECT_NE(r.find("empty"), std::string::npos) << r;
  { TraceWriter w(path); }
  TraceReader reader(path);
  EXPECT_TRUE(reader.runs().empty());
}

}  // namespace
}  // namespace mimic::traces
