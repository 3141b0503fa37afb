// Converters of shape and data-movement ONNX ops. Older versions take their shape parameters as
// attributes (Split's split, Slice's starts/ends/axes, Squeeze/Unsqueeze's axes, Pad's pads and
// value); they become the constant inputs of the IR's opset-18 forms. Constant nodes become
// constant values.
#include <fmt/format.h>

#include "base/error.h"
#include "frontend/onnx/import_context.h"
#include "frontend/onnx/onnx_tensor.h"

namespace mimic::onnx_import {
namespace {

using ir::OpType;

std::vector<ir::ValueId> all_inputs(NodeConverter& c) {
  std::vector<ir::ValueId> inputs;
  for (int i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.input(i));
  while (!inputs.empty() && inputs.back() == ir::kNoValue) inputs.pop_back();
  return inputs;
}

// Constant: value (a tensor), value_float(s), value_int(s).
void constant(NodeConverter& c) {
  ir::HostTensor t;
  if (c.has_attr("value")) {
    t = *c.attributes({"value_float", "value_floats", "value_int", "value_ints"})
             .get_tensor("value");
  } else if (c.has_attr("value_float")) {
    float v = static_cast<float>(c.attr_float("value_float", 0));
    t = ir::HostTensor::from(ir::Shape(), &v);
  } else if (c.has_attr("value_floats")) {
    std::vector<float> v;
    for (float f : c.attr("value_floats")->floats()) v.push_back(f);
    t = ir::HostTensor::from(ir::Shape({static_cast<int64_t>(v.size())}), v.data());
  } else if (c.has_attr("value_int")) {
    int64_t v = c.attr_int("value_int", 0);
    t = ir::HostTensor::from(ir::Shape(), &v);
  } else if (c.has_attr("value_ints")) {
    std::vector<int64_t> v = c.attr_ints("value_ints");
    t = ir::HostTensor::from(ir::Shape({static_cast<int64_t>(v.size())}), v.data());
  } else if (c.has_attr("sparse_value") || c.has_attr("value_string") ||
             c.has_attr("value_strings")) {
    c.unsupported("a sparse or string value");
  } else {
    c.malformed("has no value attribute");
  }
  if (!c.has_output(0)) c.malformed("has no output");
  c.constant_output(0, std::move(t));
}

// Split before opset 13 takes the sizes as an attribute. Every output takes part in the split,
// named or not.
void split(NodeConverter& c) {
  std::vector<ir::ValueId> inputs{c.input(0)};
  if (c.version() >= 13)
    inputs = all_inputs(c);
  else if (c.has_attr("split"))
    inputs.push_back(c.constant_ints("split", c.attr_ints("split")));
  c.emit(OpType::Split, inputs, c.attributes({"split"}), 0, c.num_outputs());
}

// Slice before opset 10: starts, ends and axes attributes.
void slice(NodeConverter& c) {
  if (c.version() >= 10) return direct(OpType::Slice)(c);
  if (!c.has_attr("starts") || !c.has_attr("ends"))
    c.malformed("attributes 'starts' and 'ends' are required");
  std::vector<ir::ValueId> inputs{c.input(0), c.constant_ints("starts", c.attr_ints("starts")),
                                  c.constant_ints("ends", c.attr_ints("ends"))};
  if (c.has_attr("axes")) inputs.push_back(c.constant_ints("axes", c.attr_ints("axes")));
  c.emit(OpType::Slice, inputs, {});
}

// Squeeze and Unsqueeze before opset 13: an axes attribute.
Converter squeeze(OpType op) {
  return [op](NodeConverter& c) {
    if (c.version() >= 13) return direct(op)(c);
    std::vector<ir::ValueId> inputs{c.input(0)};
    if (c.has_attr("axes"))
      inputs.push_back(c.constant_ints("axes", c.attr_ints("axes")));
    else if (op == OpType::Unsqueeze)
      c.malformed("attribute 'axes' is required");
    c.emit(op, inputs, {});
  };
}

// Pad before opset 11: pads and value attributes (value in the input's dtype).
void pad(NodeConverter& c) {
  if (c.version() >= 11) return direct(OpType::Pad)(c);
  ir::ValueId x = c.input(0);
  if (!c.has_attr("pads")) c.malformed("attribute 'pads' is required");
  ir::DType dtype = c.type_of(x) ? c.type_of(x)->dtype : ir::DType::f32;
  ir::ValueId pads = c.constant_ints("pads", c.attr_ints("pads"));
  ir::ValueId value = c.constant_scalar("value", dtype, c.attr_float("value", 0.0));
  ir::Attributes attrs;
  attrs.set("mode", c.attributes().get_string("mode", "constant"));
  c.emit(OpType::Pad, {x, pads, value}, attrs);
}

// EyeLike's dtype attribute is an ONNX enum; the IR names dtypes.
void eye_like(NodeConverter& c) {
  ir::Attributes attrs = c.attributes({"dtype"});
  if (c.has_attr("dtype")) {
    int32_t to = static_cast<int32_t>(c.attr_int("dtype", 0));
    auto dtype = dtype_from_onnx(to);
    if (!dtype) c.unsupported(fmt::format("dtype {}", onnx_dtype_name(to)));
    attrs.set("dtype", std::string(ir::dtype_name(*dtype)));
  }
  c.emit(OpType::EyeLike, {c.input(0)}, attrs);
}

// Resize-11..17 as given (the roi input only matters to tf_crop_and_resize, which is refused).
// Resize-10 (X, scales) and Upsample-7/9 (scales as an attribute, then an input) had no
// coordinate or rounding attributes: asymmetric coordinates, and ONNX Runtime's nearest rounding
// of that era (floor when upsampling, ceil when downsampling: nearest_mode "simple").
void resize(NodeConverter& c) {
  const bool legacy = c.op_type() == "Upsample" || c.version() < 11;
  ir::Attributes attrs = c.attributes(
      {"scales", "antialias", "axes", "keep_aspect_ratio_policy", "extrapolation_value"});
  std::string mode = c.has_attr("mode") ? attrs.get_string("mode", "nearest") : "nearest";
  if (mode == "bilinear") mode = "linear";  // Upsample-7's name
  attrs.set("mode", mode);
  if (attrs.get_string("coordinate_transformation_mode", "") == "tf_crop_and_resize")
    c.unsupported("coordinate_transformation_mode tf_crop_and_resize");
  if (!legacy) {
    std::vector<ir::ValueId> in{c.input(0), ir::kNoValue, c.input(2), c.input(3)};
    while (in.back() == ir::kNoValue) in.pop_back();
    return c.emit(OpType::Resize, in, attrs);
  }
  if (mode != "nearest" && mode != "linear")
    c.malformed(
        fmt::format("mode '{}': opset-10 Resize and Upsample have nearest and linear", mode));
  attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
  attrs.set("nearest_mode", std::string("simple"));
  ir::ValueId scales = c.input(1);
  if (c.op_type() == "Upsample" && c.version() < 9) {
    std::vector<int64_t> unused;
    const onnx::AttributeProto* a = c.attr("scales");
    if (!a) c.malformed("Upsample-7 needs its scales attribute");
    ir::HostTensor t(ir::DType::f32, ir::Shape({a->floats_size()}));
    for (int i = 0; i < a->floats_size(); ++i) t.data<float>()[i] = a->floats(i);
    scales = c.constant("scales", std::move(t));
  }
  c.emit(OpType::Resize, {c.input(0), ir::kNoValue, scales}, attrs);
}

}  // namespace

void add_shape_converters(std::map<std::string, Converter>& t) {
  for (OpType op :
       {OpType::Reshape, OpType::Flatten, OpType::Transpose, OpType::Concat, OpType::Gather,
        OpType::GatherElements, OpType::ScatterND, OpType::Tile, OpType::Expand, OpType::Shape,
        OpType::Size, OpType::ConstantOfShape, OpType::Range, OpType::DepthToSpace,
        OpType::SpaceToDepth, OpType::Trilu, OpType::CumSum})
    t[ir::op_name(op)] = direct(op);
  t["Constant"] = constant;
  t["Split"] = split;
  t["Slice"] = slice;
  t["Squeeze"] = squeeze(OpType::Squeeze);
  t["Unsqueeze"] = squeeze(OpType::Unsqueeze);
  t["Pad"] = pad;
  t["EyeLike"] = eye_like;
  t["Resize"] = resize;
  t["Upsample"] = resize;
}

}  // namespace mimic::onnx_import
