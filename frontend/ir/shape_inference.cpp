#include "frontend/ir/shape_inference.h"

#include <fmt/format.h>

#include <cmath>

#include "base/error.h"
#include "frontend/ir/memory_limit.h"

namespace mimic::ir {
namespace {

// a * b for element counts, or -1 past kMaxElements.
int64_t checked_mul_or(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > kMaxElements) return -1;
  return r;
}

}  // namespace

const TensorType& InferContext::in(int i) const {
  if (!has_input(i)) fail(fmt::format("input {} is missing", i));
  const Value& v = g_.value(n_.inputs[i]);
  if (!v.typed) fail(fmt::format("input {} ('{}') has no inferred type", i, v.name));
  return v.type;
}

const HostTensor* InferContext::constant(int i) const {
  if (!has_input(i)) return nullptr;
  return g_.value(n_.inputs[i]).constant.get();
}

void InferContext::set_output(int i, DType dtype, Shape shape) {
  // Zero dims are skipped in the product so that strides of empty tensors stay bounded too.
  int64_t elements = 1;
  bool empty = false;
  for (int64_t d : shape.dims()) {
    if (d < 0 && d != kBatch)
      fail(fmt::format("output {} would have negative dim in {}", i, shape.str()));
    empty = empty || d == 0;
    if (d == kBatch || d == 0) continue;
    if (d > kMaxElements || (elements = checked_mul_or(elements, d)) < 0)
      fail(fmt::format("output {} of shape {} would have more than 2^40 elements", i, shape.str()));
  }
  // Per batch item while the batch is symbolic; bind_batch re-checks with the real batch.
  int64_t bytes = empty ? 0 : elements * static_cast<int64_t>(dtype_size(dtype));
  int64_t limit = max_bytes_ > 0 ? max_bytes_ : max_tensor_bytes();
  if (bytes > limit)
    fail(fmt::format(
        "output {} ({}) needs {}, over the tensor memory limit of {} (--max-tensor-bytes)", i,
        TensorType{dtype, shape}.str(), format_bytes(bytes), format_bytes(limit)));
  if (static_cast<int>(outputs_.size()) <= i) outputs_.resize(i + 1);
  outputs_[i] = TensorType{dtype, std::move(shape)};
}

void InferContext::fail(const std::string& message) const {
  std::string inputs;
  for (ValueId v : n_.inputs) {
    if (!inputs.empty()) inputs += ", ";
    if (v == kNoValue) {
      inputs += "-";
    } else {
      const Value& val = g_.value(v);
      inputs += val.typed ? val.type.str() : "?";
    }
  }
  throw ShapeError(fmt::format("{}: {}; inputs {}", describe(g_, n_), message, inputs));
}

void InferContext::expect_dtype(int i, std::initializer_list<DType> allowed) const {
  DType t = dtype(i);
  for (DType a : allowed)
    if (a == t) return;
  std::string names;
  for (DType a : allowed) names += (names.empty() ? "" : "|") + std::string(dtype_name(a));
  fail(fmt::format("input {} has dtype {}, expected {}", i, dtype_name(t), names));
}

void InferContext::expect_same_dtype(int a, int b) const {
  if (dtype(a) != dtype(b))
    fail(fmt::format("inputs {} and {} have different dtypes ({} vs {})", a, b,
                     dtype_name(dtype(a)), dtype_name(dtype(b))));
}

void InferContext::expect_rank_at_least(int i, int rank) const {
  if (shape(i).rank() < rank)
    fail(fmt::format("input {} has rank {}, needs at least {}", i, shape(i).rank(), rank));
}

void InferContext::expect_rank_between(int i, int lo, int hi) const {
  int r = shape(i).rank();
  if (r < lo || r > hi)
    fail(lo == hi ? fmt::format("input {} has rank {}, needs rank {}", i, r, lo)
                  : fmt::format("input {} has rank {}, needs rank {} to {}", i, r, lo, hi));
}

