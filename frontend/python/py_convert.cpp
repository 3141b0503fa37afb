#include <fmt/format.h>

#include "base/error.h"
#include "base/numeric_formats.h"
#include "frontend/api/report_json.h"
#include "frontend/python/py_common.h"

namespace mimic::python {
namespace {

struct KeepAlive {
  ir::HostTensor tensor;
};

}  // namespace

ir::DType parse_dtype_arg(const py::object& dtype) {
  if (dtype.is_none()) return ir::DType::f32;
  std::string name =
      py::str(py::isinstance<py::str>(dtype) ? dtype : py::object(py::dtype::from_args(dtype)));
  if (name == "float32") return ir::DType::f32;
  if (name == "float16") return ir::DType::f16;
  if (name == "int8") return ir::DType::i8;
  if (name == "int32") return ir::DType::i32;
  if (name == "int64") return ir::DType::i64;
  if (name == "bool") return ir::DType::boolean;
  auto parsed = ir::parse_dtype(name);
  if (!parsed)
    throw py::value_error(fmt::format(
        "unknown dtype '{}' (use float32, float16, bfloat16, int8, int32, int64, bool)", name));
  return *parsed;
}

ir::HostTensor to_host(const py::array& input) {
  py::array array = input;
  // Big-endian data (">f4", as some file readers return) is converted to native byte order.
  if (!array.dtype().attr("isnative").cast<bool>())
    array = array.attr("astype")(array.dtype().attr("newbyteorder")("="));
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
    throw py::type_error(fmt::format(
        "numpy dtype {} has no mimic equivalent (use float32, float16, int8, int32, int64 or bool)",
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

ir::HostTensor host_from_data(const py::object& data, const py::object& dtype) {
  if (py::isinstance<py::str>(data) || py::isinstance<py::bytes>(data))
    throw py::type_error(
        fmt::format("mimic.tensor() takes a numpy array, a (nested) list or tuple of numbers or a "
                    "number, not {}",
                    std::string(py::str(data.get_type().attr("__name__")))));
  py::module_ np = py::module_::import("numpy");
  if (dtype.is_none()) {
    // numpy's inference (Python floats are float64, stored as f32 like PyTorch's default dtype).
    if (py::isinstance<py::array>(data)) return to_host(data.cast<py::array>()).clone();
    return to_host(np.attr("asarray")(data)).clone();
  }
  const ir::DType want = parse_dtype_arg(dtype);
  if (want == ir::DType::bf16) {
    // numpy has no bfloat16: round float32 values to nearest even, as the cast op does.
    ir::HostTensor f = to_host(np.attr("asarray")(data, py::arg("dtype") = "float32"));
    ir::HostTensor out(ir::DType::bf16, f.shape());
    numeric::f32_to_bf16(f.data<float>(), static_cast<uint16_t*>(out.raw()),
                         static_cast<size_t>(f.numel()));
    return out;
  }
  static const std::pair<ir::DType, const char*> numpy_names[] = {
      {ir::DType::f32, "float32"}, {ir::DType::f16, "float16"}, {ir::DType::i8, "int8"},
      {ir::DType::i32, "int32"},   {ir::DType::i64, "int64"},   {ir::DType::boolean, "bool"}};
  for (const auto& [d, name] : numpy_names)
    if (d == want) return to_host(np.attr("asarray")(data, py::arg("dtype") = name)).clone();
  throw py::type_error(
      fmt::format("mimic.tensor() cannot hold dtype {} (use float32, float16, bfloat16, int8, "
                  "int32, int64 or bool)",
                  ir::dtype_name(want)));
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
    case ir::DType::f32:
      dtype = py::dtype::of<float>();
      break;
    case ir::DType::f16:
      dtype = py::dtype("float16");
      break;
    case ir::DType::i8:
      dtype = py::dtype::of<int8_t>();
      break;
    case ir::DType::i32:
      dtype = py::dtype::of<int32_t>();
      break;
    case ir::DType::i64:
      dtype = py::dtype::of<int64_t>();
      break;
    case ir::DType::f64:
      dtype = py::dtype::of<double>();
      break;
    default:
      dtype = py::dtype::of<bool>();
      break;
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

py::dict report_dict(const backends::RunReport& r) {
  return json_to_py(to_json(r));
}
py::dict compile_report_dict(const backends::CompileReport& r) {
  return json_to_py(to_json(r));
}

}  // namespace mimic::python
