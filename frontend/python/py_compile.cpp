// mimic.Graph, mimic.compile(...) -> Executable, zoo models, and name scopes for Python modules.
#include <fmt/format.h>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/nn.h"
#include "frontend/api/zoo.h"
#include "frontend/python/py_common.h"

namespace mimic::python {
namespace {

// What Python's compile() hands to C++: the graph plus options gathered from keyword arguments.
CompileOptions make_options(int64_t batch, const std::string& precision, bool strict,
                            bool timing_only, bool compile_only, const py::dict& options,
                            const py::dict& overrides) {
  CompileOptions o;
  o.batch = batch;
  o.precision = precision;
  o.strict = strict;
  o.timing_only = timing_only;
  o.compile_only = compile_only;
  auto to_str = [](const py::handle& v) {
    if (py::isinstance<py::bool_>(v)) return std::string(v.cast<bool>() ? "true" : "false");
    return std::string(py::str(v));
  };
  for (auto item : options) o.options[py::str(item.first)] = to_str(item.second);
  for (auto item : overrides) o.overrides[py::str(item.first)] = to_str(item.second);
  return o;
}

py::object outputs_to_python(const std::vector<ir::HostTensor>& outputs) {
  if (outputs.size() == 1) return to_numpy(outputs[0]);
  py::tuple t(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) t[i] = to_numpy(outputs[i]);
  return std::move(t);
}

// An executable plus the report of its last run, callable from Python.
struct PyExecutable {
  Executable exe;
  backends::RunReport last;
  bool ran = false;

  py::object call(const py::args& args) {
    std::vector<ir::HostTensor> inputs;
    for (const auto& a : args) {
      if (py::isinstance<Tensor>(a))
        inputs.push_back(a.cast<Tensor>().host());
      else
        inputs.push_back(to_host(py::array::ensure(a)));
    }
    RunOutput out;
    {
      py::gil_scoped_release release;
      out = exe.run(inputs);
    }
    last = std::move(out.report);
    ran = true;
    return outputs_to_python(out.outputs);
  }
};

py::list type_list(const ir::Graph& g, const std::vector<ir::ValueId>& ids) {
  py::list out;
  for (ir::ValueId v : ids) {
    const ir::Value& val = g.value(v);
    out.append(
        py::make_tuple(val.name, ir::dtype_name(val.type.dtype), py::cast(val.type.shape.dims())));
  }
  return out;
}

void bind_graph(py::module_& m) {
  py::class_<ir::Graph>(m, "Graph")
      .def_property_readonly("name", &ir::Graph::name)
      .def_property_readonly(
          "inputs", [](const ir::Graph& g) { return type_list(g, g.inputs()); },
          "[(name, dtype, shape)]; -1 marks the symbolic batch")
      .def_property_readonly("outputs",
                             [](const ir::Graph& g) { return type_list(g, g.outputs()); })
      .def_property_readonly("num_nodes", &ir::Graph::num_nodes)
      .def_property_readonly("ops",
                             [](const ir::Graph& g) {
                               py::list out;
                               for (const auto& n : g.nodes())
                                 out.append(py::make_tuple(n.name, ir::op_name(n.op)));
                               return out;
                             })
      .def("__repr__", [](const ir::Graph& g) {
        return fmt::format("mimic.Graph('{}', {} nodes, {} inputs, {} outputs)", g.name(),
                           g.num_nodes(), g.inputs().size(), g.outputs().size());
      });
  m.def(
      "trace",
      [](const std::vector<Tensor>& outputs, const std::string& name) {
        return trace(outputs, name);
      },
      py::arg("outputs"), py::arg("name") = "graph",
      "The graph computing `outputs` from their placeholders and inputs.");
}

void bind_executable(py::module_& m) {
  py::class_<PyExecutable>(m, "Executable")
      .def("__call__", &PyExecutable::call,
           "Runs on numpy arrays (or mimic tensors); returns numpy array(s).")
      .def_property_readonly(
          "report",
          [](const PyExecutable& e) -> py::object {
            if (!e.ran) return py::none();
            return report_dict(e.last);
          },
          "The last run's report: cycles, seconds, utilization, per-op rows (dicts).")
      .def_property_readonly(
          "compile_report",
          [](const PyExecutable& e) { return compile_report_dict(e.exe.compile_report()); })
      .def_property_readonly("graph", [](const PyExecutable& e) { return e.exe.graph(); })
      .def_property_readonly("device", [](const PyExecutable& e) { return e.exe.device(); });

  m.def("_compile", [](const ir::Graph& g, const std::string& device, int64_t batch,
                       const std::string& precision, bool strict, bool timing_only,
                       bool compile_only, const py::dict& options, const py::dict& overrides,
                       const std::string& model_name, int64_t max_tensor_bytes) {
    CompileOptions o =
        make_options(batch, precision, strict, timing_only, compile_only, options, overrides);
    o.max_tensor_bytes = max_tensor_bytes;
    Device d(device);
    auto result = std::make_unique<PyExecutable>();
    {
      py::gil_scoped_release release;
      result->exe = compile(g, d, o);
    }
    if (!model_name.empty()) result->exe.run_info().model = model_name;
    return result;
  });
}

// The nn modules and the model zoo (the Python package's mimic.nn and mimic.zoo wrap these).
void bind_modules(py::module_& m) {
  py::class_<nn::Module, std::shared_ptr<nn::Module>>(m, "_Module")
      .def("__call__", [](nn::Module& mod, const Tensor& x) { return mod(x); })
      .def(
          "to",
          [](nn::Module& mod, const std::string& d) -> nn::Module& { return mod.to(Device(d)); },
          py::return_value_policy::reference_internal)
      .def("parameter_count", &nn::Module::parameter_count)
      .def(
          "named_parameters", [](nn::Module& mod) { return mod.named_parameters(); },
          "(name, tensor) of every parameter, as mimic.nn modules give them (compile_train reads "
          "them)")
      .def_property_readonly("device", &nn::Module::device);
  m.def("_zoo_make", [](const std::string& name, const std::string& layout, uint64_t seed,
                        const std::map<std::string, int64_t>& params) {
    zoo::Model model = zoo::make(name, {layout, seed, params});
    ir::Graph g = nn::trace_module(*model.module, model.input_name, model.input_type.dtype,
                                   model.input_type.shape, name);
    return py::make_tuple(model.module, g, model.input_name, ir::dtype_name(model.input_type.dtype),
                          py::cast(model.input_type.shape.dims()), model.int_input_high);
  });
  m.def("_zoo_names", &zoo::names);
  m.def("_zoo_params", &zoo::params_help);
  m.def("_random_inputs", [](const ir::Graph& g, int64_t batch, uint64_t seed, int64_t int_high) {
    ir::Graph bound = prepare_graph(g, batch);
    py::list out;
    for (auto& t : random_inputs(bound, seed, int_high)) out.append(to_numpy(t));
    return out;
  });

  m.def("_scoped_call", [](const std::string& name, const py::function& fn, const py::object& x) {
    NameScope scope(name);
    return fn(x);
  });
}

}  // namespace

void bind_compile(py::module_& m) {
  bind_graph(m);
  bind_executable(m);
  bind_modules(m);
}

}  // namespace mimic::python
