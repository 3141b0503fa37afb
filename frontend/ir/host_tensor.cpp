#include "frontend/ir/host_tensor.h"

#include <fmt/format.h>

#include "base/error.h"
#include "base/numeric_formats.h"
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

double element_as_double(const HostTensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::f32:
      return t.data<float>()[i];
    case DType::f64:
      return t.data<double>()[i];
    case DType::f16:
      return numeric::f16_to_f32(t.data<Float16>()[i].bits);
    case DType::bf16:
      return numeric::bf16_to_f32(t.data<BFloat16>()[i].bits);
    case DType::i8:
      return t.data<int8_t>()[i];
    case DType::i32:
      return t.data<int32_t>()[i];
    case DType::i64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::boolean:
      return t.data<bool>()[i] ? 1.0 : 0.0;
  }
  return 0;
}

}  // namespace mimic::ir
