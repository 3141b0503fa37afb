// mimic.Device, mimic.devices(), mimic.Tensor (lazy, like the C++ front end) and eager functions.
#include <fmt/format.h>

#include "frontend/api/ops.h"
#include "frontend/python/py_common.h"

namespace mimic::python {
namespace {

Device as_device(const py::object& d) {
  if (d.is_none()) return Device("cpu");
  if (py::isinstance<Device>(d)) return d.cast<Device>();
  if (py::isinstance<py::str>(d)) return Device(d.cast<std::string>());
  throw py::type_error(fmt::format("device must be a str or mimic.Device, not {}",
                                   std::string(py::str(d.get_type()))));
}

// Scalars and arrays on the right of an operator become constants on the tensor's device.
Tensor as_tensor(const py::object& v, const Tensor& like) {
  if (py::isinstance<Tensor>(v)) return v.cast<Tensor>();
  if (py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v)) {
    ir::HostTensor t(like.dtype(), ir::Shape());
    if (like.dtype() != ir::DType::f32)
      throw py::type_error(
          fmt::format("scalar operands need an f32 tensor, got {}", ir::dtype_name(like.dtype())));
    t.data<float>()[0] = v.cast<float>();
    return Tensor::constant(t, like.device());
  }
  if (py::isinstance<py::array>(v))
    return Tensor::constant(to_host(v.cast<py::array>()).clone(), like.device());
  throw py::type_error(
      fmt::format("cannot combine a mimic.Tensor with {}", std::string(py::str(v.get_type()))));
}

std::string tensor_repr(const Tensor& t) {
  return fmt::format("mimic.Tensor({}, device='{}')", t.type().str(), t.device().str());
}

void bind_devices(py::module_& m) {
  py::class_<backends::DeviceInfo>(m, "DeviceInfo")
      .def_readonly("name", &backends::DeviceInfo::name)
      .def_readonly("backend", &backends::DeviceInfo::backend)
      .def_readonly("available", &backends::DeviceInfo::available)
      .def_readonly("reason", &backends::DeviceInfo::reason)
      .def_readonly("description", &backends::DeviceInfo::description)
      .def("__repr__", [](const backends::DeviceInfo& d) {
        return fmt::format("DeviceInfo('{}', available={}{})", d.name,
                           d.available ? "True" : "False",
                           d.available ? "" : ", reason='" + d.reason + "'");
      });
  py::class_<Device>(m, "Device")
      .def(py::init<const std::string&>(), py::arg("spec"))
      .def_property_readonly("backend", &Device::backend)
      .def_property_readonly("arg", &Device::arg)
      .def_property_readonly("available", &Device::available)
      .def("info", &Device::info)
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return "mimic.Device('" + d.str() + "')"; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; });
  m.def("devices", &devices, "Every device of this build, available or not (with the reason).");
}

void bind_tensor_class(py::module_& m) {
  py::class_<Tensor>(m, "Tensor")
      .def_property_readonly("shape",
                             [](const Tensor& t) { return py::tuple(py::cast(t.shape().dims())); })
      .def_property_readonly("dtype",
                             [](const Tensor& t) { return std::string(ir::dtype_name(t.dtype())); })
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("name", &Tensor::name)
      .def(
          "numpy",
          [](const Tensor& t) {
            const ir::HostTensor* h;
            {
              py::gil_scoped_release release;
              h = &t.host();
            }
            return to_numpy(*h);
          },
          "Computes the tensor on its device (if needed) and returns it as a numpy array.")
      .def(
          "to", [](const Tensor& t, const py::object& d) { return t.to(as_device(d)); },
          py::arg("device"))
      .def("__repr__", &tensor_repr)
      .def(
          "__array__", [](const Tensor& t, const py::object&) { return to_numpy(t.host()); },
          py::arg("dtype") = py::none())
      .def("__add__", [](const Tensor& a, const py::object& b) { return add(a, as_tensor(b, a)); })
      .def("__radd__", [](const Tensor& a, const py::object& b) { return add(as_tensor(b, a), a); })
      .def("__sub__", [](const Tensor& a, const py::object& b) { return sub(a, as_tensor(b, a)); })
      .def("__rsub__", [](const Tensor& a, const py::object& b) { return sub(as_tensor(b, a), a); })
      .def("__mul__", [](const Tensor& a, const py::object& b) { return mul(a, as_tensor(b, a)); })
      .def("__rmul__", [](const Tensor& a, const py::object& b) { return mul(as_tensor(b, a), a); })
      .def("__truediv__",
           [](const Tensor& a, const py::object& b) { return div(a, as_tensor(b, a)); })
      .def("__matmul__",
           [](const Tensor& a, const py::object& b) { return matmul(a, as_tensor(b, a)); });
  m.def(
      "tensor",
      [](const py::object& data, const py::object& device, const py::object& dtype) {
        return Tensor(host_from_data(data, dtype), as_device(device));
      },
      py::arg("data"), py::arg("device") = py::none(), py::arg("dtype") = py::none(),
      "A tensor holding a copy of `data` (numpy array, nested list/tuple or number) on `device`, "
      "optionally cast to `dtype` (numpy dtype or name such as 'float32', 'int64', 'bfloat16').");
  m.def(
      "placeholder",
      [](const std::string& name, const std::vector<int64_t>& shape, const py::object& dtype,
         const py::object& device) {
        return Tensor::placeholder(name, parse_dtype_arg(dtype), ir::Shape(shape),
                                   as_device(device));
      },
      py::arg("name"), py::arg("shape"), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(),
      "A graph input without data; use -1 for the batch dimension.");
}

