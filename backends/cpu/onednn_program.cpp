#include "backends/cpu/onednn_program.h"

#include <algorithm>
#include <cstring>

#include "frontend/ir/host_memory.h"

namespace mimic::backends::cpu::onednn {
namespace {

using dnnl::memory;

memory wrap(const memory::desc& md, ir::HostTensor& t) {
  return memory(md, cpu_engine(), t.raw());
}

// A buffer for `md` from the host cache, owned by `owner`.
memory cached(const memory::desc& md, std::shared_ptr<void>& owner) {
  owner = ir::allocate_host(std::max<size_t>(md.get_size(), 1));
  return memory(md, cpu_engine(), owner.get());
}

// A reorder's work: each element read and written, counted as 4 flops like a Transpose's copy.
int reorder_threads(const memory::desc& to) {
  return threads_for(4.0 * static_cast<double>(to.get_size() / sizeof(float)));
}

dnnl::reorder make_reorder(const memory::desc& from, const memory::desc& to, int threads) {
  ScopedThreads scope(threads);
  return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to));
}

}  // namespace

Program::Reorder::Reorder(const memory::desc& from, const memory::desc& to)
    : threads(reorder_threads(to)), prim(make_reorder(from, to, threads)) {}

void Program::Reorder::execute(dnnl::stream& stream, memory src, memory dst) const {
  ScopedThreads scope(threads);
  prim.execute(stream, src, dst);
  stream.wait();
}

Program::Program(const ir::Graph& g, const std::function<int(int)>& reader_index) : g_(g) {
  step_of_node_.assign(g.num_nodes(), -1);
  blocked_md_.resize(g.num_values());
  plain_md_.resize(g.num_values());
  to_plain_.resize(g.num_values());
  build_steps();
  std::vector<int> last_use(g.num_values(), -1);
  for (int i = 0; i < g.num_nodes(); ++i)
    for (ir::ValueId v : g.node(i).inputs)
      if (v != ir::kNoValue)
        last_use[v] = std::max(last_use[v], in_group(i) ? run_index(i) : reader_index(i));
  for (ir::ValueId v : g.outputs()) last_use[v] = g.num_nodes();
  for (size_t s = 0; s < steps_.size(); ++s) prepare(static_cast<int>(s), last_use);
  // Blocked values read by reference kernels or by the caller get a reorder back to plain.
  std::vector<bool> plain_read(g.num_values(), false);
  for (int i = 0; i < g.num_nodes(); ++i)
    if (!in_group(i))
      for (ir::ValueId v : g.node(i).inputs)
        if (v != ir::kNoValue) plain_read[v] = true;
  for (ir::ValueId v : g.outputs()) plain_read[v] = true;
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (size_t k = 0; k < steps_[s].inputs.size(); ++k)
      if (prepared_[s].inputs[k].via_plain) plain_read[steps_[s].inputs[k].value] = true;
    if (steps_[s].residual && prepared_[s].residual.via_plain)
      plain_read[steps_[s].residual->value] = true;
  }
  for (int v = 0; v < g.num_values(); ++v)
    if (plain_read[v] && blocked_md_[v] != memory::desc())
      to_plain_[v].emplace(blocked_md_[v], plain_md_[v]);
}

void Program::build_steps() {
  LayoutOf producer_md = [this](ir::ValueId v) { return blocked_md_[v]; };
  for (const Group& grp : plan_groups(g_)) {
    std::optional<Step> s = build_step(g_, grp, producer_md);
    if (!s) continue;
    for (int n : grp.nodes) step_of_node_[n] = static_cast<int>(steps_.size());
    if (s->dst_md != s->user_dst_md) {
      blocked_md_[grp.output] = s->dst_md;
      plain_md_[grp.output] = s->user_dst_md;
    }
    steps_.push_back(std::move(*s));
  }
}

Program::Conversion Program::conversion(const RuntimeArg& a) {
  Conversion c;
  // A value written blocked is read from there, unless the step reads it through other strides
  // (a fused Transpose): then from its plain tensor.
  const memory::desc& blocked = blocked_md_[a.value];
  if (blocked != memory::desc() && blocked.dims() == a.md.dims() &&
      a.user_md == plain_md_[a.value]) {
    if (blocked != a.md) c.reorder.emplace(blocked, a.md);
    return c;
  }
  c.via_plain = true;
  if (a.user_md != a.md) c.reorder.emplace(a.user_md, a.md);
  return c;
}

