#include "frontend/api/npz.h"

#include <fmt/format.h>
#include <filesystem>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "base/error.h"
#include "frontend/api/npy.h"

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

// Writes `bytes` to path + ".partial" and renames it over `path` once complete, so that a failed
// write (a full disk) leaves the previous file as it was.
void write_replacing(const std::string& path, const std::string& bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw IoError(
        fmt::format("npz: cannot write '{}': it is a directory (give a file name, "
                    "e.g. checkpoint.npz)",
                    path));
  const std::string partial = path + ".partial";
  std::FILE* f = std::fopen(partial.c_str(), "wb");
  if (!f)
    throw IoError(
        fmt::format("npz: cannot open '{}' for writing: {}", partial, std::strerror(errno)));
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int error = written == bytes.size() ? 0 : errno;
  if (std::fflush(f) != 0 && !error) error = errno;
  if (std::fclose(f) != 0 && !error) error = errno;
  if (!error && std::rename(partial.c_str(), path.c_str()) != 0) error = errno;
  if (!error) return;
  std::remove(partial.c_str());
  throw IoError(
      fmt::format("npz: writing '{}' failed after {} of {} bytes: {}{}; the file there "
                  "before is unchanged",
                  path, written, bytes.size(), std::strerror(error),
                  error == ENOSPC ? " (the disk is full)" : ""));
}

}  // namespace

void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, ir::HostTensor>>& tensors) {
  std::string zip, central;
  for (const auto& [name, t] : tensors) {
    std::string data = npy_bytes(t), file = name + ".npy";
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
  write_replacing(path, zip);
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
