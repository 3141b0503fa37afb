"""The published measurements the fidelity suite reproduces, one row each.

Sources and tags follow shared reference notes (measured.md): [M] measured on hardware by the
authors, [V] a vendor's benchmark table. Each row names the workload (a zoo model or a builder of
paper_models.py), the device string of the matching preset, the batch, and the metric compared:

  tops          useful ops per second of device time (2 ops per multiply-add), in TOPS
  ips           inferences per second of device time (batch / device seconds)
  latency_ms    device time of one batch, in milliseconds
  busy_pct      matrix-unit cycles spent shifting weights in or streaming operands, % of all cycles
                (the paper's "array active" plus "weight shift" rows)
  stall_pct     matrix-unit cycles waiting for weights from memory, % of all cycles ("weight stall")

Counters (the _pct metrics) are compared in percentage points and kept out of the relative-error
summary: a published 0.0% has no relative error.

Conditions say what the published figure includes that device time does not (host, PCIe/USB
transfers, queuing); the suite compares device time and says so rather than adding a host model.
`scope` is "device" for figures of the chip alone (TOPS and counters from the chip's performance
counters) and "end_to_end" for figures that include the host (production throughput, latency over
USB or PCIe): the two are summarized apart, since device time undercounts the second kind.
"""

TPUV1 = "Jouppi et al., In-Datacenter Performance Analysis of a Tensor Processing Unit, ISCA 2017"
CORAL = "Coral Edge TPU benchmark table (coral.ai/docs/edgetpu/benchmarks)"

_TPUV1_APPS = [
    # app, batch, and Table 3: TOPS, array active %, weight stall %, weight shift %
    ("mlp0", 200, 12.3, 12.7, 53.9, 15.9),
    ("mlp1", 168, 9.7, 10.6, 44.2, 13.4),
    ("lstm0", 64, 3.7, 8.2, 58.1, 15.8),
    ("lstm1", 96, 2.8, 10.5, 62.1, 17.1),
    ("cnn0", 8, 86.0, 78.2, 0.0, 0.0),
    ("cnn1", 32, 14.1, 46.2, 28.1, 7.0),
]


def _tpuv1_rows():
    rows = []
    for app, batch, tops, active, stall, shift in _TPUV1_APPS:
        common = {"chip": "TPUv1", "device": "tpu-emu:v1", "workload": f"tpuv1_{app}", "batch": batch,
                  "scope": "device",
                  "tag": "M", "source": TPUV1 + ", Table 3",
                  "conditions": f"production batch {batch}, int8, per die; shapes per paper_models.py"}
        rows.append({**common, "id": f"tpuv1-{app}-tops", "metric": "tops", "published": tops})
        rows.append({**common, "id": f"tpuv1-{app}-busy", "metric": "busy_pct",
                     "published": round(active + shift, 1)})
        rows.append({**common, "id": f"tpuv1-{app}-stall", "metric": "stall_pct", "published": stall})
    rows.append({"id": "tpuv1-mlp0-ips", "chip": "TPUv1", "scope": "end_to_end", "device": "tpu-emu:v1", "workload": "tpuv1_mlp0",
                 "batch": 200, "metric": "ips", "published": 225000, "tag": "M", "source": TPUV1 + ", Table 4",
                 "conditions": "throughput at the 7 ms 99th-percentile limit; includes host and queuing"})
    rows.append({"id": "tpuv1-mlp1-ips", "chip": "TPUv1", "scope": "end_to_end", "device": "tpu-emu:v1", "workload": "tpuv1_mlp1",
                 "batch": 168, "metric": "ips", "published": 360000, "tag": "M", "source": TPUV1 + ", Section 5",
                 "conditions": "inferences per second per die in production; includes host time "
                               "(Table 5: host interaction is 76% of TPU time for MLP1, 14% for CNN1)"})
    rows.append({"id": "tpuv1-cnn1-ips", "chip": "TPUv1", "scope": "end_to_end", "device": "tpu-emu:v1", "workload": "tpuv1_cnn1",
                 "batch": 32, "metric": "ips", "published": 4700, "tag": "M", "source": TPUV1 + ", Section 5",
                 "conditions": "inferences per second per die in production; includes host time"})
    return rows


def _edge_rows():
    rows = []
    for model, workload, usb, board in [("MobileNet v1", "mobilenet_v1", 2.2, 2.2),
                                        ("MobileNet v2", "zoo:mobilenet_v2", 2.3, 2.5)]:
        for host, ms in [("USB Accelerator", usb), ("Dev Board", board)]:
            rows.append({"id": f"edge-{workload.split(':')[-1]}-{host.split()[0].lower()}", "chip": "Edge TPU",
                         "device": "tpu-emu:edge", "workload": workload, "batch": 1, "metric": "latency_ms",
                         "scope": "end_to_end",
                         "published": ms, "tag": "V", "source": CORAL,
                         "conditions": f"{model}, 224x224, int8, batch 1, {host}; includes the input and "
                                       "output transfer over the link"})
    return rows


FIGURES = _tpuv1_rows() + _edge_rows()