void Program::prepare(int step, const std::vector<int>& last_use) {
  const Step& s = steps_[step];
  Prepared p;
  for (const RuntimeArg& a : s.inputs) p.inputs.push_back(conversion(a));
  if (s.residual) {
    p.residual = conversion(*s.residual);
    ir::ValueId r = s.residual->value;
    bool read_as_input = std::any_of(s.inputs.begin(), s.inputs.end(),
                                     [r](const RuntimeArg& a) { return a.value == r; });
    p.steal_residual = !p.residual.via_plain && !p.residual.reorder && !read_as_input &&
                       last_use[r] == s.group.last() && s.dst_md != s.user_dst_md;
  }
  prepared_.push_back(std::move(p));
}

int Program::transposes_read_in_place() const {
  int n = 0;
  for (const Step& s : steps_) n += (s.group.transposed[0] >= 0) + (s.group.transposed[1] >= 0);
  return n;
}

int Program::weight_gradients() const {
  return static_cast<int>(std::count_if(steps_.begin(), steps_.end(), [](const Step& s) {
    return s.group.wgrad_src != ir::kNoValue;
  }));
}

int Program::run_index(int node) const {
  int s = step_of_node_[node];
  return s < 0 ? node : steps_[s].group.last();
}

bool Program::runs_group(int node) const {
  int s = step_of_node_[node];
  return s >= 0 && steps_[s].group.last() == node;
}

RunState::RunState(std::vector<ir::HostTensor>& plain_values, int num_values)
    : values(plain_values), blocked(num_values), owners(num_values), stream(cpu_engine()) {}

void Program::ensure_plain(ir::ValueId v, RunState& run) const {
  if (run.values[v].defined() || !run.blocked[v]) return;
  run.values[v] = ir::HostTensor::uninitialized(ir::DType::f32, g_.value(v).type.shape);
  memory dst = wrap(plain_md_[v], run.values[v]);
  to_plain_[v]->execute(run.stream, run.blocked[v], dst);
}

memory Program::source(const RuntimeArg& a, const Conversion& c, RunState& run) const {
  memory src;
  if (c.via_plain) {
    ensure_plain(a.value, run);
    src = wrap(a.user_md, run.values[a.value]);
  } else {
    src = run.blocked[a.value];
  }
  if (!c.reorder) return src;
  run.step_temps.emplace_back();
  memory converted = cached(a.md, run.step_temps.back());
  c.reorder->execute(run.stream, src, converted);
  return converted;
}

// The output buffer; for a fused residual Add it already holds the residual.
memory Program::destination(int step, RunState& run) const {
  const Step& s = steps_[step];
  const Prepared& p = prepared_[step];
  if (p.steal_residual) {
    memory dst = run.blocked[s.residual->value];
    run.blocked[s.residual->value] = memory();
    run.dst_owner = std::move(run.owners[s.residual->value]);
    return dst;
  }
  memory dst;
  if (s.dst_md == s.user_dst_md) {
    ir::HostTensor& out = run.values[s.group.output];
    out = ir::HostTensor::uninitialized(ir::DType::f32, g_.value(s.group.output).type.shape);
    dst = wrap(s.dst_md, out);
  } else {
    dst = cached(s.dst_md, run.dst_owner);
  }
  if (s.residual) {
    memory r = source(*s.residual, Conversion{p.residual.via_plain, std::nullopt}, run);
    if (p.residual.reorder)
      p.residual.reorder->execute(run.stream, r, dst);
    else
      std::memcpy(dst.get_data_handle(), r.get_data_handle(), s.dst_md.get_size());
  }
  return dst;
}

void Program::run_group(int node, RunState& run) const {
  int index = step_of_node_[node];
  const Step& s = steps_[index];
  std::unordered_map<int, memory> args = s.constants;
  for (size_t k = 0; k < s.inputs.size(); ++k)
    args[s.inputs[k].arg] = source(s.inputs[k], prepared_[index].inputs[k], run);
  memory dst = destination(index, run);
  args[s.dst_arg] = dst;
  {
    ScopedThreads threads(s.threads);
    s.prim.execute(run.stream, args);
    run.stream.wait();
  }
  if (s.dst_md != s.user_dst_md) {
    run.blocked[s.group.output] = dst;
    run.owners[s.group.output] = std::move(run.dst_owner);
  }
  run.dst_owner.reset();
  run.step_temps.clear();
}

}  // namespace mimic::backends::cpu::onednn
