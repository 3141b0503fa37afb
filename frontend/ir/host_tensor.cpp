#include "frontend/ir/host_tensor.h"

#include <fmt/format.h>

#include "base/error.h"
#include "frontend/ir/host_memory.h"

namespace mimic::ir {

std::string TensorType::str() const {
  return std::string(dtype_name(dtype)) + shape.str();
}

HostTensor::HostTensor(DType dtype, Shape shape)
    : HostTensor(uninitialized(dtype, std::move(shape))) {
  std::memset(data_, 0, nbytes());
}

HostTensor HostTensor::uninitialized(DType dtype, Shape shape) {
  HostTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = t.shape_.numel();
  t.owner_ = allocate_host(t.nbytes());
  t.data_ = t.owner_.get();
  return t;
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
  HostTensor t = uninitialized(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

void HostTensor::check_type(DType want) const {
  if (want != dtype_)
    throw InvalidArgument(
        fmt::format("tensor of dtype {} accessed as {}", dtype_name(dtype_), dtype_name(want)));
}

}  // namespace mimic::ir
