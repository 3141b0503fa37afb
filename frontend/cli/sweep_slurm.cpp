#include "frontend/cli/sweep_slurm.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "frontend/cli/cli_common.h"

namespace fs = std::filesystem;

namespace mimic::cli::sweep {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(fmt::format("cannot read '{}'", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw IoError(fmt::format("'{}' is not valid JSON", path));
  return j;
}

// Written beside and renamed over, so a reader never sees half a file.
void write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) throw IoError(fmt::format("cannot write '{}'", tmp));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw IoError(fmt::format("cannot write '{}': {}", path, ec.message()));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string round_dir(const std::string& dir, size_t r) {
  return fmt::format("{}/round-{}", dir, r);
}
std::string task_dir(const std::string& round, size_t t) {
  return fmt::format("{}/task-{}", round, t);
}

// One submitted round: its job and the point keys of each array task.
struct Round {
  std::string dir, job;
  std::vector<std::vector<std::string>> tasks;
};

Round load_round(const std::string& dir, const std::string& job) {
  nlohmann::json j = read_json(dir + "/round.json");
  Round r{dir, job, {}};
  size_t per_task = j.at("points_per_task").get<size_t>();
  const auto& points = j.at("points");
  for (size_t i = 0; i < points.size(); ++i) {
    if (i % per_task == 0) r.tasks.emplace_back();
    r.tasks.back().push_back(points[i].at("key").get<std::string>());
  }
  return r;
}

// Array tasks of `job` still pending or running; nullopt when squeue cannot tell (controller down).
std::optional<std::set<int>> active_tasks(const std::string& job) {
  ProcessResult r = run_command({"squeue", "-h", "-r", "-j", job, "-o", "%i"});
  if (r.exit_code == 0) return slurm::parse_squeue(r.out, job);
  // A job that left the controller's memory is no longer active.
  if (r.err.find("Invalid job id") != std::string::npos) return std::set<int>{};
  std::cerr << fmt::format("mimic sweep: squeue failed ({}), will ask again\n",
                           r.err.substr(0, r.err.find('\n')));
  return std::nullopt;
}

slurm::TaskEnd task_end(const std::string& job, int task) {
  std::string id = fmt::format("{}_{}", job, task);
  ProcessResult acct =
      run_command({"sacct", "-n", "-P", "-X", "-j", id, "-o", "JobID,State,ExitCode"});
  if (acct.exit_code == 0) {
    auto ends = slurm::parse_sacct(acct.out, job);
    if (ends.count(task)) return ends[task];
  }
  ProcessResult ctl = run_command({"scontrol", "-o", "show", "job", id});
  if (ctl.exit_code == 0) {
    auto ends = slurm::parse_scontrol(ctl.out, job);
    if (ends.count(task)) return ends[task];
  }
  // A pending array task cancelled before it started leaves no record in the controller.
  return {
      "state unknown (sacct and scontrol no longer know the task: cancelled while pending, or "
      "purged)",
      "?"};
}

class SlurmSweep {
 public:
  SlurmSweep(Session& s, std::string dir, nlohmann::json state)
      : s_(s), dir_(std::move(dir)), state_(std::move(state)) {}
  // Merges finished tasks, gives up on points out of retries, submits the rest when `submit`.
  // Returns the number of points pending (queued, running, or just submitted).
  size_t step(bool submit);
  void save() const { write_atomically(dir_ + "/sweep.json", state_.dump(2) + "\n"); }

 private:
  void merge(const Round& round, size_t t);
  void submit_round(const std::vector<size_t>& points);