void InferContext::expect_scalar(int i) const {
  if (!has_input(i)) return;
  const Shape& s = shape(i);
  if (s.rank() > 1 || (s.rank() == 1 && s[0] != 1))
    fail(fmt::format("input {} must be a scalar, has shape {}", i, s.str()));
}

void InferContext::expect_per_channel(int i, int64_t size) const {
  if (shape(i).rank() != 1 || shape(i)[0] != size)
    fail(fmt::format("input {} has shape {}, must have shape [{}] (one value per channel)", i,
                     shape(i).str(), size));
  expect_same_dtype(0, i);
}

double InferContext::float_attr(const std::string& name, double fallback, double lo,
                                double hi) const {
  double v = attrs().get_float(name, fallback);
  if (!std::isfinite(v) || v < lo || v > hi)
    fail(fmt::format("attribute {}={} is out of range [{}, {}]", name, v, lo, hi));
  return v;
}

int64_t InferContext::int_attr(const std::string& name, int64_t fallback, int64_t lo,
                               int64_t hi) const {
  int64_t v = attrs().get_int(name, fallback);
  if (v < lo || v > hi)
    fail(fmt::format("attribute {}={} is out of range [{}, {}]", name, v, lo, hi));
  return v;
}

std::string InferContext::string_attr(const std::string& name, const std::string& fallback,
                                      std::initializer_list<const char*> allowed) const {
  std::string v = attrs().get_string(name, fallback);
  std::string names;
  for (const char* a : allowed) {
    if (v == a) return v;
    names += (names.empty() ? "" : "|") + std::string(a);
  }
  fail(fmt::format("attribute {}='{}' is not one of {}", name, v, names));
}

namespace {

constexpr int many = 1 << 20;

// Arity and shape rule of every op, from its row of the op table.
constexpr OpSchema kSchemas[] = {
#define MIMIC_SCHEMA_ENTRY(name, cls, in_lo, in_hi, out_lo, out_hi, shape, gradient, epilogue) \
  {in_lo, in_hi, out_lo, out_hi, infer::shape},
    MIMIC_OP_TABLE(MIMIC_SCHEMA_ENTRY)
#undef MIMIC_SCHEMA_ENTRY
};

bool all_inputs_constant(const Graph& g, const Node& n) {
  for (ValueId v : n.inputs)
    if (v != kNoValue && !g.value(v).constant) return false;
  return true;
}

void fold(Graph& g, const Node& n, const InferOptions& options) {
  if (!options.evaluator || n.op == OpType::Constant) return;
  if (!all_inputs_constant(g, n)) return;
  int64_t elements = 0;
  for (ValueId v : n.outputs) {
    if (g.value(v).type.shape.is_symbolic()) return;
    elements += g.value(v).type.shape.numel();
  }
  if (elements > options.max_fold_elements) return;
  std::vector<HostTensor> inputs;
  for (ValueId v : n.inputs) inputs.push_back(v == kNoValue ? HostTensor() : *g.value(v).constant);
  std::vector<HostTensor> outputs = options.evaluator->evaluate(g, n, inputs);
  for (size_t i = 0; i < n.outputs.size() && i < outputs.size(); ++i)
    g.value(n.outputs[i]).constant = std::make_shared<const HostTensor>(std::move(outputs[i]));
}

// Shape and Size only need the input's shape, so they fold without an evaluator.
void fold_shape_queries(Graph& g, const Node& n) {
  if (n.op != OpType::Shape && n.op != OpType::Size) return;
  const Shape& in = g.value(n.inputs[0]).type.shape;
  if (in.is_symbolic()) return;
  const Shape& out_shape = g.value(n.outputs[0]).type.shape;
  HostTensor out(DType::i64, out_shape);
  if (n.op == OpType::Size) {
    out.data<int64_t>()[0] = in.numel();
  } else {
    int64_t start = n.attrs.get_int("start", 0);
    if (start < 0) start = std::max<int64_t>(0, start + in.rank());
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data<int64_t>()[i] = in[static_cast<int>(start + i)];
  }
  g.value(n.outputs[0]).constant = std::make_shared<const HostTensor>(std::move(out));
}

}  // namespace

