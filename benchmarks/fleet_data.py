"""Synthetic dcgm-exporter 4.x data for benchmarks/fleet.py: a fleet of H100 nodes, value models,
exposition text (OpenMetrics for promtool, Prometheus text for VictoriaMetrics) and a live exporter.

Values are a pure function of (metric, GPU, time window): the same call gives the same samples to
Prometheus and to VictoriaMetrics, and counters (floor(rate * (t - origin))) continue seamlessly from
the history into the live exporter.
"""
from __future__ import annotations

import hashlib
import math
import threading
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from operator import add
from pathlib import Path
from typing import Iterator

import numpy as np

GPUS_PER_NODE = 8
MODEL_NAME = "NVIDIA H100 80GB HBM3"
DRIVER = "550.90.07"
FB_TOTAL_MIB = 81559 - 480  # H100 80GB: used + free + reserved
PCI_BUS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]  # HGX H100 slots
NODES_PER_JOB = 4
BUSY_SHARE = 0.85  # of nodes, in a multi-node training job for the whole run


# A healthy fleet: a GPU's own level lies within this many `spread`s of its peers' (a normal deviate,
# clipped), so that no GPU of a large synthetic fleet sits at a peer baseline's threshold by chance (at
# 800 GPUs, a 3 C spread put temperatures 5-9 C above their node's or fleet's median: GPUBaselineDeviation
# pending on a healthy fleet).
SPREAD_CLIP = 2.5


@dataclass(frozen=True)
class Model:
    """Gauge: busy/idle mean, per-GPU spread and per-sample noise (sd), clipped to [lo, hi], rounded.
    Counter: `rate` per second on the GPUs `flaky` selects (share of the fleet, or 'busy')."""
    busy: float = 0.0
    idle: float = 0.0
    spread: float = 0.0
    noise: float = 0.0
    lo: float = 0.0
    hi: float = math.inf
    digits: int = 0
    rate: float = 0.0
    flaky: float | str = 0.0


MODELS: dict[str, Model] = {
    # temperatures within 2.5 C of a GPU's fleet and node peers (the baselines' peer branches alert at 5 C)
    "DCGM_FI_DEV_GPU_TEMP": Model(66, 33, 1, 1.2, hi=90),
    "DCGM_FI_DEV_MEMORY_TEMP": Model(74, 38, 1, 1.2, hi=95),
    "DCGM_FI_DEV_POWER_USAGE": Model(650, 72, 20, 15, hi=700, digits=3),
    "DCGM_FI_DEV_SM_CLOCK": Model(1980, 345, 0, 12, hi=1980),
    "DCGM_FI_DEV_MEM_CLOCK": Model(2619, 2619),
    "DCGM_FI_DEV_GPU_UTIL": Model(96, 0, 1.5, 2, hi=100),
    "DCGM_FI_DEV_FB_USED": Model(72000, 0, 1500, 150, hi=FB_TOTAL_MIB),  # 91% +- 2%: under 97% (GPUFBMemoryPressure)
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": Model(0, 1),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": Model(0.93, 0, 0.02, 0.02, hi=1, digits=4),
    "DCGM_FI_PROF_SM_ACTIVE": Model(0.86, 0, 0.03, 0.02, hi=1, digits=4),
    "DCGM_FI_PROF_SM_OCCUPANCY": Model(0.42, 0, 0.05, 0.02, hi=1, digits=4),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": Model(0.55, 0, 0.05, 0.03, hi=1, digits=4),
    "DCGM_FI_PROF_DRAM_ACTIVE": Model(0.62, 0, 0.05, 0.03, hi=1, digits=4),
    "DCGM_FI_PROF_PCIE_RX_BYTES": Model(2.5e9, 1e6, 4e8, 3e8),
    "DCGM_FI_PROF_PCIE_TX_BYTES": Model(1.8e9, 1e6, 3e8, 2e8),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": Model(rate=1 / 600, flaky=0.01),
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": Model(rate=1 / 600, flaky=0.01),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": Model(rate=1 / 300, flaky=0.03),
    "DCGM_FI_DEV_POWER_VIOLATION": Model(rate=5e7, flaky="busy"),
    "DCGM_FI_DEV_THERMAL_VIOLATION": Model(rate=1e7, flaky=0.005),
}
# Fields every dcgm-exporter 4.x default config exports beside those the rules read (see brief).
EXTRA_FIELDS = ["DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES",
                "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"]
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # a counter that follows the power model (values())
ZERO = Model()  # ECC DBE, NVLink errors, XID, row remap, retired pages: all healthy


def exporter_fields(counters_csv: Path) -> list[str]:
    """Fields of the exporter config rulesgen renders (the fields the rules read), plus extras."""
    fields = []
    for line in counters_csv.read_text().splitlines():
        name, kind = (part.strip() for part in (line.split(",") + [""])[:2])
        if name.startswith("DCGM_") and kind != "label":
            fields.append(name)
    return sorted(set(fields) | set(EXTRA_FIELDS))