  Session& s_;
  std::string dir_;
  nlohmann::json state_;
  std::map<std::string, std::string> last_failure_;  // point key -> why its last task failed
  std::map<std::string, int> attempts_;              // point key -> rounds that carried it
};

void SlurmSweep::merge(const Round& round, size_t t) {
  std::string tdir = task_dir(round.dir, t);
  std::vector<PointOutcome> outcomes;
  if (fs::exists(tdir + "/results.jsonl"))
    for (auto& o : read_outcomes(tdir + "/results.jsonl"))
      if (std::find(round.tasks[t].begin(), round.tasks[t].end(), o.key) != round.tasks[t].end())
        outcomes.push_back(std::move(o));
  if (!outcomes.empty()) s_.record_task(tdir + "/trace.db", outcomes);
  if (!fs::exists(tdir + "/done")) {
    fs::create_directories(tdir);
    slurm::TaskEnd end = task_end(round.job, static_cast<int>(t));
    write_atomically(tdir + "/failed", fmt::format("slurm task {}_{} {}, exit code {}", round.job,
                                                   t, end.state, end.exit_code));
  }
  write_atomically(tdir + "/merged", fmt::format("{} points\n", outcomes.size()));
}

size_t SlurmSweep::step(bool submit) {
  last_failure_.clear();
  attempts_.clear();
  std::set<std::string> active;
  const auto& rounds = state_.at("rounds");
  size_t base = state_.at("attempt_base").get<size_t>();
  for (size_t r = 0; r < rounds.size(); ++r) {
    Round round = load_round(round_dir(dir_, r), rounds[r].at("job").get<std::string>());
    std::optional<std::set<int>> running;
    for (size_t t = 0; t < round.tasks.size(); ++t) {
      std::string tdir = task_dir(round.dir, t);
      if (r >= base)
        for (const auto& k : round.tasks[t]) ++attempts_[k];
      if (!fs::exists(tdir + "/merged")) {
        if (!running) running = active_tasks(round.job);
        if (!running || running->count(static_cast<int>(t))) {
          active.insert(round.tasks[t].begin(), round.tasks[t].end());
          continue;
        }
        merge(round, t);
      }
      if (fs::exists(tdir + "/failed"))
        for (const auto& k : round.tasks[t]) last_failure_[k] = read_text(tdir + "/failed");
    }
  }
  std::vector<size_t> next;
  for (size_t i : s_.todo()) {
    const std::string key = s_.points()[i].key();
    if (active.count(key)) continue;
    int tries = attempts_[key];
    if (tries < 1 + s_.args().retries) {
      next.push_back(i);
      continue;
    }
    std::string why =
        last_failure_.count(key) ? last_failure_[key] : "its task ended without a result for it";
    s_.record_failed(i, fmt::format("{} (after {} attempt{})", why, tries, tries == 1 ? "" : "s"));
  }
  if (!next.empty() && submit) submit_round(next);
  return active.size() + (submit ? next.size() : 0);
}

void SlurmSweep::submit_round(const std::vector<size_t>& points) {
  size_t r = state_["rounds"].size();
  std::string dir = round_dir(dir_, r);
  fs::create_directories(dir);
  size_t per_task = static_cast<size_t>(s_.args().points_per_task);
  nlohmann::json round{
      {"sweep_id", s_.id()}, {"points_per_task", per_task}, {"points", nlohmann::json::array()}};
  for (size_t i : points)
    round["points"].push_back({{"key", s_.points()[i].key()}, {"args", s_.run_arguments(i)}});
  write_atomically(dir + "/round.json", round.dump() + "\n");
  size_t tasks = (points.size() + per_task - 1) / per_task;
  // The job's environment is the submitter's (sbatch exports it): a task must not take the
  // submitter's process as its parent to die with.
  std::string script = fmt::format(
      "#!/bin/sh\n#SBATCH --job-name=mimic-sweep-{}\n#SBATCH --array=0-{}\n#SBATCH "
      "--output={}/task-%a.log\n"
      "unset MIMIC_EXIT_WITH_PARENT\nexec {} sweep task {} \"$SLURM_ARRAY_TASK_ID\"\n",
      s_.id(), tasks - 1, dir, shell_quote(self_executable()), shell_quote(dir));
  write_atomically(dir + "/job.sh", script);
  std::vector<std::string> argv{"sbatch", "--parsable"};
  argv.insert(argv.end(), s_.args().sbatch.begin(), s_.args().sbatch.end());
  argv.push_back(dir + "/job.sh");
  ProcessResult res = run_command(argv);
  std::string job = res.out.substr(0, res.out.find_first_of(";\n"));
  if (res.exit_code != 0 || job.empty() || job.find_first_not_of("0123456789") != std::string::npos)
    throw RuntimeError(fmt::format(
        "sbatch failed (exit {}) submitting {} ({} array tasks{}): {}", res.exit_code,
        dir + "/job.sh", tasks,
        tasks > 1000
            ? "; Slurm's MaxArraySize is 1001 unless configured otherwise: raise --points-per-task"
            : "",
        res.err.substr(0, res.err.find('\n'))));
  state_["rounds"].push_back({{"job", job}, {"tasks", tasks}, {"points", points.size()}});
  save();
  std::cerr << fmt::format("submitted job {}: {} points in {} array task{} ({})\n", job,
                           points.size(), tasks, tasks == 1 ? "" : "s", dir);
}

std::string absolute(const std::string& path) {
  return path.empty() ? path : fs::absolute(path).lexically_normal().string();
}

void check_slurm_args(const Args& a) {
  if (a.points_per_task <= 0)
    throw InvalidArgument(
        fmt::format("--points-per-task must be positive, got {}", a.points_per_task));
  if (a.retries < 0)
    throw InvalidArgument(fmt::format("--retries must be 0 or more, got {}", a.retries));
  for (const auto& o : a.sbatch)
    if (o.rfind("--array", 0) == 0 || o == "-a")
      throw InvalidArgument(
          fmt::format("--sbatch '{}': mimic sets the job array itself (use --points-per-task)", o));
  parse_duration(a.poll);
}

// Follows the sweep until nothing is pending, with the progress line.
void wait_for(SlurmSweep& sweep, Session& s, size_t pending, double poll_s) {
  size_t start_done = s.done_count();
  Progress progress(pending, isatty(STDERR_FILENO) != 0);
  auto start = std::chrono::steady_clock::now();
  size_t shown = 0;
  while (pending > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
    pending = sweep.step(true);
    size_t done = s.done_count() - start_done;
    if (done == shown) continue;
    shown = done;
    progress.update(
        done, fmt::format("{} pending", pending),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  progress.finish();
}

bool stopped_from_outside(const ProcessResult& r) {
  return r.signal == SIGTERM || r.signal == SIGKILL || r.signal == SIGINT || r.signal == SIGHUP;
}

}  // namespace

int run_slurm(const Args& given) {
  Args a = given;
  check_slurm_args(a);
  if (a.dir.empty()) a.dir = "mimic-sweep";
  a.dir = absolute(a.dir);
  // Every task's results are merged into one trace: the sweep directory's own unless one is given.
  a.trace = a.trace.empty() ? a.dir + "/sweep.trace" : absolute(a.trace);
  for (std::string* p : {&a.report, &a.csv_path, &a.json_path}) *p = absolute(*p);
  bool exists = fs::exists(a.dir + "/sweep.json");
  if (exists && !a.resume)
    throw InvalidArgument(
        fmt::format("'{}' already holds a sweep: add --resume to continue it, "
                    "`mimic sweep collect {}` to gather it, or choose another --dir",
                    a.dir, a.dir));
  fs::create_directories(a.dir);
  Session s(a, a.resume ? Session::Load::finished : Session::Load::none);
  nlohmann::json state{{"sweep_id", s.id()}, {"rounds", nlohmann::json::array()}};
  if (exists) {
    state = read_json(a.dir + "/sweep.json");
    if (state.value("sweep_id", "") != s.id())
      throw InvalidArgument(fmt::format("'{}' holds sweep {}, these options make sweep {}", a.dir,
                                        state.value("sweep_id", "?"), s.id()));
  }
  state["args"] = args_to_json(a);
  // A resumed sweep gives every remaining point its retries again.
  state["attempt_base"] = state["rounds"].size();
  SlurmSweep sweep(s, a.dir, state);
  sweep.save();
  if (a.resume)
    std::cerr << fmt::format("resuming sweep {}: {} of {} points already done\n", s.id(),
                             s.done_count(), s.points().size());
  size_t pending = sweep.step(true);
  if (!a.no_wait) wait_for(sweep, s, pending, parse_duration(a.poll));
  s.finish(a.no_wait ? pending : 0);
  return 0;
}

int collect(const std::string& dir_arg) {
  std::string dir = absolute(dir_arg);
  if (!fs::exists(dir + "/sweep.json"))
    throw InvalidArgument(fmt::format(
        "'{}' holds no sweep (no sweep.json): give the --dir of a Slurm sweep", dir_arg));
  nlohmann::json state = read_json(dir + "/sweep.json");
  Args a = args_from_json(state.at("args"));
  // Collecting never reruns a point the trace holds, errors included: they are results.
  Session s(a, Session::Load::all);
  SlurmSweep sweep(s, dir, state);
  size_t pending = sweep.step(true);
  s.finish(pending);
  return 0;
}

int run_task(const std::string& round_dir_arg, int index) {
  std::string dir = absolute(round_dir_arg);
  nlohmann::json round = read_json(dir + "/round.json");
  size_t per_task = round.at("points_per_task").get<size_t>();
  const auto& points = round.at("points");
  size_t first = static_cast<size_t>(index) * per_task;
  if (index < 0 || first >= points.size())
    throw InvalidArgument(fmt::format("task {} of '{}' does not exist ({} points, {} per task)",
                                      index, dir, points.size(), per_task));
  std::string tdir = task_dir(dir, static_cast<size_t>(index));
  // A task Slurm requeued starts over: its earlier attempt's files are never merged.
  fs::remove_all(tdir);
  fs::create_directories(tdir);
  std::string sweep_id = round.at("sweep_id");
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> lists;
  for (size_t i = first; i < std::min(points.size(), first + per_task); ++i) {
    keys.push_back(points[i].at("key"));
    lists.push_back(points[i].at("args").get<std::vector<std::string>>());
    lists.back().insert(lists.back().end(),
                        {"--trace", tdir + "/trace.db", "--tag",
                         fmt::format("sweep={} point={}", sweep_id, keys.back())});
  }
  const char* cpus = std::getenv("SLURM_CPUS_PER_TASK");
  int parallel = cpus ? std::max(1, std::atoi(cpus)) : 1;
  int fd = open((tdir + "/results.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(fmt::format("cannot write '{}/results.jsonl'", tdir));
  run_processes(self_executable(), lists, parallel, [&](size_t k, const ProcessResult& r) {
    // A point stopped from outside (scancel, a time limit, a preemption signals the whole task)
    // says nothing of the point: it is left without a result, so the next round runs it again.
    if (stopped_from_outside(r)) return;
    // One write per line, synced: a task killed later keeps the points it finished.
    std::string line = outcome_to_json({keys[k], r, ""}).dump() + "\n";
    if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()) || fsync(fd) != 0)
      throw IoError(fmt::format("cannot write '{}/results.jsonl'", tdir));
  });
  close(fd);
  write_atomically(tdir + "/done", fmt::format("{} points\n", keys.size()));
  return 0;
}

namespace slurm {

std::set<int> parse_squeue(const std::string& text, const std::string& job) {
  std::set<int> out;
  std::istringstream in(text);
  std::string line;
  const std::string prefix = job + "_";
  while (std::getline(in, line)) {
    line.erase(line.find_last_not_of(" \r\t") + 1);
    if (line.rfind(prefix, 0) != 0) continue;
    std::string rest = line.substr(prefix.size());
    if (rest.empty()) continue;
    if (rest.front() != '[') {
      if (rest.find_first_not_of("0123456789") == std::string::npos) out.insert(std::stoi(rest));
      continue;
    }
    // "[5-9,12%2]": ranges of pending tasks, an optional throttle after '%'.
    std::string list = rest.substr(1, rest.find_first_of("]%") - 1);
    std::istringstream items(list);
    std::string item;
    std::smatch m;
    static const std::regex range(R"((\d+)(?:-(\d+))?)");
    while (std::getline(items, item, ','))
      if (std::regex_match(item, m, range))
        for (int t = std::stoi(m[1]); t <= std::stoi(m[2].matched ? m[2].str() : m[1].str()); ++t)
          out.insert(t);
  }
  return out;
}

std::map<int, TaskEnd> parse_sacct(const std::string& text, const std::string& job) {
  std::map<int, TaskEnd> out;
  std::istringstream in(text);
  std::string line;
  static const std::regex row(R"((\d+)_(\d+)\|([A-Z_]+)[^|]*\|(\d+:\d+))");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, row) && m[1] == job) out[std::stoi(m[2])] = {m[3], m[4]};
  return out;
}

std::map<int, TaskEnd> parse_scontrol(const std::string& text, const std::string& job) {
  std::map<int, TaskEnd> out;
  std::istringstream in(text);
  std::string line;
  static const std::regex array_job(R"(\bArrayJobId=(\d+)\b)"), task(R"(\bArrayTaskId=(\d+)\s)"),
      state(R"(\bJobState=([A-Z_]+))"), exit_code(R"(\bExitCode=(\d+:\d+))");
  std::smatch a, t, s, e;
  while (std::getline(in, line)) {
    line += " ";
    if (std::regex_search(line, a, array_job) && a[1] == job && std::regex_search(line, t, task) &&
        std::regex_search(line, s, state) && std::regex_search(line, e, exit_code))
      out[std::stoi(t[1])] = {s[1], e[1]};
  }
  return out;
}

}  // namespace slurm
}  // namespace mimic::cli::sweep
