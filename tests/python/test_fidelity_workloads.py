"""benchmarks/fidelity/paper_models.py: the TPUv1 workloads hold the published figures their
docstrings claim (Jouppi et al., ISCA 2017: Table 1's weight counts and multiply-accumulates per
weight byte at the production batch; the sensitivity study's 600 x 600 LSTM1 matrices), so that the
fidelity suite's inputs cannot drift from the paper unnoticed."""
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="python3-onnx is not installed")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks",
                                "fidelity"))
import paper_models  # noqa: E402


@pytest.fixture(autouse=True)
def shapes_only(monkeypatch):
    """Weights without data and no model check (the suite's own runs have both): only the shapes
    matter here, and 100M-weight models then build in a fraction of a second."""
    def weight(self, shape, fan_in):
        t = onnx.TensorProto(name=self._fresh("w"), data_type=onnx.TensorProto.FLOAT, dims=shape)
        self.inits.append(t)
        return t.name
    monkeypatch.setattr(paper_models.Builder, "weight", weight)
    monkeypatch.setattr(paper_models.onnx.checker, "check_model", lambda model: None)


def weight_shapes(name):
    """Shapes of the model's weight matrices and filters (initializers of rank 2 and more)."""
    model = paper_models.BUILDERS[name]()
    return [tuple(t.dims) for t in model.graph.initializer if len(t.dims) >= 2]


def test_mlps_have_table_1s_weights():
    assert sum(np.prod(s) for s in weight_shapes("tpuv1_mlp0")) == pytest.approx(20e6, rel=0.01)
    assert sum(np.prod(s) for s in weight_shapes("tpuv1_mlp1")) == pytest.approx(5e6, rel=0.01)


def test_lstms_have_table_1s_weights_and_lstm1_the_studys_matrices():
    assert sum(np.prod(s) for s in weight_shapes("tpuv1_lstm0")) == pytest.approx(52e6, rel=0.01)
    lstm1 = weight_shapes("tpuv1_lstm1")
    assert set(lstm1) == {(600, 600)}, "Section 7: 'a 600x600 matrix used in LSTM1'"
    assert sum(np.prod(s) for s in lstm1) == pytest.approx(34e6, rel=0.02)


def macs_per_weight_byte(name, batch, size):
    """Multiply-accumulates per int8 weight byte at `batch`: a convolution's filter is used at every
    output position of its same-padded size x size map, a fully connected weight once per sample."""
    shapes = weight_shapes(name)
    conv = sum(np.prod(s) for s in shapes if len(s) == 4)
    dense = sum(np.prod(s) for s in shapes if len(s) == 2)
    return (conv * size * size * batch + dense * batch) / (conv + dense), conv + dense


def test_cnns_have_table_1s_weights_and_intensity():
    intensity, weights = macs_per_weight_byte("tpuv1_cnn0", 8, 19)
    assert intensity == 2888
    assert weights == pytest.approx(8e6, rel=0.02)
    intensity, weights = macs_per_weight_byte("tpuv1_cnn1", 32, 19)
    assert intensity == pytest.approx(1750, rel=0.001)
    assert weights == pytest.approx(100e6, rel=0.01)


def test_inception_v1_is_tf_slims():
    """The Edge TPU rows' Inception v1: TF-slim's stem, nine modules (six convolutions each, the
    third branch 3x3) and 1x1 logits over 1,024 channels to 1,001 classes: 58 filters, 6.6M
    weights."""
    shapes = weight_shapes("inception_v1")
    assert len(shapes) == 3 + 9 * 6 + 1
    assert shapes[0] == (64, 3, 7, 7) and shapes[-1] == (1001, 1024, 1, 1)
    third_branch = [s for s in shapes if s[2:] == (3, 3)]
    assert len(third_branch) == 1 + 2 * 9  # the stem's 3x3 and two per module
    assert sum(np.prod(s) for s in shapes) == pytest.approx(6.6e6, rel=0.01)
