"""Edge cases a user's data and models reach: empty batches, big-endian arrays, NaN, ties in max
and min (values and gradients, against PyTorch's rules), pre-13 Softmax, Gemm's beta = 0, and the
command line's handling of output names, fixed batches and sweeps whose every point fails."""
import json
import os
import subprocess

import numpy as np
import pytest

import mimic

try:
    import onnx
    from onnx import TensorProto, helper
except ImportError as e:  # Debian's python3-onnx
    pytest.skip(f"onnx is not importable: {e}", allow_module_level=True)

DEVICES = [("cpu", "default"), ("tpu-emu:v4", "highest"), ("ipu-emu:gc200", "float32")]
MIMIC = os.path.join(os.environ.get("MIMIC_BUILD_DIR", "build"), "bin", "mimic")


def save(tmp_path, nodes, inputs, outputs, opset=17, initializers=(), name="model.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path = str(tmp_path / name)
    onnx.save(model, path)
    return path


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def cli(*args):
    return subprocess.run([MIMIC, *map(str, args)], capture_output=True, text=True, timeout=300)


def test_linear_layer_at_batch_zero_runs_on_cpu():
    x = mimic.placeholder("x", [0, 6], np.float32)
    w = mimic.constant(np.ones((6, 4), np.float32))
    b = mimic.constant(np.ones((4,), np.float32))
    graph = mimic.trace_graph([mimic.relu(mimic.matmul(x, w) + b)], "linear")
    assert mimic.compile(graph, "cpu")(np.zeros((0, 6), np.float32)).shape == (0, 4)


@pytest.mark.parametrize("device,precision", DEVICES)
def test_big_endian_arrays_are_read_by_value(device, precision):
    x = mimic.placeholder("x", [2, 3], np.float32)
    exe = mimic.compile(mimic.trace_graph([mimic.relu(x)], "g"), device, precision=precision)
    a = np.array([[0.5, 1, 2], [3, -4, 5]], np.float32)
    np.testing.assert_array_equal(exe(a.astype(">f4")), np.maximum(a, 0))


@pytest.mark.parametrize("device,precision", DEVICES)
def test_nan_propagates_through_relu_max_and_reductions(tmp_path, device, precision):
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["relu"]),
                           helper.make_node("ReduceMax", ["x"], ["rmax"], axes=[1], keepdims=0),
                           helper.make_node("ReduceMin", ["x"], ["rmin"], axes=[1], keepdims=0)],
                [f32("x", [2, 3])], [f32("relu", [2, 3]), f32("rmax", [2]), f32("rmin", [2])])
    a = np.array([[np.nan, 2, -1], [1, 2, 3]], np.float32)
    relu, rmax, rmin = mimic.compile(mimic.onnx.load(path), device, precision=precision)(a)
    np.testing.assert_array_equal(relu, [[np.nan, 2, 0], [1, 2, 3]])
    np.testing.assert_array_equal(rmax, [np.nan, 3])
    np.testing.assert_array_equal(rmin, [np.nan, 1])


@pytest.mark.parametrize("device,precision", DEVICES)
def test_elementwise_max_min_propagate_nan_from_either_side(tmp_path, device, precision):
    path = save(tmp_path, [helper.make_node("Max", ["a", "b"], ["mx"]), helper.make_node("Min", ["a", "b"], ["mn"])],
                [f32("a", [2]), f32("b", [2])], [f32("mx", [2]), f32("mn", [2])])
    mx, mn = mimic.compile(mimic.onnx.load(path), device, precision=precision)(
        np.array([np.nan, 1], np.float32), np.array([0, np.nan], np.float32))
    assert np.isnan(mx).all() and np.isnan(mn).all()


