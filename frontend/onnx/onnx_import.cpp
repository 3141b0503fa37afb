#include "frontend/onnx/onnx_import.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <fmt/format.h>
#include <climits>
#include <filesystem>
#include <set>

#include "base/error.h"
#include "frontend/onnx/import_context.h"
#include "frontend/onnx/onnx_tensor.h"

namespace mimic::onnx_import {
namespace {

namespace fs = std::filesystem;

// Everything mimic cannot import, gathered over the whole model and thrown once.
class Unsupported {
 public:
  void add(const std::string& key, const std::string& detail) {
    if (!by_key_.count(key)) order_.push_back(key);
    by_key_[key].push_back(detail);
  }
  bool empty() const { return order_.empty(); }
  [[noreturn]] void raise(const std::string& model, int64_t opset) const {
    std::vector<std::string> parts;
    for (const std::string& key : order_) {
      const auto& details = by_key_.at(key);
      std::vector<std::string> shown(details.begin(),
                                     details.begin() + std::min<size_t>(details.size(), 8));
      std::string more = details.size() > 8 ? fmt::format(" and {} more", details.size() - 8) : "";
      parts.push_back(fmt::format("{}: {}{}", key, fmt::join(shown, ", "), more));
    }
    throw UnsupportedOpError(fmt::format("'{}' (opset {}) uses {} thing(s) mimic cannot import: {}",
                                         model, opset, order_.size(), fmt::join(parts, "; ")),
                             order_);
  }

 private:
  std::vector<std::string> order_;
  std::map<std::string, std::vector<std::string>> by_key_;
};

std::string key_of(const UnsupportedOpError& e, const std::string& fallback) {
  return e.op_types().empty() ? fallback : e.op_types().front();
}

bool is_default_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

// The default domain's opset; a model whose nodes all belong to other domains may omit it.
int64_t default_opset(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& o : m.opset_import())
    if (is_default_domain(o.domain())) return o.version();
  for (const auto& n : m.graph().node())
    if (is_default_domain(n.domain()))
      throw IoError(fmt::format("'{}' lists no opset for the default ONNX domain", name));
  return kMaxOpset;
}

// The schema version of `op` in effect at `opset`, or -1 when mimic cannot import it there.
int op_version(const onnx::NodeProto& n, int64_t opset, std::string& why) {
  using onnx::OpSchemaRegistry;
  if (!is_default_domain(n.domain())) {
    why = "an op of domain '" + n.domain() + "'";
    return -1;
  }
  const onnx::OpSchema* schema = OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset), "");
  if (!schema) {
    why = "not an ONNX op at this opset";
    return -1;
  }
  if (!converters().count(n.op_type())) {
    why = "no IR equivalent";
    return -1;
  }
  const onnx::OpSchema* latest = OpSchemaRegistry::Schema(n.op_type(), kMaxOpset, "");
  if (opset < kMinOpset && latest && latest->SinceVersion() != schema->SinceVersion()) {
    why = fmt::format("version {} predates opset {}", schema->SinceVersion(), kMinOpset);
    return -1;
  }
  return schema->SinceVersion();
}

std::string op_key(const onnx::NodeProto& n) {
  return is_default_domain(n.domain()) ? n.op_type() : n.domain() + "." + n.op_type();
}

std::string node_label(const onnx::NodeProto& n, int index) {
  if (!n.name().empty()) return "node '" + n.name() + "'";
  if (n.output_size() > 0) return fmt::format("node #{} (output '{}')", index, n.output(0));
  return fmt::format("node #{}", index);
}

// Graph input shape: the first dimension may be symbolic (the batch); the others must be sizes.
ir::Shape input_shape(const onnx::ValueInfoProto& v, bool zero_is_batch, Unsupported& unsupported,
                      bool& ok) {
  const auto& type = v.type().tensor_type();
  if (!type.has_shape()) {
    unsupported.add("inputs without a shape", "input '" + v.name() + "'");
    ok = false;
    return {};
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < type.shape().dim_size(); ++i) {
    const auto& d = type.shape().dim(i);
    bool sized = d.has_dim_value() && d.dim_value() > 0;
    // -1 is what some exporters write for an unknown size; any other negative size is malformed.
    if (d.has_dim_value() && (d.dim_value() > kMaxTensorElements || d.dim_value() < -1))
      throw IoError(
          fmt::format("input '{}' has dimension {} of size {}", v.name(), i, d.dim_value()));
    bool empty = d.has_dim_value() && d.dim_value() == 0 && (i > 0 || !zero_is_batch);
    if (sized || empty) {
      dims.push_back(d.dim_value());
    } else if (i == 0) {
      dims.push_back(ir::kBatch);
    } else {
      std::string label = d.has_dim_param() ? "'" + d.dim_param() + "'" : "unknown";
      unsupported.add("symbolic dimensions other than the batch",
                      fmt::format("input '{}' dim {} ({})", v.name(), i, label));
      ok = false;
    }
  }
  int64_t elements = 1;
  for (int64_t d : dims)
    if (d > 0 && (__builtin_mul_overflow(elements, d, &elements) || elements > ir::kMaxElements))
      throw IoError(fmt::format("input '{}' has more than 2^40 elements", v.name()));
  return ir::Shape(dims);
}

