#include "frontend/ir/unary_math.h"

#include "frontend/ir/graph.h"

namespace mimic::ir {

UnaryAttrs unary_attrs(const Node& n) {
  const Attributes& at = n.attrs;
  auto get = [&](const char* name, double fallback) {
    return static_cast<float>(at.get_float(name, fallback));
  };
  UnaryAttrs a;
  switch (n.op) {
    case OpType::LeakyRelu:
      a.alpha = get("alpha", 0.01);
      break;
    case OpType::Elu:
    case OpType::Celu:
    case OpType::ThresholdedRelu:
      a.alpha = get("alpha", 1.0);
      break;
    case OpType::Selu:
      a.alpha = get("alpha", 1.67326319217681884765625);
      a.gamma = get("gamma", 1.05070102214813232421875);
      break;
    case OpType::HardSigmoid:
      a.alpha = get("alpha", 0.2);
      a.beta = get("beta", 0.5);
      break;
    case OpType::Shrink:
      a.lambd = get("lambd", 0.5);
      a.bias = get("bias", 0.0);
      break;
    case OpType::Gelu:
      a.gelu_tanh = at.get_string("approximate", "none") == "tanh";
      break;
    case OpType::IsInf:
      a.detect_positive = at.get_int("detect_positive", 1) != 0;
      a.detect_negative = at.get_int("detect_negative", 1) != 0;
      break;
    default:
      break;
  }
  return a;
}

}  // namespace mimic::ir
