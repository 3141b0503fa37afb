#include "frontend/api/report_json.h"

namespace mimic {
namespace {

nlohmann::json to_json(const backends::Table& t) {
  return nlohmann::json{{"columns", t.columns}, {"rows", t.rows}};
}

nlohmann::json tables_json(const std::map<std::string, backends::Table>& tables) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, t] : tables) j[name] = to_json(t);
  return j;
}

}  // namespace

nlohmann::json to_json(const backends::OpReport& op) {
  return nlohmann::json{{"node", op.node},
                        {"op_type", op.op_type},
                        {"backend", op.backend},
                        {"fallback", op.fallback},
                        {"shapes", op.shapes},
                        {"flops", op.flops},
                        {"bytes_in", op.bytes_in},
                        {"bytes_out", op.bytes_out},
                        {"wall_ns", op.wall_ns},
                        {"cycles", op.cycles},
                        {"device_seconds", op.device_seconds},
                        {"utilization", op.utilization},
                        {"intensity", op.intensity},
                        {"bound", op.bound}};
}

nlohmann::json to_json(const backends::RunReport& r) {
  nlohmann::json ops = nlohmann::json::array(), units = nlohmann::json::array();
  for (const auto& op : r.ops) ops.push_back(to_json(op));
  for (const auto& u : r.units)
    units.push_back({{"name", u.name},
                     {"kind", u.kind},
                     {"busy_cycles", u.busy_cycles},
                     {"utilization", u.utilization}});
  return nlohmann::json{{"device", r.device},
                        {"backend", r.backend},
                        {"precision", r.precision},
                        {"wall_seconds", r.wall_seconds},
                        {"cycles", r.cycles},
                        {"clock_hz", r.clock_hz},
                        {"device_seconds", r.device_seconds},
                        {"fallback_wall_seconds", r.fallback_wall_seconds},
                        {"total_flops", r.total_flops()},
                        {"peak_flops_per_s", r.peak_flops_per_s},
                        {"achieved_flops_per_s", r.achieved_flops_per_s},
                        {"ridge_intensity", r.ridge_intensity},
                        {"bytes_moved", r.bytes_moved},
                        {"metrics", r.metrics},
                        {"notes", r.notes},
                        {"units", units},
                        {"ops", ops},
                        {"tables", tables_json(r.tables)}};
}

nlohmann::json to_json(const backends::CompileReport& r) {
  return nlohmann::json{{"device", r.device},
                        {"compile_seconds", r.compile_seconds},
                        {"metrics", r.metrics},
                        {"notes", r.notes},
                        {"fallback_nodes", r.fallback_nodes},
                        {"fallback_reasons", r.fallback_reasons},
                        {"tables", tables_json(r.tables)}};
}

}  // namespace mimic
