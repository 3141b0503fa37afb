// A dense row-major tensor in host memory. Copies share the storage (like numpy views); clone()
// makes a deep copy. Storage is 64-byte aligned so kernels can use aligned vector loads.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "frontend/ir/dtype.h"
#include "frontend/ir/shape.h"

namespace mimic::ir {

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  std::string str() const;  // "f32[N,3,224,224]"
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

class HostTensor {
 public:
  HostTensor() = default;
  // Allocates zero-filled storage. The shape must be concrete.
  HostTensor(DType dtype, Shape shape);
  // Storage left as it was (recycled host memory, see host_memory.h), for a kernel that writes
  // every element.
  static HostTensor uninitialized(DType dtype, Shape shape);
  // Wraps memory owned elsewhere (numpy arrays, shared memory); `owner` keeps it alive.
  static HostTensor wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner);
  // Typed constructors for tests and builders.
  template <typename T>
  static HostTensor from(Shape shape, const T* values) {
    HostTensor t(dtype_of<T>::value, std::move(shape));
    if (t.nbytes()) std::memcpy(t.raw(), values, t.nbytes());  // `values` may be null when empty
    return t;
  }

  bool defined() const { return data_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  TensorType type() const { return {dtype_, shape_}; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    check_type(dtype_of<T>::value);
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    check_type(dtype_of<T>::value);
    return static_cast<const T*>(data_);
  }

  // Same storage, another shape with the same element count.
  HostTensor reshaped(Shape shape) const;
  HostTensor clone() const;
  bool same_storage(const HostTensor& o) const { return data_ == o.data_; }

 private:
  void check_type(DType want) const;

  DType dtype_ = DType::f32;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

// Element i of any dtype as a double (the 16-bit floats widened exactly, booleans as 0 or 1; i64
// beyond 2^53 rounds to nearest).
double element_as_double(const HostTensor& t, int64_t i);

}  // namespace mimic::ir
