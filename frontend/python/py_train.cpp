// mimic._compile_train(...) -> TrainStep: the training step of a traced module, callable from
// Python with numpy batches; state_dict()/load_state_dict()/save()/load() move its buffers.
#include <fmt/format.h>

#include "base/error.h"
#include "frontend/api/train.h"
#include "frontend/python/py_common.h"

namespace mimic::python {
namespace {

template <typename T>
T get(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) ? d[key].cast<T>() : fallback;
}

TrainOptions make_train_options(const py::dict& loss, const py::dict& opt,
                                const std::string& precision, const py::dict& options,
                                uint64_t seed) {
  TrainOptions o;
  o.seed = seed;
  o.loss.kind = parse_loss(get<std::string>(loss, "kind", "cross_entropy"));
  o.loss.label_smoothing = get<double>(loss, "label_smoothing", 0.0);
  o.loss.ignore_index = get<int64_t>(loss, "ignore_index", -100);
  OptimizerConfig& p = o.optimizer;
  p.kind = parse_optimizer(get<std::string>(opt, "kind", "sgd"));
  p.lr = get<double>(opt, "lr", p.lr);
  p.momentum = get<double>(opt, "momentum", 0.0);
  p.nesterov = get<bool>(opt, "nesterov", false);
  p.weight_decay = get<double>(opt, "weight_decay", 0.0);
  p.beta1 = get<double>(opt, "beta1", p.beta1);
  p.beta2 = get<double>(opt, "beta2", p.beta2);
  p.eps = get<double>(opt, "eps", p.eps);
  p.max_grad_norm = get<double>(opt, "max_grad_norm", 0.0);
  o.compile.precision = precision;
  // compile_train()'s own keywords ride with the backend options: timing_only, compile_only and
  // strict (bools) and "set.<field>" (a preset field override, as the CLI's --set).
  for (auto item : options) {
    std::string key = py::str(item.first), value = py::str(item.second);
    if (key == "compile_only" || key == "timing_only" || key == "strict") {
      bool on = value == "true" || value == "True" || value == "1";
      if (!on && value != "false" && value != "False" && value != "0")
        throw InvalidArgument(fmt::format("compile_train: {}={} must be a bool", key, value));
      (key == "compile_only"  ? o.compile.compile_only
       : key == "timing_only" ? o.compile.timing_only
                              : o.compile.strict) = on;
    } else if (key.rfind("set.", 0) == 0) {
      o.compile.overrides[key.substr(4)] = value;
    } else {
      o.compile.options[key] = value;
    }
  }
  return o;
}

// The phase dicts of mimic.optim.lr_scheduler (keys as LrPhase's fields).
LrSchedule make_schedule(const py::list& phases) {
  LrSchedule s;
  for (auto item : phases) {
    py::dict d = py::reinterpret_borrow<py::dict>(item);
    LrPhase p;
    p.kind = parse_lr_phase(get<std::string>(d, "kind", "constant"));
    p.milestone = get<int64_t>(d, "milestone", 0);
    p.factor = get<double>(d, "factor", p.factor);
    p.total_iters = get<int64_t>(d, "total_iters", p.total_iters);
    p.step_size = get<int64_t>(d, "step_size", p.step_size);
    p.gamma = get<double>(d, "gamma", p.gamma);
    p.start_factor = get<double>(d, "start_factor", p.start_factor);
    p.end_factor = get<double>(d, "end_factor", p.end_factor);
    p.t_max = get<int64_t>(d, "t_max", p.t_max);
    p.eta_min = get<double>(d, "eta_min", p.eta_min);
    s.phases.push_back(p);
  }
  s.validate();
  return s;
}

// None, "dynamic", a number (fixed scale) or a dict of LossScaleConfig's fields (dynamic).
LossScaleConfig make_loss_scale(const py::object& v) {
  if (v.is_none()) return {};
  if (py::isinstance<py::str>(v)) return parse_loss_scale(v.cast<std::string>());
  if (py::isinstance<py::dict>(v)) {
    py::dict d = v.cast<py::dict>();
    for (const auto& [key, value] : d) {
      std::string k = py::str(key);
      if (k != "init_scale" && k != "growth_factor" && k != "backoff_factor" &&
          k != "growth_interval")
        throw InvalidArgument(
            fmt::format("loss_scale: unknown key '{}' (init_scale, growth_factor, backoff_factor, "
                        "growth_interval)",
                        k));
    }
    LossScaleConfig c;
    c.mode = LossScaleMode::dynamic;
    c.init_scale = get<double>(d, "init_scale", c.init_scale);
    c.growth_factor = get<double>(d, "growth_factor", c.growth_factor);
    c.backoff_factor = get<double>(d, "backoff_factor", c.backoff_factor);
    c.growth_interval = get<int64_t>(d, "growth_interval", c.growth_interval);
    c.validate();
    return c;
  }
  return parse_loss_scale(std::string(py::str(v)));
}

py::dict to_dict(const NamedTensors& tensors) {
  py::dict d;
  for (const auto& [name, t] : tensors) d[py::str(name)] = to_numpy(t.clone());
  return d;
}

NamedTensors from_dict(const py::dict& d) {
  NamedTensors out;
  for (auto item : d) {
    py::array a = py::array::ensure(item.second, py::array::c_style);
    if (!a)
      throw InvalidArgument(
          fmt::format("load_state_dict: '{}' is not an array", std::string(py::str(item.first))));
    out.emplace_back(py::str(item.first), to_host(a).clone());
  }
  return out;
}

float call_step(TrainStep& s, const py::object& x, const py::object& y) {
  ir::HostTensor xi = to_host(py::array::ensure(x, py::array::c_style));
  ir::HostTensor yi = to_host(py::array::ensure(y, py::array::c_style));
  py::gil_scoped_release release;
  return s.step(xi, yi);
}

}  // namespace

