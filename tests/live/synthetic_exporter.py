"""A synthetic dcgm-exporter for the live test: one HTTP /metrics endpoint per node on 127.0.0.1, each
serving its node's GPUs the way dcgm-exporter 3.3-4.8.2 does (field names, HELP/TYPE lines, the label
set gpu, UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION, then container,
namespace, pod while a pod holds the GPU), with values that move with the clock.

The fleet (values from the healthy fixtures in fixtures/scenarios/): one HGX H100 node running an
8-rank training job (normal-steady-training), one single-L40S inference node serving one replica
(normal-inference-bursty) and one idle HGX H100 node without pods (normal-idle-node).

Faults are flipped while it runs: `gpu.dbe`, `gpu.lost` (its series disappear while the exporter still
answers), `node.delete_pods()` (its series lose container/namespace/pod, as when the job's pods are
deleted), `node.stop()` / `node.start()` (the exporter stops answering; the same port again)."""
from __future__ import annotations

import math
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DRIVER = "550.90.07"
SENTINEL = 9223372036854775794  # DCGM_INT64_NOT_SUPPORTED: how the exporter shows a field the GPU lacks

# (name, type, help) as dcgm-exporter's default-counters.csv and dcp-metrics-included.csv name them
FIELDS = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask of DCGM_CLOCKS_EVENT_REASON_*)"),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in ns)."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in ns)."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors."),
    ("DCGM_FI_DEV_RETIRED_SBE", "counter", "Total number of retired pages due to single-bit errors."),
    ("DCGM_FI_DEV_RETIRED_DBE", "counter", "Total number of retired pages due to double-bit errors."),
    ("DCGM_FI_DEV_RETIRED_PENDING", "counter", "Total number of pages pending retirement."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether remapping of rows is pending"),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    ("DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second."),
]
NVLINK = {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
          "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"}


def wobble(key: str, t: float, period: float = 97.0) -> float:
    """A smooth, deterministic value in [-1, 1] for this series at time t (no two series in phase)."""
    phase = zlib.crc32(key.encode()) % 1000 / 1000 * 2 * math.pi
    return 0.7 * math.sin(2 * math.pi * t / period + phase) + 0.3 * math.sin(2 * math.pi * t / 23.0 + 2 * phase)


@dataclass
class Gpu:
    index: int
    uuid: str
    bus: str
    model: str
    pod: tuple[str, str, str] | None = None   # (container, namespace, pod)
    dbe: int = 0          # DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: double-bit errors since the last reset
    lost: bool = False    # fell off the bus: no series at all while the exporter answers

    def labels(self, host: str, pods: bool) -> str:
        out = (f'gpu="{self.index}",UUID="{self.uuid}",pci_bus_id="{self.bus}",device="nvidia{self.index}",'
               f'modelName="{self.model}",Hostname="{host}",DCGM_FI_DRIVER_VERSION="{DRIVER}"')
        if pods and self.pod:
            out += ',container="{}",namespace="{}",pod="{}"'.format(*self.pod)
        return out


