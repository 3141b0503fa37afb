#include "backends/device_worker/wire.h"

#include <fmt/format.h>

#include "base/error.h"

namespace mimic::backends::wire {

void Writer::str(const std::string& s) {
  u64(s.size());
  bytes(s.data(), s.size());
}

void Writer::bytes(const void* data, size_t n) {
  if (n == 0) return;
  const uint8_t* p = static_cast<const uint8_t*>(data);
  buf_.insert(buf_.end(), p, p + n);
}

void Writer::tensor(const ir::HostTensor& t) {
  u8(static_cast<uint8_t>(t.dtype()));
  pods(t.shape().dims());
  bytes(t.raw(), t.nbytes());
}

std::string Reader::str() {
  uint64_t n = u64();
  if (n > remaining()) fail("string length");
  const uint8_t* p = bytes(n);
  return std::string(reinterpret_cast<const char*>(p), n);
}

const uint8_t* Reader::bytes(size_t n) {
  need(n);
  const uint8_t* p = p_;
  p_ += n;
  return p;
}

ir::HostTensor Reader::tensor() {
  uint8_t dtype = u8();
  if (dtype > static_cast<uint8_t>(ir::DType::f64)) fail("tensor dtype");  // f64 is the last DType
  std::vector<int64_t> dims = pods<int64_t>();
  for (int64_t d : dims)
    if (d < 0) fail("tensor shape");
  ir::HostTensor t(static_cast<ir::DType>(dtype), ir::Shape(dims));
  if (t.nbytes()) std::memcpy(t.raw(), bytes(t.nbytes()), t.nbytes());  // empty: raw() may be null
  return t;
}

void Reader::fail(const char* what) const {
  throw RuntimeError(fmt::format("device worker protocol: {} ({} bytes left)", what, remaining()));
}

namespace {

void write_table(Writer& w, const Table& t) {
  w.u64(t.columns.size());
  for (const auto& c : t.columns) w.str(c);
  w.u64(t.rows.size());
  for (const auto& row : t.rows) w.pods(row);
}

Table read_table(Reader& r) {
  Table t;
  uint64_t nc = r.u64();
  for (uint64_t i = 0; i < nc && r.remaining(); ++i) t.columns.push_back(r.str());
  uint64_t nr = r.u64();
  for (uint64_t i = 0; i < nr; ++i) t.rows.push_back(r.pods<double>());
  return t;
}

void write_op(Writer& w, const OpReport& op) {
  w.str(op.node);
  w.str(op.op_type);
  w.str(op.backend);
  w.boolean(op.fallback);
  w.str(op.shapes);
  w.i64(op.flops);
  w.i64(op.bytes_in);
  w.i64(op.bytes_out);
  w.f64(op.wall_ns);
  w.u64(op.cycles);
  w.f64(op.device_seconds);
  w.f64(op.utilization);
  w.f64(op.intensity);
  w.str(op.bound);
}

OpReport read_op(Reader& r) {
  OpReport op;
  op.node = r.str();
  op.op_type = r.str();
  op.backend = r.str();
  op.fallback = r.boolean();
  op.shapes = r.str();
  op.flops = r.i64();
  op.bytes_in = r.i64();
  op.bytes_out = r.i64();
  op.wall_ns = r.f64();
  op.cycles = r.u64();
  op.device_seconds = r.f64();
  op.utilization = r.f64();
  op.intensity = r.f64();
  op.bound = r.str();
  return op;
}

}  // namespace

void write_report(Writer& w, const RunReport& r) {
  w.str(r.device);
  w.str(r.backend);
  w.str(r.precision);
  w.f64(r.wall_seconds);
  w.u64(r.cycles);
  w.f64(r.clock_hz);
  w.f64(r.device_seconds);
  w.f64(r.fallback_wall_seconds);
  w.f64(r.peak_flops_per_s);
  w.f64(r.achieved_flops_per_s);
  w.f64(r.ridge_intensity);
  w.u64(r.ops.size());
  for (const auto& op : r.ops) write_op(w, op);
  w.u64(r.units.size());
  for (const auto& u : r.units) {
    w.str(u.name);
    w.str(u.kind);
    w.u64(u.busy_cycles);
    w.f64(u.utilization);
  }
  w.u64(r.bytes_moved.size());
  for (const auto& [k, v] : r.bytes_moved) {
    w.str(k);
    w.i64(v);
  }
  w.u64(r.metrics.size());
  for (const auto& [k, v] : r.metrics) {
    w.str(k);
    w.f64(v);
  }
  w.u64(r.tables.size());
  for (const auto& [k, t] : r.tables) {
    w.str(k);
    write_table(w, t);
  }
  w.u64(r.notes.size());
  for (const auto& n : r.notes) w.str(n);
}

RunReport read_report(Reader& r) {
  RunReport out;
  out.device = r.str();
  out.backend = r.str();
  out.precision = r.str();
  out.wall_seconds = r.f64();
  out.cycles = r.u64();
  out.clock_hz = r.f64();
  out.device_seconds = r.f64();
  out.fallback_wall_seconds = r.f64();
  out.peak_flops_per_s = r.f64();
  out.achieved_flops_per_s = r.f64();
  out.ridge_intensity = r.f64();
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) out.ops.push_back(read_op(r));
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    UnitReport u;
    u.name = r.str();
    u.kind = r.str();
    u.busy_cycles = r.u64();
    u.utilization = r.f64();
    out.units.push_back(u);
  }
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    std::string k = r.str();
    out.bytes_moved[k] = r.i64();
  }
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    std::string k = r.str();
    out.metrics[k] = r.f64();
  }
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    std::string k = r.str();
    out.tables[k] = read_table(r);
  }
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) out.notes.push_back(r.str());
  return out;
}

}  // namespace mimic::backends::wire