void bind_train(py::module_& m) {
  py::class_<TrainStep>(m, "TrainStep")
      .def("__call__", &call_step, py::arg("input"), py::arg("target"),
           "One training step on a batch; returns the loss before the update.")
      .def("state_dict", [](const TrainStep& s) { return to_dict(s.state_dict()); })
      .def("parameters", [](const TrainStep& s) { return to_dict(s.parameters()); })
      .def("load_state_dict",
           [](TrainStep& s, const py::dict& d) { s.load_state_dict(from_dict(d)); })
      .def("save", &TrainStep::save, py::arg("path"))
      .def("load", &TrainStep::load, py::arg("path"))
      .def_property("lr", &TrainStep::lr, &TrainStep::set_lr)
      .def_property_readonly("steps", &TrainStep::steps_taken)
      .def_property_readonly("loss_scale", &TrainStep::loss_scale)
      .def_property_readonly("skipped_steps", &TrainStep::skipped_steps)
      .def_property_readonly("state_on_device", &TrainStep::state_on_device)
      .def_property_readonly("graph", [](const TrainStep& s) { return s.executable().graph(); })
      .def_property_readonly("report",
                             [](const TrainStep& s) { return report_dict(s.last_report()); })
      .def_property_readonly("compile_report", [](const TrainStep& s) {
        return compile_report_dict(s.executable().compile_report());
      });
  m.def("_compile_train",
        [](const ir::Graph& g, const py::object& params, const std::string& device,
           const py::dict& loss, const py::dict& opt, const std::string& precision,
           const py::dict& options, uint64_t seed, const py::list& schedule,
           const py::object& loss_scale, const std::string& recompute,
           const std::vector<std::string>& checkpoints, const std::string& batch_norm_variance) {
          // params None: an imported model, whose initializers are the parameters.
          NamedTensors named;
          if (params.is_none())
            named = graph_parameters(g);
          else
            for (const auto& [name, t] : params.cast<std::vector<std::pair<std::string, Tensor>>>())
              named.emplace_back(name, t.host());
          TrainOptions o = make_train_options(loss, opt, precision, options, seed);
          o.schedule = make_schedule(schedule);
          o.loss_scale = make_loss_scale(loss_scale);
          o.recompute = parse_recompute(recompute);
          o.recompute_checkpoints = checkpoints;
          o.batch_norm_variance = parse_batch_norm_variance(batch_norm_variance);
          py::gil_scoped_release release;
          return std::make_unique<TrainStep>(g, named, Device(device), o);
        });
  m.def("_bind_batch", &bind_model_batch, py::arg("graph"), py::arg("batch"),
        "The graph with its symbolic batch (if any) bound to `batch`.");
  m.def(
      "_lr_at",
      [](const py::list& phases, double base_lr, int64_t step) {
        return make_schedule(phases).lr_at(base_lr, step);
      },
      "The lr of step `step` under a schedule given as mimic.optim.lr_scheduler phase dicts.");
}

}  // namespace mimic::python
