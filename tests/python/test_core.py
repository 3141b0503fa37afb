"""The mimic Python module: numpy round trips, eager ops, nn modules, compile, zoo, errors."""
import numpy as np
import pytest

import mimic


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32, np.int64, np.bool_])
def test_numpy_round_trip_every_dtype(dtype):
    rng = np.random.default_rng(0)
    a = (rng.normal(size=(3, 4)) * 10).astype(dtype)
    t = mimic.tensor(a)
    assert t.shape == (3, 4)
    back = t.numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)


def test_float64_is_stored_as_float32_and_bf16_comes_back_as_float32():
    t = mimic.tensor(np.array([1.5, 2.25]))
    assert t.dtype == "f32"
    b = mimic.cast(t, "bfloat16")
    assert b.dtype == "bf16"
    np.testing.assert_array_equal(b.numpy(), np.array([1.5, 2.25], np.float32))


def test_outputs_share_memory_instead_of_copying():
    exe = mimic.compile(mimic.nn.ReLU(), example_inputs=[np.zeros((2, 2), np.float32)])
    out = exe(np.array([[-1, 2], [3, -4]], np.float32))
    assert out.base is not None  # a view on the result tensor's storage
    np.testing.assert_array_equal(out, [[0, 2], [3, 0]])


def test_eager_ops_match_numpy():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4, 5)).astype(np.float32), rng.normal(size=(5, 3)).astype(np.float32)
    y = mimic.relu(mimic.tensor(a) @ mimic.tensor(b) - 0.5)
    np.testing.assert_allclose(y.numpy(), np.maximum(a @ b - 0.5, 0), rtol=1e-5, atol=1e-6)
    s = mimic.softmax(mimic.tensor(a), axis=1).numpy()
    np.testing.assert_allclose(s, np.exp(a) / np.exp(a).sum(1, keepdims=True), rtol=1e-5)


def test_nn_sequential_compiles_and_reports():
    model = mimic.nn.Sequential(mimic.nn.Linear(8, 16), mimic.nn.ReLU(), mimic.nn.Linear(16, 4))
    exe = mimic.compile(model, device="cpu", example_inputs=[np.zeros((5, 8), np.float32)])
    x = np.random.default_rng(2).normal(size=(5, 8)).astype(np.float32)
    y = exe(x)
    w1, b1 = model[0].weight.numpy(), model[0].bias.numpy()
    w2, b2 = model[2].weight.numpy(), model[2].bias.numpy()
    np.testing.assert_allclose(y, np.maximum(x @ w1 + b1, 0) @ w2 + b2, rtol=1e-4, atol=1e-5)
    report = exe.report
    assert report["device"] == "cpu"
    assert len(report["ops"]) == 5 and all(isinstance(op, dict) for op in report["ops"])
    assert report["ops"][0]["op_type"] == "MatMul"


