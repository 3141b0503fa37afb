#include "backends/ipu_emu/graph_wire.h"

#include <fmt/format.h>

#include <iterator>

#include "base/error.h"

namespace mimic::backends::ipu_emu {
namespace {

enum AttrTag : uint8_t { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor };

void write_shape(wire::Writer& w, const ir::Shape& s) {
  w.pods(s.dims());
}
ir::Shape read_shape(wire::Reader& r) {
  return ir::Shape(r.pods<int64_t>());
}

void write_attrs(wire::Writer& w, const ir::Attributes& attrs) {
  w.u64(attrs.items().size());
  for (const auto& [name, value] : attrs.items()) {
    w.str(name);
    w.u8(static_cast<uint8_t>(value.index()));
    switch (value.index()) {
      case kInt:
        w.i64(std::get<int64_t>(value));
        break;
      case kFloat:
        w.f64(std::get<double>(value));
        break;
      case kString:
        w.str(std::get<std::string>(value));
        break;
      case kInts:
        w.pods(std::get<std::vector<int64_t>>(value));
        break;
      case kFloats:
        w.pods(std::get<std::vector<double>>(value));
        break;
      case kStrings: {
        const auto& v = std::get<std::vector<std::string>>(value);
        w.u64(v.size());
        for (const auto& s : v) w.str(s);
        break;
      }
      case kTensor:
        w.tensor(std::get<ir::HostTensor>(value));
        break;
    }
  }
}

ir::Attributes read_attrs(wire::Reader& r) {
  ir::Attributes attrs;
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    std::string name = r.str();
    switch (r.u8()) {
      case kInt:
        attrs.set(name, r.i64());
        break;
      case kFloat:
        attrs.set(name, r.f64());
        break;
      case kString:
        attrs.set(name, r.str());
        break;
      case kInts:
        attrs.set(name, r.pods<int64_t>());
        break;
      case kFloats:
        attrs.set(name, r.pods<double>());
        break;
      case kStrings: {
        std::vector<std::string> v;
        for (uint64_t k = 0, m = r.u64(); k < m; ++k) v.push_back(r.str());
        attrs.set(name, std::move(v));
        break;
      }
      case kTensor:
        attrs.set(name, r.tensor());
        break;
      default:
        throw RuntimeError(fmt::format("ipu-emu: bad attribute tag for '{}'", name));
    }
  }
  return attrs;
}

struct ValueRecord {
  std::string name;
  ir::TensorType type;
  int32_t producer;
  uint8_t role;
  std::optional<ir::HostTensor> constant;
};

ValueRecord read_value(wire::Reader& r) {
  ValueRecord v;
  v.name = r.str();
  uint8_t dtype = r.u8();
  if (dtype >= std::size(ir::kAllDTypes))
    throw RuntimeError(
        fmt::format("ipu-emu: value '{}' has unknown dtype code {} in the graph sent to the device",
                    v.name, dtype));
  v.type = {static_cast<ir::DType>(dtype), read_shape(r)};
  v.producer = r.pod<int32_t>();
  v.role = r.u8();
  if (v.role > static_cast<uint8_t>(ir::ValueRole::buffer))
    throw RuntimeError(fmt::format("ipu-emu: value '{}' has unknown role code {}", v.name, v.role));
  if (r.boolean()) v.constant = r.tensor();
  return v;
}

}  // namespace

void write_graph(wire::Writer& w, const ir::Graph& g, bool constants_data) {
  w.str(g.name());
  w.u64(g.num_values());
  for (int v = 0; v < g.num_values(); ++v) {
    const ir::Value& val = g.value(v);
    w.str(val.name);
    w.u8(static_cast<uint8_t>(val.type.dtype));
    write_shape(w, val.type.shape);
    w.pod<int32_t>(val.producer);
    w.u8(static_cast<uint8_t>(val.role));
    w.boolean(val.constant != nullptr);
    if (val.constant)
      w.tensor(constants_data ? *val.constant
                              : ir::HostTensor(val.constant->dtype(), ir::Shape({0})));
  }
  w.u64(g.num_nodes());
  for (const ir::Node& n : g.nodes()) {
    w.u32(static_cast<uint32_t>(n.op));
    w.u8(static_cast<uint8_t>(n.phase));
    w.str(n.name);
    w.pods(n.inputs);
    w.pods(n.outputs);
    write_attrs(w, n.attrs);
  }
  w.pods(g.inputs());
  w.pods(g.outputs());
}

ir::Graph read_graph(wire::Reader& r) {
  ir::Graph g(r.str());
  std::vector<ValueRecord> values(r.u64());
  for (auto& v : values) v = read_value(r);
  struct NodeRecord {
    ir::OpType op;
    uint8_t phase;
    std::string name;
    std::vector<ir::ValueId> inputs, outputs;
    ir::Attributes attrs;
  };
  std::vector<NodeRecord> nodes(r.u64());
  for (auto& n : nodes) {
    uint32_t op = r.u32();
    if (op >= static_cast<uint32_t>(ir::op_count())) throw RuntimeError("ipu-emu: bad op in graph");
    n.op = static_cast<ir::OpType>(op);
    n.phase = r.u8();
    if (n.phase > static_cast<uint8_t>(ir::StepPhase::update))
      throw RuntimeError(fmt::format("ipu-emu: bad step phase code {} in graph", n.phase));
    n.name = r.str();
    n.inputs = r.pods<ir::ValueId>();
    n.outputs = r.pods<ir::ValueId>();
    n.attrs = read_attrs(r);
  }
  auto inputs = r.pods<ir::ValueId>();
  auto outputs = r.pods<ir::ValueId>();
  // Replays creation in id order so that ids match the parent's.
  std::vector<bool> is_input(values.size(), false);
  for (ir::ValueId v : inputs) is_input.at(v) = true;
  for (size_t v = 0; v < values.size(); ++v) {
    const ValueRecord& rec = values[v];
    ir::ValueId id;
    if (rec.producer < 0) {
      id = rec.constant ? g.add_constant(rec.name, *rec.constant)
                        : g.add_input(rec.name, rec.type.dtype, rec.type.shape);
    } else {
      const NodeRecord& n = nodes.at(rec.producer);
      if (n.outputs.empty() || n.outputs[0] != static_cast<ir::ValueId>(v)) continue;
      std::vector<std::string> names;
      for (ir::ValueId o : n.outputs) names.push_back(values.at(o).name);
      g.add_node(n.op, n.name, n.inputs, n.attrs, static_cast<int>(n.outputs.size()), names);
      id = n.outputs[0];
    }
    if (id != static_cast<ir::ValueId>(v))
      throw RuntimeError("ipu-emu: graph value ids do not replay in order");
  }
  if (g.num_values() != static_cast<int>(values.size()) ||
      g.num_nodes() != static_cast<int>(nodes.size()))
    throw RuntimeError("ipu-emu: graph does not replay to the same size");
  for (size_t v = 0; v < values.size(); ++v) {
    ir::Value& val = g.value(static_cast<ir::ValueId>(v));
    val.type = values[v].type;
    val.typed = true;
    val.role = static_cast<ir::ValueRole>(values[v].role);
    if (values[v].constant && values[v].producer >= 0)
      val.constant = std::make_shared<const ir::HostTensor>(*values[v].constant);
  }
  for (size_t i = 0; i < nodes.size(); ++i)
    g.node(static_cast<int>(i)).phase = static_cast<ir::StepPhase>(nodes[i].phase);
  for (ir::ValueId v : outputs) g.add_output(v);
  return g;
}

}  // namespace mimic::backends::ipu_emu
