// Shared pieces of the Python bindings: numpy <-> HostTensor conversion and error translation.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "backends/report.h"
#include "frontend/api/tensor.h"

namespace mimic::python {

namespace py = pybind11;

// A C-contiguous numpy array as a HostTensor sharing its memory (the array is kept alive).
// float64 arrays are converted to f32; other dtypes without an IR equivalent raise TypeError.
ir::HostTensor to_host(const py::array& array);
// A HostTensor as a numpy array sharing its storage; bf16 (no numpy dtype) comes back as float32.
py::array to_numpy(const ir::HostTensor& t);
ir::DType parse_dtype_arg(const py::object& dtype);
// A fresh HostTensor from a numpy array, a nested list/tuple of numbers or a Python scalar (numpy's
// conversion rules), cast to `dtype` (None: numpy's inferred dtype, float64 stored as f32).
ir::HostTensor host_from_data(const py::object& data, const py::object& dtype);
py::dict report_dict(const backends::RunReport& r);
py::dict compile_report_dict(const backends::CompileReport& r);

void register_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_compile(py::module_& m);
void bind_traces(py::module_& m);
void bind_train(py::module_& m);

}  // namespace mimic::python
