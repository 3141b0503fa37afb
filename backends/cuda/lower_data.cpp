// Lowering of data movement: views alias their input's storage; transposes, slices, expands, tiles
// and space/depth moves are one strided copy; Concat/Split are 2-D block copies; Gather, ScatterND
// of whole rows, Pad and Trilu have their own kernels. Shape queries and constant generators are
// evaluated on the host at compile time (they do not depend on tensor data) and uploaded as
// constants.
#include <fmt/format.h>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/lowerer.h"
#include "base/error.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::backends::cuda {
namespace {

using ir::DType;
using ir::OpType;

bool host_computed(OpType op) {
  return op == OpType::Shape || op == OpType::Size || op == OpType::Constant ||
         op == OpType::ConstantOfShape || op == OpType::Range || op == OpType::EyeLike;
}

// Output dims and source strides of the strided-copy ops (Transpose, Slice, Tile, Expand,
// DepthToSpace, SpaceToDepth), plus the source offset.
struct CopySpec {
  std::vector<int64_t> dims, src;
  int64_t offset = 0;
};

CopySpec copy_spec(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& s = g.value(n.inputs[0]).type.shape;
  std::vector<int64_t> strides = row_major_strides(s.dims());
  CopySpec c;
  switch (n.op) {
    case OpType::Transpose:
      for (int64_t p : ir::resolve_perm(n, s.rank())) {
        c.dims.push_back(s[static_cast<int>(p)]);
        c.src.push_back(strides[p]);
      }
      return c;
    case OpType::Slice: {
      ir::SliceSpec spec = ir::resolve_slice(g, n);
      c.dims = spec.length;
      for (int d = 0; d < s.rank(); ++d) {
        c.offset += spec.start[d] * strides[d];
        c.src.push_back(spec.step[d] * strides[d]);
      }
      return c;
    }
    case OpType::Tile: {
      std::vector<int64_t> repeats = ir::constant_ints(g, n, 1);
      for (int d = 0; d < s.rank(); ++d) {
        c.dims.push_back(repeats.at(d));
        c.src.push_back(0);
        c.dims.push_back(s[d]);
        c.src.push_back(strides[d]);
      }
      return c;
    }
    case OpType::Expand: {
      const ir::Shape& out = g.value(n.outputs[0]).type.shape;
      c.dims = out.dims();
      c.src = broadcast_strides(s, out);
      return c;
    }
    default: {  // DepthToSpace, SpaceToDepth: a reshape to 6-D, a transpose, a reshape back
      int64_t b = n.attrs.require_int("blocksize");
      int64_t batch = s[0], ch = s[1], h = s[2], w = s[3];
      if (n.op == OpType::DepthToSpace) {
        int64_t co = ch / (b * b);
        bool crd = n.attrs.get_string("mode", "DCR") == "CRD";
        int64_t s_b1 = crd ? b * h * w : b * co * h * w, s_b2 = crd ? h * w : co * h * w;
        int64_t s_co = crd ? b * b * h * w : h * w;
        c.dims = {batch, co, h, b, w, b};
        c.src = {ch * h * w, s_co, w, s_b1, 1, s_b2};
      } else {
        c.dims = {batch, b, b, ch, h / b, w / b};
        c.src = {ch * h * w, w, 1, h * w, b * w, b};
      }
      return c;
    }
  }
}

bool is_strided_copy(OpType op) {
  return op == OpType::Transpose || op == OpType::Slice || op == OpType::Tile ||
         op == OpType::Expand || op == OpType::DepthToSpace || op == OpType::SpaceToDepth;
}

void lower_host(Lowerer& l, const ir::Node& n) {
  // The cpu kernel on stand-in inputs: constants as they are, other inputs as zeros of their type
  // (these ops read only their shapes).
  std::vector<ir::HostTensor> inputs;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i))
      inputs.emplace_back();
    else if (const ir::HostTensor* c = l.constant(n, i))
      inputs.push_back(*c);
    else
      inputs.emplace_back(l.in_type(n, i).dtype, l.in_type(n, i).shape);
  }
  std::vector<ir::HostTensor> outputs = cpu::run_node(l.graph(), n, inputs);
  for (size_t i = 0; i < outputs.size(); ++i)
    l.set_constant_output(n, static_cast<int>(i), std::move(outputs[i]));
  l.mark_host_computed();
}

