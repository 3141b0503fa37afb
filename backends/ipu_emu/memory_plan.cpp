#include "backends/ipu_emu/memory_plan.h"

#include <array>
#include <bitset>
#include <unordered_map>

namespace mimic::backends::ipu_emu {
namespace {

using models::ipu::IpuSpec;

// Distinct vertex types a tile runs (each costs its code once per tile).
constexpr size_t kMaxVertexKinds = 512;

struct CodeCounts {
  std::vector<uint32_t> compute_sets, exchanges;
  std::vector<uint64_t> vertices;
  std::vector<std::bitset<kMaxVertexKinds>> kinds;
  explicit CodeCounts(size_t tiles)
      : compute_sets(tiles), exchanges(tiles), vertices(tiles), kinds(tiles) {}
};

// Vertex state: the vertices of a batch run on the tile's worker contexts as Poplar's
// MultiVertex (one state shared by the workers it runs on), so a batch of n vertices holds
// ceil(n / workers) states.
void count_code(const LoweredOp& op, uint32_t workers, CodeCounts& cc,
                std::unordered_map<uint64_t, size_t>& kind_ids) {
  for (const auto& s : op.steps) {
    for (const auto& g : s.exchange)
      for (uint32_t t = g.first_tile; t < g.first_tile + g.tile_count; ++t) ++cc.exchanges[t];
    for (const auto& g : s.compute) {
      // A fused op's vertices are the next op's expression vertex: one compute set, one state.
      if (op.fused_into_next) break;
      uint64_t vertices = 0;
      std::vector<size_t> ids;
      for (const auto& b : g.vertices) {
        vertices += ceil_div(b.count, workers);
        uint64_t key = (uint64_t(s.label) << 16) | (uint64_t(b.work.cls) << 8) |
                       (uint64_t(b.work.format) << 4) | uint64_t(b.work.partials);
        auto it = kind_ids.emplace(key, kind_ids.size() % kMaxVertexKinds).first;
        ids.push_back(it->second);
      }
      for (uint32_t t = g.first_tile; t < g.first_tile + g.tile_count; ++t) {
        ++cc.compute_sets[t];
        cc.vertices[t] += vertices;
        for (size_t id : ids) cc.kinds[t].set(id);
      }
    }
  }
}

using Live = std::vector<std::array<uint64_t, kTensorCategories>>;

void add_buffer(std::vector<uint64_t>& total, Live& live, const Buffer& b, bool add) {
  uint32_t tiles = static_cast<uint32_t>(total.size());
  uint64_t bytes = b.place.bytes_per_tile * b.copies;
  size_t cat = static_cast<size_t>(b.category);
  for_each_range(b.place.span, tiles, [&](uint32_t first, uint32_t count) {
    for (uint32_t t = first; t < first + count; ++t) {
      total[t] = add ? total[t] + bytes : total[t] - bytes;
      live[t][cat] = add ? live[t][cat] + bytes : live[t][cat] - bytes;
    }
  });
}

void record_peak(TileMemory& m, const std::array<uint64_t, kTensorCategories>& live) {
  std::copy(live.begin(), live.end(), m.live);
  m.activations = 0;
  for (size_t c = 0; c < kTensorCategories; ++c)
    if (c != static_cast<size_t>(Category::weight)) m.activations += live[c];
}

bool in_span(const TileSpan& s, uint32_t t, uint32_t tiles) {
  return s.count && (t + tiles - s.first % tiles) % tiles < s.count;
}

void add_on_span(std::vector<uint64_t>& v, const TileSpan& s, uint64_t bytes, bool add) {
  uint32_t tiles = static_cast<uint32_t>(v.size());
  for_each_range(s, tiles, [&](uint32_t first, uint32_t count) {
    for (uint32_t t = first; t < first + count; ++t) v[t] = add ? v[t] + bytes : v[t] - bytes;
  });
}

}  // namespace

const char* category_name(Category c) {
  static const char* names[kTensorCategories] = {
      "activation",      "data",   "gradient",          "gradient_accumulator",
      "optimizer_state", "buffer", "saved_activations", "weight"};
  return names[static_cast<size_t>(c)];
}

IpuMemoryPlan plan_memory(const IpuSpec& specs, const MemoryInputs& in) {
  uint32_t tiles = static_cast<uint32_t>(specs.tiles);
  IpuMemoryPlan plan;
  plan.tiles.assign(tiles, TileMemory{});
  CodeCounts cc(tiles);
  std::unordered_map<uint64_t, size_t> kind_ids;
  std::vector<uint64_t> weights(tiles, 0);
  for (const LoweredOp* op : in.ops) {
    count_code(*op, static_cast<uint32_t>(specs.worker_contexts), cc, kind_ids);
    for (const auto& [v, p] : op->stored) add_on_span(weights, p.span, p.bytes_per_tile, true);
  }
  // Sweep the program: add buffers as they are produced, measure, drop them after their last use.
  int n = static_cast<int>(in.ops.size());
  std::vector<std::vector<const Buffer*>> born(n + 1), dying(n + 1);
  std::vector<uint64_t> live(tiles, 0), peak(tiles, 0);
  Live cats(tiles);
  for (const Buffer& b : in.buffers) {
    if (b.stashed) plan.stashed_bytes += b.place.bytes_per_tile * b.place.span.count * b.copies;
    if (b.first_op < 0)
      add_buffer(live, cats, b, true);
    else if (b.first_op < n)
      born[b.first_op].push_back(&b);
    int last = std::max(b.last_op, b.first_op);
    if (last >= 0 && last < n) dying[last].push_back(&b);
  }
  for (uint32_t t = 0; t < tiles; ++t) {
    peak[t] = live[t];
    record_peak(plan.tiles[t], cats[t]);
  }
  for (int i = 0; i < n; ++i) {
    for (const Buffer* b : born[i]) add_buffer(live, cats, *b, true);
    const LoweredOp& op = *in.ops[i];
    uint64_t temps = op.temp_exchange + op.temp_partials;
    for (uint32_t t = 0; t < tiles; ++t) {
      bool on = temps && in_span(op.temp_span, t, tiles);
      uint64_t cur = live[t] + (on ? temps : 0);
      if (cur > peak[t]) {
        peak[t] = cur;
        TileMemory& m = plan.tiles[t];
        record_peak(m, cats[t]);
        m.exchange = on ? op.temp_exchange : 0;
        m.partials = on ? op.temp_partials : 0;
        m.peak_op = i;
      }
    }
    for (const Buffer* b : dying[i]) add_buffer(live, cats, *b, false);
  }
  for (uint32_t t = 0; t < tiles; ++t) {
    TileMemory& m = plan.tiles[t];
    // Resident parameters of a training step are weights, like constants.
    uint64_t& params = m.live[static_cast<size_t>(Category::weight)];
    m.weights = weights[t] + params;
    params = m.weights;
    m.code = specs.tile_base_code_bytes + cc.compute_sets[t] * specs.compute_set_code_bytes +
             cc.exchanges[t] * specs.exchange_code_bytes +
             cc.kinds[t].count() * specs.vertex_code_bytes;
    m.vertex_state = cc.vertices[t] * specs.vertex_state_bytes;
    if (m.total() > plan.fullest_bytes || t == 0) {
      plan.fullest_bytes = m.total();
      plan.fullest_tile = t;
    }
  }
  return plan;
}

}  // namespace mimic::backends::ipu_emu