class Importer {
 public:
  Importer(const onnx::ModelProto& m, std::string name, const ImportOptions& options)
      : m_(m), name_(std::move(name)), options_(options) {
    state_.base_dir = options.base_dir;
    state_.max_tensor_bytes = options.max_tensor_bytes;
    state_.opset = default_opset(m, name_);
  }

  ImportedModel run() {
    if (state_.opset > kMaxOpset)
      throw UnsupportedOpError(
          fmt::format("'{}' uses opset {} of the default domain; mimic imports opsets {} to {}",
                      name_, state_.opset, kMinOpset, kMaxOpset),
          {fmt::format("opset {}", state_.opset)});
    if (state_.opset < 1) throw IoError(fmt::format("'{}' declares opset {}", name_, state_.opset));
    const onnx::GraphProto& g = m_.graph();
    state_.graph.set_name(g.name().empty() ? fs::path(name_).stem().string() : g.name());
    add_initializers(g);
    add_inputs(g);
    for (const auto& n : g.node()) state_.read.insert(n.input().begin(), n.input().end());
    for (const auto& o : g.output()) state_.read.insert(o.name());
    std::vector<int> order = topological_order(g);
    std::vector<int> versions = check_ops(g, order);
    for (size_t k = 0; k < order.size(); ++k) convert(g.node(order[k]), order[k], versions[k]);
    add_outputs(g);
    if (!unsupported_.empty()) unsupported_.raise(name_, state_.opset);
    ImportedModel out;
    out.graph = std::move(state_.graph);
    out.opset = state_.opset;
    out.ir_version = m_.ir_version();
    out.producer =
        m_.producer_name() + (m_.producer_version().empty() ? "" : " " + m_.producer_version());
    return out;
  }

 private:
  void define(const std::string& name, ir::ValueId v, const std::string& what) {
    if (name.empty()) throw IoError(fmt::format("'{}': {} has an empty name", name_, what));
    if (!state_.values.emplace(name, v).second)
      throw IoError(fmt::format("'{}': {} '{}' is defined twice", name_, what, name));
  }

  void add_initializers(const onnx::GraphProto& g) {
    if (g.sparse_initializer_size() > 0)
      unsupported_.add("sparse initializers",
                       fmt::format("{} of them", g.sparse_initializer_size()));
    for (const auto& t : g.initializer()) {
      std::string what = "initializer '" + t.name() + "'";
      try {
        ir::ValueId v = state_.graph.add_constant(
            t.name(), tensor_from_proto(t, what, state_.base_dir, state_.max_tensor_bytes));
        state_.graph.value(v).initializer = true;
        define(t.name(), v, "initializer");
      } catch (const UnsupportedOpError& e) {
        unsupported_.add(key_of(e, "initializers"), what);
        poisoned_.insert(t.name());
      }
    }
  }

  void add_inputs(const onnx::GraphProto& g) {
    for (const auto& v : g.input()) {
      auto known = state_.values.find(v.name());
      if (known != state_.values.end() && !state_.graph.value(known->second).initializer)
        throw IoError(fmt::format("'{}': input '{}' is defined twice", name_, v.name()));
      if (known != state_.values.end() || poisoned_.count(v.name())) continue;  // an initializer
      std::string what = "input '" + v.name() + "'";
      if (!v.type().has_tensor_type()) {
        unsupported_.add("non-tensor inputs (sequences, maps, optionals)", what);
        poisoned_.insert(v.name());
        continue;
      }
      int32_t elem = v.type().tensor_type().elem_type();
      auto dtype = dtype_from_onnx(elem);
      bool ok = true;
      if (!dtype) {
        unsupported_.add("dtype " + onnx_dtype_name(elem), what);
        ok = false;
      }
      ir::Shape shape = input_shape(v, options_.zero_dim_is_batch, unsupported_, ok);
      if (!ok) {
        poisoned_.insert(v.name());
        continue;
      }
      define(v.name(), state_.graph.add_input(v.name(), *dtype, shape), "input");
    }
  }

