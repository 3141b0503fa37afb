#include <fmt/format.h>

#include "frontend/api/report_json.h"
#include "frontend/ir/error.h"
#include "frontend/python/py_common.h"
#include "models/common/numeric_formats.h"

namespace mimic::python {
namespace {

struct KeepAlive {
  ir::HostTensor tensor;
};

}  // namespace

ir::DType parse_dtype_arg(const py::object& dtype) {
  if (dtype.is_none()) return ir::DType::f32;
  std::string name = py::str(py::isinstance<py::str>(dtype) ? dtype : py::object(py::dtype::from_args(dtype)));
  if (name == "float32") return ir::DType::f32;
  if (name == "float16") return ir::DType::f16;
  if (name == "int8") return ir::DType::i8;
  if (name == "int32") return ir::DType::i32;
  if (name == "int64") return ir::DType::i64;
  if (name == "bool") return ir::DType::boolean;
  auto parsed = ir::parse_dtype(name);
  if (!parsed) throw py::value_error(fmt::format("unknown dtype '{}' (use float32, float16, bfloat16, int8, int32, int64, bool)", name));
  return *parsed;
}

ir::HostTensor to_host(const py::array& input) {
  py::array array = input;
  char kind = array.dtype().kind();
  size_t size = array.dtype().itemsize();
  ir::DType dtype;
  if (kind == 'f' && size == 8) {
    array = py::array_t<float, py::array::c_style | py::array::forcecast>(array);
    dtype = ir::DType::f32;
  } else if (kind == 'f' && size == 4) {
    dtype = ir::DType::f32;
  } else if (kind == 'f' && size == 2) {
    dtype = ir::DType::f16;
  } else if (kind == 'i' && size == 1) {
    dtype = ir::DType::i8;
  } else if (kind == 'i' && size == 4) {
    dtype = ir::DType::i32;
  } else if (kind == 'i' && size == 8) {
    dtype = ir::DType::i64;
  } else if (kind == 'b') {
    dtype = ir::DType::boolean;
  } else {
    throw py::type_error(fmt::format("numpy dtype {} has no mimic equivalent (use float32, float16, int8, int32, int64 or bool)",
                                     std::string(py::str(array.dtype()))));
  }
  if (!(array.flags() & py::array::c_style)) array = py::array::ensure(array, py::array::c_style);
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  auto* owner = new py::object(array);
  std::shared_ptr<void> keep(owner, [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(p);
  });
  return ir::HostTensor::wrap(dtype, ir::Shape(dims), const_cast<void*>(array.data()), keep);
}

py::array to_numpy(const ir::HostTensor& t) {
  std::vector<py::ssize_t> shape(t.shape().dims().begin(), t.shape().dims().end());
  if (t.dtype() == ir::DType::bf16) {
    py::array_t<float> out(shape);
    numeric::bf16_to_f32(static_cast<const uint16_t*>(t.raw()), out.mutable_data(), t.numel());
    return std::move(out);
  }
  py::dtype dtype;
  switch (t.dtype()) {
    case ir::DType::f32: dtype = py::dtype::of<float>(); break;
    case ir::DType::f16: dtype = py::dtype("float16"); break;
    case ir::DType::i8: dtype = py::dtype::of<int8_t>(); break;
    case ir::DType::i32: dtype = py::dtype::of<int32_t>(); break;
    case ir::DType::i64: dtype = py::dtype::of<int64_t>(); break;
    default: dtype = py::dtype::of<bool>(); break;
  }
  auto* keep = new KeepAlive{t};
  py::capsule owner(keep, [](void* p) { delete static_cast<KeepAlive*>(p); });
  return py::array(dtype, shape, const_cast<void*>(t.raw()), owner);
}

namespace {

py::object json_to_py(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

}  // namespace

py::dict report_dict(const backends::RunReport& r) { return json_to_py(to_json(r)); }
py::dict compile_report_dict(const backends::CompileReport& r) { return json_to_py(to_json(r)); }

}  // namespace mimic::python