@pytest.mark.parametrize("device,precision", DEVICES)
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_max_min_gradient_splits_ties_evenly(tmp_path, device, precision, op):
    """d/dw (reduce(x + w))^2 at a three-way tie of value 1: 2 * 1 shared by the tied elements, as
    torch.amax and torch.amin split it."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [1, 4], [0, 0, 0, 0])
    nodes = [helper.make_node("Add", ["x", "w"], ["t"]), helper.make_node(op, ["t"], ["y"], axes=[1], keepdims=1)]
    path = save(tmp_path, nodes, [f32("x", ["N", 4])], [f32("y", ["N", 1])], initializers=[w])
    x = np.array([[1, 1, 1, 0]] if op == "ReduceMax" else [[1, 1, 1, 2]], np.float32)
    step = mimic.compile_train(mimic.onnx.load(path), "mse", mimic.optim.SGD([], lr=1.0), device, example_inputs=x,
                               precision=precision)
    before = step.state_dict()["w"].copy()
    step(x, np.zeros((1, 1), np.float32))
    np.testing.assert_allclose(before - step.state_dict()["w"], [[2 / 3, 2 / 3, 2 / 3, 0]], rtol=1e-6)


def test_elementwise_max_gradient_splits_ties_evenly(tmp_path):
    """Max(x, x[::-1]) at the middle element is x[1] itself: its gradient there is the output
    gradient once (torch.maximum gives each tied operand half)."""
    starts = helper.make_tensor("starts", TensorProto.INT64, [1], [-1])
    ends = helper.make_tensor("ends", TensorProto.INT64, [1], [-4])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    steps = helper.make_tensor("steps", TensorProto.INT64, [1], [-1])
    w = helper.make_tensor("w", TensorProto.FLOAT, [1, 3], [0, 0, 0])
    nodes = [helper.make_node("Add", ["x", "w"], ["t"]),
             helper.make_node("Slice", ["t", "starts", "ends", "axes", "steps"], ["flipped"]),
             helper.make_node("Max", ["t", "flipped"], ["y"])]
    path = save(tmp_path, nodes, [f32("x", ["N", 3])], [f32("y", ["N", 3])], initializers=[starts, ends, axes, steps, w])
    x = np.array([[1, 2, 3]], np.float32)
    step = mimic.compile_train(mimic.onnx.load(path), "mse", mimic.optim.SGD([], lr=1.0), example_inputs=x)
    target = np.zeros((1, 3), np.float32)
    before = step.state_dict()["w"].copy()
    step(x, target)
    # y = [3, 2, 3]; d mean((y - 0)^2) / dy = 2y/3; w[2] gets both 3s, w[1] its 2 once, w[0] none.
    np.testing.assert_allclose(before - step.state_dict()["w"], [[0, 4 / 3, 4]], rtol=1e-6)


def test_timing_only_step_keeps_the_parameters():
    model = mimic.nn.Sequential(mimic.nn.Linear(4, 3, seed=1))
    x = np.ones((2, 4), np.float32)
    step = mimic.compile_train(model, "mse", mimic.optim.SGD(model.parameters(), lr=0.1), "tpu-emu:v4",
                               example_inputs=x, timing_only=True)
    before = {k: v.copy() for k, v in step.state_dict().items()}
    step(x, np.zeros((2, 3), np.float32))
    for k, v in before.items():
        if k != "optimizer.step":
            np.testing.assert_array_equal(step.state_dict()[k], v)


def test_batch_one_training_reductions_run_on_the_tpu():
    model = mimic.nn.Sequential(mimic.nn.Linear(8, 4, seed=1), mimic.nn.ReLU(), mimic.nn.Linear(4, 2, seed=2))
    x = np.ones((1, 8), np.float32)
    step = mimic.compile_train(model, "mse", mimic.optim.SGD(model.parameters(), lr=0.1), "tpu-emu:v4",
                               example_inputs=x)
    assert not step.compile_report["fallback_nodes"], step.compile_report["fallback_reasons"]


def test_bad_training_arguments_are_refused():
    model = mimic.nn.Sequential(mimic.nn.Linear(4, 3, seed=1))
    x = np.ones((2, 4), np.float32)
    sgd = mimic.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(mimic.InvalidArgument, match="label_smoothing nan"):
        mimic.compile_train(model, "cross_entropy", sgd, example_inputs=x, label_smoothing=float("nan"))
    with pytest.raises(mimic.InvalidArgument, match="unknown key 'bogus'"):
        mimic.compile_train(model, "mse", sgd, example_inputs=x, loss_scale={"bogus": 1})
    with pytest.raises(mimic.InvalidArgument, match="unknown precision 'float8'"):
        mimic.compile_train(model, "mse", sgd, example_inputs=x, precision="float8")
    with pytest.raises(ValueError, match="start_factor 0"):
        mimic.optim.lr_scheduler.LinearLR(sgd, start_factor=0)


@pytest.mark.parametrize("opset,axis", [(11, 1), (11, 0), (13, 1)])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("device,precision", DEVICES)
def test_softmax_before_opset_13_normalizes_everything_after_axis(tmp_path, op, opset, axis, device, precision):
    path = save(tmp_path, [helper.make_node(op, ["a"], ["y"], axis=axis)], [f32("a", [2, 3, 4])], [f32("y", [2, 3, 4])],
                opset=opset)
    a = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    rows = a.reshape(int(np.prod(a.shape[:axis])), -1) if opset < 13 else np.moveaxis(a, axis, -1)
    e = np.exp(rows - rows.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    want = np.log(want) if op == "LogSoftmax" else want
    want = want.reshape(a.shape) if opset < 13 else np.moveaxis(want, -1, axis)
    got = mimic.compile(mimic.onnx.load(path), device, precision=precision)(a)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device,precision", DEVICES)
def test_gemm_with_beta_zero_ignores_c(tmp_path, device, precision):
    c = helper.make_tensor("c", TensorProto.FLOAT, [1, 1], [np.nan])
    path = save(tmp_path, [helper.make_node("Gemm", ["a", "b", "c"], ["y"], transB=1, beta=0.0)],
                [f32("a", [3, 4]), f32("b", [5, 4])], [f32("y", [3, 5])], initializers=[c])
    got = mimic.compile(mimic.onnx.load(path), device, precision=precision)(np.ones((3, 4), np.float32),
                                                                          np.ones((5, 4), np.float32))
    np.testing.assert_array_equal(got, np.full((3, 5), 4, np.float32))


def test_cli_keeps_einsum_output_names_and_separates_colliding_files(tmp_path):
    path = save(tmp_path, [helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik"),
                           helper.make_node("Relu", ["a"], ["r/x"]), helper.make_node("Neg", ["a"], ["r_x"])],
                [f32("a", [2, 3]), f32("b", [3, 4])], [f32("y", [2, 4]), f32("r/x", [2, 3]), f32("r_x", [2, 3])])
    out = tmp_path / "out"
    p = cli("run", "--onnx", path, "--output-dir", out, "--json")
    assert p.returncode == 0, p.stderr
    assert [o["name"] for o in json.loads(p.stdout)["outputs"]] == ["y", "r/x", "r_x"]
    assert sorted(os.listdir(out)) == ["r_x.npy", "r_x_2.npy", "y.npy"]
    np.testing.assert_array_equal(np.load(out / "r_x.npy"), np.maximum(-np.load(out / "r_x_2.npy"), 0))


def test_cli_nan_on_both_sides_is_no_difference(tmp_path):
    c = helper.make_tensor("c", TensorProto.FLOAT, [1], [np.nan])
    path = save(tmp_path, [helper.make_node("Mul", ["a", "c"], ["y"])], [f32("a", [2])], [f32("y", [2])],
                initializers=[c])
    p = cli("run", "--onnx", path, "--device", "tpu-emu:v4", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["difference_vs_cpu"]["nan_mismatches"] == 0


def test_cli_train_refuses_a_batch_other_than_the_models_fixed_one(tmp_path):
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 2], np.ones(16))
    path = save(tmp_path, [helper.make_node("MatMul", ["x", "w"], ["y"])], [f32("x", [5, 8])], [f32("y", [5, 2])],
                initializers=[w])
    p = cli("train", "--onnx", path, "--batch", "2", "--steps", "1", "--loss", "mse")
    assert p.returncode != 0 and "fixed batch of 5" in p.stderr and "cannot run batch 2" in p.stderr


def test_cli_directory_given_as_npy_is_a_one_line_error(tmp_path):
    p = cli("train", "--model", "mlp", "--steps", "1", "--data", tmp_path, tmp_path)
    assert p.returncode != 0 and "is a directory" in p.stderr and "internal" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_cli_sweep_whose_every_point_fails_exits_nonzero():
    p = cli("sweep", "--model", "mlp", "--batch", "1,2", "--option", "bogus=1")
    assert p.returncode != 0 and "all 2 points failed" in p.stderr and "bogus" in p.stderr


def test_cli_training_sweep_records_a_trace(tmp_path):
    p = cli("sweep", "--train", "--model", "mlp", "--device", "tpu-emu:v4", "--batch", "2,4", "--timing-only",
            "--trace", tmp_path / "t.db", "--json", tmp_path / "s.json")
    assert p.returncode == 0, p.stderr
    points = json.load(open(tmp_path / "s.json"))["points"]
    assert [r["status"] for r in points] == ["ok", "ok"]


def test_onnx_batch_norm_running_statistics_train_when_exported_as_identity_copies(tmp_path):
    """PyTorch's export writes a fresh BatchNorm's running_mean and running_var (equal to its bias
    and weight) as Identity copies of those; training updates them as PyTorch does: momentum 0.1,
    the unbiased batch variance."""
    scale = helper.make_tensor("bn.weight", TensorProto.FLOAT, [2], [1, 1])
    bias = helper.make_tensor("bn.bias", TensorProto.FLOAT, [2], [0, 0])
    nodes = [helper.make_node("Identity", ["bn.bias"], ["bn.running_mean"]),
             helper.make_node("Identity", ["bn.weight"], ["bn.running_var"]),
             helper.make_node("BatchNormalization", ["x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"],
                              ["y"], epsilon=1e-5, momentum=0.9)]
    path = save(tmp_path, nodes, [f32("x", ["N", 2])], [f32("y", ["N", 2])], initializers=[scale, bias])
    x = np.array([[1, 4], [3, 8], [5, 0]], np.float32)
    step = mimic.compile_train(mimic.onnx.load(path), "mse", mimic.optim.SGD([], lr=0.1), example_inputs=x)
    step(x, np.zeros((3, 2), np.float32))
    state = step.state_dict()
    np.testing.assert_allclose(state["bn.running_mean"], 0.1 * x.mean(0), rtol=1e-6)
    np.testing.assert_allclose(state["bn.running_var"], 0.9 + 0.1 * x.var(0, ddof=1), rtol=1e-6)


def test_cli_sweep_results_must_be_point_records(tmp_path):
    p = cli("sweep", "--model", "mlp", "--batch", "1", "--results", tmp_path)
    assert p.returncode != 0 and "is a directory" in p.stderr
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n[1, 2]\n")
    p = cli("sweep", "--model", "mlp", "--batch", "1", "--results", junk)
    assert p.returncode != 0 and "none of its 2 line(s)" in p.stderr


def test_tpu_replicated_step_all_reduces_after_the_last_gradient(tmp_path):
    """The gradients' all-reduce starts once the last gradient is written and the update's ops start
    once it ends: no gradient computation waits on its own all-reduce."""
    import sqlite3
    trace = tmp_path / "t.db"
    p = cli("train", "--model", "mlp", "--device", "tpu-emu:v5e", "--batch", "32", "--steps", "1", "--timing-only",
            "--option", "replicas=2", "--set", "chips=2", "--trace", trace, "--quiet")
    assert p.returncode == 0, p.stderr
    db = sqlite3.connect(trace)
    events = "run_event e JOIN op_v o ON o.run_id = e.run_id AND o.op_id = e.op_id WHERE e.run_id = 1"
    (start, end), = db.execute(f"SELECT e.ts, e.ts + e.dur FROM {events} AND o.node LIKE 'allreduce/%'").fetchall()
    last_gradient = db.execute(f"SELECT MAX(e.ts + e.dur) FROM {events} AND o.node LIKE 'grad/%'").fetchone()[0]
    first_update = db.execute(f"SELECT MIN(e.ts) FROM {events} AND o.node LIKE 'optimizer/%'").fetchone()[0]
    assert last_gradient <= start < end <= first_update


def test_example_inputs_set_a_zoo_models_batch():
    x = np.random.default_rng(0).standard_normal((4, 784)).astype(np.float32)
    assert mimic.compile(mimic.zoo.mlp(), "cpu", example_inputs=[x])(x).shape == (4, 10)


def test_cli_preset_overrides_on_the_cpu_are_refused():
    p = cli("run", "--model", "mlp", "--set", "mxu.rows=64")
    assert p.returncode == 2 and "the cpu has no preset" in p.stderr
    p = cli("run", "--model", "mlp", "--device", "tpu-emu:v4", "--set", "mxu.rows=64", "--json")
    assert p.returncode == 0, p.stderr  # the cpu reference run and cpu fallback take none of them


def train_json(*args):
    p = cli("train", "--steps", "1", "--timing-only", "--json", *args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_ipu_link_utilization_is_a_mean_over_links():
    units = train_json("--model", "mlp", "--device", "ipu-emu:gc200", "--batch", "64",
                       "--option", "replication_factor=4")["report"]["units"]
    links = [u for u in units if u["kind"] in ("link", "host")]
    assert links and all(0 < u["utilization"] <= 1 for u in links), links


def test_pipelined_ipu_phases_add_up_to_the_step():
    j = train_json("--model", "resnet18", "--model-arg", "image_size=64", "--device", "ipu-emu:gc200",
                   "--batch", "8", "--precision", "float16", "--option", "num_ipus=2",
                   "--option", "gradient_accumulation=4")
    metrics = j["report"]["metrics"]
    phases = sum(v for k, v in metrics.items() if k.startswith("phase."))
    assert metrics["stages"] == 2 and phases == pytest.approx(j["report"]["cycles"], rel=1e-3)


def test_no_op_runs_above_the_chips_peak():
    p = cli("run", "--model", "bert", "--model-arg", "layers=2", "--model-arg", "hidden=128", "--model-arg", "heads=2",
            "--model-arg", "seq=64", "--model-arg", "ffn=512", "--model-arg", "vocab=1000", "--device", "tpu-emu:edge",
            "--batch", "16", "--timing-only", "--no-compare", "--json")
    assert p.returncode == 0, p.stderr
    ops = json.loads(p.stdout)["report"]["ops"]
    assert max(o["utilization"] for o in ops) <= 1.0 + 1e-9


def test_trace_phase_times_count_overlapping_ops_once(tmp_path):
    trace = tmp_path / "t.db"
    train_json("--model", "resnet18", "--model-arg", "image_size=32", "--device", "tpu-emu:v4", "--batch", "4",
               "--trace", trace)
    p = cli("trace", "summary", trace)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split("time by training phase")[1].strip().splitlines()[1:]
    shares = [float(line.split()[4]) for line in lines if line.split() and line.split()[0] in
              ("forward", "backward", "allreduce", "update")]
    assert len(shares) >= 3 and sum(shares) <= 110, p.stdout


def test_optimizer_over_part_of_the_model_or_parameter_groups_is_refused():
    model = mimic.nn.Sequential(mimic.nn.Linear(16, 32, seed=1), mimic.nn.ReLU(), mimic.nn.Linear(32, 4, seed=2))
    x = np.ones((8, 16), np.float32)
    with pytest.raises(mimic.InvalidArgument, match="2 of the model's 4 parameters"):
        mimic.compile_train(model, "mse", mimic.optim.SGD(model[2].parameters(), lr=0.1), example_inputs=x)
    with pytest.raises(mimic.InvalidArgument, match="parameter groups"):
        mimic.compile_train(model, "mse", mimic.optim.SGD([{"params": model.parameters(), "lr": 0.01}], lr=0.1),
                            example_inputs=x)


def test_a_model_moved_to_a_device_compiles_for_it():
    model = mimic.nn.Sequential(mimic.nn.Linear(16, 4, seed=1)).to("tpu-emu:v4")
    x = np.ones((8, 16), np.float32)
    step = mimic.compile_train(model, "mse", mimic.optim.SGD([], lr=0.1), example_inputs=x)
    assert step.compile_report["device"].startswith("tpu-emu")
    assert mimic.compile(model, example_inputs=[x]).compile_report["device"].startswith("tpu-emu")
    with pytest.raises(mimic.InvalidArgument, match="the model is on tpu-emu:v4"):
        mimic.compile_train(model, "mse", mimic.optim.SGD([], lr=0.1), "ipu-emu:gc200", example_inputs=x)


def test_ipu_manager_options_reach_the_training_step():
    model = mimic.nn.Sequential(mimic.nn.Linear(16, 4, seed=1))
    x = np.ones((8, 16), np.float32)
    step = mimic.ipu.Manager(gradient_accumulation=4).training_model(model, "mse", mimic.optim.SGD([], lr=0.1),
                                                                     example_inputs=x)
    step(x, np.zeros((8, 4), np.float32))
    assert step.report["metrics"]["micro_batches"] == 4
    with pytest.raises(mimic.InvalidArgument, match="disagrees with Manager"):
        mimic.ipu.Manager(gradient_accumulation=4).training_model(model, "mse", mimic.optim.SGD([], lr=0.1),
                                                                  example_inputs=x, gradient_accumulation=2)


def test_cli_train_refuses_flags_that_would_do_nothing(tmp_path):
    p = cli("train", "--model", "mlp", "--device", "tpu-emu:v4", "--timing-only", "--steps", "1",
            "--save", tmp_path / "c.npz")
    assert p.returncode == 2 and "--save with --timing-only" in p.stderr
    p = cli("train", "--model", "mlp", "--optimizer", "adam", "--momentum", "0.9", "--steps", "1")
    assert p.returncode == 2 and "applies to sgd" in p.stderr


def convtranspose_model(tmp_path, op="ConvTranspose"):
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 6, 3, 3], rng.standard_normal(216).astype(np.float32))
    b = helper.make_tensor("b", TensorProto.FLOAT, [6], rng.standard_normal(6).astype(np.float32))
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                            output_padding=[1, 1])
    if op == "LRN":  # no TPU lowering: a train step runs it on the cpu fallback
        node = helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1])
        lrn = helper.make_node("LRN", ["c"], ["y"], size=3)
        w = helper.make_tensor("w", TensorProto.FLOAT, [4, 4, 3, 3], rng.standard_normal(144).astype(np.float32))
        b = None
        return save(tmp_path, [node, lrn], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 5, 5])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 5, 5])], initializers=[w]), None
    out_shape = [2, 6, 10, 10]
    return save(tmp_path, [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 5, 5])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                initializers=[w, b]), out_shape


def test_convtranspose_with_bias_trains_on_tpu(tmp_path):
    """A trainable ConvTranspose's bias is a runtime value in a train step; the matrix unit's
    epilogue adds it there as it does for Conv, so the step stays on the device."""
    path, out_shape = convtranspose_model(tmp_path)
    x = np.random.default_rng(1).standard_normal((2, 4, 5, 5)).astype(np.float32)
    y = np.random.default_rng(2).standard_normal(out_shape).astype(np.float32)
    losses = {}
    for device, precision in [("cpu", "default"), ("tpu-emu:v4", "highest")]:
        step = mimic.compile_train(mimic.onnx.load(path), "mse", mimic.optim.SGD([], lr=0.1), device,
                                   example_inputs=x, precision=precision, strict=device != "cpu")
        assert step.compile_report["fallback_reasons"] == []
        losses[device] = [float(step(x, y)) for _ in range(2)]
    np.testing.assert_allclose(losses["tpu-emu:v4"], losses["cpu"], rtol=1e-5)


def test_strict_training_refuses_cpu_fallback(tmp_path):
    path, _ = convtranspose_model(tmp_path, "LRN")
    x = np.ones((2, 4, 5, 5), np.float32)
    with pytest.raises(mimic.UnsupportedOpError, match="LRN"):
        mimic.compile_train(mimic.onnx.load(path), "mse", mimic.optim.SGD([], lr=0.1), "tpu-emu:v4", example_inputs=x,
                            strict=True)
    r = subprocess.run([MIMIC, "train", "--onnx", path, "--device", "tpu-emu:v4", "--loss", "mse", "--batch", "2",
                        "--steps", "1", "--strict"], capture_output=True, text=True)
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr


def test_random_token_ids_stay_inside_the_vocabulary(tmp_path):
    """Without --input or --data, an embedding's random ids are drawn below its vocabulary (50)."""
    table = helper.make_tensor("table", TensorProto.FLOAT, [50, 8], np.ones(400, np.float32))
    nodes = [helper.make_node("Cast", ["tok"], ["ids"], to=TensorProto.INT64),
             helper.make_node("Gather", ["table", "ids"], ["emb"]),
             helper.make_node("ReduceMean", ["emb"], ["y"], axes=[1], keepdims=0)]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("tok", TensorProto.INT32, ["N", 16])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])], opset=13, initializers=[table])
    for device in ("cpu", "tpu-emu:v4"):
        r = subprocess.run([MIMIC, "run", "--onnx", path, "--batch", "4", "--device", device], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
    r = subprocess.run([MIMIC, "train", "--onnx", path, "--batch", "4", "--steps", "2", "--loss", "mse"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_resize_too_large_for_matrices_falls_back_with_the_reason(tmp_path):
    """A resize whose per-axis matrix would be over 2^24 elements (8192 -> 16384 here) runs on the
    cpu fallback instead of writing a 512 MB constant; the report says why."""
    scales = helper.make_tensor("s", TensorProto.FLOAT, [4], [1, 1, 1, 2])
    path = save(tmp_path, [helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear")],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 1, 8192])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 1, 16384])], opset=13,
                initializers=[scales])
    x = np.arange(8192, dtype=np.float32).reshape(1, 1, 1, 8192)
    exe = mimic.compile(mimic.onnx.load(path), device="tpu-emu:v4", example_inputs=[x])
    assert any("over 16777216 elements" in r for r in exe.compile_report["fallback_reasons"])
    np.testing.assert_allclose(np.asarray(exe(x))[0, 0, 0, 1:-1:2], np.arange(8191) + 0.25, rtol=1e-6)


def test_cli_trains_token_level_labels(tmp_path):
    """A language model's logits [B*S, V] and labels per token: --data takes y as [N, S] or flat [N*S]."""
    rng = np.random.default_rng(0)
    table = helper.make_tensor("table", TensorProto.FLOAT, [10, 6], rng.standard_normal(60).astype(np.float32))
    head = helper.make_tensor("head", TensorProto.FLOAT, [6, 10], rng.standard_normal(60).astype(np.float32))
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 6])
    nodes = [helper.make_node("Gather", ["table", "tok"], ["emb"]),
             helper.make_node("Reshape", ["emb", "shape"], ["flat"]),
             helper.make_node("MatMul", ["flat", "head"], ["logits"])]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("tok", TensorProto.INT64, [2, 4])],
                [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [8, 10])], opset=13,
                initializers=[table, head, shape])
    x = rng.integers(0, 10, (4, 4)).astype(np.int64)
    y = rng.integers(0, 10, (4, 4)).astype(np.int64)
    losses = []
    for name, labels in (("y2d.npy", y), ("yflat.npy", y.reshape(16))):
        np.save(tmp_path / "x.npy", x)
        np.save(tmp_path / name, labels)
        r = subprocess.run([MIMIC, "train", "--onnx", path, "--data", str(tmp_path / "x.npy"), str(tmp_path / name),
                            "--batch", "2", "--steps", "2", "--json"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        losses.append(json.loads(r.stdout)["train"]["last_loss"])
    assert losses[0] == losses[1]


def test_resize_length_is_floor_of_the_float_product(tmp_path):
    """10 * 0.7f is 7 in float (ONNX shape inference, onnxruntime, PyTorch), 6.99999988 in double."""
    scales = helper.make_tensor("s", TensorProto.FLOAT, [4], [1, 1, 0.7, 1.3])
    path = save(tmp_path, [helper.make_node("Resize", ["x", "", "s"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 10, 10])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 7, 13])], opset=13,
                initializers=[scales])
    x = np.ones((1, 1, 10, 10), np.float32)
    assert np.asarray(mimic.compile(mimic.onnx.load(path), device="cpu", example_inputs=[x])(x)).shape == (1, 1, 7, 13)


