#include "frontend/cli/sweep_spec.h"

#include <fmt/format.h>
#include <cmath>
#include <functional>
#include <sstream>

#include "base/error.h"
#include "frontend/cli/cli_common.h"

namespace mimic::cli::sweep {

std::string Point::key() const {
  std::string k = fmt::format("{}|b{}|{}|{}", device, batch, layout, precision);
  for (const auto& [f, v] : overrides) k += "|" + f + "=" + v;
  for (const auto& [f, v] : options) k += "|option:" + f + "=" + v;
  if (!recompute.empty()) k += "|recompute=" + recompute;
  return k;
}

std::string Point::config() const {
  std::string k = fmt::format("{} {} {}", device, layout, precision);
  for (const auto& [f, v] : overrides) k += " " + f + "=" + v;
  if (recompute.empty())
    for (const auto& [f, v] : options) k += " " + f + "=" + v;
  return k;
}

std::string Point::choices() const {
  std::string s;
  for (const auto& [f, v] : overrides) s += (s.empty() ? "" : " ") + f + "=" + v;
  for (const auto& [f, v] : options) s += (s.empty() ? "" : " ") + f + "=" + v;
  if (!recompute.empty()) s += (s.empty() ? "" : " ") + std::string("recompute=") + recompute;
  return s;
}

std::vector<std::string> parse_list(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) throw InvalidArgument(fmt::format("{} '{}' has an empty item", what, text));
    out.push_back(item);
  }
  if (out.empty()) throw InvalidArgument(fmt::format("{} is empty", what));
  return out;
}

std::vector<int64_t> parse_batches(const std::string& text) {
  std::vector<std::string> items = parse_list(text, "--batch");
  std::vector<int64_t> out;
  auto number = [&](const std::string& s) {
    try {
      size_t used = 0;
      int64_t v = std::stoll(s, &used);
      if (used != s.size() || v <= 0) throw std::invalid_argument(s);
      return v;
    } catch (const std::exception&) {
      throw InvalidArgument(fmt::format("--batch '{}': '{}' is not a positive integer", text, s));
    }
  };
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i] != "...") {
      out.push_back(number(items[i]));
      continue;
    }
    if (out.empty() || i + 1 >= items.size())
      throw InvalidArgument(fmt::format("--batch '{}': '...' needs a value on each side", text));
    int64_t end = number(items[i + 1]);
    // Doubling stops below `end` without overflowing, whatever the two ends are.
    for (int64_t b = out.back(); b <= (end - 1) / 2;) out.push_back(b *= 2);
  }
  return out;
}

double parse_duration(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  double scale = unit == "s"    ? 1
                 : unit == "ms" ? 1e-3
                 : unit == "us" ? 1e-6
                 : unit == "ns" ? 1e-9
                                : -1;
  if (used == 0 || scale < 0 || !std::isfinite(v) || v <= 0)
    throw InvalidArgument(fmt::format(
        "duration '{}' must be a positive number with a unit (s, ms, us, ns), e.g. 7ms", text));
  return v * scale;
}

namespace {

using Assignments = std::vector<std::pair<std::string, std::string>>;

// Every combination of one value per key.
std::vector<Assignments> product(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& lists) {
  std::vector<Assignments> sets{{}};
  for (const auto& [key, values] : lists) {
    std::vector<Assignments> next;
    next.reserve(sets.size() * values.size());
    for (const auto& set : sets)
      for (const auto& v : values) {
        next.push_back(set);
        next.back().emplace_back(key, v);
      }
    sets = std::move(next);
  }
  return sets;
}

}  // namespace

