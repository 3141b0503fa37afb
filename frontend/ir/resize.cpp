#include "frontend/ir/resize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "base/error.h"

namespace mimic::ir {
namespace {

constexpr int kScales = 2, kSizes = 3;

[[noreturn]] void fail(const Graph& g, const Node& n, const std::string& what) {
  throw ShapeError(fmt::format("{}: {}", describe(g, n), what));
}

// The node's constant scales (or sizes), empty when absent or given as an empty tensor.
std::vector<double> constant_doubles(const Graph& g, const Node& n, int input) {
  if (!n.has_input(input)) return {};
  const Value& v = g.value(n.inputs[input]);
  if (!v.constant)
    fail(g, n,
         fmt::format("its {} must be constant (known when the model is compiled)",
                     input == kScales ? "scales" : "sizes"));
  std::vector<double> out;
  for (int64_t i = 0; i < v.constant->numel(); ++i)
    out.push_back(element_as_double(*v.constant, i));
  return out;
}

void check_attributes(const Graph& g, const Node& n) {
  static const std::set<std::string> modes{"nearest", "linear", "cubic"};
  static const std::set<std::string> coordinates{
      "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"};
  static const std::set<std::string> nearest{"round_prefer_floor", "round_prefer_ceil", "floor",
                                             "ceil", "simple"};
  const std::string mode = n.attrs.get_string("mode", "nearest");
  const std::string coordinate = n.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  const std::string rounding = n.attrs.get_string("nearest_mode", "round_prefer_floor");
  if (!modes.count(mode))
    fail(g, n, fmt::format("mode '{}' is not nearest, linear or cubic", mode));
  if (coordinate == "tf_crop_and_resize")
    throw UnsupportedOpError(
        fmt::format("{}: coordinate_transformation_mode tf_crop_and_resize is not supported",
                    describe(g, n)),
        {"Resize (tf_crop_and_resize)"});
  if (!coordinates.count(coordinate))
    fail(g, n, fmt::format("coordinate_transformation_mode '{}' is not one of ONNX's", coordinate));
  if (!nearest.count(rounding))
    fail(g, n, fmt::format("nearest_mode '{}' is not one of ONNX's", rounding));
  const double a = n.attrs.get_float("cubic_coeff_a", -0.75);
  if (!std::isfinite(a)) fail(g, n, fmt::format("cubic_coeff_a {} is not finite", a));
}

// Where output coordinate `i` of an axis of `in` elements falls in the input. As in ONNX's
// reference, the resized length in align_corners and pytorch_half_pixel is in * scale unrounded
// (with sizes given, scale = size / in, so that is the size).
double original_coordinate(const ResizeSpec& s, double scale, int64_t in, int64_t i) {
  const std::string& m = s.coordinate_mode;
  const double resized = static_cast<double>(in) * scale, x = static_cast<double>(i);
  if (m == "align_corners")
    return resized == 1 ? 0.0 : x * static_cast<double>(in - 1) / (resized - 1);
  if (m == "asymmetric") return x / scale;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (m == "pytorch_half_pixel" && resized <= 1) return 0.0;
  return (x + 0.5) / scale - 0.5;  // half_pixel, pytorch_half_pixel
}

int64_t nearest_index(const ResizeSpec& s, double scale, double x) {
  const double floor = std::floor(x), r = x - floor;
  const std::string& m = s.nearest_mode;
  if (m == "simple") return static_cast<int64_t>(scale < 1 ? std::ceil(x) : floor);
  if (r == 0 || m == "floor") return static_cast<int64_t>(floor);
  bool up = m == "ceil" || (m == "round_prefer_floor" ? r > 0.5 : r >= 0.5);
  return static_cast<int64_t>(floor) + (up ? 1 : 0);
}

std::vector<double> cubic_weights(double r, double a) {
  auto far = [a](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };  // 1 < t < 2
  auto near = [a](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };       // 0 <= t <= 1
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

}  // namespace

ResizeSpec resize_spec(const Graph& g, const Node& n) {
  check_attributes(g, n);
  ResizeSpec s;
  s.input = g.value(n.inputs[0]).type.shape;
  s.output = resize_output_shape(g, n, s.input);
  s.scales = constant_doubles(g, n, kScales);
  if (s.scales.empty())
    for (int i = 0; i < s.input.rank(); ++i)
      s.scales.push_back(static_cast<double>(s.output[i]) / static_cast<double>(s.input[i]));
  s.mode = n.attrs.get_string("mode", "nearest");
  s.coordinate_mode = n.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  s.nearest_mode = n.attrs.get_string("nearest_mode", "round_prefer_floor");
  s.cubic_a = n.attrs.get_float("cubic_coeff_a", -0.75);
  s.exclude_outside = n.attrs.get_int("exclude_outside", 0) != 0;
  return s;
}

Shape resize_output_shape(const Graph& g, const Node& n, const Shape& input) {
  check_attributes(g, n);
  std::vector<double> scales = constant_doubles(g, n, kScales),
                      sizes = constant_doubles(g, n, kSizes);
  if (scales.empty() == sizes.empty())
    fail(g, n, "give exactly one of scales and sizes (a non-empty constant)");
  if (!sizes.empty() && g.value(n.inputs[kSizes]).type.dtype != DType::i64)
    fail(g, n,
         fmt::format("sizes must be int64, not {}",
                     dtype_name(g.value(n.inputs[kSizes]).type.dtype)));
  const std::vector<double>& given = scales.empty() ? sizes : scales;
  if (static_cast<int>(given.size()) != input.rank())
    fail(g, n,
         fmt::format("{} has {} values for an input of rank {} ({})",
                     scales.empty() ? "sizes" : "scales", given.size(), input.rank(), input.str()));
  std::vector<int64_t> out;
  for (int i = 0; i < input.rank(); ++i) {
    const double v = given[i];
    if (input[i] == kBatch) {
      if (scales.empty() || v != 1.0)
        fail(g, n, fmt::format("axis {} is the symbolic batch: its scale must be 1", i));
      out.push_back(kBatch);
      continue;
    }
    if (!(v > 0) || !std::isfinite(v))
      fail(g, n,
           fmt::format("{} value {} of axis {} must be positive",
                       scales.empty() ? "sizes" : "scales", v, i));
    // floor(length * scale) in float, as ONNX's shape inference, onnxruntime and PyTorch compute
    // it: 10 * 0.7f is 7 in float, 6.99999988 in double.
    const double length =
        scales.empty()
            ? v
            : std::floor(static_cast<double>(static_cast<float>(input[i]) * static_cast<float>(v)));
    if (length < 1 || length > 1e12)
      fail(g, n,
           fmt::format("axis {} of {} elements would have {} (scale {})", i, input[i], length, v));
    out.push_back(static_cast<int64_t>(length));
  }
  return Shape(out);
}

std::vector<ResizeTap> resize_taps(const ResizeSpec& s, int axis) {
  const int64_t in = s.input[axis], out = s.output[axis];
  const double scale = s.scales[axis];
  std::vector<ResizeTap> taps(out);
  for (int64_t i = 0; i < out; ++i) {
    const double x = original_coordinate(s, scale, in, i);
    ResizeTap& t = taps[i];
    if (s.mode == "nearest") {
      t.index = {nearest_index(s, scale, x)};
      t.weight = {1.0};
    } else {
      const int64_t floor = static_cast<int64_t>(std::floor(x));
      const double r = x - std::floor(x);
      if (s.mode == "linear") {
        t.index = {floor, floor + 1};
        t.weight = {1 - r, r};
      } else {
        t.index = {floor - 1, floor, floor + 1, floor + 2};
        t.weight = cubic_weights(r, s.cubic_a);
      }
    }
    double total = 0;
    for (size_t k = 0; k < t.index.size(); ++k) {
      if (s.exclude_outside && (t.index[k] < 0 || t.index[k] >= in)) t.weight[k] = 0;
      total += t.weight[k];
      t.index[k] = std::clamp<int64_t>(t.index[k], 0, in - 1);
    }
    if (s.exclude_outside && total != 0)
      for (double& w : t.weight) w /= total;
  }
  return taps;
}

bool resize_axis_is_identity(const ResizeSpec& s, int axis) {
  if (s.input[axis] != s.output[axis]) return false;
  std::vector<ResizeTap> taps = resize_taps(s, axis);
  for (int64_t i = 0; i < static_cast<int64_t>(taps.size()); ++i) {
    double own = 0, other = 0;
    for (size_t k = 0; k < taps[i].index.size(); ++k)
      (taps[i].index[k] == i ? own : other) += std::abs(taps[i].weight[k]);
    if (own != 1.0 || other != 0.0) return false;
  }
  return true;
}

std::string resize_expansion_limit(const ResizeSpec& s) {
  constexpr int64_t kMaxElements = int64_t{1} << 24;
  for (int axis = 0; axis < s.input.rank(); ++axis) {
    const int64_t in = s.input[axis], out = s.output[axis];
    if (in > kMaxElements / std::max<int64_t>(out, 1) && !resize_axis_is_identity(s, axis))
      return fmt::format("the matrix of axis {} ({} x {}) is over {} elements", axis, out, in,
                         kMaxElements);
  }
  return "";
}

namespace {

// The map of `axis` as an f32 matrix: [out, in], or [in, out] when transposed.
HostTensor axis_matrix(const ResizeSpec& s, int axis, bool transposed) {
  const int64_t in = s.input[axis], out = s.output[axis];
  HostTensor m(DType::f32, transposed ? Shape({in, out}) : Shape({out, in}));
  float* p = m.data<float>();
  std::fill(p, p + m.numel(), 0.0f);
  std::vector<ResizeTap> taps = resize_taps(s, axis);
  for (int64_t o = 0; o < out; ++o)
    for (size_t k = 0; k < taps[o].index.size(); ++k) {
      int64_t i = taps[o].index[k];
      p[transposed ? i * out + o : o * in + i] += static_cast<float>(taps[o].weight[k]);
    }
  return m;
}

// Applies the map of `axis` (`transposed`: its transpose, output -> input) to x. Along the last
// axis it is one product x * map^T with every other axis in its rows; along another axis, that
// axis is moved last and back, so the chip sees the same one large product (a map broadcast over
// a batch of images is as many small products) unless nothing precedes the axis but size-1 dims.
ValueId map_axis(GraphBuilder& b, ValueId x, const ResizeSpec& s, int axis, bool transposed) {
  const Shape shape = b.shape(x);
  const int rank = shape.rank();
  // The map's weights in x's dtype (f16 and bf16 tensors multiply by rounded weights, as a
  // kernel computed for that dtype would be).
  auto constant = [&](bool transpose_map) {
    ValueId c = b.graph().add_constant("resize_map", axis_matrix(s, axis, transpose_map));
    return b.dtype(x) == DType::f32 ? c : b.cast(c, b.dtype(x));
  };
  int64_t leading = 1;
  for (int i = 0; i < axis; ++i) leading *= shape[i];
  if (axis == rank - 2 && leading == 1) return b.op(OpType::MatMul, {constant(transposed), x});
  ValueId map_t = constant(!transposed);  // [from, to]
  if (axis == rank - 1) return b.op(OpType::MatMul, {x, map_t});
  std::vector<int64_t> perm(rank);
  for (int i = 0; i < rank; ++i) perm[i] = i;
  std::swap(perm[axis], perm[rank - 1]);
  return b.transpose(b.op(OpType::MatMul, {b.transpose(x, perm), map_t}), perm);
}

}  // namespace

ValueId expand_resize(GraphBuilder& b, ValueId x, const ResizeSpec& s, bool transposed) {
  const int rank = s.input.rank();
  for (int k = 0; k < rank; ++k) {
    const int axis = transposed ? rank - 1 - k : k;
    if (resize_axis_is_identity(s, axis)) continue;
    x = map_axis(b, x, s, axis, transposed);
  }
  return x;
}

}  // namespace mimic::ir
