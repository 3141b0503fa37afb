// A small binary encoding for talking to device worker processes: little-endian integers, doubles,
// length-prefixed strings and byte blocks, tensors, run reports and recorded events. Readers check
// every length and throw RuntimeError on truncated or inconsistent input instead of reading past
// it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/report.h"
#include "frontend/ir/host_tensor.h"

namespace mimic::backends::wire {

class Writer {
 public:
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof(T));
  }
  void u8(uint8_t v) { pod(v); }
  void u32(uint32_t v) { pod(v); }
  void u64(uint64_t v) { pod(v); }
  void i64(int64_t v) { pod(v); }
  void f64(double v) { pod(v); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void str(const std::string& s);
  void bytes(const void* data, size_t n);
  void tensor(const ir::HostTensor& t);
  template <typename T>
  void pods(const std::vector<T>& v) {
    u64(v.size());
    bytes(v.data(), v.size() * sizeof(T));
  }
  std::vector<uint8_t>& data() { return buf_; }
  const std::vector<uint8_t>& data() const { return buf_; }
  // Empties the buffer and keeps its memory, for the next message.
  void clear() { buf_.clear(); }

 private:
  std::vector<uint8_t> buf_;
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  explicit Reader(const std::vector<uint8_t>& v) : Reader(v.data(), v.size()) {}
  template <typename T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  uint8_t u8() { return pod<uint8_t>(); }
  uint32_t u32() { return pod<uint32_t>(); }
  uint64_t u64() { return pod<uint64_t>(); }
  int64_t i64() { return pod<int64_t>(); }
  double f64() { return pod<double>(); }
  bool boolean() { return u8() != 0; }
  std::string str();
  // Pointer to the next n bytes (valid while the buffer lives).
  const uint8_t* bytes(size_t n);
  ir::HostTensor tensor();
  template <typename T>
  std::vector<T> pods() {
    uint64_t n = u64();
    if (n > remaining() / std::max<size_t>(sizeof(T), 1)) fail("vector length");
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), bytes(n * sizeof(T)), n * sizeof(T));  // empty: data() may be null
    return v;
  }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  bool done() const { return p_ == end_; }

 private:
  void need(size_t n) const {
    if (remaining() < n) fail("truncated message");
  }
  [[noreturn]] void fail(const char* what) const;
  const uint8_t* p_;
  const uint8_t* end_;
};

void write_report(Writer& w, const RunReport& r);
RunReport read_report(Reader& r);

}  // namespace mimic::backends::wire
