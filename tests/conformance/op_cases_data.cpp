// Cases: views, transposes, concatenation, splitting, slicing, gathering, padding, tiling,
// space/depth moves, Trilu, and the data-independent producers (Shape, Size, Constant, ...).
#include "tests/conformance/op_cases_util.h"

namespace mimic::testing {
namespace {

using ir::DType;
using ir::OpType;
using ir::Shape;
using A = ir::Attributes;
using Ints = std::vector<int64_t>;

OpCase single(const std::string& name, OpType op, DType t, Shape x,
              std::vector<ir::ValueId> (*extra)(CaseBuilder&), A attrs = {}, int outputs = 1) {
  CaseBuilder b(name);
  std::vector<ir::ValueId> ins{b.in(t, x, -50, 50)};
  if (extra)
    for (ir::ValueId v : extra(b)) ins.push_back(v);
  b.node(op, ins, attrs, outputs);
  return b.data_movement().done();
}

void movement_cases(std::vector<OpCase>& out) {
  out.push_back(single("Transpose/nchw_to_nhwc", OpType::Transpose, DType::f32, Shape({2, 3, 4, 5}),
                       nullptr, {{"perm", Ints{0, 2, 3, 1}}}));
  out.push_back(single("Transpose/default_perm_i64", OpType::Transpose, DType::i64,
                       Shape({2, 3, 4}), nullptr));
  out.push_back(single("Transpose/bf16", OpType::Transpose, DType::bf16, Shape({3, 1, 5, 2}),
                       nullptr, {{"perm", Ints{2, 0, 3, 1}}}));
  {
    CaseBuilder b("Concat/axis1_three");
    b.op(OpType::Concat,
         {b.in(DType::f32, Shape({2, 3, 4})), b.in(DType::f32, Shape({2, 1, 4})),
          b.in(DType::f32, Shape({2, 2, 4}))},
         {{"axis", int64_t{1}}});
    out.push_back(b.data_movement().done());
  }
  {
    CaseBuilder b("Concat/axis0_bool");
    b.op(OpType::Concat, {b.in(DType::boolean, Shape({1, 4})), b.in(DType::boolean, Shape({3, 4}))},
         {{"axis", int64_t{0}}});
    out.push_back(b.data_movement().done());
  }
  {
    CaseBuilder b("Concat/last_axis_i64_with_constant");
    b.op(OpType::Concat,
         {b.in(DType::i64, Shape({3, 2}), -9, 9), b.constant(i64_tensor(Shape({3, 1}), {7, 8, 9}))},
         {{"axis", int64_t{-1}}});
    out.push_back(b.data_movement().done());
  }
  out.push_back(single("Split/equal_axis1", OpType::Split, DType::f32, Shape({4, 6}), nullptr,
                       {{"axis", int64_t{1}}}, 3));
  out.push_back(single(
      "Split/sizes_axis0", OpType::Split, DType::f16, Shape({4, 2}),
      [](CaseBuilder& b) {
        return std::vector<ir::ValueId>{b.ints({1, 3})};
      },
      {}, 2));
  out.push_back(
      single("Slice/steps_axes", OpType::Slice, DType::f32, Shape({5, 6, 7}), [](CaseBuilder& b) {
        return std::vector<ir::ValueId>{b.ints({1, -5}), b.ints({4, 100}), b.ints({0, 2}),
                                        b.ints({2, 1})};
      }));
  out.push_back(single(
      "Slice/negative_step_i64", OpType::Slice, DType::i64, Shape({6, 5}), [](CaseBuilder& b) {
        return std::vector<ir::ValueId>{b.ints({-1}), b.ints({-7}), b.ints({0}), b.ints({-2})};
      }));
  out.push_back(single("Tile/repeats", OpType::Tile, DType::f32, Shape({2, 3}), [](CaseBuilder& b) {
    return std::vector<ir::ValueId>{b.ints({2, 3})};
  }));
  out.push_back(
      single("Expand/broadcast", OpType::Expand, DType::i32, Shape({3, 1}), [](CaseBuilder& b) {
        return std::vector<ir::ValueId>{b.ints({2, 3, 4})};
      }));
  for (const char* mode : {"DCR", "CRD"}) {
    CaseBuilder b(std::string("DepthToSpace/") + mode);
    b.op(OpType::DepthToSpace, {b.in(DType::f32, Shape({1, 8, 2, 3}))},
         {{"blocksize", int64_t{2}}, {"mode", std::string(mode)}});
    out.push_back(b.data_movement().done());
  }
  // Resize: the maps of resize.h; scales (input 2) or sizes (input 3) constant.
  struct ResizeCase {
    const char* name;
    ir::Attributes attrs;
    std::vector<float> scales;
    std::vector<int64_t> sizes;
  };
  for (const ResizeCase& r :
       {ResizeCase{"Resize/nearest_asymmetric_floor_x2",
                   {{"coordinate_transformation_mode", std::string("asymmetric")},
                    {"nearest_mode", std::string("floor")}},
                   {1, 1, 2, 2},
                   {}},
        ResizeCase{"Resize/linear_pytorch_half_pixel_x1.5",
                   {{"mode", std::string("linear")},
                    {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}},
                   {1, 1, 1.5f, 2},
                   {}},
        ResizeCase{"Resize/cubic_align_corners_sizes_down",
                   {{"mode", std::string("cubic")},
                    {"coordinate_transformation_mode", std::string("align_corners")}},
                   {},
                   {2, 3, 3, 4}},
        ResizeCase{"Resize/linear_half_pixel_exclude_outside_down",
                   {{"mode", std::string("linear")}, {"exclude_outside", int64_t{1}}},
                   {1, 1, 0.6f, 0.5f},
                   {}}}) {
    CaseBuilder b(r.name);
    ir::ValueId x = b.in(DType::f32, Shape({2, 3, 5, 6}));
    std::vector<ir::ValueId> in{x, ir::kNoValue};
    if (r.sizes.empty())
      in.push_back(b.constant(f32_tensor(Shape({4}), r.scales)));
    else
      in.insert(in.end(), {ir::kNoValue, b.ints(r.sizes)});
    b.op(OpType::Resize, in, r.attrs);
    out.push_back(b.matrix().done());  // the chips run it as matrix products
  }
  out.push_back(single("SpaceToDepth/blocksize2", OpType::SpaceToDepth, DType::f32,
                       Shape({1, 2, 4, 6}), nullptr, {{"blocksize", int64_t{2}}}));
  out.push_back(single("Trilu/upper_k1", OpType::Trilu, DType::f32, Shape({2, 4, 5}),
                       [](CaseBuilder& b) { return std::vector<ir::ValueId>{b.ints({1})}; }));
  {
    CaseBuilder b("Trilu/lower_k-1_i64");
    b.op(OpType::Trilu,
         {b.in(DType::i64, Shape({4, 4}), -9, 9), b.constant(i64_tensor(Shape(), {-1}))},
         {{"upper", int64_t{0}}});
    out.push_back(b.data_movement().done());
  }
}

void gather_pad_cases(std::vector<OpCase>& out) {
  {
    CaseBuilder b("Gather/embedding_i64");
    b.op(OpType::Gather, {b.random_constant(DType::f32, Shape({10, 4})),
                          b.constant(i64_tensor(Shape({2, 3}), {0, 9, -1, 3, 3, 5}))});
    out.push_back(b.data_movement().done());
  }
  {
    CaseBuilder b("Gather/token_ids_input");
    b.op(OpType::Gather,
         {b.random_constant(DType::f32, Shape({20, 6})), b.in(DType::i64, Shape({2, 5}), 0, 19)});
    out.push_back(b.data_movement().done());
  }
  {
    CaseBuilder b("Gather/axis1_i32_negative");
    ir::HostTensor idx(DType::i32, Shape({4}));
    int32_t vals[] = {-1, 0, 4, -5};
    std::memcpy(idx.raw(), vals, sizeof(vals));
    b.op(OpType::Gather, {b.in(DType::f32, Shape({3, 5, 2})), b.constant(idx)},
         {{"axis", int64_t{1}}});
    out.push_back(b.data_movement().done());
  }
  {
    CaseBuilder b("Gather/scalar_index_bf16");
    b.op(OpType::Gather, {b.in(DType::bf16, Shape({4, 3})), b.constant(i64_tensor(Shape(), {2}))});
    out.push_back(b.data_movement().done());
  }
  {
    CaseBuilder b("GatherElements/axis1");
    b.op(OpType::GatherElements,
         {b.in(DType::f32, Shape({3, 4})),
          b.constant(i64_tensor(Shape({3, 2}), {0, 3, -1, 1, 2, -4}))},
         {{"axis", int64_t{1}}});
    out.push_back(b.data_movement().done());
  }
  {
    // Rows of a 2-D table replaced; the index tuples are a constant, as a compiler sees them.
    CaseBuilder b("ScatterND/rows_none");
    b.op(OpType::ScatterND,
         {b.in(DType::f32, Shape({5, 3})), b.constant(i64_tensor(Shape({2, 1}), {3, 0})),
          b.in(DType::f32, Shape({2, 3}))});
    out.push_back(b.data_movement().done());
  }
  {
    // An embedding's gradient: rows added at repeated and negative indices (-1 is row 5).
    CaseBuilder b("ScatterND/rows_add_repeated");
    b.op(OpType::ScatterND,
         {b.in(DType::f32, Shape({6, 4})), b.constant(i64_tensor(Shape({5, 1}), {5, 0, -1, 2, 0})),
          b.in(DType::f32, Shape({5, 4}))},
         {{"reduction", std::string("add")}});
    out.push_back(b.data_movement().done());
  }
  {
    // Repeated element indices with reduction=add: both updates land on element (1, 2).
    CaseBuilder b("ScatterND/elements_add_repeated");
    b.op(
        OpType::ScatterND,
        {b.in(DType::f32, Shape({2, 4})), b.constant(i64_tensor(Shape({3, 2}), {1, 2, 0, 0, 1, 2})),
         b.in(DType::f32, Shape({3}), -2, 2, true)},
        {{"reduction", std::string("add")}});
    out.push_back(b.done());
  }
  struct P {
    const char* name;
    const char* mode;
    Ints pads;
  };
  for (const P& p :
       {P{"constant_value", "constant", Ints{0, 1, 2, 0, 2, 1}},
        P{"edge", "edge", Ints{1, 0, 2, 1, 1, 0}}, P{"reflect", "reflect", Ints{1, 2, 1, 1, 2, 2}},
        P{"wrap", "wrap", Ints{0, 3, 1, 1, 4, 0}},
        P{"negative_crop", "constant", Ints{0, -1, 1, 0, 1, -1}}}) {
    CaseBuilder b(std::string("Pad/") + p.name);
    b.op(OpType::Pad, {b.in(DType::f32, Shape({2, 3, 4})), b.ints(p.pads), b.f32_scalar(1.5f)},
         {{"mode", std::string(p.mode)}});
    out.push_back(b.data_movement().done());
  }
  {
    CaseBuilder b("Pad/i64_axes");
    b.op(OpType::Pad, {b.in(DType::i64, Shape({2, 3, 4}), -9, 9), b.ints({2, 1}),
                       b.constant(i64_tensor(Shape(), {7})), b.ints({-1})});
    out.push_back(b.data_movement().done());
  }
}

void view_and_producer_cases(std::vector<OpCase>& out) {
  {
    CaseBuilder b("Reshape/between_ops");
    ir::ValueId r = b.op(OpType::Relu, {b.in(DType::f32, Shape({2, 3, 4}))});
    b.chained(r);
    ir::ValueId v = b.op(OpType::Reshape, {r, b.ints({6, 4})});
    b.chained(v);
    b.op(OpType::Add, {v, b.in(DType::f32, Shape({4}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Flatten/output_is_view_of_input");
    b.op(OpType::Flatten, {b.in(DType::f32, Shape({2, 3, 4}))}, {{"axis", int64_t{2}}});
    out.push_back(b.data_movement().done());
  }
  {
    CaseBuilder b("Squeeze/Unsqueeze_chain");
    ir::ValueId s = b.op(OpType::Squeeze, {b.in(DType::f32, Shape({2, 1, 4})), b.ints({1})});
    b.chained(s);
    ir::ValueId n = b.op(OpType::Neg, {s});
    b.chained(n);
    b.op(OpType::Unsqueeze, {n, b.ints({0, 3})});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Identity/and_Dropout_keep_both");
    ir::ValueId x = b.in(DType::f32, Shape({3, 4}));
    ir::ValueId i = b.op(OpType::Identity, {x});
    b.chained(i);
    ir::ValueId d = b.op(OpType::Dropout, {i});
    b.chained(d);
    ir::ValueId e = b.op(OpType::Exp, {d});
    (void)e;
    b.op(OpType::Identity, {x});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("EyeLike/k1_from_input");
    b.op(OpType::EyeLike, {b.in(DType::f32, Shape({4, 5}))}, {{"k", int64_t{1}}});
    out.push_back(b.data_movement().done());
  }
  {
    CaseBuilder b("Shape/and_Size");
    ir::ValueId x = b.in(DType::f32, Shape({2, 3, 4}));
    b.op(OpType::Shape, {x}, {{"start", int64_t{1}}});
    b.op(OpType::Size, {x});
    out.push_back(b.data_movement().done());
  }
  {
    CaseBuilder b("Constant/ConstantOfShape/Range_folded");
    A value{{"value", f32_tensor(Shape({2}), {1.5f, -2.0f})}};
    ir::ValueId c = b.op(OpType::Constant, {}, value);
    b.chained(c);
    b.op(OpType::Add, {b.in(DType::f32, Shape({3, 2})), c});
    b.op(OpType::ConstantOfShape, {b.ints({2, 3})}, {{"value", i64_tensor(Shape({1}), {4})}});
    b.op(OpType::Range,
         {b.constant(i64_tensor(Shape(), {1})), b.constant(i64_tensor(Shape(), {10})),
          b.constant(i64_tensor(Shape(), {3}))});
    out.push_back(b.done());
  }
}

}  // namespace

void add_data_cases(std::vector<OpCase>& out) {
  movement_cases(out);
  gather_pad_cases(out);
  view_and_producer_cases(out);
}

}  // namespace mimic::testing
