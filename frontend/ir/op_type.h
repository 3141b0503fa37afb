// OpType: the closed set of IR ops (see op_list.h) and name lookup.
#pragma once

#include <optional>
#include <string_view>

#include "frontend/ir/op_list.h"

namespace mimic::ir {

enum class OpType : uint16_t {
#define MIMIC_ENUM_ENTRY(name) name,
  MIMIC_ALL_OPS(MIMIC_ENUM_ENTRY)
#undef MIMIC_ENUM_ENTRY
};

const char* op_name(OpType op);
int op_count();
OpType op_at(int index);

bool is_unary_elementwise(OpType op);
bool is_binary_elementwise(OpType op);
// Reshape-like ops whose output is a view of the input's storage.
bool is_view_op(OpType op);
// ReduceSum, ReduceMean, ..., ReduceLogSumExp: reductions over axes given as an input.
bool is_reduce(OpType op);

}  // namespace mimic::ir
