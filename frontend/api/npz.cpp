#include "frontend/api/npz.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <fstream>
#include <sstream>

#include "frontend/ir/error.h"

namespace mimic {
namespace {

uint32_t crc32(const std::string& data) {  // IEEE 802.3 polynomial, as zip uses
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void put(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t get(const std::string& s, size_t at, int bytes, const std::string& what) {
  if (at + bytes > s.size()) throw IoError(fmt::format("{}: truncated", what));
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

const char* descr(ir::DType t) {
  switch (t) {
    case ir::DType::f32:
      return "<f4";
    case ir::DType::f64:
      return "<f8";
    case ir::DType::i32:
      return "<i4";
    case ir::DType::i64:
      return "<i8";
    default:
      return nullptr;
  }
}

std::string npy_bytes(const std::string& name, const ir::HostTensor& t) {
  const char* d = descr(t.dtype());
  if (!d)
    throw IoError(fmt::format("npz: tensor '{}' has dtype {}, not one of f32 f64 i32 i64", name,
                              ir::dtype_name(t.dtype())));
  std::string shape;
  for (int64_t v : t.shape().dims()) shape += std::to_string(v) + ", ";
  if (t.shape().rank() > 1)
    shape.resize(shape.size() - 2);
  else if (t.shape().rank() == 1)
    shape.resize(shape.size() - 1);
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", d, shape);
  while ((10 + header.size() + 1) % 64) header.push_back(' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  put(out, header.size(), 2);
  out += header;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

ir::HostTensor parse_npy(const std::string& s, const std::string& what) {
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0)
    throw IoError(fmt::format("{}: not a .npy entry", what));
  int major = static_cast<unsigned char>(s[6]);
  size_t len_bytes = major == 1 ? 2 : 4, start = 8 + len_bytes;
  size_t hlen = get(s, 8, static_cast<int>(len_bytes), what);
  if (start + hlen > s.size()) throw IoError(fmt::format("{}: truncated header", what));
  std::string h = s.substr(start, hlen);
  auto field = [&](const std::string& key) {
    size_t k = h.find("'" + key + "'");
    if (k == std::string::npos) throw IoError(fmt::format("{}: header has no '{}'", what, key));
    return h.substr(h.find(':', k) + 1);
  };
  std::string d = field("descr");
  d = d.substr(d.find('\'') + 1);
  d = d.substr(0, d.find('\''));
  std::string order = field("fortran_order");
  if (order.substr(0, order.find(',')).find("True") != std::string::npos)
    throw IoError(fmt::format("{}: Fortran-ordered arrays are not supported", what));
  std::string sh = field("shape");
  sh = sh.substr(sh.find('(') + 1, sh.find(')') - sh.find('(') - 1);
  std::vector<int64_t> dims;
  std::stringstream ss(sh);
  for (std::string tok; std::getline(ss, tok, ',');)
    if (tok.find_first_not_of(' ') != std::string::npos) dims.push_back(std::stoll(tok));
  ir::DType t;
  if (d == "<f4")
    t = ir::DType::f32;
  else if (d == "<f8")
    t = ir::DType::f64;
  else if (d == "<i4")
    t = ir::DType::i32;
  else if (d == "<i8")
    t = ir::DType::i64;
  else
    throw IoError(fmt::format("{}: dtype '{}' is not one of <f4 <f8 <i4 <i8", what, d));
  ir::HostTensor out(t, ir::Shape(dims));
  if (s.size() - start - hlen != out.nbytes())
    throw IoError(fmt::format("{}: {} data bytes, shape {} needs {}", what, s.size() - start - hlen,
                              out.shape().str(), out.nbytes()));
  std::memcpy(out.raw(), s.data() + start + hlen, out.nbytes());
  return out;
}

}  // namespace

void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, ir::HostTensor>>& tensors) {
  std::string zip, central;
  for (const auto& [name, t] : tensors) {
    std::string data = npy_bytes(name, t), file = name + ".npy";
    if (data.size() >= 0xFFFFFFFFu)
      throw IoError(fmt::format("npz: tensor '{}' exceeds 4 GiB", name));
    uint32_t crc = crc32(data);
    size_t offset = zip.size();
    auto common = [&](std::string& s) {
      put(s, 20, 2), put(s, 0, 2), put(s, 0, 2), put(s, 0, 2),
          put(s, 0x21, 2);  // version, flags, stored, time, date
      put(s, crc, 4), put(s, data.size(), 4), put(s, data.size(), 4), put(s, file.size(), 2),
          put(s, 0, 2);
    };
    put(zip, 0x04034b50, 4);
    common(zip);
    zip += file + data;
    put(central, 0x02014b50, 4);
    put(central, 20, 2);
    common(central);
    put(central, 0, 2), put(central, 0, 2), put(central, 0, 2), put(central, 0, 4),
        put(central, offset, 4);
    central += file;
  }
  size_t cd_offset = zip.size();
  zip += central;
  put(zip, 0x06054b50, 4), put(zip, 0, 2), put(zip, 0, 2), put(zip, tensors.size(), 2),
      put(zip, tensors.size(), 2);
  put(zip, central.size(), 4), put(zip, cd_offset, 4), put(zip, 0, 2);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw IoError(fmt::format("npz: cannot open '{}' for writing", path));
  f.write(zip.data(), static_cast<std::streamsize>(zip.size()));
  if (!f) throw IoError(fmt::format("npz: failed writing '{}'", path));
}

std::vector<std::pair<std::string, ir::HostTensor>> read_npz(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError(fmt::format("npz: cannot open '{}'", path));
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t end = s.size() >= 22 ? s.size() - 22 : std::string::npos;
  while (end != std::string::npos && get(s, end, 4, path) != 0x06054b50)
    end = end ? end - 1 : std::string::npos;
  if (end == std::string::npos) throw IoError(fmt::format("npz: '{}' is not a zip archive", path));
  size_t count = get(s, end + 10, 2, path), at = get(s, end + 16, 4, path);
  std::vector<std::pair<std::string, ir::HostTensor>> out;
  for (size_t i = 0; i < count; ++i) {
    if (get(s, at, 4, path) != 0x02014b50)
      throw IoError(fmt::format("npz: '{}': bad central directory", path));
    size_t method = get(s, at + 10, 2, path), size = get(s, at + 20, 4, path);
    size_t name_len = get(s, at + 28, 2, path), extra = get(s, at + 30, 2, path),
           comment = get(s, at + 32, 2, path);
    size_t local = get(s, at + 42, 4, path);
    std::string file = s.substr(at + 46, name_len);
    std::string what = fmt::format("npz: '{}' entry '{}'", path, file);
    if (method != 0)
      throw IoError(what + ": compressed (save with np.savez, not np.savez_compressed)");
    size_t data = local + 30 + get(s, local + 26, 2, what) + get(s, local + 28, 2, what);
    if (data + size > s.size()) throw IoError(what + ": truncated");
    std::string name = file.size() > 4 && file.compare(file.size() - 4, 4, ".npy") == 0
                           ? file.substr(0, file.size() - 4)
                           : file;
    out.emplace_back(name, parse_npy(s.substr(data, size), what));
    at += 46 + name_len + extra + comment;
  }
  return out;
}

}  // namespace mimic