@dataclass
class Node:
    hostname: str
    kind: str                       # training | inference | idle
    gpus: list[Gpu]
    port: int = 0
    pods: bool = True               # False once the job's pods are deleted
    born: float = field(default_factory=time.time)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def gpu(self, index: int) -> Gpu:
        return next(g for g in self.gpus if g.index == index)

    def delete_pods(self) -> None:
        with self.lock:
            self.pods = False

    # -- values ------------------------------------------------------------------------------

    def values(self, g: Gpu, t: float) -> dict[str, float]:
        key = f"{self.hostname}/{g.index}"
        w = lambda name, period=97.0: wobble(key + name, t, period)  # noqa: E731
        up = t - self.born
        busy = self.kind == "training" or (self.kind == "inference" and g.pod is not None)
        if self.kind == "training":
            power = 685 + 12 * w("p")
            v = {"DCGM_FI_DEV_GPU_TEMP": round(64 + 1.5 * w("t")), "DCGM_FI_DEV_MEMORY_TEMP": round(70 + 1.5 * w("m")),
                 "DCGM_FI_DEV_POWER_USAGE": round(power, 1), "DCGM_FI_DEV_SM_CLOCK": 1980 - 15 * round(3 + 3 * w("c")),
                 "DCGM_FI_DEV_GPU_UTIL": round(98 + 2 * w("u")), "DCGM_FI_DEV_MEM_COPY_UTIL": round(38 + 4 * w("mc")),
                 "DCGM_FI_DEV_FB_USED": 65712, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 4,
                 "DCGM_FI_PROF_GR_ENGINE_ACTIVE": round(0.95 + 0.02 * w("g"), 3),
                 "DCGM_FI_PROF_SM_ACTIVE": round(0.85 + 0.04 * w("s"), 3),
                 "DCGM_FI_PROF_SM_OCCUPANCY": round(0.37 + 0.04 * w("o"), 3),
                 "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": round(0.48 + 0.06 * w("x"), 3),
                 "DCGM_FI_PROF_DRAM_ACTIVE": round(0.44 + 0.05 * w("d"), 3),
                 "DCGM_FI_PROF_PCIE_TX_BYTES": round(9e7 + 3e7 * w("tx")), "DCGM_FI_PROF_PCIE_RX_BYTES": round(1.6e8 + 4e7 * w("rx")),
                 "DCGM_FI_DEV_POWER_VIOLATION": round(up * 2e8)}  # at the 700 W cap ~20% of the time: normal
        elif busy:  # an inference replica: bursty load, KV cache holds ~90% of the framebuffer
            load = 0.55 + 0.35 * w("load", 61.0)
            power = 80 + 240 * load
            v = {"DCGM_FI_DEV_GPU_TEMP": round(48 + 14 * load), "DCGM_FI_DEV_MEMORY_TEMP": SENTINEL,
                 "DCGM_FI_DEV_POWER_USAGE": round(power, 1), "DCGM_FI_DEV_SM_CLOCK": 2520,
                 "DCGM_FI_DEV_GPU_UTIL": round(100 * load), "DCGM_FI_DEV_MEM_COPY_UTIL": round(30 * load),
                 "DCGM_FI_DEV_FB_USED": 41300, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 0,
                 "DCGM_FI_PROF_GR_ENGINE_ACTIVE": round(load, 3), "DCGM_FI_PROF_SM_ACTIVE": round(0.85 * load, 3),
                 "DCGM_FI_PROF_SM_OCCUPANCY": round(0.3 * load, 3), "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": round(0.3 * load, 3),
                 "DCGM_FI_PROF_DRAM_ACTIVE": round(0.5 * load, 3),
                 "DCGM_FI_PROF_PCIE_TX_BYTES": round(6e7 * load), "DCGM_FI_PROF_PCIE_RX_BYTES": round(2e8 * load),
                 "DCGM_FI_DEV_POWER_VIOLATION": 0}
        else:  # idle: no pods, ~70 W, 30-40 C, SM clock 345 MHz, clock-event reason 1 (GPU idle)
            power = 70 + 2 * w("p")
            v = {"DCGM_FI_DEV_GPU_TEMP": round(34 + 2 * w("t")), "DCGM_FI_DEV_MEMORY_TEMP": round(37 + 2 * w("m")),
                 "DCGM_FI_DEV_POWER_USAGE": round(power, 1), "DCGM_FI_DEV_SM_CLOCK": 345,
                 "DCGM_FI_DEV_GPU_UTIL": 0, "DCGM_FI_DEV_MEM_COPY_UTIL": 0,
                 "DCGM_FI_DEV_FB_USED": 0, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 1,
                 "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0, "DCGM_FI_PROF_SM_ACTIVE": 0, "DCGM_FI_PROF_SM_OCCUPANCY": 0,
                 "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0, "DCGM_FI_PROF_DRAM_ACTIVE": 0,
                 "DCGM_FI_PROF_PCIE_TX_BYTES": round(2e5 + 1e5 * w("tx")), "DCGM_FI_PROF_PCIE_RX_BYTES": round(3e5 + 1e5 * w("rx")),
                 "DCGM_FI_DEV_POWER_VIOLATION": 0}
        total = 46068 if self.kind == "inference" else 81559  # MiB: L40S 48 GB, H100 80 GB
        v["DCGM_FI_DEV_FB_FREE"] = total - v["DCGM_FI_DEV_FB_USED"] - 539
        v["DCGM_FI_DEV_MEM_CLOCK"] = 9001 if self.kind == "inference" else 2619
        v["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] = round(4.5e11 + g.index * 1e9 + up * power * 1000)
        v["DCGM_FI_DEV_THERMAL_VIOLATION"] = 0
        v["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"] = 0
        v["DCGM_FI_DEV_XID_ERRORS"] = 0
        ecc = self.kind != "inference"  # the L40S runs with ECC off: its counters are the sentinel
        v["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"] = (3 if g.index == 5 else 0) if ecc else SENTINEL
        v["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] = g.dbe if ecc else SENTINEL
        v["DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"] = (41 if g.index == 5 else 2) if ecc else SENTINEL
        v["DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"] = 0 if ecc else SENTINEL
        for name in ("DCGM_FI_DEV_RETIRED_SBE", "DCGM_FI_DEV_RETIRED_DBE", "DCGM_FI_DEV_RETIRED_PENDING",
                     "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
                     "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_PENDING"):
            v[name] = 0
        if self.kind != "inference":  # NVLink: the HGX boards; the PCIe L40S has none
            for name in NVLINK:
                v[name] = 0
        return v

    def exposition(self, t: float) -> str:
        with self.lock:
            pods = self.pods
            gpus = [g for g in self.gpus if not g.lost]
            rows = {g.index: self.values(g, t) for g in gpus}
        out = []
        for name, kind, help_ in FIELDS:
            present = [g for g in gpus if name in rows[g.index]]
            if not present:
                continue
            out += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
            for g in present:
                labels = g.labels(self.hostname, pods)
                if name == "DCGM_FI_DEV_XID_ERRORS":
                    labels += ',err_code="0",err_msg="No Error"'
                value = rows[g.index][name]
                out.append(f"{name}{{{labels}}} {value:g}" if isinstance(value, float) else f"{name}{{{labels}}} {value}")
        return "\n".join(out) + "\n" if out else ""

    # -- the HTTP endpoint -------------------------------------------------------------------

    def start(self) -> None:
        """Serve /metrics on self.port (a fresh one the first time, the same one after stop())."""
        node = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = node.exposition(time.time()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"exporter-{self.hostname}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=10)
            self._server = None

    @property
    def running(self) -> bool:
        return self._server is not None


def fleet() -> dict[str, Node]:
    """The three nodes, not yet serving: {role: Node}."""
    h100 = "NVIDIA H100 80GB HBM3"
    buses = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]
    training = Node("gpu-h100-a01", "training", [
        Gpu(i, f"GPU-7c1e{i:04x}-5a1b-4c3d-9e2f-a01{i:09d}", f"00000000:{buses[i]}:00.0", h100,
            ("pytorch", "llm-training", f"llm-pretrain-worker-{i}")) for i in range(8)])
    inference = Node("inf-l40s-03", "inference", [
        Gpu(0, "GPU-8979e079-71f2-7938-4fc3-f2d70e8d86a3", "00000000:01:00.0", "NVIDIA L40S",
            ("kserve-container", "serving", "llama3-8b-predictor-7f9c4d8b6-g7c2k"))])
    idle = Node("gpu-h100-b07", "idle", [
        Gpu(i, f"GPU-3b54{i:04x}-46b7-2459-89c4-b07{i:09d}", f"00000000:{buses[i]}:00.0", h100) for i in range(8)])
    return {"training": training, "inference": inference, "idle": idle}
