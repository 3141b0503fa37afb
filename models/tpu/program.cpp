// Names and vector-unit costs of the program's enums.
//
// Vector costs are ALU operations per element, issued at vpu.alus per (lane, sublane) per cycle.
// [assumed] values: adds, multiplies, compares and selects are one operation (S3: "most ops issue
// once per cycle"); divisions and reciprocals are Newton iterations (~4); exp/log/tanh/sigmoid/erf
// go through a transcendental unit at a quarter rate plus a few fix-up operations (~8). Reductions
// cost one operation per element plus a cross-lane tree paid once per instruction.
#include "models/tpu/program.h"

namespace mimic::models::tpu {

const char* level_name(Level l) {
  switch (l) {
    case Level::host:
      return "host";
    case Level::offchip:
      return "offchip";
    case Level::onchip:
      return "onchip";
  }
  return "?";
}

const char* opcode_name(Opcode o) {
  switch (o) {
    case Opcode::dma:
      return "dma";
    case Opcode::matmul:
      return "matmul";
    case Opcode::vector:
      return "vector";
    case Opcode::sync:
      return "sync";
  }
  return "?";
}

const char* vector_func_name(VectorFunc f) {
  switch (f) {
#define MIMIC_VECTOR_NAME(name, ops) \
  case VectorFunc::name:             \
    return #name;
    MIMIC_VECTOR_FUNCS(MIMIC_VECTOR_NAME)
#undef MIMIC_VECTOR_NAME
  }
  return "?";
}

uint32_t vector_ops_per_element(VectorFunc f) {
  switch (f) {
#define MIMIC_VECTOR_COST(name, ops) \
  case VectorFunc::name:             \
    return ops;
    MIMIC_VECTOR_FUNCS(MIMIC_VECTOR_COST)
#undef MIMIC_VECTOR_COST
  }
  return 1;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace mimic::models::tpu
