#include "frontend/api/run_observer.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

namespace mimic {
namespace {

// The stack of active observers and, per observer, how many runs are using it now.
struct Registry {
  std::mutex mu;
  std::condition_variable run_ended;
  std::vector<RunObserver*> stack;
  std::map<const RunObserver*, int> runs_in_flight;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

RunObserver* current_run_observer() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.stack.empty() ? nullptr : r.stack.back();
}

ObservedRun::ObservedRun() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.stack.empty()) return;
  observer_ = r.stack.back();
  ++r.runs_in_flight[observer_];
}

ObservedRun::~ObservedRun() {
  if (!observer_) return;
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (--r.runs_in_flight[observer_] == 0) r.runs_in_flight.erase(observer_);
  }
  r.run_ended.notify_all();
}

void push_run_observer(RunObserver* observer) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.stack.push_back(observer);
}

void pop_run_observer(RunObserver* observer) {
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mu);
  auto it = std::find(r.stack.rbegin(), r.stack.rend(), observer);
  if (it != r.stack.rend()) r.stack.erase(std::next(it).base());
  r.run_ended.wait(lock, [&] { return r.runs_in_flight.count(observer) == 0; });
}

}  // namespace mimic
