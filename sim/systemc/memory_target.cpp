#include "sim/systemc/memory_target.h"

#include <algorithm>
#include <cstring>

#include "sim/systemc/kernel.h"

namespace mimic::sim::systemc {

MemoryTarget::MemoryTarget(sc_core::sc_module_name name, const ClockDomain& domain,
                           MemoryTargetSpec spec)
    : sc_module(name), target_socket("target_socket"), domain_(domain), spec_(spec) {
  target_socket.register_b_transport(this, &MemoryTarget::b_transport);
  if (spec_.store_data) store_.assign(spec_.capacity_bytes, 0);
  if (spec_.min_access_bytes == 0) spec_.min_access_bytes = 1;
}
uint64_t MemoryTarget::reserve(uint64_t arrival_ps, uint64_t occupied_ps) {
  // Intervals that ended before the present can no longer matter.
  uint64_t now = to_ps(sc_core::sc_time_stamp());
  while (!busy_.empty() && busy_.begin()->second <= now) busy_.erase(busy_.begin());
  uint64_t t = arrival_ps, remaining = occupied_ps;
  auto it = busy_.upper_bound(t);
  if (it != busy_.begin() && std::prev(it)->second > t) --it;  // the interval containing t
  while (remaining > 0) {
    if (it != busy_.end() && it->first <= t) {  // busy at t: skip to the end of that interval
      t = std::max(t, it->second);
      ++it;
      continue;
    }
    uint64_t gap_end = it == busy_.end() ? UINT64_MAX : it->first;
    uint64_t take = std::min(remaining, gap_end - t);
    // Insert [t, t + take), merged with the interval before (ending at t) and after (starting at
    // its end).
    uint64_t begin = t, end = t + take;
    auto prev = busy_.lower_bound(begin);
    if (prev != busy_.begin() && std::prev(prev)->second == begin) {
      --prev;
      begin = prev->first;
      busy_.erase(prev);
    }
    if (it != busy_.end() && it->first == end) {
      end = it->second;
      it = busy_.erase(it);
    }
    // Continue from the merged interval: if it reaches past t + take, that part is busy.
    it = busy_.emplace(begin, end).first;
    remaining -= take;
    t += take;
  }
  return t;
}

void MemoryTarget::b_transport(int, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  uint64_t address = trans.get_address();
  uint64_t length = trans.get_data_length();
  if (length > spec_.capacity_bytes || address > spec_.capacity_bytes - length) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  tlm::tlm_command cmd = trans.get_command();
  if (spec_.store_data && trans.get_data_ptr()) {
    if (cmd == tlm::TLM_READ_COMMAND)
      std::memcpy(trans.get_data_ptr(), store_.data() + address, length);
    else if (cmd == tlm::TLM_WRITE_COMMAND)
      std::memcpy(store_.data() + address, trans.get_data_ptr(), length);
  }
  uint64_t runs = 1;
  if (auto* pattern = trans.get_extension<AccessPattern>())
    runs = std::max<uint64_t>(1, std::min(pattern->runs, length));
  uint64_t run_bytes = (length + runs - 1) / runs;
  uint64_t granule = spec_.min_access_bytes;
  uint64_t occupied_ps =
      transfer_ps(runs * ((run_bytes + granule - 1) / granule) * granule, spec_.bytes_per_s);
  uint64_t arrival_ps = to_ps(sc_core::sc_time_stamp() + delay);
  uint64_t transferred_ps = spec_.bytes_per_s ? reserve(arrival_ps, occupied_ps) : arrival_ps;
  uint64_t done_ps = transferred_ps + to_ps(domain_.to_time(Cycles(spec_.latency_cycles)));
  delay += from_ps(done_ps - arrival_ps);
  counters_.transactions++;
  counters_.busy_ps += occupied_ps;
  if (cmd == tlm::TLM_READ_COMMAND)
    counters_.bytes_read += length;
  else if (cmd == tlm::TLM_WRITE_COMMAND)
    counters_.bytes_written += length;
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace mimic::sim::systemc
