#include "base/error.h"

namespace mimic {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument:
      return "invalid_argument";
    case ErrorKind::shape:
      return "shape";
    case ErrorKind::unsupported_op:
      return "unsupported_op";
    case ErrorKind::compile:
      return "compile";
    case ErrorKind::out_of_memory:
      return "out_of_memory";
    case ErrorKind::device_unavailable:
      return "device_unavailable";
    case ErrorKind::io:
      return "io";
    case ErrorKind::runtime:
      return "runtime";
  }
  return "error";
}

}  // namespace mimic
