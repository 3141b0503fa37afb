#include "frontend/ir/op_type.h"

namespace mimic::ir {
namespace {

struct OpRow {
  const char* name;
  OpClass cls;
  OpGradient gradient;
  bool epilogue;
};

constexpr bool yes = true, no = false;

constexpr OpRow kRows[] = {
#define MIMIC_ROW_ENTRY(name, cls, in_lo, in_hi, out_lo, out_hi, shape, gradient, epilogue) \
  {#name, OpClass::cls, OpGradient::gradient, epilogue},
    MIMIC_OP_TABLE(MIMIC_ROW_ENTRY)
#undef MIMIC_ROW_ENTRY
};
constexpr int kCount = sizeof(kRows) / sizeof(kRows[0]);

const OpRow& row(OpType op) {
  return kRows[static_cast<int>(op)];
}

}  // namespace

const char* op_name(OpType op) {
  return row(op).name;
}

int op_count() {
  return kCount;
}

OpType op_at(int index) {
  return static_cast<OpType>(index);
}

OpClass op_class(OpType op) {
  return row(op).cls;
}

OpGradient op_gradient(OpType op) {
  return row(op).gradient;
}

bool is_epilogue_activation(OpType op) {
  return row(op).epilogue;
}

bool is_view_op(OpType op) {
  return op == OpType::Reshape || op == OpType::Flatten || op == OpType::Squeeze ||
         op == OpType::Unsqueeze || op == OpType::Identity || op == OpType::Dropout;
}

}  // namespace mimic::ir