const OpSchema& op_schema(OpType op) {
  return kSchemas[static_cast<int>(op)];
}

void infer_node(Graph& g, int node_index, const InferOptions& options) {
  const Node& n = g.node(node_index);
  const OpSchema& schema = op_schema(n.op);
  InferContext c(g, n, options.max_tensor_bytes);
  int ni = n.num_inputs(), no = static_cast<int>(n.outputs.size());
  if (ni < schema.min_inputs || ni > schema.max_inputs)
    c.fail(fmt::format("takes {} to {} inputs, got {}", schema.min_inputs, schema.max_inputs, ni));
  if (no < schema.min_outputs || no > schema.max_outputs)
    c.fail(fmt::format("produces {} to {} outputs, got {}", schema.min_outputs, schema.max_outputs,
                       no));
  for (int i = 0; i < schema.min_inputs; ++i)
    if (!n.has_input(i)) c.fail(fmt::format("required input {} is missing", i));
  try {
    schema.infer(c);
  } catch (const ShapeError& e) {
    // Shared helpers (normalize_axis, attribute getters) do not know the node: name it here.
    if (std::string(e.what()).rfind(describe(g, n), 0) == 0) throw;
    c.fail(e.what());
  } catch (const Error& e) {
    c.fail(e.what());
  }
  for (int i = 0; i < no; ++i) {
    if (i >= static_cast<int>(c.outputs().size()))
      c.fail(fmt::format("inference produced no type for output {}", i));
    Value& v = g.value(n.outputs[i]);
    v.type = c.outputs()[i];
    v.typed = true;
    v.constant.reset();
  }
  fold_shape_queries(g, g.node(node_index));
  if (n.op == OpType::Constant) {
    g.value(n.outputs[0]).constant =
        std::make_shared<const HostTensor>(*n.attrs.get_tensor("value"));
  }
  fold(g, g.node(node_index), options);
}

void infer_shapes(Graph& g, const InferOptions& options) {
  int64_t limit = options.max_tensor_bytes > 0 ? options.max_tensor_bytes : max_tensor_bytes();
  for (ValueId v : g.inputs()) {
    const TensorType& t = g.value(v).type;
    double bytes = static_cast<double>(dtype_size(t.dtype));  // in double: no overflow to hide
    for (int64_t d : t.shape.dims())
      if (d != kBatch) bytes *= static_cast<double>(d);
    if (bytes > static_cast<double>(limit))
      throw ShapeError(
          fmt::format("graph input '{}' ({}) needs {}, over the tensor memory limit of {} "
                      "(--max-tensor-bytes)",
                      g.value(v).name, t.str(),
                      format_bytes(bytes < 9e18 ? static_cast<int64_t>(bytes) : INT64_MAX),
                      format_bytes(limit)));
  }
  for (int i = 0; i < g.num_nodes(); ++i) infer_node(g, i, options);
  for (ValueId v : g.outputs())
    if (!g.value(v).typed)
      throw ShapeError(fmt::format("graph output '{}' is never computed", g.value(v).name));
}

Graph bind_batch(const Graph& g, int64_t batch, const InferOptions& options) {
  if (batch <= 0) throw InvalidArgument(fmt::format("batch size must be positive, got {}", batch));
  Graph out = g;
  for (ValueId v : out.inputs()) {
    Value& val = out.value(v);
    val.type.shape = val.type.shape.bind_batch(batch);
  }
  infer_shapes(out, options);
  return out;
}

void validate(const Graph& g, const InferOptions& options) {
  if (g.outputs().empty()) throw ShapeError(fmt::format("graph '{}' has no outputs", g.name()));
  if (g.has_symbolic_batch()) {
    bind_batch(g, 1, options);
  } else {
    Graph copy = g;
    infer_shapes(copy, options);
  }
}

}  // namespace mimic::ir
