#include "frontend/ir/op_type.h"

#include <cstdint>
#include <string>

namespace mimic::ir {
namespace {

constexpr const char* kNames[] = {
#define MIMIC_NAME_ENTRY(name) #name,
    MIMIC_ALL_OPS(MIMIC_NAME_ENTRY)
#undef MIMIC_NAME_ENTRY
};
constexpr int kCount = sizeof(kNames) / sizeof(kNames[0]);

#define MIMIC_COUNT_ENTRY(name) +1
constexpr int kUnaryCount = 0 MIMIC_UNARY_OPS(MIMIC_COUNT_ENTRY);
constexpr int kBinaryCount = 0 MIMIC_BINARY_OPS(MIMIC_COUNT_ENTRY);
#undef MIMIC_COUNT_ENTRY

}  // namespace

const char* op_name(OpType op) {
  return kNames[static_cast<int>(op)];
}

int op_count() {
  return kCount;
}
OpType op_at(int index) {
  return static_cast<OpType>(index);
}

bool is_unary_elementwise(OpType op) {
  return static_cast<int>(op) < kUnaryCount;
}
bool is_binary_elementwise(OpType op) {
  int i = static_cast<int>(op);
  return i >= kUnaryCount && i < kUnaryCount + kBinaryCount;
}

bool is_view_op(OpType op) {
  return op == OpType::Reshape || op == OpType::Flatten || op == OpType::Squeeze ||
         op == OpType::Unsqueeze || op == OpType::Identity || op == OpType::Dropout;
}

bool is_reduce(OpType op) {
  switch (op) {
    case OpType::ReduceSum:
    case OpType::ReduceMean:
    case OpType::ReduceMax:
    case OpType::ReduceMin:
    case OpType::ReduceProd:
    case OpType::ReduceL1:
    case OpType::ReduceL2:
    case OpType::ReduceSumSquare:
    case OpType::ReduceLogSum:
    case OpType::ReduceLogSumExp:
      return true;
    default:
      return false;
  }
}

}  // namespace mimic::ir