std::vector<Point> enumerate(const Spec& spec) {
  check_onnx_layout(spec.onnx, spec.layouts);
  // The grid is checked before it is built: a few --set lists multiply to billions of points.
  const std::vector<std::string> recomputes =
      spec.train ? spec.recomputes : std::vector<std::string>{""};
  double count = static_cast<double>(spec.devices.size()) * spec.layouts.size() *
                 spec.precisions.size() * spec.batches.size() * recomputes.size();
  std::string factors =
      fmt::format("{} devices x {} layouts x {} precisions x {} batches", spec.devices.size(),
                  spec.layouts.size(), spec.precisions.size(), spec.batches.size());
  if (spec.train) factors += fmt::format(" x {} recompute modes", recomputes.size());
  for (const auto* lists : {&spec.overrides, &spec.options})
    for (const auto& [field, values] : *lists) {
      count *= static_cast<double>(values.size());
      factors += fmt::format(" x {} values of {}", values.size(), field);
    }
  if (count > kMaxSweepPoints)
    throw InvalidArgument(fmt::format("the sweep grid has {:.0f} points ({}), at most {}", count,
                                      factors, kMaxSweepPoints));
  const auto override_sets = product(spec.overrides), option_sets = product(spec.options);
  std::vector<Point> points;
  points.reserve(static_cast<size_t>(count));
  for (const auto& device : spec.devices)
    for (const auto& layout : spec.layouts)
      for (const auto& precision : spec.precisions)
        for (const auto& ov : override_sets)
          for (const auto& options : option_sets)
            for (const auto& recompute : recomputes)
              for (int64_t batch : spec.batches)
                points.push_back(Point{device, layout, precision, batch, ov, options, recompute});
  return points;
}

std::string sweep_id(const Spec& spec) {
  std::string text = spec.model + "|" + spec.onnx + "|" +
                     fmt::format("{}", fmt::join(spec.model_args, ",")) + "|" +
                     (spec.timing_only ? "timing" : "numerics") + "|" + std::to_string(spec.seed) +
                     (spec.train ? "|train:" + spec.optimizer + ":" + spec.loss : "");
  for (const auto& p : enumerate(spec)) text += ";" + p.key();
  // FNV-1a, 64 bits: stable across runs and machines.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

namespace {

// The model, preset overrides, backend options and timing-only flag of a point's command.
void append_model_and_choices(const Spec& spec, const Point& p, std::vector<std::string>& args) {
  if (!spec.onnx.empty())
    args.insert(args.end(), {"--onnx", spec.onnx});
  else
    args.insert(args.end(), {"--model", spec.model});
  for (const auto& a : spec.model_args) args.insert(args.end(), {"--model-arg", a});
  for (const auto& [f, v] : p.overrides) args.insert(args.end(), {"--set", f + "=" + v});
  for (const auto& [f, v] : p.options) args.insert(args.end(), {"--option", f + "=" + v});
  if (spec.timing_only) args.push_back("--timing-only");
}

}  // namespace

std::vector<std::string> run_arguments(const Spec& spec, const Point& p) {
  const std::string batch = std::to_string(p.batch), seed = std::to_string(spec.seed);
  if (spec.train) {
    // One timed training step per point (steps 2: the first warms a measured device; an
    // emulator's device time is the same every step).
    std::vector<std::string> args{"train",       "--device",  p.device,      "--batch",
                                  batch,         "--layout",  p.layout,      "--precision",
                                  p.precision,   "--json",    "--seed",      seed,
                                  "--steps",     "2",         "--batches",   "1",
                                  "--recompute", p.recompute, "--optimizer", spec.optimizer,
                                  "--loss",      spec.loss};
    append_model_and_choices(spec, p, args);
    return args;
  }
  std::vector<std::string> args{"run",          "--device", p.device,      "--batch",   batch,
                                "--layout",     p.layout,   "--precision", p.precision, "--json",
                                "--no-compare", "--seed",   seed};
  append_model_and_choices(spec, p, args);
  // Measured devices are timed (noisy): warm up and keep the best of three. Emulators' device time
  // is deterministic, one run is exact.
  if (p.device.find("-emu") == std::string::npos)
    args.insert(args.end(), {"--warmup", "1", "--repeat", "3"});
  return args;
}

}  // namespace mimic::cli::sweep
