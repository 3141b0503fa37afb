#include "sim/systemc/initiator.h"

#include <stdexcept>

#include "sim/systemc/kernel.h"

namespace mimic::sim::systemc {

Initiator::Initiator(const char* socket_name) : initiator_socket(socket_name) {}

sc_core::sc_time Initiator::transport(tlm::tlm_command cmd, uint64_t address, uint64_t bytes,
                                      const sc_core::sc_time& start_offset, uint64_t runs,
                                      uint8_t* data) {
  payload_.set_command(cmd);
  payload_.set_address(address);
  payload_.set_data_ptr(data ? data : &dummy_);
  payload_.set_data_length(static_cast<unsigned int>(bytes));
  payload_.set_streaming_width(static_cast<unsigned int>(bytes));
  payload_.set_byte_enable_ptr(nullptr);
  payload_.set_dmi_allowed(false);
  payload_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = start_offset;
  pattern_.runs = runs;
  if (runs > 1) payload_.set_extension(&pattern_);
  initiator_socket->b_transport(payload_, delay);
  if (runs > 1) payload_.clear_extension(&pattern_);
  if (payload_.is_response_error())
    throw std::runtime_error(std::string(initiator_socket.name()) + ": " +
                             payload_.get_response_string() + " at address " +
                             std::to_string(address) + " (" + std::to_string(bytes) + " bytes)");
  return delay;
}

LocalTime::LocalTime(const ClockDomain& domain) : domain_(domain) {
  keeper_.reset();
}

Cycles LocalTime::now() const {
  return domain_.to_cycles(sc_core::sc_time_stamp() + keeper_.get_local_time());
}

void LocalTime::advance(Cycles c) {
  keeper_.inc(domain_.to_time(c));
}

void LocalTime::advance_to(const sc_core::sc_time& offset) {
  sc_core::sc_time absolute = domain_.next_edge(sc_core::sc_time_stamp() + offset);
  sc_core::sc_time target = absolute - sc_core::sc_time_stamp();
  if (target > keeper_.get_local_time()) keeper_.set(target);
}

void LocalTime::sync() {
  if (keeper_.get_local_time() > sc_core::SC_ZERO_TIME)
    keeper_.sync();  // no delta cycle when in step
  else
    keeper_.reset();
}

}  // namespace mimic::sim::systemc
