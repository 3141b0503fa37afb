// Einsum (opset 12), lowered at import into the IR's ReduceSum, Transpose, Reshape and MatMul, so
// that every device runs it with the kernels it already has (a matrix unit for the contraction).
// One or two operands, explicit or implicit output, "..." broadcasting. A label repeated within
// one operand (a diagonal or trace, "ii->i") is refused with the reason. The contraction is one
// [batch..., M, K] x [batch..., K, N] product; the operands' ranks must be known at import, and
// their sizes where several axes merge into M, K or N.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <numeric>

#include "base/error.h"
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
      c.malformed(
          fmt::format("equation term '{}' has a character '{}' that is not a letter", term, ch));
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
  Labels out =
      dots == std::string::npos ? term : term.substr(0, dots) + ell + term.substr(dots + 3);
  for (char l : out) {
    if (l >= ' ' && !std::isalpha(static_cast<unsigned char>(l)))
      c.malformed(
          fmt::format("output term '{}' has a character '{}' that is not a letter", term, l));
    if (std::count(out.begin(), out.end(), l) > 1)
      c.malformed(fmt::format("output term '{}' repeats an index", term));
  }
  return out;
}

ir::ValueId transposed(NodeConverter& c, const Term& t, const Labels& order,
                       const std::string& what) {
  std::vector<int64_t> perm;
  for (char l : order) perm.push_back(static_cast<int64_t>(t.labels.find(l)));
  std::vector<int64_t> identity(perm.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (perm == identity) return t.value;
  return c.emit_internal(OpType::Transpose, what, {t.value}, {{"perm", perm}})[0];
}

// One axis of a Reshape's target: its size (-1 when unknown at import) and the input axis it is,
// unchanged, when it is exactly one input axis (-1 otherwise).
struct Axis {
  int64_t size;
  int source;
};

// Reshape to `target`, with sizes where they are known, 0 (copy) for an unknown axis that stays in
// place and -1 (inferred) for at most one other unknown axis; no node when nothing changes.
ir::ValueId reshaped(NodeConverter& c, ir::ValueId v, int input_rank,
                     const std::vector<Axis>& target, const std::string& what) {
  bool same = static_cast<int>(target.size()) == input_rank;
  for (size_t i = 0; i < target.size() && same; ++i) same = target[i].source == static_cast<int>(i);
  if (same) return v;
  std::vector<int64_t> shape;
  bool inferred = false;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i].size >= 0) {
      shape.push_back(target[i].size);
    } else if (target[i].source == static_cast<int>(i)) {
      shape.push_back(0);
    } else if (!inferred) {
      shape.push_back(-1);
      inferred = true;
    } else {
      c.unsupported("an Einsum that merges or splits axes whose sizes are not known at import");
    }
  }
  return c.emit_internal(OpType::Reshape, what, {v, c.constant_ints(what + "_shape", shape)})[0];
}

int64_t dim_of(const Term& t, char l) {
  return t.dims[t.labels.find(l)];
}

// The product of the labels' sizes; -1 when one is not known at import.
int64_t product(const Term& t, const Labels& ls) {
  int64_t p = 1;
  for (char l : ls) {
    if (dim_of(t, l) < 0) return -1;
    p *= dim_of(t, l);
  }
  return p;
}

// Sums out the labels of `t` that appear in none of `keep`.
Term sum_out(NodeConverter& c, Term t, const std::vector<const Labels*>& keep,
             const std::string& what) {
  std::vector<int64_t> axes;
  Term out{t.value, "", {}};
  for (size_t i = 0; i < t.labels.size(); ++i) {
    bool kept = std::any_of(keep.begin(), keep.end(), [&](const Labels* k) {
      return k->find(t.labels[i]) != std::string::npos;
    });
    if (kept) {
      out.labels += t.labels[i];
      out.dims.push_back(t.dims[i]);
    } else {
      axes.push_back(static_cast<int64_t>(i));
    }
  }
  if (axes.empty()) return t;
  out.value =
      c.emit_internal(OpType::ReduceSum, what, {t.value, c.constant_ints(what + "_axes", axes)},
                      {{"keepdims", int64_t{0}}})[0];
  return out;
}

Labels in_order(const Labels& of, const std::function<bool(char)>& keep) {
  Labels out;
  for (char l : of)
    if (keep(l)) out += l;
  return out;
}

// The axis merging `group` (consecutive input axes from `first`) into one.
Axis merged(const Term& t, const Labels& group, int first) {
  return {product(t, group), group.size() == 1 ? first : -1};
}