  // Node indices in an order where every input is defined first (ONNX requires topological
  // order; this also accepts exporters that do not keep it).
  std::vector<int> topological_order(const onnx::GraphProto& g) {
    std::set<std::string> known(poisoned_.begin(), poisoned_.end());
    for (const auto& [name, v] : state_.values) known.insert(name);
    known.insert("");
    std::vector<int> order, pending;
    for (int i = 0; i < g.node_size(); ++i) pending.push_back(i);
    while (!pending.empty()) {
      std::vector<int> later;
      for (int i : pending) {
        bool ready = true;
        for (const auto& in : g.node(i).input()) ready = ready && known.count(in);
        if (!ready) {
          later.push_back(i);
          continue;
        }
        order.push_back(i);
        for (const auto& out : g.node(i).output()) known.insert(out);
      }
      if (later.size() == pending.size()) {
        const onnx::NodeProto& n = g.node(later.front());
        std::string missing;
        for (const auto& in : n.input())
          if (!known.count(in)) missing = in;
        throw IoError(
            fmt::format("'{}': {} ({}) reads '{}', which no input, initializer or node defines (or "
                        "the graph has a cycle)",
                        name_, node_label(n, later.front()), n.op_type(), missing));
      }
      pending = std::move(later);
    }
    return order;
  }

  std::vector<int> check_ops(const onnx::GraphProto& g, const std::vector<int>& order) {
    std::vector<int> versions;
    for (int i : order) {
      const onnx::NodeProto& n = g.node(i);
      std::string why;
      int version = op_version(n, state_.opset, why);
      if (version < 0) unsupported_.add(op_key(n) + " (" + why + ")", node_label(n, i));
      versions.push_back(version);
    }
    return versions;
  }

  void poison_outputs(const onnx::NodeProto& n) {
    for (const auto& out : n.output()) poisoned_.insert(out);
  }

  void convert(const onnx::NodeProto& n, int index, int version) {
    bool blocked = version < 0;
    for (const auto& in : n.input()) blocked = blocked || poisoned_.count(in);
    if (blocked) return poison_outputs(n);
    try {
      NodeConverter c(state_, n, version);
      converters().at(n.op_type())(c);
    } catch (const UnsupportedOpError& e) {
      unsupported_.add(key_of(e, op_key(n)), node_label(n, index));
      poison_outputs(n);
    }
  }

  void add_outputs(const onnx::GraphProto& g) {
    if (g.output_size() == 0) throw IoError(fmt::format("'{}' has no graph outputs", name_));
    for (const auto& o : g.output()) {
      if (poisoned_.count(o.name())) continue;
      auto it = state_.values.find(o.name());
      if (it == state_.values.end())
        throw IoError(
            fmt::format("'{}': graph output '{}' is not computed by any node", name_, o.name()));
      state_.graph.add_output(it->second);
    }
  }

  const onnx::ModelProto& m_;
  std::string name_;
  ImportOptions options_;
  ImportState state_;
  Unsupported unsupported_;
  std::set<std::string>
      poisoned_;  // values of unsupported parts: their consumers are not converted
};

}  // namespace

ImportedModel import_model_bytes(const void* data, size_t size, const std::string& name,
                                 const ImportOptions& options) {
  onnx::ModelProto m;
  if (size > static_cast<size_t>(INT_MAX) || !m.ParseFromArray(data, static_cast<int>(size)))
    throw IoError(fmt::format(
        "'{}' is not a valid ONNX model: its {} bytes do not parse as an ONNX ModelProto "
        "(truncated or not an ONNX file)",
        name, size));
  if (!m.has_graph())
    throw IoError(
        fmt::format("'{}' is not a valid ONNX model: it has no graph ({} bytes)", name, size));
  return Importer(m, name, options).run();
}

ImportedModel import_model(const std::string& path, const ImportOptions& options) {
  std::string bytes = read_file_bytes(path);
  ImportOptions o = options;
  if (o.base_dir.empty()) o.base_dir = fs::path(path).parent_path().string();
  return import_model_bytes(bytes.data(), bytes.size(), path, o);
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& [name, converter] : converters()) out.push_back(name);
  return out;
}

}  // namespace mimic::onnx_import
