// Bad ONNX files give one clear mimic::Error, never a crash: garbage, every truncation of a real
// model, malformed graphs and tensors, test-data files. Also replays the fuzzer's regression
// inputs (tests/fuzz/regressions) through the same loading path as the fuzz target.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>
#include <filesystem>
#include <fstream>
#include <random>

#include "base/error.h"
#include "frontend/onnx/onnx_tensor.h"
#include "tests/onnx/test_util.h"

namespace mimic::testing {
namespace {

using onnx::TensorProto;

ModelBuilder conv_model() {
  ModelBuilder b(13, "conv_relu");
  b.input("x", TensorProto::FLOAT, {std::string("N"), int64_t{2}, int64_t{5}, int64_t{5}});
  std::vector<float> w(4 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i);
  b.initializer("w", {4, 2, 3, 3}, w);
  b.initializer("bias", {4}, {1, 2, 3, 4});
  auto& conv = b.node("Conv", {"x", "w", "bias"}, {"c"}, "conv");
  attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"}, "relu");
  b.output("y");
  return b;
}

ErrorKind import_error(const std::string& bytes) {
  try {
    onnx_import::import_model_bytes(bytes.data(), bytes.size(), "bad.onnx");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "not one line: " << e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no error for " << bytes.size() << " bytes";
  return ErrorKind::runtime;
}

TEST(OnnxErrors, GarbageIsAnIoError) {
  EXPECT_EQ(import_error("this is not an ONNX model, just some text\n"), ErrorKind::io);
  EXPECT_EQ(import_error(""), ErrorKind::io);
  EXPECT_EQ(import_error(std::string(1000, '\xff')), ErrorKind::io);
}

// Random bytes: whatever protobuf makes of them, the result is a mimic::Error.
TEST(OnnxErrors, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string bytes(rng() % 512, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    try {
      onnx_import::import_model_bytes(bytes.data(), bytes.size(), "random.onnx");
    } catch (const Error&) {
    }
  }
}

TEST(OnnxErrors, EveryTruncationIsAnIoError) {
  std::string bytes = conv_model().bytes();
  ASSERT_NO_THROW(onnx_import::import_model_bytes(bytes.data(), bytes.size(), "whole.onnx"));
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_EQ(import_error(bytes.substr(0, n)), ErrorKind::io)
        << "truncated to " << n << " of " << bytes.size();
}

TEST(OnnxErrors, MissingFileAndFolder) {
  EXPECT_THROW(onnx_import::import_model("/nonexistent/model.onnx"), IoError);
  EXPECT_THROW(onnx_import::import_model(std::filesystem::temp_directory_path().string()), IoError);
}

TEST(OnnxErrors, MalformedGraphs) {
  {
    ModelBuilder b = conv_model();
    b.node("Neg", {"undefined_value"}, {"z"});
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io);
  }
  {
    ModelBuilder b = conv_model();
    b.node("Neg", {"y"}, {"c"});  // "c" is already defined by the Conv
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io);
  }
  {
    ModelBuilder b = conv_model();
    b.output("never_computed");
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io);
  }
  {
    ModelBuilder b = conv_model();
    b.graph().clear_output();
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io);
  }
  {
    ModelBuilder b = conv_model();
    b.node("Neg", {"loop_b"}, {"loop_a"});
    b.node("Neg", {"loop_a"}, {"loop_b"});
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io);
  }
  {
    ModelBuilder b = conv_model();
    b.model().clear_opset_import();
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io);
  }
}

// A node without outputs (the fuzzer's Einsum) or with an empty output name: an error or a
// node that binds nothing, never a protobuf CHECK failure.
TEST(OnnxErrors, NodesWithoutOutputs) {
  for (const char* op : {"Einsum", "Neg", "Shape", "Split", "Identity", "Relu", "Transpose"}) {
    ModelBuilder b = conv_model();
    auto& n = b.node(op, {"y", "y"}, {});
    if (std::string(op) == "Einsum") attr_string(n, "equation", "nchw,nchw->nc");
    if (std::string(op) != "Einsum") n.mutable_input()->RemoveLast();
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io) << op;
  }
  ModelBuilder b = conv_model();
  auto& n = b.node("Einsum", {"y", "y"}, {""});
  attr_string(n, "equation", "nchw,nchw->nc");
  const std::string bytes = b.bytes();
  EXPECT_NO_THROW(onnx_import::import_model_bytes(bytes.data(), bytes.size(), "x.onnx"));
}

TEST(OnnxErrors, MalformedTensors) {
  {
    ModelBuilder b = conv_model();
    b.graph().mutable_initializer(1)->add_float_data(5);  // 5 values for 4 elements
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io);
  }
  {
    ModelBuilder b = conv_model();
    auto* t = b.graph().mutable_initializer(1);
    t->clear_float_data();
    t->set_raw_data(std::string(15, '\0'));  // 15 bytes for 4 floats
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io);
  }
  {
    ModelBuilder b = conv_model();
    b.graph().mutable_initializer(1)->set_dims(0, -4);
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io);
  }
  {
    ModelBuilder b = conv_model();
    auto* t = b.graph().mutable_initializer(1);
    t->clear_dims();
    for (int i = 0; i < 4; ++i) t->add_dims(int64_t{1} << 20);  // 2^80 elements
    EXPECT_EQ(import_error(b.bytes()), ErrorKind::io);
  }
  {
    ModelBuilder b = conv_model();
    auto& conv = *b.graph().mutable_node(0);
    conv.mutable_attribute(0)->set_type(onnx::AttributeProto::FLOAT);  // pads declared a float
    std::string bytes = b.bytes();
    ir::Graph g = onnx_import::import_model_bytes(bytes.data(), bytes.size(), "pads.onnx").graph;
    EXPECT_THROW(prepare_graph(g, 1), ShapeError);
  }
}

TEST(OnnxErrors, TensorFiles) {
  std::string dir = temp_dir("tensor_files");
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
    return dir + "/" + name;
  };
  TensorProto good = float_tensor({2, 2}, {1, 2, 3, 4}, "x");
  std::string name;
  ir::HostTensor t =
      onnx_import::read_tensor_file(write("good.pb", good.SerializeAsString()), &name);
  EXPECT_EQ(name, "x");
  EXPECT_EQ(values(t), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_THROW(onnx_import::read_tensor_file(write("garbage.pb", "\xff\xff\xff not a tensor")),
               IoError);
  std::string bytes = good.SerializeAsString();
  EXPECT_THROW(onnx_import::read_tensor_file(write("short.pb", bytes.substr(0, bytes.size() / 2))),
               IoError);
  TensorProto u8;
  u8.set_data_type(TensorProto::UINT8);
  u8.add_dims(1);
  u8.set_raw_data("\x01");
  EXPECT_THROW(onnx_import::read_tensor_file(write("u8.pb", u8.SerializeAsString())),
               UnsupportedOpError);
  TensorProto bf16 = u8;
  bf16.set_data_type(TensorProto::UINT16);
  bf16.set_raw_data(
      std::string("\x80\x3f", 2));  // bf16 1.0 stored as UINT16, as the ONNX test data does
  ir::HostTensor b =
      onnx_import::read_tensor_file(write("bf16.pb", bf16.SerializeAsString()), nullptr, true);
  EXPECT_EQ(b.dtype(), ir::DType::bf16);
  EXPECT_EQ(b.data<ir::BFloat16>()[0].bits, 0x3f80);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mimic::testing
