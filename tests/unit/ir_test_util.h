// Helpers shared by the IR tests.
#pragma once

#include <string>

#include "base/error.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::ir::test {

// The ShapeError message shape inference raises for `g`, or "" when it succeeds.
inline std::string error_of(Graph& g) {
  try {
    infer_shapes(g);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}

}  // namespace mimic::ir::test
