// ONNX preconditions checked by shape inference before any kernel sees a node: each row builds a
// one-node graph that violates one precondition and expects a one-line ShapeError that names the
// node, its op and the rule. Rows are grouped like the op table (op_table.h).
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "base/error.h"
#include "frontend/ir/memory_limit.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::ir {
namespace {

struct Case {
  const char* name;
  OpType op;
  // Adds the node's inputs to `g` and returns them; `attrs` may be filled too.
  std::function<std::vector<ValueId>(Graph& g, Attributes& attrs)> inputs;
  const char* expected;  // substring of the error
  int num_outputs = 1;
};

ValueId in(Graph& g, const char* name, DType t, std::vector<int64_t> dims) {
  return g.add_input(name, t, Shape(std::move(dims)));
}

ValueId ints(Graph& g, const char* name, std::vector<int64_t> v, std::vector<int64_t> dims = {}) {
  if (dims.empty()) dims = {static_cast<int64_t>(v.size())};
  return g.add_constant(name, HostTensor::from(Shape(dims), v.data()));
}

ValueId floats(Graph& g, const char* name, std::vector<float> v) {
  return g.add_constant(name, HostTensor::from(Shape({static_cast<int64_t>(v.size())}), v.data()));
}

ValueId f32(Graph& g, const char* name, std::vector<int64_t> dims) {
  return in(g, name, DType::f32, std::move(dims));
}

const std::vector<Case>& cases() {
  using A = Attributes;
  static const std::vector<Case> table = {
      // Elementwise.
      {"celu_alpha_zero", OpType::Celu,
       [](Graph& g, A& a) {
         a.set("alpha", 0.0);
         return std::vector{f32(g, "x", {4})};
       },
       "alpha must not be 0"},
      {"elu_alpha_nan", OpType::Elu,
       [](Graph& g, A& a) {
         a.set("alpha", std::numeric_limits<double>::quiet_NaN());
         return std::vector{f32(g, "x", {4})};
       },
       "attribute alpha=nan is out of range"},
      {"shrink_negative_lambd", OpType::Shrink,
       [](Graph& g, A& a) {
         a.set("lambd", -1.0);
         return std::vector{f32(g, "x", {4})};
       },
       "attribute lambd=-1"},
      {"gelu_unknown_approximate", OpType::Gelu,
       [](Graph& g, A& a) {
         a.set("approximate", std::string("erf"));
         return std::vector{f32(g, "x", {4})};
       },
       "approximate='erf' is not one of none|tanh"},
      {"dropout_ratio_above_one", OpType::Dropout,
       [](Graph& g, A& a) {
         a.set("ratio", 1.5);
         return std::vector{f32(g, "x", {4})};
       },
       "attribute ratio=1.5 is out of range [0, 1]"},
      {"dropout_ratio_not_scalar", OpType::Dropout,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {4}), f32(g, "r", {2})};
       },
       "input 1 must be a scalar"},
      {"sqrt_of_int", OpType::Sqrt,
       [](Graph& g, A&) { return std::vector{in(g, "x", DType::i32, {4})}; },
       "needs a floating-point input"},
      {"mod_fmod_two", OpType::Mod,
       [](Graph& g, A& a) {
         a.set("fmod", int64_t{2});
         return std::vector{in(g, "x", DType::i32, {4}), in(g, "y", DType::i32, {4})};
       },
       "attribute fmod=2 is out of range [0, 1]"},
      {"where_int_condition", OpType::Where,
       [](Graph& g, A&) {
         return std::vector{in(g, "c", DType::i32, {4}), f32(g, "x", {4}), f32(g, "y", {4})};
       },
       "input 0 has dtype i32, expected bool"},
      // Matrix products and windows.
      {"gemm_transA_two", OpType::Gemm,
       [](Graph& g, A& a) {
         a.set("transA", int64_t{2});
         return std::vector{f32(g, "a", {2, 3}), f32(g, "b", {3, 4})};
       },
       "attribute transA=2 is out of range [0, 1]"},
      {"gemm_rank3", OpType::Gemm,
       [](Graph& g, A&) {
         return std::vector{f32(g, "a", {1, 2, 3}), f32(g, "b", {3, 4})};
       },
       "must be 2-D"},
      {"conv_bias_dtype", OpType::Conv,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {1, 2, 5, 5}), f32(g, "w", {4, 2, 3, 3}),
                            in(g, "b", DType::f16, {4})};
       },
       "different dtypes (f32 vs f16)"},
      {"conv_group_not_dividing", OpType::Conv,
       [](Graph& g, A& a) {
         a.set("group", int64_t{3});
         return std::vector{f32(g, "x", {1, 4, 5, 5}), f32(g, "w", {4, 1, 3, 3})};
       },
       "group 3 does not divide 4 input channels"},
      {"conv_zero_stride", OpType::Conv,
       [](Graph& g, A& a) {
         a.set("strides", std::vector<int64_t>{0, 1});
         return std::vector{f32(g, "x", {1, 2, 5, 5}), f32(g, "w", {4, 2, 3, 3})};
       },
       "must be positive"},
      {"conv_bad_auto_pad", OpType::Conv,
       [](Graph& g, A& a) {
         a.set("auto_pad", std::string("SAME"));
         return std::vector{f32(g, "x", {1, 2, 5, 5}), f32(g, "w", {4, 2, 3, 3})};
       },
       "auto_pad 'SAME' is not NOTSET"},
      {"conv_rank2_input", OpType::Conv,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 5}), f32(g, "w", {4, 2, 3})};
       },
       "rank >= 3"},
      {"maxpool_no_kernel", OpType::MaxPool,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {1, 2, 5, 5})};
       },
       "kernel_shape is required"},
      {"maxpool_grad_dy_not_pooled", OpType::MaxPoolGrad,
       [](Graph& g, A& a) {
         a.set("kernel_shape", std::vector<int64_t>{2, 2});
         a.set("strides", std::vector<int64_t>{2, 2});
         return std::vector{f32(g, "x", {1, 2, 6, 6}), f32(g, "y", {1, 2, 3, 3}),
                            f32(g, "dy", {1, 2, 6, 6})};
       },
       "input 2 has shape [1,2,6,6], the pool of X has [1,2,3,3]"},
      {"maxpool_grad_f16", OpType::MaxPoolGrad,
       [](Graph& g, A& a) {
         a.set("kernel_shape", std::vector<int64_t>{2, 2});
         return std::vector{in(g, "x", DType::f16, {1, 2, 4, 4}),
                            in(g, "y", DType::f16, {1, 2, 3, 3}),
                            in(g, "dy", DType::f16, {1, 2, 3, 3})};
       },
       "X is f16, MaxPoolGrad takes f32"},
      {"avgpool_ceil_mode_two", OpType::AveragePool,
       [](Graph& g, A& a) {
         a.set("kernel_shape", std::vector<int64_t>{2, 2});
         a.set("ceil_mode", int64_t{2});
         return std::vector{f32(g, "x", {1, 2, 5, 5})};
       },
       "attribute ceil_mode=2"},
      {"global_pool_rank2", OpType::GlobalAveragePool,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 5})};
       },
       "needs at least 3"},
      // Normalizations.
      {"instance_norm_rank1", OpType::InstanceNormalization,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {10}), f32(g, "s", {1}), f32(g, "b", {1})};
       },
       "input 0 has rank 1, needs at least 3"},
      {"instance_norm_rank2", OpType::InstanceNormalization,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3}), f32(g, "s", {3}), f32(g, "b", {3})};
       },
       "input 0 has rank 2, needs at least 3"},
      {"instance_norm_int8_scale", OpType::InstanceNormalization,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3, 4}), in(g, "s", DType::i8, {3}), f32(g, "b", {3})};
       },
       "different dtypes (f32 vs i8)"},
      {"instance_norm_scale_not_per_channel", OpType::InstanceNormalization,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3, 4}), f32(g, "s", {4}), f32(g, "b", {3})};
       },
       "input 1 has shape [4], must have shape [3]"},
      {"instance_norm_negative_epsilon", OpType::InstanceNormalization,
       [](Graph& g, A& a) {
         a.set("epsilon", -1.0);
         return std::vector{f32(g, "x", {2, 3, 4}), f32(g, "s", {3}), f32(g, "b", {3})};
       },
       "attribute epsilon=-1"},
      {"batch_norm_mean_not_per_channel", OpType::BatchNormalization,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3, 4}), f32(g, "s", {3}), f32(g, "b", {3}),
                            f32(g, "m", {2}), f32(g, "v", {3})};
       },
       "input 3 must have shape [3]"},
      {"batch_norm_infinite_epsilon", OpType::BatchNormalization,
       [](Graph& g, A& a) {
         a.set("epsilon", std::numeric_limits<double>::infinity());
         return std::vector{f32(g, "x", {2, 3}), f32(g, "s", {3}), f32(g, "b", {3}),
                            f32(g, "m", {3}), f32(g, "v", {3})};
       },
       "attribute epsilon=inf"},
      {"layer_norm_scale_dtype", OpType::LayerNormalization,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3}), in(g, "s", DType::f16, {3})};
       },
       "different dtypes (f32 vs f16)"},
      {"layer_norm_axis_out_of_range", OpType::LayerNormalization,
       [](Graph& g, A& a) {
         a.set("axis", int64_t{2});
         return std::vector{f32(g, "x", {2, 3}), f32(g, "s", {3})};
       },
       "axis 2 is out of range for rank 2"},
      {"lrn_rank2", OpType::LRN,
       [](Graph& g, A& a) {
         a.set("size", int64_t{3});
         return std::vector{f32(g, "x", {2, 3})};
       },
       "needs at least 3"},
      {"lrn_size_zero", OpType::LRN,
       [](Graph& g, A& a) {
         a.set("size", int64_t{0});
         return std::vector{f32(g, "x", {1, 3, 4})};
       },
       "attribute size=0 is out of range"},
      {"lrn_no_size", OpType::LRN,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {1, 3, 4})};
       },
       "size is required"},
      {"softmax_axis_out_of_range", OpType::Softmax,
       [](Graph& g, A& a) {
         a.set("axis", int64_t{3});
         return std::vector{f32(g, "x", {2, 3})};
       },
       "axis 3 is out of range for rank 2"},
      // Reductions.
      {"reduce_keepdims_two", OpType::ReduceSum,
       [](Graph& g, A& a) {
         a.set("keepdims", int64_t{2});
         return std::vector{f32(g, "x", {2, 3})};
       },
       "attribute keepdims=2"},
      {"reduce_axes_out_of_range", OpType::ReduceMean,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3}), ints(g, "axes", {5})};
       },
       "axis 5 is out of range for rank 2"},
      {"argmax_of_bool", OpType::ArgMax,
       [](Graph& g, A&) { return std::vector{in(g, "x", DType::boolean, {4})}; }, "bool tensor"},
      {"argmax_scalar", OpType::ArgMax, [](Graph& g, A&) { return std::vector{f32(g, "x", {})}; },
       "needs at least 1"},
      // Shapes and data movement.
      {"reshape_shape_rank2", OpType::Reshape,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3}), ints(g, "s", {6, 1}, {1, 2})};
       },
       "input 1 has rank 2, needs rank 1"},
      {"reshape_float_shape", OpType::Reshape,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3}), floats(g, "s", {6})};
       },
       "input 1 has dtype f32"},
      {"concat_scalar", OpType::Concat,
       [](Graph& g, A& a) {
         a.set("axis", int64_t{0});
         return std::vector{f32(g, "x", {}), f32(g, "y", {})};
       },
       "needs at least 1"},
      {"split_scalar", OpType::Split, [](Graph& g, A&) { return std::vector{f32(g, "x", {})}; },
       "needs at least 1", 2},
      {"slice_starts_rank2", OpType::Slice,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {4}), ints(g, "s", {0}, {1, 1}), ints(g, "e", {2})};
       },
       "input 1 has rank 2, needs rank 1"},
      {"gather_index_out_of_range", OpType::Gather,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {4, 2}), ints(g, "i", {0, 4})};
       },
       "index 4 is out of range for axis 0 of size 4"},
      {"gather_float_indices", OpType::Gather,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {4}), f32(g, "i", {2})};
       },
       "input 1 has dtype f32"},
      {"gather_elements_indices_too_wide", OpType::GatherElements,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 2}), in(g, "i", DType::i64, {2, 3})};
       },
       "indices dim 1 is 3, larger than data's 2"},
      {"scatter_nd_index_tuple_longer_than_rank", OpType::ScatterND,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {4, 2}), in(g, "i", DType::i64, {1, 3}), f32(g, "u", {1})};
       },
       "indices' last dim is 3; it must be between 1 and data's rank 2"},
      {"scatter_nd_updates_shape", OpType::ScatterND,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {4, 2}), in(g, "i", DType::i64, {3, 1}),
                            f32(g, "u", {3, 3})};
       },
       "updates are [3,3], expected [3,2]"},
      {"scatter_nd_index_out_of_range", OpType::ScatterND,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {4, 2}), ints(g, "i", {1, -5}, {2, 1}),
                            f32(g, "u", {2, 2})};
       },
       "index -5 is out of range for axis 0 of size 4"},
      {"scatter_nd_reduction", OpType::ScatterND,
       [](Graph& g, A& a) {
         a.set("reduction", std::string("max"));
         return std::vector{f32(g, "x", {4}), in(g, "i", DType::i64, {1, 1}), f32(g, "u", {1})};
       },
       "reduction 'max' must be none, add or mul"},
      {"transpose_not_a_permutation", OpType::Transpose,
       [](Graph& g, A& a) {
         a.set("perm", std::vector<int64_t>{0, 0});
         return std::vector{f32(g, "x", {2, 3})};
       },
       "is not a permutation"},
      {"squeeze_non_unit_axis", OpType::Squeeze,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3}), ints(g, "a", {0})};
       },
       "cannot squeeze axis 0 of size 2"},
      {"unsqueeze_repeated_axis", OpType::Unsqueeze,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2}), ints(g, "a", {0, 0})};
       },
       "repeated axis"},
      {"pad_edge_of_empty_axis", OpType::Pad,
       [](Graph& g, A& a) {
         a.set("mode", std::string("edge"));
         return std::vector{f32(g, "x", {0, 2}), ints(g, "p", {1, 0, 1, 0})};
       },
       "edge padding of an empty axis 0"},
      {"pad_unknown_mode", OpType::Pad,
       [](Graph& g, A& a) {
         a.set("mode", std::string("mirror"));
         return std::vector{f32(g, "x", {2}), ints(g, "p", {1, 1})};
       },
       "unknown pad mode 'mirror'"},
      {"pad_value_not_scalar", OpType::Pad,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2}), ints(g, "p", {1, 1}), f32(g, "v", {2})};
       },
       "input 2 must be a scalar"},
      {"tile_repeats_length", OpType::Tile,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3}), ints(g, "r", {2})};
       },
       "repeats has 1 values for rank 2"},
      {"expand_negative", OpType::Expand,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {1}), ints(g, "s", {-2})};
       },
       "negative size"},
      {"constant_of_shape_two_values", OpType::ConstantOfShape,
       [](Graph& g, A& a) {
         std::vector<float> v{1, 2};
         a.set("value", HostTensor::from(Shape({2}), v.data()));
         return std::vector{ints(g, "s", {3})};
       },
       "attribute value must hold one element, holds 2"},
      {"range_bool", OpType::Range,
       [](Graph& g, A&) {
         return std::vector{in(g, "a", DType::boolean, {}), in(g, "b", DType::boolean, {}),
                            in(g, "c", DType::boolean, {})};
       },
       "input 0 has dtype bool"},
      {"depth_to_space_bad_mode", OpType::DepthToSpace,
       [](Graph& g, A& a) {
         a.set("blocksize", int64_t{2});
         a.set("mode", std::string("XYZ"));
         return std::vector{f32(g, "x", {1, 4, 2, 2})};
       },
       "mode='XYZ' is not one of DCR|CRD"},
      {"space_to_depth_zero_block", OpType::SpaceToDepth,
       [](Graph& g, A& a) {
         a.set("blocksize", int64_t{0});
         return std::vector{f32(g, "x", {1, 4, 2, 2})};
       },
       "blocksize 0"},
      {"trilu_rank1", OpType::Trilu, [](Graph& g, A&) { return std::vector{f32(g, "x", {4})}; },
       "needs at least 2"},
      {"trilu_k_not_scalar", OpType::Trilu,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 2}), ints(g, "k", {0, 1})};
       },
       "input 1 must be a scalar"},
      {"cumsum_axis_out_of_range", OpType::CumSum,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3}), ints(g, "a", {2}, {})};
       },
       "axis 2 is out of range for rank 2"},
      {"cumsum_float_axis", OpType::CumSum,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 3}), f32(g, "a", {})};
       },
       "input 1 has dtype f32"},
      {"cumsum_of_bool", OpType::CumSum,
       [](Graph& g, A&) {
         return std::vector{in(g, "x", DType::boolean, {2}), ints(g, "a", {0}, {})};
       },
       "input 0 has dtype bool"},
      {"eye_like_rank3", OpType::EyeLike,
       [](Graph& g, A&) {
         return std::vector{f32(g, "x", {2, 2, 2})};
       },
       "must be 2-D"},
  };
  return table;
}

