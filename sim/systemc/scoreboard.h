// Completion tracking of numbered work items (instructions, tasks) for SC_THREADs: a process that
// needs item i waits until i has completed; the process completing i records when and wakes the
// waiters. One event per item, created per run, so a waiter wakes exactly once.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include <systemc>

namespace mimic::sim::systemc {

class Scoreboard {
 public:
  // Forgets everything and tracks `items` new items (call between runs, outside the simulation).
  void reset(size_t items);
  size_t size() const { return done_.size(); }
  bool done(size_t i) const { return done_[i] != 0; }
  size_t completed() const { return completed_; }
  // Blocks the calling SC_THREAD until item i has completed.
  void wait_for(size_t i);
  // Marks item i complete now and wakes its waiters (immediate notification).
  void complete(size_t i);

 private:
  std::vector<uint8_t> done_;
  std::unique_ptr<sc_core::sc_event[]> events_;
  size_t completed_ = 0;
};

// A bounded in-order queue between two SC_THREADs (e.g. a sequencer and a unit). push() blocks
// while the queue is full, pop() while it is empty.
template <typename T>
class WorkQueue {
 public:
  explicit WorkQueue(size_t capacity) : capacity_(capacity ? capacity : 1) {}
  void push(const T& item) {
    while (items_.size() >= capacity_) sc_core::wait(popped_);
    items_.push_back(item);
    pushed_.notify();
  }
  T pop() {
    while (items_.empty()) sc_core::wait(pushed_);
    T item = items_.front();
    items_.pop_front();
    popped_.notify();
    return item;
  }
  size_t size() const { return items_.size(); }
  void clear() { items_.clear(); }

 private:
  size_t capacity_;
  std::deque<T> items_;
  sc_core::sc_event pushed_, popped_;
};

}  // namespace mimic::sim::systemc
