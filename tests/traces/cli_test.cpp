// The CLI on traces made by `mimic run --model mlp ... --trace`: trace list, summary, export,
// diff and report, and every bad input giving one line on stderr and a nonzero exit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/traces/test_util.h"
#include "traces/trace_reader.h"

namespace mimic::traces {
namespace {

using test::CommandResult;
using test::TempDir;

const std::string kMimic = MIMIC_BIN;

class TraceCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    a_ = tmp_->file("a.db");
    b_ = tmp_->file("b.db");
    // a.db: runs 1 and 2 (batch 4, --repeat 2) and run 3 (batch 8); b.db: run 1 (batch 16).
    ASSERT_EQ(mimic("run --model mlp --batch 4 --repeat 2 --trace " + a_).exit_code, 0);
    ASSERT_EQ(mimic("run --model mlp --batch 8 --trace " + a_).exit_code, 0);
    ASSERT_EQ(mimic("run --model mlp --batch 16 --trace " + b_).exit_code, 0);
  }
  static void TearDownTestSuite() { delete tmp_; }

  static CommandResult mimic(const std::string& args) {
    return test::run_command(kMimic + " " + args, *tmp_);
  }

  // A bad input: nonzero exit, exactly one line on stderr naming the problem, nothing on stdout.
  static void expect_one_line_error(const CommandResult& r, const std::string& needle,
                                    int code = -1) {
    EXPECT_NE(r.exit_code, 0);
    if (code >= 0) {
      EXPECT_EQ(r.exit_code, code) << r.err;
    }
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("mimic: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }

  static TempDir* tmp_;
  static std::string a_, b_;
};

TempDir* TraceCli::tmp_ = nullptr;
std::string TraceCli::a_, TraceCli::b_;

TEST_F(TraceCli, RunPrintsWhereTheTraceIs) {
  CommandResult r = mimic("run --model mlp --batch 2 --trace " + tmp_->file("c.db"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("trace       " + tmp_->file("c.db") + " (run 1)"), std::string::npos)
      << r.out;
  CommandResult j = mimic("run --model mlp --batch 2 --json --trace " + tmp_->file("c.db"));
  ASSERT_EQ(j.exit_code, 0) << j.err;
  nlohmann::json parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["trace"]["runs"], nlohmann::json::array({2}));
}

TEST_F(TraceCli, ListShowsEveryRun) {
  CommandResult r = mimic("trace list " + a_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3 run(s)"), std::string::npos) << r.out;
  CommandResult j = mimic("trace list --json " + a_);
  nlohmann::json runs = nlohmann::json::parse(j.out);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0]["batch"], 4);
  EXPECT_EQ(runs[2]["batch"], 8);
  for (const auto& run : runs) {
    EXPECT_EQ(run["status"], "done");
    EXPECT_EQ(run["model"], "mlp");
    EXPECT_EQ(run["device"], "cpu");
    EXPECT_EQ(run["events"], 8);  // mlp: 3 x (MatMul, Add) + 2 Relu
    EXPECT_EQ(run["config"]["command"], "mimic run");
  }
}

TEST_F(TraceCli, SummaryHasOpTypesAndUtilization) {
  CommandResult r = mimic("trace summary " + a_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"run 3: mlp batch 8 on cpu", "time by op type", "MatMul", "Relu", "GFLOP/s",
                        "utilization per unit", "host"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  CommandResult ops = mimic("trace summary --run 1 --by op " + a_);
  EXPECT_NE(ops.out.find("fc1.matmul"), std::string::npos) << ops.out;
  nlohmann::json j = nlohmann::json::parse(mimic("trace summary --json --run 2 " + a_).out);
  EXPECT_EQ(j["run"]["id"], 2);
  ASSERT_EQ(j["op_types"].size(), 3u);
  int64_t count = 0;
  double pct = 0;
  for (const auto& t : j["op_types"]) {
    count += t["count"].get<int64_t>();
    pct += t["pct_of_run"].get<double>();
  }
  EXPECT_EQ(count, 8);
  EXPECT_NEAR(pct, 100.0, 2.0);  // one op at a time on the cpu: op times add up to the run
  ASSERT_EQ(j["units"].size(), 1u);
  EXPECT_GT(j["units"][0]["utilization"].get<double>(), 0.5);
}

TEST_F(TraceCli, ExportChromeAndCsv) {
  std::string json = tmp_->file("t.json"), csv = tmp_->file("t.csv");
  CommandResult r = mimic("trace export " + a_ + " --format chrome -o " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(test::read_file(json));
  int x = 0, threads = 0;
  for (const auto& e : j["traceEvents"]) {
    x += e["ph"] == "X";
    threads += e["ph"] == "M" && e["name"] == "thread_name";
  }
  EXPECT_EQ(x, 24);
  EXPECT_EQ(threads, 3);
  CommandResult one = mimic("trace export " + a_ + " --run 3 --format chrome -o -");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out)["traceEvents"].size(),
            4u + 8u);  // 4 metadata + 8 slices
  ASSERT_EQ(mimic("trace export " + a_ + " --format csv --run 1 -o " + csv).exit_code, 0);
  EXPECT_EQ(test::count_lines(test::read_file(csv)), 1 + 8);
}

TEST_F(TraceCli, DiffTwoRunsOfOneFileAndTwoFiles) {
  CommandResult r = mimic("trace diff " + a_ + " --run 1 --run 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"A  run 1: mlp batch 4", "B  run 3: mlp batch 8", "8 ops matched",
                        "by op type", "MatMul", "fc1.matmul"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  CommandResult files = mimic("trace diff --json " + a_ + " " + b_);
  ASSERT_EQ(files.exit_code, 0) << files.err;
  nlohmann::json j = nlohmann::json::parse(files.out);
  EXPECT_EQ(j["a"]["run"]["batch"], 8);
  EXPECT_EQ(j["b"]["run"]["batch"], 16);
  EXPECT_EQ(j["ops"].size(), 8u);
  EXPECT_EQ(j["only_a"], 0);
}

TEST_F(TraceCli, ReportWritesSelfContainedHtml) {
  std::string html = tmp_->file("report.html");
  CommandResult r = mimic("report " + a_ + " --run 2 -o " + html);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string page = test::read_file(html);
  for (const char* s : {"<svg", "mimic run 2: mlp, batch 4 on cpu", "Timeline",
                        "Utilization per unit", "fc2.matmul", "Run config"})
    EXPECT_NE(page.find(s), std::string::npos) << s;
  EXPECT_EQ(page.find("http"), std::string::npos);
  ASSERT_EQ(mimic("report " + a_).exit_code, 0);
  EXPECT_TRUE(test::exists(tmp_->file("a-run3.html")));
}

TEST_F(TraceCli, BadInputsGiveOneLineErrors) {
  expect_one_line_error(mimic("trace summary " + tmp_->file("missing.db")), "does not exist", 6);
  expect_one_line_error(mimic("trace summary --run 123456789 " + a_),
                        "run 123456789 is not in trace", 2);
  expect_one_line_error(mimic("trace summary --by cheese " + a_), "--by must be", 2);
  expect_one_line_error(mimic("trace export " + a_ + " --format xml -o " + tmp_->file("x")),
                        "--format must be", 2);
  expect_one_line_error(
      mimic("trace export " + a_ + " --format csv -o " + tmp_->file("no/dir/x.csv")),
      "does not exist", 6);
  expect_one_line_error(mimic("trace diff " + a_), "give two runs", 2);
  expect_one_line_error(mimic("trace diff " + a_ + " --run 1 --run 9"), "run 9", 2);
  expect_one_line_error(mimic("report " + a_ + " --run abcdef"), "run 'abcdef' is not in trace", 2);
  EXPECT_NE(mimic("trace").exit_code, 0);
  EXPECT_NE(mimic("trace list").exit_code, 0);
}

TEST_F(TraceCli, FileThatIsNotSqliteIsRefusedAndUntouched) {
  std::string notes = tmp_->file("notes.db");
  test::write_file(notes, "my notes\n");
  expect_one_line_error(mimic("run --model mlp --trace " + notes), "not an SQLite database", 6);
  expect_one_line_error(mimic("trace list " + notes), "not an SQLite database", 6);
  expect_one_line_error(mimic("report " + notes + " -o " + tmp_->file("n.html")),
                        "not an SQLite database", 6);
  EXPECT_EQ(test::read_file(notes), "my notes\n");
  EXPECT_FALSE(test::exists(tmp_->file("n.html")));
}

TEST_F(TraceCli, NewerSchemaVersionIsRefusedAndUntouched) {
  std::string path = tmp_->file("future.db");
  ASSERT_EQ(mimic("run --model mlp --trace " + path).exit_code, 0);
  {
    Db db(path, Db::Mode::read_write_create);
    db.exec("PRAGMA user_version = 7", "test");
  }
  std::string before = test::read_file(path);
  expect_one_line_error(mimic("run --model mlp --trace " + path), "schema version 7, newer", 6);
  expect_one_line_error(mimic("trace summary " + path), "schema version 7, newer", 6);
  EXPECT_EQ(test::read_file(path), before);
}

TEST_F(TraceCli, ReadOnlyLocationIsRefused) {
  std::string path = test::unwritable_dir(*tmp_) + "/mimic-cli-test.db";
  expect_one_line_error(mimic("run --model mlp --trace " + path), "cannot", 6);
  EXPECT_FALSE(test::exists(path));
}

}  // namespace
}  // namespace mimic::traces
