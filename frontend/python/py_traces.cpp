// Traces and ONNX from Python: mimic.trace("run.db") records every run inside its `with` block;
// mimic.traces.read(...) returns a trace's rows as dicts; mimic.onnx.load(path) imports a model.
#include <type_traits>
#include <variant>

#include "frontend/api/trace.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/python/py_common.h"
#include "traces/trace_reader.h"

namespace mimic::python {
namespace {

py::list runs_of(const traces::TraceReader& r) {
  py::list out;
  for (const auto& run : r.runs()) {
    py::dict d;
    d["id"] = run.id;
    d["uuid"] = run.uuid;
    d["status"] = run.status;
    d["model"] = run.model;
    d["batch"] = run.batch;
    d["layout"] = run.layout;
    d["precision"] = run.precision;
    d["device"] = run.device;
    d["tag"] = run.tag;
    d["error"] = run.error;
    d["events"] = run.events;
    d["wall_s"] = run.wall_ns() * 1e-9;
    d["device_time_s"] = run.device_time_ns * 1e-9;
    d["config"] =
        py::module_::import("json").attr("loads")(run.config_json.empty() ? "{}" : run.config_json);
    out.append(d);
  }
  return out;
}

py::list ops_of(const traces::TraceReader& r, int64_t run) {
  py::list out;
  for (const auto& op : r.ops(run)) {
    py::dict d;
    d["node"] = op.node;
    d["op_type"] = op.op_type;
    d["shapes"] = op.shapes;
    d["dtype"] = op.dtype;
    d["backend"] = op.backend;
    d["fallback"] = op.fallback;
    d["flops"] = op.flops;
    d["bytes_in"] = op.bytes_in;
    d["bytes_out"] = op.bytes_out;
    d["time_s"] = op.time_ns * 1e-9;
    d["busy_s"] = op.busy_ns * 1e-9;
    d["events"] = op.events;
    out.append(d);
  }
  return out;
}

py::list units_of(const traces::TraceReader& r, int64_t run) {
  py::list out;
  for (const auto& u : r.units(run)) {
    py::dict d;
    d["track"] = u.track;
    d["kind"] = u.kind;
    d["backend"] = u.backend;
    d["events"] = u.events;
    d["busy_s"] = u.busy_ns * 1e-9;
    d["utilization"] = u.utilization;
    out.append(d);
  }
  return out;
}

// Rows of any SQL query as dicts keyed by column name, values as Python None/int/float/str/bytes.
py::list query_of(const traces::TraceReader& r, const std::string& sql) {
  traces::TraceReader::QueryTable t = r.query_table(sql);
  py::list out;
  for (const auto& row : t.rows) {
    py::dict d;
    for (size_t c = 0; c < row.size(); ++c)
      d[py::str(t.columns[c])] = std::visit(
          [](const auto& v) -> py::object {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::monostate>) {
              return py::none();
            } else if constexpr (std::is_same_v<V, std::string>) {
              // Text as str; a BLOB (or any bytes that are not UTF-8) as bytes.
              PyObject* text =
                  PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), "strict");
              if (text) return py::reinterpret_steal<py::object>(text);
              PyErr_Clear();
              return py::bytes(v);
            } else {
              return py::cast(v);
            }
          },
          row[c]);
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_traces(py::module_& m) {
  py::class_<TraceScope>(m, "_TraceScope")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def_property_readonly("path", &TraceScope::path)
      .def("run_ids", &TraceScope::run_ids)
      .def("close", &TraceScope::close, py::call_guard<py::gil_scoped_release>());
  m.def("_trace_read",
        [](const std::string& path, const std::string& what, const std::string& run) -> py::object {
          traces::TraceReader reader(path);
          if (what == "runs") return runs_of(reader);
          if (what.rfind("sql:", 0) == 0) return query_of(reader, what.substr(4));
          int64_t id = reader.resolve_run(run);
          if (what == "ops") return ops_of(reader, id);
          if (what == "units") return units_of(reader, id);
          throw py::value_error(
              "traces.read: 'what' must be 'runs', 'ops', 'units' or an SQL query, got '" + what +
              "'");
        });
  m.def("_onnx_load", [](const std::string& path, int64_t max_tensor_bytes) {
    py::gil_scoped_release release;
    onnx_import::ImportOptions o;
    o.max_tensor_bytes = max_tensor_bytes;
    return onnx_import::import_model(path, o).graph;
  });
}

}  // namespace mimic::python
