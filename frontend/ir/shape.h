// Static tensor shapes with one optional symbol: the batch dimension (kBatch), which is bound to a
// number when a graph is compiled. Shape inference carries kBatch through the ops that keep it
// (elementwise, matmul batch dims, conv/pool N, reshape's copied dims) and refuses to fold it into
// other dimensions, so an unbound graph is still fully checked.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace mimic::ir {

inline constexpr int64_t kBatch = -1;
// Largest element count a tensor may have (2^40). Shape inference rejects larger outputs, so
// arithmetic on inferred sizes (element counts, flops, bytes) cannot overflow.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  // Dimension with a negative index counted from the end, as numpy does.
  int64_t dim(int i) const { return dims_[i < 0 ? i + rank() : i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& dims() { return dims_; }

  bool is_symbolic() const;
  // Number of elements; throws ShapeError when the shape still holds the batch symbol.
  int64_t numel() const;
  // Product of dims [begin, end).
  int64_t product(int begin, int end) const;
  // "[N,3,224,224]".
  std::string str() const;
  // Replaces the batch symbol by `batch`.
  Shape bind_batch(int64_t batch) const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<int64_t> dims_;
};

// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);
// Normalizes an axis in [-rank, rank) to [0, rank); throws ShapeError naming `what` otherwise.
int normalize_axis(int64_t axis, int rank, const std::string& what);
// Numpy broadcasting of two shapes; throws ShapeError with both shapes when they do not.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& what);
// True when `from` broadcasts to `to` unchanged (ONNX's unidirectional broadcasting).
bool broadcasts_to(const Shape& from, const Shape& to);

// a * b and a + b on sizes and attribute values that may come from untrusted files; throw
// ShapeError naming `what` when the result would not fit in [-kMaxElements, kMaxElements].
int64_t checked_mul(int64_t a, int64_t b, const std::string& what);
int64_t checked_add(int64_t a, int64_t b, const std::string& what);

}  // namespace mimic::ir
