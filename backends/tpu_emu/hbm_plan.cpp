#include "backends/tpu_emu/hbm_plan.h"

#include <fmt/format.h>
#include <algorithm>

namespace mimic::backends::tpu_emu {

void HbmPlan::allocate(int32_t tensor, Tensor info, const std::string& op) {
  live_bytes_ += info.bytes;
  tensors_[tensor] = std::move(info);
  live_[tensor] = true;
  events_.emplace_back(tensor, true);
  if (live_bytes_ > peak_) {
    peak_ = live_bytes_;
    peak_events_ = events_.size();
    peak_op_ = op;
  }
}

void HbmPlan::release(int32_t tensor) {
  auto it = live_.find(tensor);
  if (it == live_.end() || !it->second) return;
  it->second = false;
  live_bytes_ -= tensors_.at(tensor).bytes;
  events_.emplace_back(tensor, false);
}

std::vector<int32_t> HbmPlan::live_at_peak() const {
  std::map<int32_t, bool> live;
  for (size_t i = 0; i < peak_events_; ++i) live[events_[i].first] = events_[i].second;
  std::vector<int32_t> out;
  for (const auto& [t, alive] : live)
    if (alive) out.push_back(t);
  return out;
}

std::map<std::string, uint64_t> HbmPlan::breakdown() const {
  std::map<std::string, uint64_t> out;
  for (const auto& [t, info] : tensors_) out[info.category] += 0;
  for (int32_t t : live_at_peak()) out[tensors_.at(t).category] += tensors_.at(t).bytes;
  return out;
}

std::vector<HbmPlan::Tensor> HbmPlan::largest(size_t n) const {
  std::vector<Tensor> out;
  for (int32_t t : live_at_peak()) out.push_back(tensors_.at(t));
  std::stable_sort(out.begin(), out.end(),
                   [](const Tensor& a, const Tensor& b) { return a.bytes > b.bytes; });
  if (out.size() > n) out.resize(n);
  return out;
}

std::string human_bytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (uint64_t{1} << 30)) return fmt::format("{:.2f}G", b / (1 << 30));
  if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.2f}M", b / (1 << 20));
  if (bytes >= (uint64_t{1} << 10)) return fmt::format("{:.2f}K", b / (1 << 10));
  return fmt::format("{}B", bytes);
}

std::string out_of_memory_message(const HbmPlan& plan, uint64_t capacity, const std::string& space,
                                  const std::string& device) {
  uint64_t used = plan.peak_bytes();
  std::vector<std::pair<std::string, uint64_t>> categories;
  for (const auto& entry : plan.breakdown())
    if (entry.second > 0) categories.push_back(entry);
  std::stable_sort(categories.begin(), categories.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string breakdown;  // largest first
  for (const auto& [category, bytes] : categories)
    breakdown +=
        fmt::format("{}{} {}", breakdown.empty() ? "" : ", ", category, human_bytes(bytes));
  std::string largest;
  int rank = 0;
  for (const HbmPlan::Tensor& t : plan.largest(3)) {
    if (rank++ > 0) largest += "; ";
    largest += fmt::format("{}. {} '{}' {} ({}) from {}", rank, t.shape, t.name,
                           human_bytes(t.bytes), t.category, t.producer);
  }
  const bool training = plan.breakdown().count("saved_activations") > 0;
  return fmt::format(
      "RESOURCE_EXHAUSTED: {}: Ran out of memory in memory space {}. Used {} of {} {} ({} of {} "
      "bytes). Exceeded {} capacity by {}. Peak while running {}. Breakdown: {}. Largest live "
      "tensors: {}. ({}option allow_out_of_memory=true reports the plan instead of failing)",
      device, space, human_bytes(used), human_bytes(capacity), space, used, capacity, space,
      human_bytes(used - std::min(used, capacity)), plan.peak_op(), breakdown, largest,
      training ? "Recompute checkpoints|full keeps fewer activations; " : "");
}

std::string address_space_message(const HbmPlan& plan, uint64_t allocated, uint64_t span,
                                  uint64_t capacity, const std::string& space,
                                  const std::string& device) {
  return fmt::format(
      "RESOURCE_EXHAUSTED: {}: Ran out of memory in memory space {}: the liveness plan peaks at "
      "{} of {} {}, but the compiled program's buffers hold up to {} at once and their addresses "
      "reach {} ({} of {} bytes). Plan peak while running {}. (Recompute checkpoints|full or a "
      "smaller batch leaves more room; option allow_out_of_memory=true reports the plan instead of "
      "failing)",
      device, space, human_bytes(plan.peak_bytes()), human_bytes(capacity), space,
      human_bytes(allocated), human_bytes(span), span, capacity, plan.peak_op());
}

}  // namespace mimic::backends::tpu_emu
