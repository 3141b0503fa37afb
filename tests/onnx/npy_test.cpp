// NumPy .npy reading and writing for `mimic run --input/--output-dir`.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/numeric_formats.h"
#include "frontend/api/npy.h"
#include "frontend/api/random.h"
#include "tests/onnx/test_util.h"

namespace mimic::testing {
namespace {

std::string write_bytes(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// What numpy 1.24 writes for np.save(f, np.arange(6, dtype=np.float32).reshape(2, 3)).
std::string numpy_header(const std::string& dict) {
  std::string header = dict;
  header.append(118 - dict.size() - 1, ' ');
  header += '\n';
  return std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header;
}

TEST(Npy, ReadsWhatNumpyWrites) {
  std::string dir = temp_dir("npy");
  std::string data;
  for (int i = 0; i < 6; ++i) {
    float v = static_cast<float>(i);
    data.append(reinterpret_cast<const char*>(&v), 4);
  }
  std::string path = write_bytes(
      dir, "a.npy",
      numpy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") + data);
  ir::HostTensor t = read_npy(path);
  EXPECT_EQ(t.type().str(), "f32[2,3]");
  EXPECT_EQ(values(t), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  double d = 3.5;
  path = write_bytes(dir, "b.npy",
                     numpy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (), }") +
                         std::string(reinterpret_cast<const char*>(&d), 8));
  t = read_npy(path);
  EXPECT_EQ(t.type().str(), "f64[]");
  EXPECT_EQ(t.data<double>()[0], 3.5);
  std::filesystem::remove_all(dir);
}

TEST(Npy, RoundTripsEveryDtype) {
  std::string dir = temp_dir("npy_rt");
  for (ir::DType dtype : ir::kAllDTypes) {
    Random rng(3);
    ir::HostTensor t = rng.tensor(dtype, ir::Shape({2, 3, 1}));
    std::string path = dir + "/t.npy";
    write_npy(path, t);
    ir::HostTensor back = read_npy(path);
    if (dtype == ir::DType::bf16) {  // written as exact f32
      ASSERT_EQ(back.dtype(), ir::DType::f32);
      for (int64_t i = 0; i < t.numel(); ++i)
        EXPECT_EQ(back.data<float>()[i], numeric::bf16_to_f32(t.data<ir::BFloat16>()[i].bits));
      continue;
    }
    ASSERT_EQ(back.type(), t.type()) << ir::dtype_name(dtype);
    EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.nbytes()), 0) << ir::dtype_name(dtype);
  }
  for (ir::Shape shape : {ir::Shape(), ir::Shape({4}), ir::Shape({0, 2})}) {
    ir::HostTensor t(ir::DType::f32, shape);
    write_npy(dir + "/s.npy", t);
    EXPECT_EQ(read_npy(dir + "/s.npy").shape(), shape);
  }
  std::filesystem::remove_all(dir);
}

TEST(Npy, BadFilesAreIoErrors) {
  std::string dir = temp_dir("npy_bad");
  std::string four(16, '\0');
  auto expect_io = [&](const std::string& name, const std::string& bytes) {
    EXPECT_THROW(read_npy(write_bytes(dir, name, bytes)), IoError) << name;
  };
  expect_io("magic.npy", "not numpy at all");
  expect_io(
      "short_header.npy",
      numpy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }").substr(0, 40));
  expect_io("short_data.npy",
            numpy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") + four);
  expect_io("big_endian.npy",
            numpy_header("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }") + four);
  expect_io("uint8.npy",
            numpy_header("{'descr': '|u1', 'fortran_order': False, 'shape': (16,), }") + four);
  expect_io("fortran.npy",
            numpy_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }") + four);
  expect_io(
      "structured.npy",
      numpy_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }") + four);
  EXPECT_THROW(read_npy(dir + "/missing.npy"), IoError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mimic::testing
