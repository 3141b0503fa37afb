// Every op of the IR, once. The lists are expanded into the OpType enum and the name table
// (op_type.h). Names and semantics follow ONNX (opset 17) unless a shape rule (infer_*.cpp) or a
// kernel notes otherwise.
// Extra attributes beyond ONNX: `layout` ("NCHW" | "NHWC", channels first or last, for any
// spatial rank) on Conv, ConvTranspose, pools and BatchNormalization.
// clang-format off
#define MIMIC_UNARY_OPS(X) \
  X(Abs) X(Neg) X(Exp) X(Log) X(Sqrt) X(Reciprocal) X(Floor) X(Ceil) X(Round) X(Sign) X(Sin)     \
  X(Cos) X(Tan) X(Asin) X(Acos) X(Atan) X(Sinh) X(Cosh) X(Asinh) X(Acosh) X(Atanh) X(Erf)         \
  X(Sigmoid) X(Tanh) X(Relu) X(Softplus) X(Softsign) X(Not) X(IsNaN) X(IsInf) X(Identity)         \
  X(LeakyRelu) X(Elu) X(Selu) X(Celu) X(HardSigmoid) X(HardSwish) X(ThresholdedRelu) X(Gelu)      \
  X(Clip) X(Shrink) X(Cast) X(Dropout)

#define MIMIC_BINARY_OPS(X) \
  X(Add) X(Sub) X(Mul) X(Div) X(Pow) X(Mod) X(Equal) X(Greater) X(Less) X(GreaterOrEqual)         \
  X(LessOrEqual) X(And) X(Or) X(Xor) X(PRelu)

#define MIMIC_OTHER_OPS(X) \
  X(Max) X(Min) X(Sum) X(Mean) X(Where)                                                           \
  X(MatMul) X(Gemm) X(Conv) X(ConvTranspose)                                                      \
  X(MaxPool) X(AveragePool) X(GlobalAveragePool) X(GlobalMaxPool)                                 \
  X(BatchNormalization) X(LayerNormalization) X(InstanceNormalization) X(LRN)                     \
  X(Softmax) X(LogSoftmax) X(Hardmax)                                                             \
  X(ReduceSum) X(ReduceMean) X(ReduceMax) X(ReduceMin) X(ReduceProd) X(ReduceL1) X(ReduceL2)      \
  X(ReduceSumSquare) X(ReduceLogSum) X(ReduceLogSumExp) X(ArgMax) X(ArgMin)                       \
  X(Reshape) X(Flatten) X(Transpose) X(Concat) X(Split) X(Slice) X(Gather) X(GatherElements)      \
  X(ScatterND)                                                                                    \
  X(Squeeze) X(Unsqueeze) X(Pad) X(Tile) X(Expand) X(Shape) X(Size) X(ConstantOfShape)            \
  X(Constant) X(Range) X(DepthToSpace) X(SpaceToDepth) X(Trilu) X(CumSum) X(EyeLike)   \
  X(LSTM) X(GRU) X(RNN)

// clang-format on
#define MIMIC_ALL_OPS(X) MIMIC_UNARY_OPS(X) MIMIC_BINARY_OPS(X) MIMIC_OTHER_OPS(X)
