// Einsum (opset 12), lowered at import into the IR's ReduceSum, Transpose, Reshape and MatMul, so
// that every device runs it with the kernels it already has (a matrix unit for the contraction).
// One or two operands, explicit or implicit output, "..." broadcasting. A label repeated within
// one operand (a diagonal or trace, "ii->i") is refused with the reason. The operands' shapes must
// be known at import: the contraction is reshaped to one [batch..., M, K] x [batch..., K, N]
// product.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <numeric>

#include "frontend/ir/error.h"
#include "frontend/onnx/import_context.h"

namespace mimic::onnx_import {
namespace {

using ir::OpType;
using Labels = std::string;  // one char per axis; ellipsis axes get chars below ' '

// An operand during lowering: its value, one label per axis, and the axes' sizes.
struct Term {
  ir::ValueId value;
  Labels labels;
  std::vector<int64_t> dims;
};

std::string without_spaces(const std::string& s) {
  std::string out;
  for (char ch : s)
    if (ch != ' ') out += ch;
  return out;
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char ch : s) {
    if (ch == sep)
      parts.emplace_back();
    else
      parts.back() += ch;
  }
  return parts;
}

// "b...ij" for a rank-5 operand with at most 3 ellipsis axes overall -> labels with the ellipsis
// axes right-aligned against `ellipsis_rank` (numpy's broadcasting of "...").
Labels expand(NodeConverter& c, const std::string& term, int rank, int ellipsis_rank) {
  size_t dots = term.find("...");
  std::string letters = term;
  if (dots != std::string::npos) letters.erase(dots, 3);
  for (char ch : letters)
    if (!std::isalpha(static_cast<unsigned char>(ch)))
      c.malformed(fmt::format("equation term '{}' has a character '{}' that is not a letter", term, ch));
  int explicit_axes = static_cast<int>(letters.size());
  if (dots == std::string::npos) {
    if (explicit_axes != rank)
      c.malformed(fmt::format("equation term '{}' names {} axes, the operand has rank {}", term,
                              explicit_axes, rank));
    return letters;
  }
  int e = rank - explicit_axes;
  if (e < 0)
    c.malformed(fmt::format("equation term '{}' names {} axes, the operand has rank {}", term,
                            explicit_axes, rank));
  Labels ell;
  for (int i = ellipsis_rank - e; i < ellipsis_rank; ++i) ell += static_cast<char>(1 + i);
  return letters.substr(0, dots) + ell + letters.substr(dots);
}

// The explicit output term, "..." standing for every ellipsis axis.
Labels output_labels(NodeConverter& c, const std::string& term, int ellipsis_rank) {
  Labels ell;
  for (int i = 0; i < ellipsis_rank; ++i) ell += static_cast<char>(1 + i);
  size_t dots = term.find("...");
  Labels out = dots == std::string::npos ? term : term.substr(0, dots) + ell + term.substr(dots + 3);
  for (char l : out) {
    if (l >= ' ' && !std::isalpha(static_cast<unsigned char>(l)))
      c.malformed(fmt::format("output term '{}' has a character '{}' that is not a letter", term, l));
    if (std::count(out.begin(), out.end(), l) > 1)
      c.malformed(fmt::format("output term '{}' repeats an index", term));
  }
  return out;
}

ir::ValueId transposed(NodeConverter& c, const Term& t, const Labels& order, const std::string& what) {
  std::vector<int64_t> perm;
  for (char l : order) perm.push_back(static_cast<int64_t>(t.labels.find(l)));
  std::vector<int64_t> identity(perm.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (perm == identity) return t.value;
  return c.emit_internal(OpType::Transpose, what, {t.value}, {{"perm", perm}})[0];
}

ir::ValueId reshaped(NodeConverter& c, ir::ValueId v, const std::vector<int64_t>& from,
                     const std::vector<int64_t>& to, const std::string& what) {
  if (from == to) return v;
  return c.emit_internal(OpType::Reshape, what, {v, c.constant_ints(what + "_shape", to)})[0];
}

int64_t dim_of(const Term& t, char l) { return t.dims[t.labels.find(l)]; }

int64_t product(const Term& t, const Labels& ls) {
  int64_t p = 1;
  for (char l : ls) p *= dim_of(t, l);
  return p;
}

// Sums out the labels of `t` that appear in none of `keep`.
Term sum_out(NodeConverter& c, Term t, const std::vector<const Labels*>& keep, const std::string& what) {
  std::vector<int64_t> axes;
  Term out{t.value, "", {}};
  for (size_t i = 0; i < t.labels.size(); ++i) {
    bool kept = std::any_of(keep.begin(), keep.end(),
                            [&](const Labels* k) { return k->find(t.labels[i]) != std::string::npos; });
    if (kept) {
      out.labels += t.labels[i];
      out.dims.push_back(t.dims[i]);
    } else {
      axes.push_back(static_cast<int64_t>(i));
    }
  }
  if (axes.empty()) return t;
  out.value = c.emit_internal(OpType::ReduceSum, what, {t.value, c.constant_ints(what + "_axes", axes)},
                              {{"keepdims", int64_t{0}}})[0];
  return out;
}

Labels in_order(const Labels& of, const std::function<bool(char)>& keep) {
  Labels out;
  for (char l : of)
    if (keep(l)) out += l;
  return out;
}

// Two operands: [batch..., M, K] x [batch..., K, N] -> [batch..., a_keep..., b_keep...].
Term contract(NodeConverter& c, const Term& a, const Term& b, const Labels& output) {
  auto in = [](const Labels& s, char l) { return s.find(l) != std::string::npos; };
  Labels batch = in_order(a.labels, [&](char l) { return in(b.labels, l) && in(output, l); });
  Labels inner = in_order(a.labels, [&](char l) { return in(b.labels, l) && !in(output, l); });
  Labels a_keep = in_order(a.labels, [&](char l) { return !in(b.labels, l); });
  Labels b_keep = in_order(b.labels, [&](char l) { return !in(a.labels, l); });
  for (char l : inner)
    if (dim_of(a, l) != dim_of(b, l))
      c.malformed(fmt::format("a contracted axis has size {} in one operand and {} in the other",
                              dim_of(a, l), dim_of(b, l)));
  std::vector<int64_t> a_batch, b_batch, out_batch;
  for (char l : batch) {
    int64_t da = dim_of(a, l), db = dim_of(b, l);
    if (da != db && da != 1 && db != 1)
      c.malformed(fmt::format("a batch axis has size {} in one operand and {} in the other", da, db));
    a_batch.push_back(da);
    b_batch.push_back(db);
    out_batch.push_back(std::max(da, db));
  }
  int64_t m = product(a, a_keep), k = product(a, inner), n = product(b, b_keep);
  std::vector<int64_t> a_shape = a_batch, b_shape = b_batch;
  a_shape.insert(a_shape.end(), {m, k});
  b_shape.insert(b_shape.end(), {k, n});
  Labels a_order = batch + a_keep + inner, b_order = batch + inner + b_keep;
  std::vector<int64_t> a_dims, b_dims;
  for (char l : a_order) a_dims.push_back(dim_of(a, l));
  for (char l : b_order) b_dims.push_back(dim_of(b, l));
  ir::ValueId x = reshaped(c, transposed(c, a, a_order, "lhs_transpose"), a_dims, a_shape, "lhs_reshape");
  ir::ValueId y = reshaped(c, transposed(c, b, b_order, "rhs_transpose"), b_dims, b_shape, "rhs_reshape");
  ir::ValueId p = c.emit_internal(OpType::MatMul, "matmul", {x, y})[0];
  Term out{p, batch + a_keep + b_keep, out_batch};
  for (char l : a_keep) out.dims.push_back(dim_of(a, l));
  for (char l : b_keep) out.dims.push_back(dim_of(b, l));
  std::vector<int64_t> product_shape = out_batch;
  product_shape.insert(product_shape.end(), {m, n});
  out.value = reshaped(c, p, product_shape, out.dims, "result_reshape");
  return out;
}

void einsum(NodeConverter& c) {
  std::string eq = without_spaces(c.attributes().get_string("equation", ""));
  if (eq.empty()) c.malformed("has no equation");
  size_t arrow = eq.find("->");
  std::vector<std::string> terms = split_on(eq.substr(0, arrow), ',');
  if (static_cast<int>(terms.size()) != c.num_inputs())
    c.malformed(fmt::format("equation '{}' has {} operand(s), the node {}", eq, terms.size(),
                            c.num_inputs()));
  if (terms.size() > 2) c.unsupported(fmt::format("Einsum with {} operands", terms.size()));
  std::vector<Term> ops;
  int ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::optional<ir::TensorType> t = c.type_of(c.input(static_cast<int>(i)));
    if (!t || t->shape.is_symbolic())
      c.unsupported("an operand whose shape is not known at import");
    ops.push_back({c.input(static_cast<int>(i)), "", t->shape.dims()});
    size_t dots = terms[i].find("...");
    if (dots != std::string::npos)
      ellipsis_rank = std::max(ellipsis_rank, t->shape.rank() - static_cast<int>(terms[i].size() - 3));
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i].labels = expand(c, terms[i], static_cast<int>(ops[i].dims.size()), ellipsis_rank);
    for (char l : ops[i].labels)
      if (std::count(ops[i].labels.begin(), ops[i].labels.end(), l) > 1)
        c.unsupported(fmt::format("equation '{}': an index repeated within one operand (a diagonal)", eq));
  }
  Labels output;
  if (arrow != std::string::npos) {
    output = output_labels(c, eq.substr(arrow + 2), ellipsis_rank);
  } else {
    for (int i = 0; i < ellipsis_rank; ++i) output += static_cast<char>(1 + i);
    Labels all = ops[0].labels + (ops.size() > 1 ? ops[1].labels : "");
    Labels once;
    for (char l : all)
      if (l >= ' ' && std::count(all.begin(), all.end(), l) == 1) once += l;
    std::sort(once.begin(), once.end());
    output += once;
  }
  std::vector<const Labels*> keep{&output};
  if (ops.size() == 2) keep.push_back(&ops[1].labels);
  Term a = sum_out(c, ops[0], keep, "lhs_sum");
  Term r = a;
  if (ops.size() == 2) r = contract(c, a, sum_out(c, ops[1], {&output, &a.labels}, "rhs_sum"), output);
  for (char l : output)
    if (r.labels.find(l) == std::string::npos)
      c.malformed(fmt::format("equation '{}': an output index is in no operand", eq));
  c.bind_output(0, transposed(c, r, output, "output_transpose"));
}

}  // namespace

void add_einsum_converter(std::map<std::string, Converter>& table) { table["Einsum"] = einsum; }

}  // namespace mimic::onnx_import
