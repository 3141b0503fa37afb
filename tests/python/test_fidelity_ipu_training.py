"""benchmarks/fidelity: the IPU training rows run what Graphcore's submissions ran, as their
configuration files say (graphcore/examples, TensorFlow CNN configs.yml): micro-batch 20, 10, 6 or 2
micro-batches accumulated, half partials, memory proportion 0.15 (0.145 on the Pod64), 16, 64 or 256
replicas, and recomputation from the six block outputs its pipeline splits name, which must be nodes
of the zoo's ResNet-50."""
import os
import sys

import numpy as np

import mimic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks",
                                "fidelity"))
import figures  # noqa: E402


def rows(metric):
    return [r for r in figures.FIGURES if r["device"].startswith("ipu-emu") and r["metric"] == metric
            and not r.get("not_modeled")]


def test_ipu_training_rows_follow_the_submissions_configurations():
    # Row: (accumulation, replicas, memory proportion) of the configuration it names.
    configs = {"graphcore-pod16-resnet50-train": (10, "16", "0.15"),
               "mlperf-ipu-pod16-resnet50-train": (10, "16", "0.15"),
               "graphcore-pod256-resnet50-train": (2, "256", "0.15"),
               "graphcore-bow-pod16-resnet50-train": (6, "16", "0.15"),
               "graphcore-bow-pod64-resnet50-train": (2, "64", "0.145"),
               "graphcore-bow-pod256-resnet50-train": (2, "256", "0.15"),
               "mlperf-ipu-pod16-resnet50-micro-batch-fit": (10, "1", "0.15")}
    checked = rows("train_sps") + rows("minutes") + rows("micro_batch_fit")
    assert {r["id"] for r in checked} == set(configs)
    for r in checked:
        t = r["train"]
        accumulation, replicas, proportion = configs[r["id"]]
        assert t["micro_batches"] == [20] and t["accumulation"] == accumulation, r["id"]
        assert t["options"]["enable_half_partials"] == "true", r["id"]
        assert t["options"]["memory_proportion"] == proportion, r["id"]
        assert t["recompute"] == "full" and len(t["recompute_checkpoints"]) == 6
        assert t["options"]["replication_factor"] == replicas, r["id"]
        # The global batch the published figure was measured at, where the row names one.
        batch = {"graphcore-bow-pod16-resnet50-train": 1920, "graphcore-bow-pod64-resnet50-train": 2560,
                 "graphcore-bow-pod256-resnet50-train": 10240}.get(r["id"])
        if batch:
            assert 20 * accumulation * int(replicas) == batch, r["id"]
            assert f"global batch {batch:,}" in r["conditions"], r["id"]


def test_the_recomputation_checkpoints_are_nodes_of_the_zoo_resnet50():
    zoo = mimic.zoo.resnet50(batch=2, image_size=32)
    model = zoo.module
    opt = mimic.optim.SGD([p for _, p in model.named_parameters()], lr=0.01, momentum=0.9)
    step = mimic.compile_train(model, "cross_entropy", opt, example_inputs=np.zeros(zoo.input_shape, np.float32),
                               recompute="full", recompute_checkpoints=figures.IPU_TRAIN_MLPERF["recompute_checkpoints"],
                               compile_only=True)
    assert step is not None
