// Errors raised anywhere in mimic. Each carries a kind (mapped to Python exception classes and
// CLI exit codes) and a one-line message naming the op, node, shapes, preset or bytes involved.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mimic {

enum class ErrorKind {
  invalid_argument,    // bad user input: device string, option, tensor, model name
  shape,               // graph validation: shapes or dtypes do not fit an op
  unsupported_op,      // an op (or op variant) the backend or importer cannot handle
  compile,             // a backend cannot compile the graph
  out_of_memory,       // the program does not fit a device memory
  device_unavailable,  // device exists but cannot be used here (no GPU, no driver)
  io,                  // files: missing, unreadable, malformed
  runtime,             // failure while running a compiled program
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& m) : Error(ErrorKind::invalid_argument, m) {}
};

class ShapeError : public Error {
 public:
  explicit ShapeError(const std::string& m) : Error(ErrorKind::shape, m) {}
};

class UnsupportedOpError : public Error {
 public:
  UnsupportedOpError(const std::string& m, std::vector<std::string> op_types = {})
      : Error(ErrorKind::unsupported_op, m), op_types_(std::move(op_types)) {}
  const std::vector<std::string>& op_types() const { return op_types_; }

 private:
  std::vector<std::string> op_types_;
};

class CompileError : public Error {
 public:
  explicit CompileError(const std::string& m, ErrorKind kind = ErrorKind::compile)
      : Error(kind, m) {}
};

// A program that does not fit a device memory. `tile` is -1 for memories that are not per tile.
class OutOfMemoryError : public CompileError {
 public:
  OutOfMemoryError(const std::string& m, int64_t tile, int64_t bytes_used, int64_t bytes_available,
                   std::string op)
      : CompileError(m, ErrorKind::out_of_memory),
        tile_(tile),
        bytes_used_(bytes_used),
        bytes_available_(bytes_available),
        op_(std::move(op)) {}
  int64_t tile() const { return tile_; }
  int64_t bytes_used() const { return bytes_used_; }
  int64_t bytes_available() const { return bytes_available_; }
  const std::string& op() const { return op_; }

 private:
  int64_t tile_, bytes_used_, bytes_available_;
  std::string op_;
};

class DeviceUnavailableError : public Error {
 public:
  explicit DeviceUnavailableError(const std::string& m) : Error(ErrorKind::device_unavailable, m) {}
};

class IoError : public Error {
 public:
  explicit IoError(const std::string& m) : Error(ErrorKind::io, m) {}
};

class RuntimeError : public Error {
 public:
  explicit RuntimeError(const std::string& m) : Error(ErrorKind::runtime, m) {}
};

}  // namespace mimic
