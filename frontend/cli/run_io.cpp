#include "frontend/cli/run_io.h"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

#include "base/error.h"
#include "frontend/api/npy.h"
#include "frontend/cli/cli_common.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::cli {

std::vector<ir::HostTensor> read_input_files(const std::vector<std::string>& items,
                                             const ir::Graph& g) {
  if (items.empty()) return {};
  std::map<std::string, std::string> files = parse_key_values(items, "--input");
  std::vector<std::string> names, missing;
  for (ir::ValueId v : g.inputs()) names.push_back(g.value(v).name);
  for (const auto& [name, file] : files)
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw InvalidArgument(
          fmt::format("--input '{}': the model has no input of that name (inputs: {})", name,
                      fmt::join(names, ", ")));
  std::vector<ir::HostTensor> out;
  for (const std::string& name : names) {
    if (!files.count(name))
      missing.push_back(name);
    else
      out.push_back(read_npy(files.at(name)));
  }
  if (!missing.empty())
    throw InvalidArgument(fmt::format(
        "--input is missing for input(s) {} (give every input, or none for random ones)",
        fmt::join(missing, ", ")));
  return out;
}

std::vector<ir::HostTensor> freeze_shape_inputs(ir::Graph& g,
                                                const std::vector<ir::HostTensor>& given) {
  std::vector<int> shape_inputs = ir::shape_defining_inputs(g);
  if (shape_inputs.empty()) return given;
  std::vector<ir::ValueId> ids = g.inputs();
  if (given.empty()) {
    std::vector<std::string> names;
    for (int i : shape_inputs) names.push_back(g.value(ids[i]).name);
    throw InvalidArgument(
        fmt::format("input(s) {} set shapes (e.g. Reshape's shape): give their values with "
                    "--input name=file.npy",
                    fmt::join(names, ", ")));
  }
  std::vector<ir::HostTensor> rest;
  for (size_t i = 0; i < given.size(); ++i) {
    if (std::find(shape_inputs.begin(), shape_inputs.end(), static_cast<int>(i)) !=
        shape_inputs.end())
      g.make_constant(ids[i], given[i]);
    else
      rest.push_back(given[i]);
  }
  return rest;
}

int64_t onnx_batch(const ir::Graph& g, const std::vector<ir::HostTensor>& inputs) {
  if (!g.has_symbolic_batch()) return 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Shape& s = g.input_type(static_cast<int>(i)).shape;
    if (s.rank() > 0 && s[0] == ir::kBatch && inputs[i].shape().rank() > 0)
      return inputs[i].shape()[0];
  }
  return 1;
}

void write_output_files(const std::string& dir, const ir::Graph& g,
                        const std::vector<ir::HostTensor>& outputs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError(fmt::format("--output-dir '{}' cannot be created: {}", dir, ec.message()));
  std::set<std::string> taken;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string name = g.value(g.outputs()[i]).name;
    for (char& ch : name)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-')
        ch = '_';
    // Two names that read the same as file names ("a/b", "a_b"): the later one takes its index.
    if (!taken.insert(name).second) name += "_" + std::to_string(i);
    write_npy((std::filesystem::path(dir) / (name + ".npy")).string(), outputs[i]);
  }
}

}  // namespace mimic::cli