def test_float_initializers_that_are_not_weights_do_not_train(tmp_path):
    """Resize's scales, Dropout's ratio and Clip's bounds stored as float initializers stay constants."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 2, 1, 1], rng.standard_normal(4).astype(np.float32))
    inits = [w, helper.make_tensor("s", TensorProto.FLOAT, [4], [1, 1, 2, 2]),
             helper.make_tensor("ratio", TensorProto.FLOAT, [], [0.25]),
             helper.make_tensor("training", TensorProto.BOOL, [], [True]),
             helper.make_tensor("lo", TensorProto.FLOAT, [], [-1.0]), helper.make_tensor("hi", TensorProto.FLOAT, [], [1.0])]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Resize", ["c", "", "s"], ["r"]),
             helper.make_node("Dropout", ["r", "ratio", "training"], ["d"]),
             helper.make_node("Clip", ["d", "lo", "hi"], ["y"])]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 3, 3])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2, 6, 6])], opset=13, initializers=inits)
    x = rng.standard_normal((2, 2, 3, 3)).astype(np.float32)
    step = mimic.compile_train(mimic.onnx.load(path), "mse", mimic.optim.SGD([], lr=0.1), "cpu", example_inputs=x)
    assert set(step.state_dict()) == {"w", "optimizer.step"}
    assert np.isfinite(float(step(x, np.zeros((2, 2, 6, 6), np.float32))))


@pytest.mark.parametrize("device", ["cpu", "tpu-emu:v4"])
def test_training_mode_batchnorm_output_keeps_its_name(tmp_path, device):
    inits = [helper.make_tensor(n, TensorProto.FLOAT, [3], v) for n, v in
             (("scale", [1, 1, 1]), ("bias", [0, 0, 0]), ("mean", [0, 0, 0]), ("var", [1, 1, 1]))]
    node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"], training_mode=1)
    path = save(tmp_path, [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])], opset=15, initializers=inits)
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32))
    out = tmp_path / "out"
    r = subprocess.run([MIMIC, "run", "--onnx", path, "--device", device, "--input", f"x={tmp_path / 'x.npy'}",
                        "--output-dir", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == ["y.npy"]


def test_layout_is_refused_for_onnx_models(tmp_path):
    """--layout picks a zoo model's layout; an ONNX graph keeps its own (sweeps would repeat points)."""
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    for args in (["run", "--onnx", path, "--layout", "nhwc"],
                 ["sweep", "--onnx", path, "--batch", "1", "--layout", "nchw,nhwc"]):
        r = subprocess.run([MIMIC] + args, capture_output=True, text=True)
        assert r.returncode == 2 and "applies to zoo models" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_a_full_disk_on_standard_output_is_a_file_error():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        r = subprocess.run([MIMIC, "devices"], stdout=full, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 6 and "could not write to standard output" in r.stderr, r.stderr


@pytest.mark.parametrize("device,dtype", [("tpu-emu:v4", TensorProto.BFLOAT16), ("ipu-emu:gc200", TensorProto.FLOAT16)])
def test_resize_of_the_chips_half_types_runs_on_the_chip(tmp_path, device, dtype):
    scales = helper.make_tensor("s", TensorProto.FLOAT, [4], [1, 1, 2, 2])
    nodes = [helper.make_node("Cast", ["x"], ["h"], to=dtype),
             helper.make_node("Resize", ["h", "", "s"], ["r"], mode="linear"),
             helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT)]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])], opset=13, initializers=[scales])
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    exe = mimic.compile(mimic.onnx.load(path), device=device, example_inputs=[x], strict=True)
    want = mimic.compile(mimic.onnx.load(path), device="cpu", example_inputs=[x])(x)
    np.testing.assert_allclose(np.asarray(exe(x)), np.asarray(want), atol=2e-2 * np.abs(want).max())
