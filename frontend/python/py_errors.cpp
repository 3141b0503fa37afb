// mimic errors as Python exceptions. The classes are defined in mimic/errors.py so that they can
// multiply inherit from builtins (InvalidArgument is also a ValueError, IoError an OSError); this
// translator raises them with the C++ message and, for out-of-memory errors, the tile and bytes.
#include "base/error.h"
#include "frontend/python/py_common.h"

namespace mimic::python {
namespace {

const char* class_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument:
      return "InvalidArgument";
    case ErrorKind::shape:
      return "ShapeError";
    case ErrorKind::unsupported_op:
      return "UnsupportedOpError";
    case ErrorKind::compile:
      return "CompileError";
    case ErrorKind::out_of_memory:
      return "OutOfMemoryError";
    case ErrorKind::device_unavailable:
      return "DeviceUnavailableError";
    case ErrorKind::io:
      return "IoError";
    case ErrorKind::runtime:
      return "ExecutionError";
  }
  return "Error";
}

void raise(const Error& e) {
  py::module_ errors = py::module_::import("mimic.errors");
  py::object cls = errors.attr(class_name(e.kind()));
  py::object instance = cls(e.what());
  if (auto* oom = dynamic_cast<const OutOfMemoryError*>(&e)) {
    instance.attr("tile") = oom->tile();
    instance.attr("bytes_used") = oom->bytes_used();
    instance.attr("bytes_available") = oom->bytes_available();
    instance.attr("op") = oom->op();
  }
  if (auto* unsupported = dynamic_cast<const UnsupportedOpError*>(&e))
    instance.attr("op_types") = unsupported->op_types();
  PyErr_SetObject(cls.ptr(), instance.ptr());
}

}  // namespace

void register_errors(py::module_&) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      raise(e);
    }
  });
}

}  // namespace mimic::python
