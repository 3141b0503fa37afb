#include "frontend/ir/shape.h"

#include <fmt/format.h>

#include "base/error.h"

namespace mimic::ir {

bool Shape::is_symbolic() const {
  for (int64_t d : dims_)
    if (d == kBatch) return true;
  return false;
}

int64_t Shape::numel() const {
  return product(0, rank());
}

int64_t Shape::product(int begin, int end) const {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) {
    if (dims_[i] == kBatch)
      throw ShapeError(
          fmt::format("shape {} has a symbolic batch dimension; bind the batch first", str()));
    n *= dims_[i];
  }
  return n;
}

std::string Shape::str() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i] == kBatch ? std::string("N") : std::to_string(dims_[i]);
  }
  return s + "]";
}

Shape Shape::bind_batch(int64_t batch) const {
  Shape out = *this;
  for (int64_t& d : out.dims_)
    if (d == kBatch) d = batch;
  return out;
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> strides(s.rank(), 1);
  for (int i = s.rank() - 2; i >= 0; --i) strides[i] = strides[i + 1] * s[i + 1];
  return strides;
}

int normalize_axis(int64_t axis, int rank, const std::string& what) {
  if (axis < -rank || axis >= rank)
    throw ShapeError(fmt::format("{}: axis {} is out of range for rank {}", what, axis, rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& what) {
  int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      throw ShapeError(
          fmt::format("{}: shapes {} and {} do not broadcast", what, a.str(), b.str()));
    }
  }
  return Shape(std::move(out));
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  for (int i = 0; i < from.rank(); ++i) {
    int64_t d = from[i], t = to[to.rank() - from.rank() + i];
    if (d != 1 && d != t) return false;
  }
  return true;
}

namespace {

int64_t bounded(bool overflow, int64_t r, int64_t a, int64_t b, const char* op,
                const std::string& what) {
  if (overflow || r > kMaxElements || r < -kMaxElements)
    throw ShapeError(
        fmt::format("{}: {} {} {} is out of range (sizes are limited to 2^40)", what, a, op, b));
  return r;
}

}  // namespace

int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  bool overflow = __builtin_mul_overflow(a, b, &r);
  return bounded(overflow, r, a, b, "*", what);
}

int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  bool overflow = __builtin_add_overflow(a, b, &r);
  return bounded(overflow, r, a, b, "+", what);
}

}  // namespace mimic::ir
