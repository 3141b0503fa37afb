// The `mimic._mimic` extension module; the `mimic` package (mimic/*.py) builds the public API on
// it.
#include "frontend/python/py_common.h"

PYBIND11_MODULE(_mimic, m) {
  m.doc() = "mimic: ML models on emulated TPUs/IPUs and real devices (C++ core)";
  m.attr("__version__") = MIMIC_VERSION;
  m.attr("_cli_path") = MIMIC_CLI_PATH;
  mimic::python::register_errors(m);
  mimic::python::bind_tensor(m);
  mimic::python::bind_compile(m);
  mimic::python::bind_traces(m);
  mimic::python::bind_train(m);
  m.def(
      "constant",
      [](const pybind11::array& a, const std::string& device) {
        return mimic::Tensor::constant(mimic::python::to_host(a).clone(), mimic::Device(device));
      },
      pybind11::arg("array"), pybind11::arg("device") = "cpu",
      "A tensor baked into graphs (weights, parameters).");
}
