#include "frontend/cli/scalesim_files.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/error.h"

namespace mimic::cli::scalesim {
namespace {

// SCALE-Sim v2 runs a depthwise layer ('DP' in its name) as one layer per channel; beyond this many
// channels the layer is refused rather than expanded (real networks' widest depthwise layers have a
// few thousand), so a topology's work stays bounded.
constexpr int64_t kMaxDepthwiseChannels = 65536;

std::string strip(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

std::string where(const std::string& path, size_t line) {
  return path + ":" + std::to_string(line);
}

// Python's int() of a stripped field: optional sign, decimal digits (18 at most here).
bool parse_int(const std::string& field, int64_t& out) {
  const std::string s = strip(field);
  size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (i == s.size() || s.size() - i > 18) return false;
  for (size_t k = i; k < s.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
  out = std::stoll(s.substr(i));
  if (s[0] == '-') out = -out;
  return true;
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw IoError("cannot read '" + path + "': a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// configparser's view of the file: section -> lowercased key -> (value, line).
struct Entry {
  std::string value;
  size_t line;
};
using Sections = std::map<std::string, std::map<std::string, Entry>>;

Sections parse_ini(const std::string& text, const std::string& path) {
  Sections sections;
  std::string section;
  const auto lines = split_lines(text);
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string s = strip(lines[n]);
    if (s.empty() || s[0] == '#' || s[0] == ';') continue;
    if (s.front() == '[' && s.back() == ']' && s.size() > 2) {
      section = s.substr(1, s.size() - 2);
      if (!sections.emplace(section, std::map<std::string, Entry>{}).second)
        throw IoError(where(path, n + 1) + ": section [" + section + "] appears twice");
      continue;
    }
    const size_t eq = s.find_first_of("=:");
    if (eq == std::string::npos || strip(s.substr(0, eq)).empty())
      throw IoError(where(path, n + 1) + ": expected 'key = value' or '[section]', got '" + s +
                    "'");
    if (section.empty())
      throw IoError(where(path, n + 1) + ": '" + s + "' comes before any [section]");
    const std::string key = lower(strip(s.substr(0, eq)));
    if (!sections[section].emplace(key, Entry{strip(s.substr(eq + 1)), n + 1}).second)
      throw IoError(where(path, n + 1) + ": [" + section + "] " + key + " appears twice");
  }
  return sections;
}

class ConfigReader {
 public:
  ConfigReader(const Sections& s, const std::string& path) : s_(s), path_(path) {}
  const Entry& get(const std::string& section, const std::string& key) const {
    auto sec = s_.find(section);
    if (sec == s_.end()) throw IoError(path_ + ": no [" + section + "] section");
    auto it = sec->second.find(lower(key));
    if (it == sec->second.end()) throw IoError(path_ + ": [" + section + "] has no " + key);
    return it->second;
  }
  int64_t integer(const std::string& section, const std::string& key, int64_t min) const {
    const Entry& e = get(section, key);
    int64_t v = 0;
    if (!parse_int(e.value, v))
      throw IoError(where(path_, e.line) + ": [" + section + "] " + key + ": '" + e.value +
                    "' is not an integer");
    if (v < min)
      throw InvalidArgument(where(path_, e.line) + ": [" + section + "] " + key +
                            " must be >= " + std::to_string(min) + ", got " + std::to_string(v));
    return v;
  }

 private:
  const Sections& s_;
  std::string path_;
};

models::tpu::Dataflow parse_dataflow(const Entry& e, const std::string& path) {
  if (e.value == "os") return models::tpu::Dataflow::output_stationary;
  if (e.value == "ws") return models::tpu::Dataflow::weight_stationary;
  if (e.value == "is") return models::tpu::Dataflow::input_stationary;
  throw InvalidArgument(where(path, e.line) + ": [architecture_presets] Dataflow: '" + e.value +
                        "' is not os, ws or is");
}

void read_user_bandwidths(const ConfigReader& r, const std::string& path, Config& c) {
  const Entry& e = r.get("architecture_presets", "Bandwidth");
  std::stringstream ss(e.value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int64_t v = 0;
    if (!parse_int(item, v) || v < 1)
      throw IoError(where(path, e.line) + ": [architecture_presets] Bandwidth: '" + strip(item) +
                    "' is not a positive integer");
    c.bandwidths.push_back(v);
  }
  if (c.bandwidths.empty())
    throw IoError(where(path, e.line) + ": [architecture_presets] Bandwidth: '" + e.value +
                  "' is not a positive integer");
  // SCALE-Sim's USER mode gives all three buffers the first value.
  c.arch.user_bandwidth = c.bandwidths[0];
}

const char* const kConvFields[] = {"Layer name",    "IFMAP Height", "IFMAP Width",
                                   "Filter Height", "Filter Width", "Channels",
                                   "Num Filter",    "Strides",      "Stride width"};
const char* const kGemmFields[] = {"Layer", "M", "N", "K"};

int64_t field_int(const std::vector<std::string>& f, size_t i, const char* name,
                  const std::string& at) {
  int64_t v = 0;
  if (!parse_int(f[i], v))
    throw IoError(at + ": " + name + ": '" + strip(f[i]) + "' is not an integer");
  if (v < 1) throw InvalidArgument(at + ": " + name + " must be >= 1, got " + std::to_string(v));
  return v;
}

void add_conv_layer(const std::vector<std::string>& f, const std::string& at,
                    std::vector<ss::Layer>& out) {
  if (f.size() != 8 && f.size() != 9)
    throw IoError(at +
                  ": expected 8 or 9 fields (Layer name, IFMAP Height, IFMAP Width, Filter Height, "
                  "Filter Width, Channels, Num Filter, Strides[, Stride width]), got " +
                  std::to_string(f.size()));
  ss::Layer l;
  l.name = strip(f[0]);
  int64_t v[8];
  for (size_t i = 1; i < f.size(); ++i) v[i - 1] = field_int(f, i, kConvFields[i], at);
  if (f.size() == 8) v[7] = v[6];
  l.ifmap_h = v[0], l.ifmap_w = v[1], l.filter_h = v[2], l.filter_w = v[3];
  l.channels = v[4], l.num_filters = v[5], l.stride_h = v[6], l.stride_w = v[7];
  if (l.filter_h > l.ifmap_h || l.filter_w > l.ifmap_w)
    throw InvalidArgument(at + ": layer '" + l.name + "': filter " + std::to_string(l.filter_h) +
                          "x" + std::to_string(l.filter_w) + " is larger than the ifmap " +
                          std::to_string(l.ifmap_h) + "x" + std::to_string(l.ifmap_w));
  if (l.name.find("DP") == std::string::npos) {
    out.push_back(l);
    return;
  }
  const int64_t channels = l.channels;
  const std::string base = l.name;
  if (channels > kMaxDepthwiseChannels)
    throw InvalidArgument(at + ": layer '" + base +
                          "': a depthwise layer ('DP' in its name) runs "
                          "as one layer per channel in SCALE-Sim v2, and " +
                          std::to_string(channels) + " channels is more than " +
                          std::to_string(kMaxDepthwiseChannels));
  l.channels = 1;
  for (int64_t c = 0; c < channels; ++c) {
    l.name = base + "Channel_" + std::to_string(c);
    out.push_back(l);
  }
}

void add_gemm_layer(const std::vector<std::string>& f, const std::string& at,
                    std::vector<ss::Layer>& out) {
  if (f.size() < 4)
    throw IoError(at + ": expected 4 fields (Layer, M, N, K), got " + std::to_string(f.size()));
  const int64_t m = field_int(f, 1, kGemmFields[1], at), n = field_int(f, 2, kGemmFields[2], at),
                k = field_int(f, 3, kGemmFields[3], at);
  out.push_back({strip(f[0]), m, k, 1, k, 1, n, 1, 1});
}

template <typename T>
std::string row(size_t id, const std::vector<T>& items) {
  std::string s = std::to_string(id);
  for (const T& x : items) s += ", " + x;
  return s + ",\n";
}

std::string py_int_float(int64_t v) {
  return python_float(static_cast<double>(v));
}

}  // namespace

Config parse_config(const std::string& text, const std::string& path) {
  const Sections sections = parse_ini(text, path);
  const ConfigReader r(sections, path);
  Config c;
  const Entry& name = r.get("general", "run_name");
  c.run_name = name.value;
  if (c.run_name.empty() || c.run_name == "." || c.run_name == ".." ||
      c.run_name.find('/') != std::string::npos)
    throw InvalidArgument(where(path, name.line) + ": [general] run_name '" + c.run_name +
                          "' is not a directory name");
  const Entry& mode = r.get("run_presets", "InterfaceBandwidth");
  if (mode.value != "USER" && mode.value != "CALC")
    throw InvalidArgument(where(path, mode.line) + ": [run_presets] InterfaceBandwidth: '" +
                          mode.value + "' is not USER or CALC");
  c.user_bandwidth = mode.value == "USER";
  const std::string a = "architecture_presets";
  c.arch.rows = r.integer(a, "ArrayHeight", 1);
  c.arch.cols = r.integer(a, "ArrayWidth", 1);
  c.arch.ifmap_sram_kb = r.integer(a, "IfmapSramSzkB", 1);
  c.arch.filter_sram_kb = r.integer(a, "FilterSramSzkB", 1);
  c.arch.ofmap_sram_kb = r.integer(a, "OfmapSramSzkB", 1);
  c.arch.ifmap_offset = r.integer(a, "IfmapOffset", 0);
  c.arch.filter_offset = r.integer(a, "FilterOffset", 0);
  c.arch.ofmap_offset = r.integer(a, "OfmapOffset", 0);
  c.arch.dataflow = parse_dataflow(r.get(a, "Dataflow"), path);
  if (c.user_bandwidth) read_user_bandwidths(r, path, c);
  return c;
}

Config read_config(const std::string& path) {
  return parse_config(read_file(path), path);
}

std::vector<ss::Layer> parse_topology(const std::string& text, const std::string& path, bool gemm) {
  std::vector<ss::Layer> layers;
  const auto lines = split_lines(text);
  for (size_t n = 1; n < lines.size(); ++n) {
    const std::string s = strip(lines[n]);
    if (s.empty()) continue;
    std::vector<std::string> fields;
    std::stringstream ss(s);
    std::string f;
    while (std::getline(ss, f, ',')) fields.push_back(f);
    if (s.back() == ',') fields.emplace_back();
    if (!fields.empty() && strip(fields.back()).empty()) fields.pop_back();
    const std::string at = where(path, n + 1);
    gemm ? add_gemm_layer(fields, at, layers) : add_conv_layer(fields, at, layers);
  }
  if (layers.empty()) throw IoError(path + ": no layers (a header line, then one line per layer)");
  return layers;
}

std::vector<ss::Layer> read_topology(const std::string& path, bool gemm) {
  return parse_topology(read_file(path), path, gemm);
}

std::string python_float(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(sci.substr(e + 1));
  const int decpt = exp10 + 1, nd = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    std::string m = digits.substr(0, 1) + (nd > 1 ? "." + digits.substr(1) : "");
    const int ae = std::abs(exp10);
    return sign + m + "e" + (exp10 < 0 ? "-" : "+") + (ae < 10 ? "0" : "") + std::to_string(ae);
  }
  if (decpt <= 0) return sign + "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  if (decpt >= nd) return sign + digits + std::string(static_cast<size_t>(decpt - nd), '0') + ".0";
  return sign + digits.substr(0, static_cast<size_t>(decpt)) + "." +
         digits.substr(static_cast<size_t>(decpt));
}

std::string compute_report(const std::vector<ss::LayerReport>& layers) {
  std::string out =
      "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util "
      "%,\n";
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& r = layers[i];
    out += row<std::string>(i, {std::to_string(r.total_cycles), std::to_string(r.stall_cycles),
                                python_float(r.overall_util_pct), python_float(r.mapping_eff_pct),
                                python_float(r.compute_util_pct)});
  }
  return out;
}

std::string bandwidth_report(const std::vector<ss::LayerReport>& layers) {
  std::string out =
      "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, Avg "
      "FILTER DRAM BW, "
      "Avg OFMAP DRAM BW,\n";
  for (size_t i = 0; i < layers.size(); ++i) {
    std::vector<std::string> items;
    for (double v : layers[i].avg_sram_bw) items.push_back(python_float(v));
    for (double v : layers[i].avg_dram_bw) items.push_back(python_float(v));
    out += row(i, items);
  }
  return out;
}

std::string detailed_access_report(const std::vector<ss::LayerReport>& layers) {
  std::string out = "LayerID, ";
  for (const char* mem : {"SRAM", "DRAM"})
    for (const char* op : {"IFMAP", "Filter", "OFMAP"}) {
      const std::string p = std::string(mem) + " " + op + " ";
      out += p + "Start Cycle, " + p + "Stop Cycle, " + p +
             (std::string(op) == "OFMAP" ? "Writes, " : "Reads, ");
    }
  out.replace(out.size() - 2, 2, ",\n");
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& r = layers[i];
    std::vector<std::string> items;
    const std::pair<ss::Span, int64_t> cols[] = {
        {r.sram_ifmap, r.sram_ifmap_reads},   {r.sram_filter, r.sram_filter_reads},
        {r.sram_ofmap, r.sram_ofmap_writes},  {r.dram_ifmap, r.dram_ifmap_reads},
        {r.dram_filter, r.dram_filter_reads}, {r.dram_ofmap, r.dram_ofmap_writes}};
    for (const auto& [span, count] : cols) {
      items.push_back(py_int_float(span.start));
      items.push_back(py_int_float(span.stop));
      items.push_back(std::to_string(count));
    }
    out += row(i, items);
  }
  return out;
}

}  // namespace mimic::cli::scalesim