// Two operands: [batch..., M, K] x [batch..., K, N] -> [batch..., a_keep..., b_keep...].
Term contract(NodeConverter& c, const Term& a, const Term& b, const Labels& output) {
  auto in = [](const Labels& s, char l) { return s.find(l) != std::string::npos; };
  Labels batch = in_order(a.labels, [&](char l) { return in(b.labels, l) && in(output, l); });
  Labels inner = in_order(a.labels, [&](char l) { return in(b.labels, l) && !in(output, l); });
  Labels a_keep = in_order(a.labels, [&](char l) { return !in(b.labels, l); });
  Labels b_keep = in_order(b.labels, [&](char l) { return !in(a.labels, l); });
  for (char l : inner)
    if (dim_of(a, l) >= 0 && dim_of(b, l) >= 0 && dim_of(a, l) != dim_of(b, l))
      c.malformed(fmt::format("a contracted axis has size {} in one operand and {} in the other",
                              dim_of(a, l), dim_of(b, l)));
  int nb = static_cast<int>(batch.size()), na = static_cast<int>(a_keep.size());
  std::vector<Axis> a_target, b_target;
  Term out{ir::kNoValue, batch + a_keep + b_keep, {}};
  for (int i = 0; i < nb; ++i) {
    int64_t da = dim_of(a, batch[i]), db = dim_of(b, batch[i]);
    if (da >= 0 && db >= 0 && da != db && da != 1 && db != 1)
      c.malformed(
          fmt::format("a batch axis has size {} in one operand and {} in the other", da, db));
    a_target.push_back({da, i});
    b_target.push_back({db, i});
    out.dims.push_back(da == 1 ? db : db == 1 ? da : std::max(da, db));
  }
  a_target.push_back(merged(a, a_keep, nb));
  a_target.push_back(merged(a, inner, nb + na));
  b_target.push_back(merged(b, inner, nb));
  b_target.push_back(merged(b, b_keep, nb + static_cast<int>(inner.size())));
  ir::ValueId x = reshaped(c, transposed(c, a, batch + a_keep + inner, "lhs_transpose"),
                           static_cast<int>(a.labels.size()), a_target, "lhs_reshape");
  ir::ValueId y = reshaped(c, transposed(c, b, batch + inner + b_keep, "rhs_transpose"),
                           static_cast<int>(b.labels.size()), b_target, "rhs_reshape");
  ir::ValueId p = c.emit_internal(OpType::MatMul, "matmul", {x, y})[0];
  std::vector<Axis> split;
  for (int i = 0; i < nb; ++i) split.push_back({out.dims[i], i});
  for (char l : a_keep) {
    out.dims.push_back(dim_of(a, l));
    split.push_back({dim_of(a, l), na == 1 ? nb : -1});
  }
  for (char l : b_keep) {
    out.dims.push_back(dim_of(b, l));
    split.push_back({dim_of(b, l), b_keep.size() == 1 ? nb + 1 : -1});
  }
  out.value = reshaped(c, p, nb + 2, split, "result_reshape");
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
    // Sizes where import-time inference knows them (-1 where not, as for the batch symbol).
    ir::ValueId v = c.input(static_cast<int>(i));
    std::vector<int64_t> dims;
    if (std::optional<ir::TensorType> t = c.type_of(v))
      dims = t->shape.dims();
    else if (std::optional<int> rank = c.rank_of(v))
      dims.assign(static_cast<size_t>(*rank), -1);
    else
      c.unsupported("an operand whose rank is not known at import");
    ops.push_back({v, "", dims});
    if (terms[i].find("...") != std::string::npos)
      ellipsis_rank = std::max(
          ellipsis_rank, static_cast<int>(dims.size()) - static_cast<int>(terms[i].size() - 3));
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i].labels = expand(c, terms[i], static_cast<int>(ops[i].dims.size()), ellipsis_rank);
    for (char l : ops[i].labels)
      if (std::count(ops[i].labels.begin(), ops[i].labels.end(), l) > 1)
        c.unsupported(
            fmt::format("equation '{}': an index repeated within one operand (a diagonal)", eq));
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
  if (ops.size() == 2)
    r = contract(c, a, sum_out(c, ops[1], {&output, &a.labels}, "rhs_sum"), output);
  for (char l : output)
    if (r.labels.find(l) == std::string::npos)
      c.malformed(fmt::format("equation '{}': an output index is in no operand", eq));
  c.bind_output(0, transposed(c, r, output, "output_transpose"));
}

}  // namespace

void add_einsum_converter(std::map<std::string, Converter>& table) {
  table["Einsum"] = einsum;
}

}  // namespace mimic::onnx_import
