"""Einsum (lowered at import into ReduceSum, Transpose, Reshape and MatMul) against numpy.einsum, and
ScatterND against its ONNX reference semantics, on cpu and the emulated chips at full precision."""
import os

import numpy as np
import pytest

import mimic

try:
    import onnx
    from onnx import TensorProto, helper
except ImportError as e:  # Debian's python3-onnx
    pytest.skip(f"onnx is not importable: {e}", allow_module_level=True)

DEVICES = [("cpu", "default"), ("tpu-emu:v4", "highest"), ("ipu-emu:gc200", "float32")]

# (equation, operand shapes): matmuls, batched attention, outer products, traces of sums,
# transposes, implicit outputs, ellipsis broadcasting, and maxvit's and swin's forms.
EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhid,bhjd->bhij", [(2, 3, 5, 8), (2, 3, 6, 8)]),
    ("bhij,bhjd->bhid", [(2, 3, 5, 6), (2, 3, 6, 8)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(7,), (7,)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ijk->ki", [(2, 3, 4)]),
    ("ba", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("b...d,bnd->b...n", [(2, 3, 4, 8), (2, 5, 8)]),
    ("abc,cd->abd", [(2, 3, 4), (4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("bkl,blm->bk", [(2, 3, 4), (2, 4, 5)]),
    ("nchw,oc->nohw", [(2, 3, 4, 5), (6, 3)]),
]


def run(model, inputs, device, precision):
    return mimic.compile(model, device=device, precision=precision)(*inputs)


def save(tmp_path, node, inputs, output_type, name):
    graph = helper.make_graph([node], name, inputs, [output_type])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(tmp_path, name + ".onnx")
    onnx.save(model, path)
    return mimic.onnx.load(path)


@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
@pytest.mark.parametrize("device,precision", DEVICES, ids=[d for d, _ in DEVICES])
def test_einsum_matches_numpy(tmp_path, equation, shapes, device, precision):
    rng = np.random.default_rng(len(equation))
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = np.einsum(equation, *[x.astype(np.float64) for x in xs])
    names = [f"x{i}" for i in range(len(xs))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, x.shape) for n, x in zip(names, xs)]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    got = np.asarray(run(save(tmp_path, node, inputs, out, "einsum"), xs, device, precision))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


SYMBOLIC = [("bhid,bhjd->bhij", [("N", 3, 5, 8), ("N", 3, 6, 8)]),
            ("bij,bjk->bik", [("N", 3, 4), ("N", 4, 5)]),
            ("abc,cd->abd", [("N", 3, 4), (4, 5)]),
            ("bij->bji", [("N", 3, 4)]),
            ("bij->bi", [("N", 3, 4)])]


@pytest.mark.parametrize("equation,shapes", SYMBOLIC, ids=[e for e, _ in SYMBOLIC])
@pytest.mark.parametrize("device,precision", DEVICES, ids=[d for d, _ in DEVICES])
def test_einsum_with_a_batch_size_unknown_at_import(tmp_path, equation, shapes, device, precision):
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal([2 if d == "N" else d for d in s]).astype(np.float32) for s in shapes]
    names = [f"x{i}" for i in range(len(xs))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes)]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = save(tmp_path, node, inputs, out, "einsum_n")
    got = mimic.compile(model, device=device, precision=precision, batch=2)(*xs)
    np.testing.assert_allclose(np.asarray(got), np.einsum(equation, *xs), rtol=1e-4, atol=1e-4)


def test_einsum_refusals_name_the_reason(tmp_path):
    node = helper.make_node("Einsum", ["x"], ["y"], equation="ii->i")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, (3, 3))]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    with pytest.raises(mimic.UnsupportedOpError, match="diagonal"):
        save(tmp_path, node, inputs, out, "diag")
    node = helper.make_node("Einsum", ["x", "z"], ["y"], equation="ij,jk->ik")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, (3, 4)),
              helper.make_tensor_value_info("z", TensorProto.FLOAT, (5, 6))]
    with pytest.raises(mimic.Error, match="size 4 in one operand and 5"):
        save(tmp_path, node, inputs, out, "mismatch")


def scatter_nd_reference(data, indices, updates, reduction):
    out = data.copy()
    for idx in np.ndindex(indices.shape[:-1]):
        at = tuple(indices[idx])
        if reduction == "add":
            out[at] += updates[idx]
        elif reduction == "mul":
            out[at] *= updates[idx]
        else:
            out[at] = updates[idx]
    return out


SCATTERS = [((4, 5, 6), (3, 1)), ((4, 5, 6), (2, 2)), ((4, 5, 6), (2, 3, 3)), ((8,), (4, 1))]


@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
@pytest.mark.parametrize("data_shape,index_shape", SCATTERS, ids=[f"{d}-{i}" for d, i in SCATTERS])
@pytest.mark.parametrize("device,precision", DEVICES, ids=[d for d, _ in DEVICES])
def test_scatter_nd(tmp_path, data_shape, index_shape, reduction, device, precision):
    rng = np.random.default_rng(sum(data_shape) + sum(index_shape))
    k = index_shape[-1]
    tuples = int(np.prod(index_shape[:-1]))
    # distinct index tuples (repeated ones make reduction=none order-dependent), some negative
    flat = rng.choice(int(np.prod(data_shape[:k])), size=tuples, replace=False)
    indices = np.stack(np.unravel_index(flat, data_shape[:k]), axis=-1).reshape(index_shape).astype(np.int64)
    indices[..., 0] -= data_shape[0] * (indices[..., 0] % 2)
    updates_shape = index_shape[:-1] + data_shape[k:]
    data = rng.standard_normal(data_shape).astype(np.float32)
    updates = rng.standard_normal(updates_shape).astype(np.float32)
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], reduction=reduction)
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, data_shape),
              helper.make_tensor_value_info("indices", TensorProto.INT64, index_shape),
              helper.make_tensor_value_info("updates", TensorProto.FLOAT, updates_shape)]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    got = run(save(tmp_path, node, inputs, out, "scatter"), [data, indices, updates], device, precision)
    want = scatter_nd_reference(data, indices, updates, reduction)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_scatter_nd_out_of_range_index_names_the_node(tmp_path):
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], name="scatter")
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, (4, 3)),
              helper.make_tensor_value_info("indices", TensorProto.INT64, (1, 1)),
              helper.make_tensor_value_info("updates", TensorProto.FLOAT, (1, 3))]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    exe = mimic.compile(save(tmp_path, node, inputs, out, "bad"))
    with pytest.raises(mimic.Error, match="scatter.*index 9 is out of range for axis 0 of size 4"):
        exe(np.zeros((4, 3), np.float32), np.array([[9]], np.int64), np.ones((1, 3), np.float32))
