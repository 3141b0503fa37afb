#include "frontend/api/run_observer.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace mimic {
namespace {

std::mutex& observers_mutex() {
  static std::mutex m;
  return m;
}

std::vector<RunObserver*>& observers() {
  static std::vector<RunObserver*> v;
  return v;
}

}  // namespace

RunObserver* current_run_observer() {
  std::lock_guard<std::mutex> lock(observers_mutex());
  return observers().empty() ? nullptr : observers().back();
}

void push_run_observer(RunObserver* observer) {
  std::lock_guard<std::mutex> lock(observers_mutex());
  observers().push_back(observer);
}

void pop_run_observer(RunObserver* observer) {
  std::lock_guard<std::mutex> lock(observers_mutex());
  auto& v = observers();
  auto it = std::find(v.rbegin(), v.rend(), observer);
  if (it != v.rend()) v.erase(std::next(it).base());
}

}  // namespace mimic