// The eager ops (frontend/api/ops.h), as functions of the module.
void bind_ops(py::module_& m) {
  m.def("matmul", &matmul, py::arg("a"), py::arg("b"));
  m.def("add", &add);
  m.def("sub", &sub);
  m.def("mul", &mul);
  m.def("div", &div);
  m.def("relu", &relu);
  m.def("relu6", &relu6);
  m.def("gelu", &gelu, py::arg("x"), py::arg("approximate") = false);
  m.def("sigmoid", &sigmoid);
  m.def("tanh", &tanh);
  m.def("exp", &exp);
  m.def("log", &log);
  m.def("sqrt", &sqrt);
  m.def("erf", &erf);
  m.def("softmax", &softmax, py::arg("x"), py::arg("axis") = -1);
  m.def("log_softmax", &log_softmax, py::arg("x"), py::arg("axis") = -1);
  m.def("reshape", &reshape, py::arg("x"), py::arg("shape"));
  m.def("flatten", &flatten, py::arg("x"), py::arg("axis") = 1);
  m.def("transpose", &transpose, py::arg("x"), py::arg("perm"));
  m.def("concat", &concat, py::arg("xs"), py::arg("axis"));
  m.def("reduce_sum", &reduce_sum, py::arg("x"), py::arg("axes"), py::arg("keepdims") = true);
  m.def("reduce_mean", &reduce_mean, py::arg("x"), py::arg("axes"), py::arg("keepdims") = true);
  m.def("reduce_max", &reduce_max, py::arg("x"), py::arg("axes"), py::arg("keepdims") = true);
  m.def("cast",
        [](const Tensor& x, const py::object& dtype) { return cast(x, parse_dtype_arg(dtype)); });
  m.def("batch_norm", &batch_norm, py::arg("x"), py::arg("scale"), py::arg("bias"), py::arg("mean"),
        py::arg("var"), py::arg("epsilon") = 1e-5f, py::arg("layout") = "NCHW");
  m.def("layer_norm", &layer_norm, py::arg("x"), py::arg("scale"), py::arg("bias"),
        py::arg("axis") = -1, py::arg("epsilon") = 1e-5f);
  auto pool = [](bool is_max) {
    return [is_max](const Tensor& x, int64_t kernel, int64_t stride, int64_t padding,
                    bool ceil_mode, const std::string& layout) {
      Pool2dOptions o{{kernel, kernel}, {stride, stride}, {padding, padding}, ceil_mode, layout};
      return is_max ? max_pool2d(x, o) : avg_pool2d(x, o);
    };
  };
  m.def("max_pool2d", pool(true), py::arg("x"), py::arg("kernel"), py::arg("stride"),
        py::arg("padding") = 0, py::arg("ceil_mode") = false, py::arg("layout") = "NCHW");
  m.def("avg_pool2d", pool(false), py::arg("x"), py::arg("kernel"), py::arg("stride"),
        py::arg("padding") = 0, py::arg("ceil_mode") = false, py::arg("layout") = "NCHW");
  m.def("global_avg_pool", &global_avg_pool, py::arg("x"), py::arg("layout") = "NCHW");
  m.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, const py::object& bias, int64_t stride, int64_t padding,
         int64_t groups, const std::string& layout) {
        Conv2dOptions o;
        o.stride = {stride, stride};
        o.padding = {padding, padding};
        o.groups = groups;
        o.layout = layout;
        return conv2d(x, w, bias.is_none() ? Tensor() : bias.cast<Tensor>(), o);
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("groups") = 1, py::arg("layout") = "NCHW");
}

}  // namespace

void bind_tensor(py::module_& m) {
  bind_devices(m);
  bind_tensor_class(m);
  bind_ops(m);
}

}  // namespace mimic::python