void lower_concat_split(Lowerer& l, const ir::Node& n) {
  bool concat = n.op == OpType::Concat;
  const ir::Shape& whole = concat ? l.out_type(n, 0).shape : l.in_type(n, 0).shape;
  int axis = ir::normalize_axis(n.attrs.get_int("axis", 0), whole.rank(), "axis");
  int64_t outer = whole.product(0, axis), inner = whole.product(axis + 1, whole.rank());
  int64_t es = esize_of(concat ? l.out_type(n, 0).dtype : l.in_type(n, 0).dtype);
  int64_t whole_row = whole[axis] * inner * es, offset = 0;
  int parts = concat ? n.num_inputs() : static_cast<int>(n.outputs.size());
  std::vector<BufRef> part_refs;
  BufRef whole_ref;
  if (concat) {
    for (int k = 0; k < parts; ++k) part_refs.push_back(l.in(n, k));
    whole_ref = l.out(n, 0);
  } else {
    whole_ref = l.in(n, 0);
    for (int k = 0; k < parts; ++k) part_refs.push_back(l.out(n, k));
  }
  for (int k = 0; k < parts; ++k) {
    const ir::Shape& ps = concat ? l.in_type(n, k).shape : l.out_type(n, k).shape;
    int64_t row = ps[axis] * inner * es;
    if (row > 0 && outer > 0) {
      if (concat)
        l.emit(Copy2dInstr{{outer, row, row, whole_row}, part_refs[k], whole_ref.at(offset)});
      else
        l.emit(Copy2dInstr{{outer, row, whole_row, row}, whole_ref.at(offset), part_refs[k]});
    }
    offset += row;
  }
}

void lower_gather(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  int axis = ir::normalize_axis(n.attrs.get_int("axis", 0), s.rank(), "axis");
  GatherParams p{};
  p.esize = esize_of(l.in_type(n, 0).dtype);
  p.index_dt = to_dt(l.in_type(n, 1).dtype);
  p.outer = s.product(0, axis);
  p.dim = s[axis];
  p.count = l.in_type(n, 1).shape.numel();
  p.inner = s.product(axis + 1, s.rank());
  p.node = static_cast<int32_t>(&n - &l.graph().nodes()[0]);
  BufRef data = l.in(n, 0), idx = l.in(n, 1);
  l.emit(GatherInstr{p, data, idx, l.out(n, 0)});
}

// ScatterND of whole rows: the data copied into the output, then the scatter_rows kernel.
void lower_scatter_nd(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  ScatterRowsParams p{};
  p.index_dt = to_dt(l.in_type(n, 1).dtype);
  p.add = n.attrs.get_string("reduction", "none") == "add" ? 1 : 0;
  p.rows = s[0];
  p.count = l.in_type(n, 1).shape.numel();
  p.inner = s.product(1, s.rank());
  p.node = static_cast<int32_t>(&n - &l.graph().nodes()[0]);
  BufRef data = l.in(n, 0), idx = l.in(n, 1), upd = l.in(n, 2), y = l.out(n, 0);
  const int64_t bytes = s.numel() * esize_of(l.in_type(n, 0).dtype);
  l.emit(Copy2dInstr{{1, bytes, bytes, bytes}, data, y});
  l.emit(ScatterRowsInstr{p, idx, upd, y});
}

void lower_gather_elements(Lowerer& l, const ir::Node& n) {
  const ir::Shape& ds = l.in_type(n, 0).shape;
  const ir::Shape& is = l.in_type(n, 1).shape;
  GatherElementsParams p{};
  p.esize = esize_of(l.in_type(n, 0).dtype);
  p.index_dt = to_dt(l.in_type(n, 1).dtype);
  p.rank = is.rank();
  p.axis = ir::normalize_axis(n.attrs.get_int("axis", 0), ds.rank(), "axis");
  p.n = is.numel();
  p.dim = ds[p.axis];
  std::vector<int64_t> strides = row_major_strides(ds.dims());
  for (int d = 0; d < is.rank(); ++d) {
    p.size[d] = is[d];
    p.data_stride[d] = strides[d];
  }
  p.node = static_cast<int32_t>(&n - &l.graph().nodes()[0]);
  BufRef data = l.in(n, 0), idx = l.in(n, 1);
  l.emit(GatherElementsInstr{p, data, idx, l.out(n, 0)});
}