def test_custom_module_subclass():
    class Block(mimic.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = mimic.nn.Linear(4, 4)

        def forward(self, x):
            return mimic.gelu(self.fc(x)) + x

    block = Block()
    exe = mimic.compile(block, example_inputs=[np.zeros((2, 4), np.float32)])
    assert exe(np.ones((2, 4), np.float32)).shape == (2, 4)
    assert [name for name, _ in block.named_parameters()] == ["fc.weight", "fc.bias"]


def test_zoo_models_run_at_small_sizes():
    m = mimic.zoo.resnet18(batch=2, image_size=32, classes=5)
    assert m.input_shape == (2, 3, 32, 32)
    out = mimic.compile(m)(*m.example_inputs())
    assert out.shape == (2, 5) and np.isfinite(out).all()
    b = mimic.zoo.bert(batch=2, layers=1, hidden=32, heads=2, seq=8, vocab=50)
    assert mimic.compile(b)(*b.example_inputs()).shape == (2, 8, 32)
    assert "resnet50" in mimic.zoo.names()


def test_devices_and_tpu_helpers():
    names = {d.name: d for d in mimic.devices()}
    assert names["cpu"].available
    assert all(d.available or d.reason for d in names.values())
    assert mimic.tpu.is_available() is False
    assert str(mimic.tpu.emulated("v4")) == "tpu-emu:v4"


def test_errors_are_python_exceptions_with_messages():
    with pytest.raises(mimic.InvalidArgument, match="unknown device 'gpu'"):
        mimic.Device("gpu")
    with pytest.raises(ValueError):  # InvalidArgument is also a ValueError
        mimic.zoo.mlp(depth=3)
    with pytest.raises(mimic.ShapeError, match=r"inner dimensions differ: \[2,3\] x \[2,3\]"):
        a = mimic.tensor(np.zeros((2, 3), np.float32))
        a @ a
    with pytest.raises(mimic.DeviceUnavailableError, match="cuda:0"):
        mimic.compile(mimic.zoo.mlp(), device="cuda:0")
    exe = mimic.compile(mimic.nn.ReLU(), example_inputs=[np.zeros((2, 2), np.float32)])
    with pytest.raises(mimic.InvalidArgument, match=r"input 0 'input' must be f32\[2,2\], got f32\[3,2\]"):
        exe(np.zeros((3, 2), np.float32))
    assert issubclass(mimic.OutOfMemoryError, mimic.CompileError)


def test_wrong_argument_types_raise_type_errors():
    with pytest.raises(TypeError):
        mimic.tensor("not an array")
    with pytest.raises(TypeError, match="no mimic equivalent"):
        mimic.tensor(np.zeros(3, np.uint8))
    with pytest.raises(TypeError, match="compile\\(\\) takes"):
        mimic.compile("resnet50")
    with pytest.raises(TypeError, match="device must be"):
        mimic.compile(mimic.zoo.mlp(), device=3)
    with pytest.raises(mimic.InvalidArgument, match="batch must be a positive int"):
        mimic.compile(mimic.zoo.mlp(), batch=0)
    with pytest.raises(TypeError):
        mimic.tensor(np.zeros(2, np.float32)) + "x"


def test_tensor_from_nested_lists_tuples_and_scalars():
    t = mimic.tensor([[1., 2.], [3., 4.]], device="cpu")
    assert t.shape == (2, 2) and t.dtype == "f32"
    np.testing.assert_array_equal(t.numpy(), np.array([[1, 2], [3, 4]], np.float32))
    i = mimic.tensor(((1, 2, 3),))
    assert i.shape == (1, 3) and i.dtype == "i64"
    np.testing.assert_array_equal(i.numpy(), [[1, 2, 3]])
    s = mimic.tensor(2.5)
    assert s.shape == () and s.dtype == "f32"
    assert float(s.numpy()) == 2.5
    b = mimic.tensor([True, False])
    assert b.dtype == "bool"
    np.testing.assert_array_equal((mimic.tensor([[1., 2.]]) * 2.0).numpy(), [[2., 4.]])


@pytest.mark.parametrize("dtype,name,np_dtype", [
    ("float32", "f32", np.float32), (np.float16, "f16", np.float16), ("int64", "i64", np.int64),
    (np.int32, "i32", np.int32), ("int8", "i8", np.int8), ("bool", "bool", np.bool_)])
def test_tensor_dtype_argument_casts_like_numpy(dtype, name, np_dtype):
    t = mimic.tensor([[0, 1], [2, 3]], dtype=dtype)
    assert t.dtype == name
    back = t.numpy()
    assert back.dtype == np_dtype
    np.testing.assert_array_equal(back, np.array([[0, 1], [2, 3]]).astype(np_dtype))
    a = mimic.tensor(np.array([1.7, -2.2]), dtype=dtype)
    np.testing.assert_array_equal(a.numpy(), np.array([1.7, -2.2]).astype(np_dtype))


def test_tensor_bfloat16_rounds_to_nearest_even():
    t = mimic.tensor([1.0, 1.00390625, 1.01171875, 3.14159], dtype="bfloat16")
    assert t.dtype == "bf16"
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0); 1 + 3 * 2^-8 to 1 + 2^-6.
    np.testing.assert_array_equal(t.numpy(), np.array([1.0, 1.0, 1.015625, 3.140625], np.float32))


def test_tensor_rejects_what_numpy_cannot_make_numbers_of():
    with pytest.raises(TypeError, match="not str"):
        mimic.tensor("1.0")
    with pytest.raises(ValueError):
        mimic.tensor([[1., 2.], [3.]])  # ragged
    with pytest.raises(ValueError, match="unknown dtype 'complex7'"):
        mimic.tensor([1.0], dtype="complex7")
    with pytest.raises(TypeError, match="cannot hold dtype f64"):
        mimic.tensor([1.0], dtype="float64")
