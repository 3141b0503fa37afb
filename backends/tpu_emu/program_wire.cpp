#include "backends/tpu_emu/program_wire.h"

#include <fmt/format.h>
#include <type_traits>

#include "base/error.h"

namespace mimic::backends::tpu_emu {

using namespace models::tpu;

static_assert(std::is_trivially_copyable_v<Instruction>);
static_assert(std::is_trivially_copyable_v<GemmDesc>);
static_assert(std::is_trivially_copyable_v<Window>);
static_assert(std::is_trivially_copyable_v<Epilogue>);

namespace {

void write_vec(wire::Writer& w, const VectorDesc& d) {
  w.pod(d.func);
  w.pod(d.p0);
  w.pod(d.p1);
  w.pods(d.in);
  w.pod(d.out);
  w.pods(d.dims);
  w.u64(d.in_strides.size());
  for (const auto& s : d.in_strides) w.pods(s);
  w.pods(d.out_strides);
  w.pods(d.in_offsets);
  w.i64(d.out_offset);
  w.i64(d.outer);
  w.i64(d.axis);
  w.i64(d.inner);
  w.pod(d.epsilon);
  w.pod(d.window);
  w.pod(d.epi);
}

VectorDesc read_vec(wire::Reader& r) {
  VectorDesc d;
  d.func = r.pod<VectorFunc>();
  d.p0 = r.pod<float>();
  d.p1 = r.pod<float>();
  d.in = r.pods<int32_t>();
  d.out = r.pod<int32_t>();
  d.dims = r.pods<int64_t>();
  uint64_t n = r.u64();
  if (n > 16) throw RuntimeError("tpu program: too many vector inputs");
  for (uint64_t i = 0; i < n; ++i) d.in_strides.push_back(r.pods<int64_t>());
  d.out_strides = r.pods<int64_t>();
  d.in_offsets = r.pods<int64_t>();
  d.out_offset = r.i64();
  d.outer = r.i64();
  d.axis = r.i64();
  d.inner = r.i64();
  d.epsilon = r.pod<float>();
  d.window = r.pod<Window>();
  d.epi = r.pod<Epilogue>();
  return d;
}

// Checks the references a corrupt or inconsistent program could get wrong before anything uses
// them.
void check(const Program& p) {
  const int64_t nt = static_cast<int64_t>(p.tensors.size());
  auto tensor_ok = [&](int32_t t, bool optional) {
    return (optional && t < 0) || (t >= 0 && t < nt);
  };
  for (const TensorInfo& t : p.tensors)
    if (t.alias_of >= nt)
      throw RuntimeError(fmt::format("tpu program: tensor '{}' aliases a missing tensor", t.name));
  for (const Kernel& k : p.kernels) {
    bool ok = k.op >= -1 && k.op < static_cast<int32_t>(p.ops.size());
    if (k.kind == KernelKind::gemm)
      ok = ok && tensor_ok(k.gemm.a, false) && tensor_ok(k.gemm.w, false) &&
           tensor_ok(k.gemm.y, false) && tensor_ok(k.gemm.epi.bias, true) &&
           tensor_ok(k.gemm.epi.residual, true);
    else {
      ok = ok && tensor_ok(k.vec.out, false) && k.vec.in_strides.size() <= k.vec.in.size();
      for (int32_t t : k.vec.in) ok = ok && tensor_ok(t, true);
      for (const auto& s : k.vec.in_strides) ok = ok && s.size() == k.vec.dims.size();
      ok = ok && (k.vec.out_strides.empty() || k.vec.out_strides.size() == k.vec.dims.size());
    }
    if (!ok) throw RuntimeError("tpu program: a kernel refers to a missing tensor or op");
  }
  for (const Instruction& in : p.instructions)
    if (in.kernel < -1 || in.kernel >= static_cast<int32_t>(p.kernels.size()))
      throw RuntimeError("tpu program: an instruction refers to a missing kernel");
  for (int32_t t : p.inputs)
    if (!tensor_ok(t, false)) throw RuntimeError("tpu program: bad input tensor");
  for (int32_t t : p.outputs)
    if (!tensor_ok(t, false)) throw RuntimeError("tpu program: bad output tensor");
  for (int32_t t : p.constants)
    if (!tensor_ok(t, false)) throw RuntimeError("tpu program: bad constant tensor");
}

}  // namespace

void write_program(wire::Writer& w, const Program& p) {
  w.str(p.name);
  w.str(p.precision);
  w.i64(p.passes);
  w.pod(p.numerics);
  w.u64(p.tensors.size());
  for (const TensorInfo& t : p.tensors) {
    w.str(t.name);
    w.pods(t.dims);
    w.pod(t.home);
    w.pod(t.alias_of);
    w.boolean(t.constant);
    w.u64(t.address);
  }
  w.u64(p.kernels.size());
  for (const Kernel& k : p.kernels) {
    w.pod(k.kind);
    w.pod(k.op);
    if (k.kind == KernelKind::gemm)
      w.pod(k.gemm);
    else
      write_vec(w, k.vec);
  }
  w.pods(p.instructions);
  w.pods(p.deps);
  w.u64(p.ops.size());
  for (const OpInfo& o : p.ops) {
    w.str(o.node);
    w.str(o.op_type);
    w.str(o.shapes);
    w.str(o.dtype);
    w.i64(o.flops);
    w.i64(o.bytes_in);
    w.i64(o.bytes_out);
    w.str(o.phase);
    w.i64(o.gradient_bytes);
    w.boolean(o.reads_gradients);
  }
  w.pods(p.inputs);
  w.pods(p.outputs);
  w.pods(p.constants);
  w.pods(p.resident_onchip_bytes);
  w.i64(p.replicas);
}

Program read_program(wire::Reader& r) {
  Program p;
  p.name = r.str();
  p.precision = r.str();
  p.passes = r.i64();
  p.numerics = r.pod<MatrixNumerics>();
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    TensorInfo t;
    t.name = r.str();
    t.dims = r.pods<int64_t>();
    t.home = r.pod<Level>();
    t.alias_of = r.pod<int32_t>();
    t.constant = r.boolean();
    t.address = r.u64();
    for (int64_t d : t.dims)
      if (d < 0)
        throw RuntimeError(
            fmt::format("tpu program: tensor '{}' has a negative dimension", t.name));
    p.tensors.push_back(std::move(t));
  }
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    Kernel k;
    k.kind = r.pod<KernelKind>();
    k.op = r.pod<int32_t>();
    if (k.kind == KernelKind::gemm)
      k.gemm = r.pod<GemmDesc>();
    else
      k.vec = read_vec(r);
    p.kernels.push_back(std::move(k));
  }
  p.instructions = r.pods<Instruction>();
  p.deps = r.pods<uint32_t>();
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    OpInfo o;
    o.node = r.str();
    o.op_type = r.str();
    o.shapes = r.str();
    o.dtype = r.str();
    o.flops = r.i64();
    o.bytes_in = r.i64();
    o.bytes_out = r.i64();
    o.phase = r.str();
    o.gradient_bytes = r.i64();
    o.reads_gradients = r.boolean();
    p.ops.push_back(std::move(o));
  }
  p.inputs = r.pods<int32_t>();
  p.outputs = r.pods<int32_t>();
  p.constants = r.pods<int32_t>();
  p.resident_onchip_bytes = r.pods<int64_t>();
  p.replicas = r.i64();
  if (p.replicas < 1) throw RuntimeError(fmt::format("tpu program: {} replicas", p.replicas));
  check(p);
  return p;
}

}  // namespace mimic::backends::tpu_emu