@dataclass(frozen=True)
class Fleet:
    """N GPUs on N/8 nodes; `labels[i]` is GPU i's exporter label body, `target[i]` the scrape labels."""
    gpus: int
    busy: np.ndarray  # bool per GPU
    labels: list[str]
    target: list[str]
    node_of: np.ndarray

    @property
    def nodes(self) -> int:
        return -(-self.gpus // GPUS_PER_NODE)


def node_name(n: int) -> str:
    return f"gpu-node-{n:04d}"


def node_instance(n: int) -> str:
    return f"10.{n // 62500 % 250}.{n // 250 % 250}.{n % 250 + 1}:9400"


def make_fleet(gpus: int) -> Fleet:
    """Whole nodes join 4-node training jobs (namespace/pod labels); the rest idle without a pod."""
    rng = np.random.default_rng(7)
    node_busy = rng.random(-(-gpus // GPUS_PER_NODE)) < BUSY_SHARE
    labels, target, busy, node_of = [], [], [], []
    for i in range(gpus):
        n, k = divmod(i, GPUS_PER_NODE)
        uuid = hashlib.md5(f"{n}/{k}".encode()).hexdigest()
        body = (f'gpu="{k}",UUID="GPU-{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:32]}",'
                f'pci_bus_id="00000000:{PCI_BUS[k]}:00.0",device="nvidia{k}",modelName="{MODEL_NAME}",'
                f'Hostname="{node_name(n)}",DCGM_FI_DRIVER_VERSION="{DRIVER}"')
        if node_busy[n]:
            job, rank = divmod(n, NODES_PER_JOB)
            body += f',container="pytorch",namespace="team-{job % 5}",pod="llm-{job}-worker-{rank}"'
        labels.append(body)
        target.append(f'job="dcgm-exporter",instance="{node_instance(n)}",cluster="bench"')
        busy.append(bool(node_busy[n]))
        node_of.append(n)
    return Fleet(gpus, np.array(busy), labels, target, np.array(node_of))


def _seed(*parts: object) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def values(metric: str, fleet: Fleet, ts: np.ndarray, origin: float) -> np.ndarray:
    """Samples of `metric` for every GPU at times `ts` (seconds): array (gpus, len(ts))."""
    if metric == "DCGM_FI_DEV_FB_FREE":
        return np.where(fleet.busy[:, None], FB_TOTAL_MIB - values("DCGM_FI_DEV_FB_USED", fleet, ts, origin),
                        FB_TOTAL_MIB)
    if metric == ENERGY:  # mJ since boot at the GPU's mean power: a frozen counter is telemetry_frozen
        power = MODELS["DCGM_FI_DEV_POWER_USAGE"]
        return np.floor(np.outer(np.where(fleet.busy, power.busy, power.idle) * 1000.0, ts - origin))
    m = MODELS.get(metric, ZERO)
    per_gpu = np.random.default_rng(_seed(metric))
    if m.rate:
        chosen = fleet.busy if m.flaky == "busy" else per_gpu.random(fleet.gpus) < float(m.flaky)
        return np.floor(np.outer(chosen * m.rate, ts - origin))
    base = np.where(fleet.busy, m.busy + m.spread * np.clip(per_gpu.standard_normal(fleet.gpus), -SPREAD_CLIP,
                                                             SPREAD_CLIP), m.idle)
    out = np.repeat(base[:, None], len(ts), axis=1)
    if m.noise:
        noise = np.random.default_rng(_seed(metric, int(ts[0]), len(ts))).standard_normal(out.shape)
        out += np.where(fleet.busy, m.noise, m.noise / 4)[:, None] * noise
    return np.clip(out, m.lo, m.hi).round(m.digits)


def _as_text(v: np.ndarray, digits: int) -> list[list[str]]:
    """Rows of sample values as exposition strings (integers without '.0', like dcgm-exporter)."""
    if digits == 0:
        return [list(map(str, row)) for row in v.astype(np.int64).tolist()]
    return [list(map(str, row)) for row in v.tolist()]


def exposition(fleet: Fleet, metrics: list[str], t0: float, t1: float, step: float, origin: float,
               ts_unit: int, nodes: set[int] | None = None) -> Iterator[str]:
    """Text chunks (one per series) with samples at t0, t0+step, ... < t1 and timestamps in units of
    1/ts_unit seconds: ts_unit=1 is OpenMetrics (promtool), 1000 is Prometheus text (VictoriaMetrics).
    `nodes`: only the series of these nodes (a shard's part; values stay those of the whole fleet)."""
    ts = np.arange(t0, t1, step)
    if len(ts) == 0:
        return
    suffix = [f" {int(t * ts_unit)}" for t in ts]
    for metric in metrics:
        yield f"# TYPE {metric} gauge\n"
        if metric == "up":
            for n in range(fleet.nodes):
                if nodes is not None and n not in nodes:
                    continue
                first = n * GPUS_PER_NODE
                p = f"up{{{fleet.target[first]}}} "
                yield p + ("\n" + p).join(map(add, ["1"] * len(ts), suffix)) + "\n"
            continue
        rows = _as_text(values(metric, fleet, ts, origin), MODELS.get(metric, ZERO).digits)
        for i in range(fleet.gpus):
            if nodes is not None and int(fleet.node_of[i]) not in nodes:
                continue
            p = f"{metric}{{{fleet.labels[i]},{fleet.target[i]}}} "
            yield p + ("\n" + p).join(map(add, rows[i], suffix)) + "\n"


def write_openmetrics(path: Path, fleet: Fleet, metrics: list[str], t0: float, t1: float, step: float,
                      origin: float, nodes: set[int] | None = None) -> int:
    """One promtool input file (of `nodes` only, if given); returns its size in bytes."""
    with open(path, "w") as f:
        for chunk in exposition(fleet, metrics, t0, t1, step, origin, ts_unit=1, nodes=nodes):
            f.write(chunk)
        f.write("# EOF\n")
    return path.stat().st_size


def job_series(node: int, minute: int) -> str:
    """What the SLOs read besides DCGM, for a busy node (rank `rank` of job `job`, make_fleet): the rank's
    step (one a minute) and last checkpoint (every 2 hours), as the job-metrics contract names them, and the
    kube-state-metrics series of its pod and Job (running, never finished), served on the node's target
    with their own `job` label (the scrape honours labels)."""
    job, rank = divmod(node, NODES_PER_JOB)
    ns, pod, name = f"team-{job % 5}", f"llm-{job}-worker-{rank}", f"llm-{job}"
    rank_labels = f'job="training",namespace="{ns}",pod="{pod}",rank="{rank}"'
    ksm = 'job="kube-state-metrics"'
    lines = [f"training_step{{{rank_labels}}} {minute}", f"training_checkpoint_step{{{rank_labels}}} {minute - minute % 120}",
             f'kube_pod_owner{{{ksm},namespace="{ns}",pod="{pod}",owner_kind="Job",owner_name="{name}",owner_is_controller="true"}} 1',
             f'kube_pod_container_resource_requests{{{ksm},namespace="{ns}",pod="{pod}",container="pytorch",'
             f'resource="nvidia_com_gpu",unit="integer"}} {GPUS_PER_NODE}']
    if rank == 0:
        job_labels = f'{ksm},namespace="{ns}",job_name="{name}"'
        lines += [f"kube_job_status_active{{{job_labels}}} 1", f'kube_job_complete{{{job_labels},condition="true"}} 0',
                  f'kube_job_failed{{{job_labels},condition="true"}} 0']
    return "".join(line + "\n" for line in lines)


class Exporter:
    """Live dcgm-exporter stand-in: GET /node/<n> serves node n's GPUs at the current time, so that
    Prometheus and VictoriaMetrics scrape fresh samples during the measurement (one target per node)."""

    def __init__(self, fleet: Fleet, metrics: list[str], origin: float, step: float):
        self.fleet, self.metrics, self.origin, self.step = fleet, metrics, origin, step
        self._cache: tuple[int, dict[str, list[list[str]]]] | None = None
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def snapshot(self, now: float) -> dict[str, list[list[str]]]:
        """All GPUs' values for the current scrape bucket, computed once per bucket."""
        bucket = int(now // self.step)
        with self._lock:
            if self._cache is None or self._cache[0] != bucket:
                ts = np.array([bucket * self.step])
                self._cache = (bucket, {m: _as_text(values(m, self.fleet, ts, self.origin),
                                                    MODELS.get(m, ZERO).digits) for m in self.metrics})
            return self._cache[1]

    def render(self, node: int, now: float) -> str:
        snap = self.snapshot(now)
        gpus = range(node * GPUS_PER_NODE, min((node + 1) * GPUS_PER_NODE, self.fleet.gpus))
        dcgm = "".join(f"{m}{{{self.fleet.labels[i]}}} {snap[m][i][0]}\n" for m in self.metrics for i in gpus)
        return dcgm + (job_series(node, int((now - self.origin) // 60)) if self.fleet.busy[gpus[0]] else "")

    def _handler(self):
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server API)
                import time
                try:
                    node = int(self.path.rsplit("/", 1)[1])
                    body = exporter.render(node, time.time()).encode()
                    self.send_response(200)
                except (ValueError, IndexError):
                    body = b"not found\n"
                    self.send_response(404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):  # noqa: N802 (vmalert's notifier: accept and drop alerts)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        return Handler

    def scrape_config(self, interval: str) -> dict:
        """A Prometheus/vmagent scrape job with one target per node (own path, dcgm-exporter labels)."""
        groups = [{"targets": [f"127.0.0.1:{self.port}"],
                   "labels": {"__metrics_path__": f"/node/{n}", "instance": node_instance(n), "cluster": "bench"}}
                  for n in range(self.fleet.nodes)]
        return {"job_name": "dcgm-exporter", "honor_labels": True, "scrape_interval": interval,
                "scrape_timeout": "10s", "static_configs": groups}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