class Preconditions : public ::testing::TestWithParam<Case> {};

TEST_P(Preconditions, OneLineShapeErrorNamingNodeOpAndRule) {
  const Case& c = GetParam();
  Graph g;
  Attributes attrs;
  std::vector<ValueId> inputs = c.inputs(g, attrs);
  auto outs = g.add_node(c.op, "n1", inputs, attrs, c.num_outputs);
  g.add_output(outs[0]);
  try {
    infer_shapes(g);
    FAIL() << c.name << ": no error";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind(std::string("node 'n1' (") + op_name(c.op) + ")", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in: " << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Preconditions, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.name);
                         });

// The limit is checked on inferred shapes and graph inputs before anything is allocated.
TEST(MemoryLimit, OutputOverTheLimitIsAShapeError) {
  Graph g;
  auto x = f32(g, "x", {1, 1});
  auto s = ints(g, "s", {1 << 20, 1 << 20});
  g.add_output(g.add_node(OpType::Expand, "big", {x, s})[0]);
  InferOptions o;
  o.max_tensor_bytes = int64_t{1} << 30;
  try {
    infer_shapes(g, o);
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'big' (Expand): output 0 (f32[1048576,1048576]) needs 4.4 TB"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("over the tensor memory limit of 1.1 GB (1073741824 bytes)"),
              std::string::npos)
        << msg;
  }
}

TEST(MemoryLimit, GraphInputOverTheLimit) {
  Graph g;
  auto x = f32(g, "x", {kBatch, 1 << 20});
  g.add_output(g.add_node(OpType::Relu, "r", {x})[0]);
  InferOptions o;
  o.max_tensor_bytes = 1 << 20;
  EXPECT_NO_THROW(infer_shapes(g));
  EXPECT_THROW(infer_shapes(g, o), ShapeError);
}

TEST(MemoryLimit, ParsesByteSizes) {
  EXPECT_EQ(parse_byte_size("123", "x"), 123);
  EXPECT_EQ(parse_byte_size("2GiB", "x"), int64_t{2} << 30);
  EXPECT_EQ(parse_byte_size("1.5GB", "x"), 1500000000);
  EXPECT_THROW(parse_byte_size("lots", "x"), InvalidArgument);
  EXPECT_THROW(parse_byte_size("-1MB", "x"), InvalidArgument);
  EXPECT_GT(default_max_tensor_bytes(), 0);
}

}  // namespace
}  // namespace mimic::ir
