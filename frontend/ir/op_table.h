// The op table: every op of the IR, once, with what every layer reads about it. Names and
// semantics follow ONNX (opset 17) unless a shape rule (infer_*.cpp) or a kernel notes otherwise.
// Extra attributes beyond ONNX: `layout` ("NCHW" | "NHWC", channels first or last, for any
// spatial rank) on Conv, ConvTranspose, pools and BatchNormalization.
//
// X(name, class, inputs min, max, outputs min, max, shape rule, gradient, epilogue)
//   class     OpClass (op_type.h): unary, binary and nary elementwise, matmul, conv, pool, norm,
//             softmax, reduce, arg_reduce, scan, data (movement, shapes and generators), recurrent.
//   inputs,   how many the node may have (`many`: any number); optional inputs may be absent
//   outputs   (kNoValue) past the minimum.
//   shape     the shape-inference rule, infer::<rule> (shape_inference.h, infer_*.cpp).
//   gradient  OpGradient (op_type.h): `rule` (grad_rules_*.cpp, checked against central
//             differences by tests/unit/autodiff_cases.cpp), `zero` (integer, boolean or
//             piecewise-constant results, or results that depend on shapes only: no gradient
//             flows, as in PyTorch), `unrolled` (differentiated through its unrolling into
//             primitive ops, recurrent_expand.h). A rule may still refuse a variant by name
//             (ScatterND with reduction 'mul', Dropout in training mode outside a train step).
//   epilogue  `yes` for the activations a matrix unit's epilogue may apply to a MatMul, Gemm or
//             Conv result before it is stored (each backend maps the ones its hardware has).
//
// What each backend does with an op lives in that backend's own table (cpu kernel_table.cpp,
// tpu-emu supported.cpp and the vector unit's MIMIC_VECTOR_FUNCS, ipu-emu lowerer_for and
// element_cost, cuda lower.cpp); an op a backend has no entry for is declined with a reason and
// runs on the cpu fallback. tests/conformance runs every op of this table on every backend.
// clang-format off
#define MIMIC_OP_TABLE(X) \
  X(Abs,             unary,  1, 1, 1, 1, unary, rule, no) \
  X(Neg,             unary,  1, 1, 1, 1, unary, rule, no) \
  X(Exp,             unary,  1, 1, 1, 1, unary, rule, no) \
  X(Log,             unary,  1, 1, 1, 1, unary, rule, no) \
  X(Sqrt,            unary,  1, 1, 1, 1, unary, rule, no) \
  X(Reciprocal,      unary,  1, 1, 1, 1, unary, rule, no) \
  X(Floor,           unary,  1, 1, 1, 1, unary, zero, no) \
  X(Ceil,            unary,  1, 1, 1, 1, unary, zero, no) \
  X(Round,           unary,  1, 1, 1, 1, unary, zero, no) \
  X(Sign,            unary,  1, 1, 1, 1, unary, zero, no) \
  X(Sin,             unary,  1, 1, 1, 1, unary, rule, no) \
  X(Cos,             unary,  1, 1, 1, 1, unary, rule, no) \
  X(Tan,             unary,  1, 1, 1, 1, unary, rule, no) \
  X(Asin,            unary,  1, 1, 1, 1, unary, rule, no) \
  X(Acos,            unary,  1, 1, 1, 1, unary, rule, no) \
  X(Atan,            unary,  1, 1, 1, 1, unary, rule, no) \
  X(Sinh,            unary,  1, 1, 1, 1, unary, rule, no) \
  X(Cosh,            unary,  1, 1, 1, 1, unary, rule, no) \
  X(Asinh,           unary,  1, 1, 1, 1, unary, rule, no) \
  X(Acosh,           unary,  1, 1, 1, 1, unary, rule, no) \
  X(Atanh,           unary,  1, 1, 1, 1, unary, rule, no) \
  X(Erf,             unary,  1, 1, 1, 1, unary, rule, no) \
  X(Sigmoid,         unary,  1, 1, 1, 1, unary, rule, yes) \
  X(Tanh,            unary,  1, 1, 1, 1, unary, rule, yes) \
  X(Relu,            unary,  1, 1, 1, 1, unary, rule, yes) \
  X(Softplus,        unary,  1, 1, 1, 1, unary, rule, no) \
  X(Softsign,        unary,  1, 1, 1, 1, unary, rule, no) \
  X(Not,             unary,  1, 1, 1, 1, unary, zero, no) \
  X(IsNaN,           unary,  1, 1, 1, 1, unary, zero, no) \
  X(IsInf,           unary,  1, 1, 1, 1, unary, zero, no) \
  X(Identity,        unary,  1, 1, 1, 1, unary, rule, no) \
  X(LeakyRelu,       unary,  1, 1, 1, 1, unary, rule, yes) \
  X(Elu,             unary,  1, 1, 1, 1, unary, rule, yes) \
  X(Selu,            unary,  1, 1, 1, 1, unary, rule, no) \
  X(Celu,            unary,  1, 1, 1, 1, unary, rule, no) \
  X(HardSigmoid,     unary,  1, 1, 1, 1, unary, rule, yes) \
  X(HardSwish,       unary,  1, 1, 1, 1, unary, rule, yes) \
  X(ThresholdedRelu, unary,  1, 1, 1, 1, unary, rule, no) \
  X(Gelu,            unary,  1, 1, 1, 1, unary, rule, yes) \
  X(Clip,            unary,  1, 3, 1, 1, unary, rule, yes) \
  X(Shrink,          unary,  1, 1, 1, 1, unary, rule, no) \
  X(Cast,            unary,  1, 1, 1, 1, unary, rule, no) \
  X(Dropout,         unary,  1, 3, 1, 2, unary, rule, no) \
  X(Add,             binary, 2, 2, 1, 1, binary, rule, no) \
  X(Sub,             binary, 2, 2, 1, 1, binary, rule, no) \
  X(Mul,             binary, 2, 2, 1, 1, binary, rule, no) \
  X(Div,             binary, 2, 2, 1, 1, binary, rule, no) \
  X(Pow,             binary, 2, 2, 1, 1, binary, rule, no) \
  X(Mod,             binary, 2, 2, 1, 1, binary, rule, no) \
  X(Equal,           binary, 2, 2, 1, 1, binary, zero, no) \
  X(Greater,         binary, 2, 2, 1, 1, binary, zero, no) \
  X(Less,            binary, 2, 2, 1, 1, binary, zero, no) \
  X(GreaterOrEqual,  binary, 2, 2, 1, 1, binary, zero, no) \
  X(LessOrEqual,     binary, 2, 2, 1, 1, binary, zero, no) \
  X(And,             binary, 2, 2, 1, 1, binary, zero, no) \
  X(Or,              binary, 2, 2, 1, 1, binary, zero, no) \
  X(Xor,             binary, 2, 2, 1, 1, binary, zero, no) \
  X(PRelu,           binary, 2, 2, 1, 1, binary, rule, no) \
  X(Max,             nary,   1, many, 1, 1, variadic, rule, no) \
  X(Min,             nary,   1, many, 1, 1, variadic, rule, no) \
  X(Sum,             nary,   1, many, 1, 1, variadic, rule, no) \
  X(Mean,            nary,   1, many, 1, 1, variadic, rule, no) \
  X(Where,           nary,   3, 3, 1, 1, where, rule, no) \
  X(MatMul,          matmul, 2, 2, 1, 1, matmul, rule, no) \
  X(Gemm,            matmul, 2, 3, 1, 1, gemm, rule, no) \
  X(Conv,            conv,   2, 3, 1, 1, conv, rule, no) \
  X(ConvTranspose,   conv,   2, 3, 1, 1, conv_transpose, rule, no) \
  X(MaxPool,         pool,   1, 1, 1, 1, pool, rule, no) \
  X(AveragePool,     pool,   1, 1, 1, 1, pool, rule, no) \
  /* MaxPoolGrad(X, Y, dY) -> dX, MaxPool's attributes: each window's dY goes to its first */ \
  /* element equal to Y = MaxPool(X) (PyTorch's choice); the backward pass's op, not ONNX's. */ \
  X(MaxPoolGrad,     pool,   3, 3, 1, 1, max_pool_grad, rule, no) \
  X(GlobalAveragePool, pool, 1, 1, 1, 1, global_pool, rule, no) \
  X(GlobalMaxPool,   pool,   1, 1, 1, 1, global_pool, rule, no) \
  X(BatchNormalization, norm, 5, 5, 1, 1, batch_norm, rule, no) \
  X(LayerNormalization, norm, 2, 3, 1, 3, layer_norm, rule, no) \
  X(InstanceNormalization, norm, 3, 3, 1, 1, instance_norm, rule, no) \
  X(LRN,             norm,   1, 1, 1, 1, lrn, rule, no) \
  X(Softmax,         softmax, 1, 1, 1, 1, softmax, rule, no) \
  X(LogSoftmax,      softmax, 1, 1, 1, 1, softmax, rule, no) \
  X(Hardmax,         softmax, 1, 1, 1, 1, softmax, zero, no) \
  X(ReduceSum,       reduce, 1, 2, 1, 1, reduce, rule, no) \
  X(ReduceMean,      reduce, 1, 2, 1, 1, reduce, rule, no) \
  X(ReduceMax,       reduce, 1, 2, 1, 1, reduce, rule, no) \
  X(ReduceMin,       reduce, 1, 2, 1, 1, reduce, rule, no) \
  X(ReduceProd,      reduce, 1, 2, 1, 1, reduce, rule, no) \
  X(ReduceL1,        reduce, 1, 2, 1, 1, reduce, rule, no) \
  X(ReduceL2,        reduce, 1, 2, 1, 1, reduce, rule, no) \
  X(ReduceSumSquare, reduce, 1, 2, 1, 1, reduce, rule, no) \
  X(ReduceLogSum,    reduce, 1, 2, 1, 1, reduce, rule, no) \
  X(ReduceLogSumExp, reduce, 1, 2, 1, 1, reduce, rule, no) \
  X(ArgMax,          arg_reduce, 1, 1, 1, 1, arg_reduce, zero, no) \
  X(ArgMin,          arg_reduce, 1, 1, 1, 1, arg_reduce, zero, no) \
  X(Reshape,         data,   2, 2, 1, 1, reshape, rule, no) \
  X(Flatten,         data,   1, 1, 1, 1, flatten, rule, no) \
  X(Transpose,       data,   1, 1, 1, 1, transpose, rule, no) \
  X(Concat,          data,   1, many, 1, 1, concat, rule, no) \
  X(Split,           data,   1, 2, 1, many, split, rule, no) \
  X(Slice,           data,   3, 5, 1, 1, slice, rule, no) \
  X(Gather,          data,   2, 2, 1, 1, gather, rule, no) \
  X(GatherElements,  data,   2, 2, 1, 1, gather_elements, rule, no) \
  X(ScatterND,       data,   3, 3, 1, 1, scatter_nd, rule, no) \
  X(Squeeze,         data,   1, 2, 1, 1, squeeze, rule, no) \
  X(Unsqueeze,       data,   2, 2, 1, 1, unsqueeze, rule, no) \
  X(Pad,             data,   2, 4, 1, 1, pad, rule, no) \
  X(Tile,            data,   2, 2, 1, 1, tile, rule, no) \
  X(Expand,          data,   2, 2, 1, 1, expand, rule, no) \
  X(Shape,           data,   1, 1, 1, 1, shape, zero, no) \
  X(Size,            data,   1, 1, 1, 1, size, zero, no) \
  X(ConstantOfShape, data,   1, 1, 1, 1, constant_of_shape, zero, no) \
  X(Constant,        data,   0, 0, 1, 1, constant, zero, no) \
  X(Range,           data,   3, 3, 1, 1, range, zero, no) \
  X(DepthToSpace,    data,   1, 1, 1, 1, depth_to_space, rule, no) \
  X(SpaceToDepth,    data,   1, 1, 1, 1, space_to_depth, rule, no) \
  X(Trilu,           data,   1, 2, 1, 1, trilu, rule, no) \
  X(CumSum,          scan,   2, 2, 1, 1, cumsum, rule, no) \
  X(EyeLike,         data,   1, 1, 1, 1, eye_like, zero, no) \
  /* Resize(X, roi, scales, sizes): scales or sizes constant (resize.h). */ \
  X(Resize,          data,   1, 4, 1, 1, resize, rule, no) \
  /* Y, Y_h (and Y_c): an IR node lists outputs up to the last one used. */ \
  X(LSTM,            recurrent, 3, 8, 1, 3, recurrent, unrolled, no) \
  X(GRU,             recurrent, 3, 6, 1, 2, recurrent, unrolled, no) \
  X(RNN,             recurrent, 3, 6, 1, 2, recurrent, unrolled, no)
// clang-format on
