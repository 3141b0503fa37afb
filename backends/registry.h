// Registry of the backends built into this binary, and compilation with cpu fallback.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/common.h"

namespace mimic::backends {

class Registry {
 public:
  // All built-in backends, registered on first use.
  static Registry& global();
  void add(std::unique_ptr<Backend> backend);
  // nullptr when no backend has that name.
  const Backend* find(const std::string& name) const;
  std::vector<const Backend*> all() const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
};

// A backend that exists in mimic's design but is not built here: listed, never available.
std::unique_ptr<Backend> make_missing_backend(const std::string& name, const std::string& reason,
                                              std::vector<std::string> example_args);

// Compiles `g` (bound, inferred) for backend `b`: nodes it cannot run are placed on the cpu
// backend (recorded per op in reports), unless options.strict, which raises UnsupportedOpError
// listing them.
std::unique_ptr<Executable> compile_with_fallback(const Backend& b, const ir::Graph& g,
                                                  const std::string& arg,
                                                  const CompileOptions& options);

}  // namespace mimic::backends
