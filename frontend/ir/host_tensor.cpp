#include "frontend/ir/host_tensor.h"

#include <fmt/format.h>
#include <cstdlib>

#include "base/error.h"

namespace mimic::ir {

std::string TensorType::str() const {
  return std::string(dtype_name(dtype)) + shape.str();
}

HostTensor::HostTensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), numel_(shape_.numel()) {
  size_t bytes = nbytes();
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) throw RuntimeError(fmt::format("out of host memory allocating {} bytes", bytes));
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  owner_ = std::shared_ptr<void>(p, std::free);
  data_ = p;
}

HostTensor HostTensor::wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner) {
  HostTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = t.shape_.numel();
  t.owner_ = std::move(owner);
  t.data_ = data;
  return t;
}

HostTensor HostTensor::reshaped(Shape shape) const {
  if (shape.numel() != numel_)
    throw ShapeError(
        fmt::format("cannot view a tensor of shape {} as {}", shape_.str(), shape.str()));
  HostTensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

HostTensor HostTensor::clone() const {
  HostTensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

void HostTensor::check_type(DType want) const {
  if (want != dtype_)
    throw InvalidArgument(
        fmt::format("tensor of dtype {} accessed as {}", dtype_name(dtype_), dtype_name(want)));
}

}  // namespace mimic::ir
