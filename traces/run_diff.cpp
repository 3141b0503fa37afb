#include "traces/run_diff.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace mimic::traces {

RunDiff diff_runs(const TraceReader& reader_a, int64_t run_a, const TraceReader& reader_b,
                  int64_t run_b) {
  RunDiff d;
  d.file_a = reader_a.path();
  d.file_b = reader_b.path();
  d.a = reader_a.run(run_a);
  d.b = reader_b.run(run_b);
  d.a_time_ns = d.a.device_time_ns;
  d.b_time_ns = d.b.device_time_ns;
  // A node that appears more than once in a run (it should not) has its times summed.
  std::unordered_map<std::string, size_t> index;
  for (const OpRecord& o : reader_a.ops(run_a)) {
    auto [it, fresh] = index.try_emplace(o.node, d.ops.size());
    if (fresh) d.ops.push_back(OpDiff{o.node, o.op_type, true, false});
    d.ops[it->second].a_ns += o.time_ns;
    d.ops[it->second].a_flops += o.flops;
  }
  for (const OpRecord& o : reader_b.ops(run_b)) {
    auto [it, fresh] = index.try_emplace(o.node, d.ops.size());
    if (fresh) d.ops.push_back(OpDiff{o.node, o.op_type, false, true});
    OpDiff& row = d.ops[it->second];
    row.in_b = true;
    row.b_ns += o.time_ns;
    row.b_flops += o.flops;
  }
  std::map<std::string, OpTypeDiff> types;
  for (const OpDiff& op : d.ops) {
    d.only_a += op.in_a && !op.in_b;
    d.only_b += op.in_b && !op.in_a;
    OpTypeDiff& t = types[op.op_type];
    t.op_type = op.op_type;
    t.a_ops += op.in_a;
    t.b_ops += op.in_b;
    t.a_ns += op.a_ns;
    t.b_ns += op.b_ns;
  }
  for (auto& [name, t] : types) d.op_types.push_back(t);
  std::stable_sort(d.op_types.begin(), d.op_types.end(),
                   [](const OpTypeDiff& x, const OpTypeDiff& y) {
                     return std::max(x.a_ns, x.b_ns) > std::max(y.a_ns, y.b_ns);
                   });
  return d;
}

}  // namespace mimic::traces