void lower_pad(Lowerer& l, const ir::Node& n) {
  ir::PadSpec spec = ir::resolve_pads(l.graph(), n);
  std::string mode = n.attrs.get_string("mode", "constant");
  const ir::Shape& is = l.in_type(n, 0).shape;
  const ir::Shape& os = l.out_type(n, 0).shape;
  PadParams p{};
  p.esize = esize_of(l.in_type(n, 0).dtype);
  p.mode = mode == "edge"      ? PadMode::edge
           : mode == "wrap"    ? PadMode::wrap
           : mode == "reflect" ? PadMode::reflect
                               : PadMode::constant;
  p.n = os.numel();
  p.rank = os.rank();
  std::vector<int64_t> strides = row_major_strides(is.dims());
  for (int d = 0; d < os.rank(); ++d) {
    p.out_size[d] = os[d];
    p.in_size[d] = is[d];
    p.in_stride[d] = strides[d];
    p.before[d] = spec.before[d];
  }
  const ir::HostTensor* fill = l.constant(n, 2);
  if (fill && fill->numel() > 0) std::memcpy(p.fill, fill->raw(), p.esize);
  BufRef x = l.in(n, 0);
  l.emit(PadInstr{p, x, l.out(n, 0)});
}

void lower_trilu(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  std::vector<int64_t> kv = ir::constant_ints(l.graph(), n, 1, {0});
  TriluParams p{};
  p.esize = esize_of(l.in_type(n, 0).dtype);
  p.upper = n.attrs.get_int("upper", 1) != 0;
  p.n = s.numel();
  p.rows = s.rank() >= 2 ? s.dim(-2) : 1;
  p.cols = s.rank() >= 1 ? s.dim(-1) : 1;
  p.k = kv.empty() ? 0 : kv[0];
  BufRef x = l.in(n, 0);
  l.emit(TriluInstr{p, x, l.out(n, 0)});
}

}  // namespace

std::string check_data(const ir::Graph& g, const ir::Node& n) {
  OpType op = n.op;
  if (op == OpType::Dropout && n.outputs.size() > 1) return "Dropout's mask output";
  if (op == OpType::ConstantOfShape || op == OpType::Range) {
    for (int i = 0; i < n.num_inputs(); ++i)
      if (n.has_input(i) && !g.value(n.inputs[i]).constant) return "inputs that are not constants";
  }
  if (ir::is_view_op(op) || host_computed(op)) return "";
  if (is_strided_copy(op)) {
    CopySpec c = copy_spec(g, n);
    return copy_fits(c.dims, c.src) ? "" : "a copy over more than 8 dims";
  }
  switch (op) {
    case OpType::Gather:
    case OpType::GatherElements: {
      DType t = g.value(n.inputs[1]).type.dtype;
      if (t != DType::i32 && t != DType::i64) return fmt::format("{} indices", ir::dtype_name(t));
      if (op == OpType::GatherElements && g.value(n.inputs[1]).type.shape.rank() > kMaxDims)
        return "rank above 8";
      return "";
    }
    case OpType::ScatterND: {
      const ir::Shape& ids = g.value(n.inputs[1]).type.shape;
      std::string reduction = n.attrs.get_string("reduction", "none");
      bool rows = ids.rank() == 2 && ids[1] == 1 && (reduction == "none" || reduction == "add");
      bool f32 = g.value(n.inputs[0]).type.dtype == DType::f32;
      return rows && f32 ? "" : "ScatterND other than whole rows of f32 written or added";
    }
    case OpType::Pad: {
      if (g.value(n.outputs[0]).type.shape.rank() > kMaxDims) return "rank above 8";
      if (n.has_input(2) && !g.value(n.inputs[2]).constant)
        return "a pad value that is not a constant";
      ir::resolve_pads(g, n);
      return "";
    }
    default:
      return "";
  }
}

void lower_data(Lowerer& l, const ir::Node& n) {
  OpType op = n.op;
  if (ir::is_view_op(op)) return l.alias(n, 0, 0);
  if (host_computed(op)) return lower_host(l, n);
  if (is_strided_copy(op)) {
    CopySpec c = copy_spec(l.graph(), n);
    BufRef x = l.in(n, 0);
    l.emit(CopyInstr{copy_params(c.dims, c.src, c.offset, esize_of(l.in_type(n, 0).dtype)), x,
                     l.out(n, 0)});
    return;
  }
  switch (op) {
    case OpType::Concat:
    case OpType::Split:
      return lower_concat_split(l, n);
    case OpType::Gather:
      return lower_gather(l, n);
    case OpType::GatherElements:
      return lower_gather_elements(l, n);
    case OpType::ScatterND:
      return lower_scatter_nd(l, n);
    case OpType::Pad:
      return lower_pad(l, n);
    case OpType::Trilu:
      return lower_trilu(l, n);
    default:
      throw CompileError(fmt::format("cuda: no lowering for {}", ir::op_name(op)));
  }
}

}  // namespace mimic::backends::cuda
