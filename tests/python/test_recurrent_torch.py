"""torch.nn.LSTM/GRU/RNN exported by torch.onnx (opsets 13 and 17) and run by mimic: on the cpu
backend, outputs and final hidden and cell states match PyTorch's; on tpu-emu and ipu-emu they run
unrolled with no cpu fallback; a runtime sequence_lens falls back with the reason recorded."""
import itertools
import os
import warnings

import numpy as np
import pytest

import mimic

try:
    import torch
except ImportError as e:  # Debian's python3-torch is optional
    pytest.skip(f"torch is not importable: {e}", allow_module_level=True)

try:
    import onnx  # torch.onnx.export needs it too
except ImportError as e:
    pytest.skip(f"onnx is not importable (torch.onnx.export needs it): {e}", allow_module_level=True)

SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6
CASES = list(itertools.product(["LSTM", "GRU", "RNN"], [1, 2], [False, True], [False, True], [13, 17]))


def export(module, args, path, opset, output_names):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, path, opset_version=opset, input_names=[f"in{i}" for i in range(len(args))],
                          output_names=output_names)


def as_list(outputs):
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


@pytest.mark.parametrize("kind,layers,bidirectional,batch_first,opset", CASES,
                         ids=[f"{k}-l{l}-{'bi' if b else 'uni'}-{'bf' if f else 'sf'}-op{o}"
                              for k, l, b, f, o in CASES])
def test_torch_recurrent_matches_pytorch(tmp_path, kind, layers, bidirectional, batch_first, opset):
    torch.manual_seed(layers * 7 + opset)
    module = getattr(torch.nn, kind)(INPUT, HIDDEN, num_layers=layers, bidirectional=bidirectional,
                                     batch_first=batch_first).eval()
    shape = (BATCH, SEQ, INPUT) if batch_first else (SEQ, BATCH, INPUT)
    x = torch.randn(*shape)
    names = ["y", "h", "c"] if kind == "LSTM" else ["y", "h"]
    path = os.path.join(tmp_path, f"{kind}.onnx")
    export(module, (x,), path, opset, names)
    with torch.no_grad():
        y, state = module(x)
    want = [y, *state] if kind == "LSTM" else [y, state]
    got = as_list(mimic.compile(mimic.onnx.load(path))(x.numpy()))
    assert len(got) == len(want)
    for name, g, w in zip(names, got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_torch_recurrent_with_initial_state(tmp_path, kind):
    torch.manual_seed(3)
    module = getattr(torch.nn, kind)(INPUT, HIDDEN, num_layers=2, bidirectional=True).eval()
    x = torch.randn(SEQ, BATCH, INPUT)
    h0 = torch.randn(4, BATCH, HIDDEN)
    state = (h0, torch.randn(4, BATCH, HIDDEN)) if kind == "LSTM" else h0
    path = os.path.join(tmp_path, f"{kind}_state.onnx")
    names = ["y", "h", "c"] if kind == "LSTM" else ["y", "h"]
    export(module, (x, state), path, 17, names)
    with torch.no_grad():
        y, out_state = module(x, state)
    want = [y, *out_state] if kind == "LSTM" else [y, out_state]
    inputs = [x.numpy(), *(s.numpy() for s in (state if kind == "LSTM" else (state,)))]
    got = as_list(mimic.compile(mimic.onnx.load(path))(*inputs))
    for name, g, w in zip(names, got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("device,precision", [("tpu-emu:v4", "highest"), ("ipu-emu:gc200", "float32")])
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_torch_recurrent_runs_unrolled_on_emulators(tmp_path, kind, device, precision):
    torch.manual_seed(5)
    module = getattr(torch.nn, kind)(INPUT, HIDDEN, num_layers=2, bidirectional=True, batch_first=True).eval()
    x = torch.randn(BATCH, SEQ, INPUT)
    path = os.path.join(tmp_path, f"{kind}.onnx")
    export(module, (x,), path, 13, ["y"])
    with torch.no_grad():
        y = module(x)[0].numpy()
    exe = mimic.compile(mimic.onnx.load(path), device=device, precision=precision)
    got = as_list(exe(x.numpy()))[0]
    assert exe.compile_report["fallback_reasons"] == []
    assert all(not op["fallback"] for op in exe.report["ops"])
    np.testing.assert_allclose(got, y, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device,precision", [("tpu-emu:v4", "highest"), ("ipu-emu:gc200", "float32")])
def test_runtime_sequence_lens_falls_back_to_cpu_with_the_reason(tmp_path, device, precision):
    from onnx import TensorProto, helper
    hidden, rng = 3, np.random.default_rng(1)
    w = rng.uniform(-1, 1, (1, 4 * hidden, INPUT)).astype(np.float32)
    r = rng.uniform(-1, 1, (1, 4 * hidden, hidden)).astype(np.float32)
    node = helper.make_node("LSTM", ["x", "w", "r", "", "lens"], ["y"], hidden_size=hidden, name="lstm1")
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, INPUT]),
         helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SEQ, 1, BATCH, hidden])],
        [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()),
         helper.make_tensor("r", TensorProto.FLOAT, r.shape, r.ravel())])
    path = os.path.join(tmp_path, "lstm_lens.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    g = mimic.onnx.load(path)
    x = rng.normal(size=(SEQ, BATCH, INPUT)).astype(np.float32)
    lens = np.array([SEQ, 2, 0], dtype=np.int32)
    exe = mimic.compile(g, device=device, precision=precision)
    got = as_list(exe(x, lens))[0]
    reasons = exe.compile_report["fallback_reasons"]
    assert len(reasons) == 1 and reasons[0].startswith("LSTM 'lstm1': ") and "runtime sequence_lens" in reasons[0]
    np.testing.assert_allclose(got, as_list(mimic.compile(g)(x, lens))[0], rtol=0, atol=0)
    assert np.all(got[2:, :, 1] == 0) and np.all(got[:, :, 2] == 0)
