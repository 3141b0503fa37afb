#include "frontend/api/npy.h"

#include <fmt/format.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "base/error.h"
#include "base/numeric_formats.h"

namespace mimic {
namespace {

using ir::DType;

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr int64_t kMaxElements = int64_t{1} << 34;

struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

// `what` names the data: "'x.npy'", or "'ckpt.npz' entry 'fc.weight'".
[[noreturn]] void bad(const std::string& what, const std::string& why) {
  throw IoError(fmt::format("{} is not a readable .npy file: {}", what, why));
}

// The value text after `'key':` in the header dict.
std::string field(const std::string& header, const std::string& key, const std::string& what) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) bad(what, "header has no '" + key + "'");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) bad(what, "header is malformed near '" + key + "'");
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) bad(what, "header is malformed near '" + key + "'");
  return header.substr(start);
}

Header parse_header(const std::string& h, const std::string& what) {
  Header out;
  std::string d = field(h, "descr", what);
  if (d.empty() || (d[0] != '\'' && d[0] != '"'))
    bad(what, "descr is not a string (structured dtypes are not supported)");
  size_t end = d.find(d[0], 1);
  if (end == std::string::npos) bad(what, "descr is not terminated");
  out.descr = d.substr(1, end - 1);
  out.fortran = field(h, "fortran_order", what).rfind("True", 0) == 0;
  std::string s = field(h, "shape", what);
  if (s.empty() || s[0] != '(') bad(what, "shape is not a tuple");
  size_t close = s.find(')');
  if (close == std::string::npos) bad(what, "shape is not terminated");
  std::string inner = s.substr(1, close - 1);
  size_t pos = 0;
  while (pos < inner.size()) {
    size_t digits = inner.find_first_of("0123456789", pos);
    if (digits == std::string::npos) break;
    if (inner.find_first_not_of(" ,", pos) != digits)
      bad(what, "shape holds something other than sizes");
    size_t stop = inner.find_first_not_of("0123456789", digits);
    std::string num =
        inner.substr(digits, stop == std::string::npos ? std::string::npos : stop - digits);
    if (num.size() > 12) bad(what, "a dimension is too large");
    out.shape.push_back(std::stoll(num));
    pos = stop == std::string::npos ? inner.size() : stop;
  }
  return out;
}

DType dtype_of_descr(const std::string& descr, const std::string& what) {
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '='))
    bad(what, fmt::format("dtype '{}' is not little-endian or not supported", descr));
  std::string kind = descr.substr(1);
  if (kind == "f2") return DType::f16;
  if (kind == "f4") return DType::f32;
  if (kind == "f8") return DType::f64;
  if (kind == "i1") return DType::i8;
  if (kind == "i4") return DType::i32;
  if (kind == "i8") return DType::i64;
  if (kind == "b1") return DType::boolean;
  bad(what, fmt::format("dtype '{}' is not supported (f2, f4, f8, i1, i4, i8, b1 are)", descr));
}

std::string descr_of(DType t) {
  switch (t) {
    case DType::f16:
      return "<f2";
    case DType::f32:
    case DType::bf16:
      return "<f4";
    case DType::f64:
      return "<f8";
    case DType::i8:
      return "|i1";
    case DType::i32:
      return "<i4";
    case DType::i64:
      return "<i8";
    case DType::boolean:
      return "|b1";
  }
  return "";
}

}  // namespace

ir::HostTensor parse_npy(const std::string& bytes, const std::string& what) {
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    bad(what, "it does not start with the NumPy magic string");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t len_size = major == 1 ? 2 : 4;
  if (major < 1 || major > 3) bad(what, fmt::format("format version {} is not supported", major));
  if (bytes.size() < 8 + len_size) bad(what, "it is truncated in the header");
  size_t header_len = 0;
  for (size_t i = 0; i < len_size; ++i)
    header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  size_t data_start = 8 + len_size + header_len;
  if (bytes.size() < data_start) bad(what, "it is truncated in the header");
  Header h = parse_header(bytes.substr(8 + len_size, header_len), what);
  DType dtype = dtype_of_descr(h.descr, what);
  int64_t numel = 1, nonzero = 1;  // bounding nonzero dims keeps strides of empty arrays in range
  for (int64_t d : h.shape) {
    if (d > 0 && (__builtin_mul_overflow(nonzero, d, &nonzero) || nonzero > kMaxElements))
      bad(what, "it has too many elements");
    numel *= d;
  }
  if (h.fortran && h.shape.size() > 1)
    bad(what, "Fortran-ordered arrays are not supported (save np.ascontiguousarray(x))");
  size_t nbytes = static_cast<size_t>(numel) * ir::dtype_size(dtype);
  if (bytes.size() - data_start != nbytes)
    bad(what, fmt::format("{} data bytes for {}{} need {}", bytes.size() - data_start, h.descr,
                          ir::Shape(h.shape).str(), nbytes));
  ir::HostTensor t(dtype, ir::Shape(h.shape));
  if (nbytes) std::memcpy(t.raw(), bytes.data() + data_start, nbytes);
  if (dtype == DType::boolean)
    for (int64_t i = 0; i < numel; ++i) t.data<bool>()[i] = bytes[data_start + i] != 0;
  return t;
}

ir::HostTensor read_npy(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw IoError(fmt::format("cannot read '{}': it is a directory, not a .npy file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, fmt::format("'{}'", path));
}

std::string npy_bytes(const ir::HostTensor& t) {
  ir::HostTensor data = t;
  if (t.dtype() == DType::bf16) {
    data = ir::HostTensor(DType::f32, t.shape());
    numeric::bf16_to_f32(static_cast<const uint16_t*>(t.raw()), data.data<float>(), t.numel());
  }
  // Python tuple syntax: "()", "(2,)", "(2, 3)".
  std::string shape = fmt::format("{}", fmt::join(t.shape().dims(), ", "));
  if (t.shape().rank() == 1) shape += ",";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                   descr_of(data.dtype()), shape);
  size_t total = kMagicSize + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, kMagicSize);
  out += std::string("\x01\x00", 2);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(static_cast<const char*>(data.raw()), data.nbytes());
  return out;
}

void write_npy(const std::string& path, const ir::HostTensor& t) {
  std::string bytes = npy_bytes(t);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw IoError(fmt::format("writing '{}' failed", path));
}

}  // namespace mimic
