"""Fleet-scale rule evaluation cost: the rendered rules (alerts/prometheus/*.yaml, read at run time) in a
real Prometheus and in vmalert + victoria-metrics (the binaries in .tools/bin: Prometheus 3.5 and
VictoriaMetrics 1.145 since commit 1ede561; the report names the versions that ran), over a synthetic
dcgm-exporter fleet.

Method (what the numbers mean):
- Data: N H100 GPUs (8 per node, 4-node training jobs on 85% of the nodes: ~95% util, 600-700 W,
  60-75 C; the rest idle) with dcgm-exporter 4.x labels. History: D days of the fields the baseline
  recording rules (and the naive comparison) read, every --history-step; the last --fine-hours: every
  field at the scrape interval. Then a live synthetic exporter (one scrape target per node) scraped
  at the scrape interval, so the rules read fresh samples. (Raw blocks that run past "now" would make
  Prometheus refuse the rule results: its head takes no samples older than the newest block.)
- Prometheus: raw data ingested with `promtool tsdb create-blocks-from openmetrics`, one input file per
  54h block (the largest block Prometheus keeps at 30d retention: each file is parsed once and the
  blocks are never re-compacted). VictoriaMetrics: the same samples POSTed to /api/v1/import/prometheus.
- Downsampled history: `rulesgen backfill victoriametrics` (vmalert replay); `rulesgen backfill
  prometheus` (promtool create-blocks-from rules) for --prom-backfill-days. When that is less than
  --days (promtool's rule backfill takes hours at fleet size), Prometheus gets the history vmalert
  computed: exported from VictoriaMetrics, ingested with promtool. Prometheus is measured only once it
  has loaded every block and compacted the overlapping ones away.
- Groups with an interval above 1m run from a copy shortened to 1m (cost per evaluation does not
  depend on the interval); shares use the real intervals. The servers run one at a time.
- Naive comparison: one generated group of z-scores on raw samples over the whole history, run alone.

Run: .venv/bin/python benchmarks/fleet.py [--gpus 800] [--days 14]   (see --help; writes
benchmarks/results/fleet-<N>.md)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import requests
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from rulesgen import conventions, rule_graph  # noqa: E402
from rulesgen.durations import parse_duration  # noqa: E402
from rulesgen.output import Rule  # noqa: E402
from fleet_data import MODEL_NAME, Exporter, exporter_fields, exposition, make_fleet, write_openmetrics  # noqa: E402
from rulesgen.processes import free_port  # noqa: E402
from fleet_servers import PEAK_RSS, Server, log, metric_value, run_tool  # noqa: E402

TOOLS = ROOT / ".tools" / "bin"
RULES_DIR = ROOT / "alerts" / "prometheus"
RULESGEN = ROOT / ".venv" / "bin" / "rulesgen"
GLOBAL_INTERVAL = 30
MEASURE_INTERVAL = 60
BLOCK = 54 * 3600  # promtool --max-block-duration=54h: ranges 2h, 6h, 18h, 54h; 54h = 10% of 30d, top level
NAIVE_GAUGES = ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                "DCGM_FI_DEV_SM_CLOCK"]
NAIVE_COUNTERS = ["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"]
RAW_SERIES = '{__name__=~"DCGM_.+|up"}'
RECORDED_SERIES = '{__name__=~".+:.+"}'
BACKFILLED = ["gpu:dcgm_baseline:value_30m_hourly", "gpu:dcgm_baseline_daily:count"]
ENGINES = ["prometheus", "promtool", "victoria-metrics", "vmalert"]


def engine_versions() -> dict[str, str]:
    """{binary: version} of the engines in TOOLS: the Debian package version from .tools/versions
    (Debian's VictoriaMetrics binaries print an empty -version), else the binary's own --version."""
    out: dict[str, str] = {}
    versions = TOOLS.parent / "versions"
    if versions.exists():
        for line in versions.read_text().splitlines():
            f = line.split()
            if len(f) >= 3 and f[0] in ENGINES:
                out[f[0]] = f[2] + (f" ({f[3]})" if len(f) > 3 else "")
    for name in ENGINES:
        if name not in out:
            flag = "--version" if name in ("prometheus", "promtool") else "-version"
            try:
                text = subprocess.run([str(TOOLS / name), flag], capture_output=True, text=True, timeout=60).stdout
            except OSError:
                text = ""
            m = re.search(r"version (\S+)|-v(\d+\.\d+\.\d+\S*)", text)
            out[name] = (m[1] or m[2]) if m else "unknown"
    return out


def self_reported() -> str:
    """First line of `prometheus --version`: proof of which binary ran, beside the package list."""
    try:
        out = subprocess.run([str(TOOLS / "prometheus"), "--version"], capture_output=True, text=True, timeout=60)
        return (out.stdout + out.stderr).splitlines()[0].strip()
    except (OSError, IndexError):
        return "unknown"


def engine_label(versions: dict[str, str], name: str) -> str:
    """'3.5' for '3.5.3+ds1-6 (sid)': major.minor, for prose."""
    m = re.match(r"(\d+\.\d+)", versions.get(name, ""))
    return m[1] if m else versions.get(name, "?")


# ------------------------------------------------------------------------------------------------
# plan: rule files, which metrics the history needs, time windows
# ------------------------------------------------------------------------------------------------

@dataclass
class RuleSet:
    """The rule files as found at run time: groups (name -> real interval, s) and the exprs."""
    files: list[Path]
    intervals: dict[str, int]
    records_by_group: dict[str, list[str]]
    graph: rule_graph.Graph  # what each rule reads (rulesgen's own dependency graph, from the files)

    @classmethod
    def load(cls, files: list[Path]) -> "RuleSet":
        intervals, records_by_group, rules = {}, {}, []
        for f in files:
            for g in yaml.safe_load(f.read_text()).get("groups") or []:
                intervals[g["name"]] = parse_duration(g.get("interval", "")) or GLOBAL_INTERVAL
                records_by_group[g["name"]] = [r["expr"] for r in g["rules"] if "record" in r]
                rules += [Rule(expr=r["expr"], record=r.get("record"), alert=r.get("alert")) for r in g["rules"]]
        return cls(files, intervals, records_by_group, rule_graph.Graph(rules))

    def raw_metrics_recorded(self, group_filter: str) -> set[str]:
        """DCGM_FI_* names that the recording rules of the groups whose name contains `group_filter`
        read, directly or through other recording rules: what a backfill of them reads."""
        exprs = [e for g, es in self.records_by_group.items() if group_filter in g for e in es]
        return {n for n in self.graph.metrics_read(exprs) if n.startswith("DCGM_FI_")}


def shortened_copies(rules: RuleSet, dest: Path) -> list[Path]:
    """Copies of the rule files with group intervals above MEASURE_INTERVAL cut to it."""
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for f in rules.files:
        doc = yaml.safe_load(f.read_text())
        for g in doc.get("groups") or []:
            if (parse_duration(g.get("interval", "")) or GLOBAL_INTERVAL) > MEASURE_INTERVAL:
                g["interval"] = f"{MEASURE_INTERVAL}s"
        (dest / f.name).write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 20))
        out.append(dest / f.name)
    return out


def naive_rule_file(days: int, dest: Path) -> Path:
    """One group of z-scores straight from raw samples over the whole history: the cost the
    downsampled baselines avoid. Gauges: 1h mean vs the D-day mean/stddev of raw samples. Counters:
    rate over 1h vs the mean/stddev of a `rate(X[1h])[Dd:1h]` subquery (one rate per hour)."""
    w, rules = f"{days}d", []
    for m in NAIVE_GAUGES:
        x = f'{m}{{job="dcgm-exporter"}}'
        rules.append({"record": f"gpu:naive_{m[12:].lower()}:zscore_{w}",
                      "expr": f"(avg_over_time({x}[1h]) - avg_over_time({x}[{w}])) / stddev_over_time({x}[{w}])"})
    for m in NAIVE_COUNTERS:
        r = f'rate({m}{{job="dcgm-exporter"}}[1h])'
        rules.append({"record": f"gpu:naive_{m[12:].lower()}_rate:zscore_{w}",
                      "expr": f"({r} - avg_over_time({r}[{w}:1h])) / stddev_over_time({r}[{w}:1h])"})
    path = dest / "naive-zscore.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "naive-zscore-raw", "interval": f"{MEASURE_INTERVAL}s",
                                                "rules": rules}]}, sort_keys=False, width=1 << 20))
    return path


@dataclass
class Plan:
    gpus: int
    days: int
    step: int
    history_step: int
    fine_hours: int
    all_metrics: list[str]
    history_metrics: list[str]
    t_start: int
    t_fine: int
    origin: float
    t_end: int = 0  # set when the last (fine) window is generated: as late as possible

    def history_windows(self) -> list[tuple[int, int]]:
        """[t0, t1) pieces of [t_start, t_fine) cut at 54h block boundaries: one promtool pass each."""
        out, t = [], self.t_start
        while t < self.t_fine:
            t1 = min((t // BLOCK + 1) * BLOCK, self.t_fine)
            out.append((t, t1))
            t = t1
        return out


@dataclass
class Inputs:
    """The rule files and the exporter field list, copied once at start: both engines measure the same
    rules even if alerts/prometheus/ is re-rendered during the run (other work in the checkout)."""
    rule_files: list[Path]
    counters_csv: Path
    commit: str
    dirty: bool  # the copied files differ from the commit's
    digest: str  # sha256 of the copied files, 12 hex digits

    @classmethod
    def snapshot(cls, dest: Path) -> "Inputs":
        dest.mkdir(parents=True, exist_ok=True)
        sources = sorted(RULES_DIR.glob("*.yaml")) + [ROOT / "exporter" / "dcgm-counters.csv"]
        h = hashlib.sha256()
        for src in sources:
            data = src.read_bytes()
            (dest / src.name).write_bytes(data)
            h.update(src.name.encode() + b"\0" + data)

        def git(*a: str) -> str:
            try:
                return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True, timeout=60).stdout.strip()
            except OSError:
                return ""
        rel = [str(src.relative_to(ROOT)) for src in sources]
        return cls([dest / src.name for src in sources[:-1]], dest / sources[-1].name,
                   git("rev-parse", "--short", "HEAD") or "?", bool(git("status", "--porcelain", "--", *rel)),
                   h.hexdigest()[:12])


class LoadSampler:
    """1-minute load average every 15 s while running (a thread): (min, mean, max) of the machine's load."""

    def __init__(self):
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(os.getloadavg()[0])
            self._stop.wait(15)

    def stop(self) -> list[float]:
        self._stop.set()
        self._thread.join(timeout=30)
        s = self.samples or [math.nan]
        return [min(s), statistics.mean(s), max(s)]


def make_plan(args, rules: RuleSet, counters_csv: Path) -> Plan:
    metrics = exporter_fields(counters_csv)
    history = rules.raw_metrics_recorded("baseline") | (set(NAIVE_GAUGES + NAIVE_COUNTERS) if args.naive else set())
    now = int(time.time()) // args.step * args.step
    t_fine = now - args.fine_hours * 3600
    t_start = (now - args.days * 86400) // 86400 * 86400  # rulesgen backfill starts at midnight UTC
    return Plan(args.gpus, args.days, args.step, args.history_step, args.fine_hours, metrics + ["up"],
                sorted(history & set(metrics)), t_start, t_fine,
                origin=now - (args.days + 30) * 86400)


# ------------------------------------------------------------------------------------------------
# Prometheus
# ------------------------------------------------------------------------------------------------

@dataclass
class Phases:
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        log(f"{name}: {seconds:.1f}s")


def promtool_ingest(path: Path, data_dir: Path) -> None:
    cmd = [str(TOOLS / "promtool"), "tsdb", "create-blocks-from", "openmetrics", "-q",
           "--max-block-duration=54h", str(path), str(data_dir)]
    if run_tool("promtool create-blocks-from openmetrics", cmd) != 0:
        raise RuntimeError(f"failed: {' '.join(cmd)}")


def ingest_prometheus(plan: Plan, fleet, data_dir: Path, work: Path, phases: Phases) -> int:
    """Generate each window's OpenMetrics file and run promtool on it, two windows at a time; the
    fine window goes last so that its end (t_end) is as close as possible to the live data."""
    samples = [0]

    def one(window: tuple[int, int], metrics: list[str], step: int) -> None:
        path = work / f"om-{window[0]}.txt"
        t = time.monotonic()
        size = write_openmetrics(path, fleet, metrics, window[0], window[1], step, plan.origin)
        gen = time.monotonic() - t
        t = time.monotonic()
        promtool_ingest(path, data_dir)
        phases.add("generate (sum over files)", gen)
        phases.add("promtool ingest (sum over files)", time.monotonic() - t)
        n = len(range(window[0], window[1], step))
        samples[0] += n * (plan.gpus * (len(metrics) - ("up" in metrics)) + fleet.nodes * ("up" in metrics))
        log(f"window {time.strftime('%m-%d %H:%M', time.gmtime(window[0]))}: {size / 1e9:.1f} GB, "
            f"generated {gen:.0f}s, promtool {time.monotonic() - t:.0f}s")
        path.unlink()

    start = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda w: one(w, plan.history_metrics, plan.history_step), plan.history_windows()))
    plan.t_end = int(time.time()) // plan.step * plan.step
    one((plan.t_fine, plan.t_end), plan.all_metrics, plan.step)
    phases.add("generate + ingest (wall, 2 in parallel)", time.monotonic() - start)
    return samples[0]


def prometheus_config(path: Path, rule_files: list[Path], scrape_job: dict) -> None:
    path.write_text(yaml.safe_dump({
        "global": {"scrape_interval": scrape_job["scrape_interval"], "evaluation_interval": f"{GLOBAL_INTERVAL}s"},
        "rule_files": [str(f) for f in rule_files],
        "scrape_configs": [scrape_job]}, sort_keys=False))


def start_prometheus(work: Path, data_dir: Path, config: Path) -> Server:
    port = free_port()
    return Server("prometheus", [str(TOOLS / "prometheus"), f"--config.file={config}",
                                 f"--storage.tsdb.path={data_dir}", "--storage.tsdb.retention.time=30d",
                                 f"--web.listen-address=127.0.0.1:{port}", "--web.enable-lifecycle"],
                  port, work, "/-/ready")


def span_days(days: int, end: int) -> float:
    """Days `rulesgen backfill --days D --end E` covers: from midnight UTC D days before E's hour."""
    end -= end % 3600
    return (end - (end - days * 86400) // 86400 * 86400) / 86400


def run_backfill(kind: str, url: str, days: int, end: int, out_dir: Path | None, phases: Phases) -> float | None:
    """`rulesgen backfill KIND` over the raw history; seconds it took, None (and a note) if it failed."""
    cmd = [str(RULESGEN), "backfill", kind, "--url", url, "--days", str(days), "--end", str(end)]
    if out_dir is not None:
        cmd += ["--output-dir", str(out_dir)]
    log("run " + " ".join(cmd))
    t = time.monotonic()
    if run_tool(f"rulesgen backfill {kind} (and its promtool/vmalert)", cmd, stdout=sys.stderr) != 0:
        phases.notes.append(f"FAILED: `{' '.join(cmd[1:4])} --days {days}` (its error is in the log on stderr).")
        return None
    seconds = time.monotonic() - t
    phases.add(f"rulesgen backfill {kind} --days {days}", seconds)
    return seconds


def blocks_on_disk(data_dir: Path) -> list[tuple[int, int]]:
    out = []
    for meta in data_dir.glob("*/meta.json"):
        if ".tmp" not in meta.parent.name:
            d = json.loads(meta.read_text())
            out.append((d["minTime"], d["maxTime"]))
    return sorted(out)


def overlapping(blocks: list[tuple[int, int]]) -> bool:
    return any(b[0] < a[1] for a, b in zip(blocks, blocks[1:]))


def load_blocks(prom: Server, src: Path, data_dir: Path, timeout: float = 3600) -> None:
    """Move backfilled blocks (if any) in, then wait until Prometheus has loaded every block and
    compacted the overlapping ones away (that compaction would otherwise run during the measurement)."""
    for meta in list(src.rglob("meta.json")) if src.exists() else []:
        shutil.move(str(meta.parent), data_dir / meta.parent.name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        blocks = blocks_on_disk(data_dir)
        loaded = metric_value(prom.metrics(), "prometheus_tsdb_blocks_loaded")
        if loaded == len(blocks) and not overlapping(blocks):
            return
        time.sleep(5)
    raise RuntimeError("Prometheus did not load/compact the blocks in time")


def wait_iterations(server: Server, groups: list[str], count: int, read, timeout: float) -> None:
    """Until every group has evaluated `count` times (read(samples) -> {group: iterations})."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        samples = server.metrics()
        done = read(samples)
        if all(done.get(g, 0) >= count for g in groups):
            return
        time.sleep(5)
    raise RuntimeError(f"{server.name}: groups did not evaluate {count} times in {timeout}s")


def prom_group(labels: dict[str, str]) -> str:
    return labels.get("rule_group", "").split(";")[-1]


def prom_failures(samples) -> dict[str, float]:
    out = {prom_group(l): v for n, l, v in samples if n == "prometheus_rule_evaluation_failures_total"}
    # Prometheus 3 labels it by sample type (type="float", "histogram"): the sum over them
    out["(tsdb out-of-bounds samples)"] = sum(v for n, _, v in samples if n == "prometheus_tsdb_out_of_bound_samples_total")
    return out


def vmalert_failures(samples) -> dict[str, float]:
    out: dict[str, float] = {}
    for n, l, v in samples:
        if n in ("vmalert_recording_rules_errors_total", "vmalert_alerting_rules_errors_total"):
            out[l.get("group", "")] = out.get(l.get("group", ""), 0) + v
    return out


def prom_iterations(samples) -> dict[str, float]:
    return {prom_group(l): v for n, l, v in samples if n == "prometheus_rule_group_iterations_total"}


class RuleTimes:
    """Mean evaluationTime per rule (Prometheus /api/v1/rules) over the distinct evaluations (a new
    lastEvaluation) seen by poll() after its first call."""

    def __init__(self):
        self.seen: dict[tuple[str, int], str] = {}
        self.times: dict[tuple[str, int], list[float]] = {}
        self.names: dict[tuple[str, int], str] = {}

    def poll(self, server: Server) -> None:
        first = not self.seen
        try:
            groups = requests.get(server.url + "/api/v1/rules", timeout=60).json()["data"]["groups"]
        except (requests.RequestException, ValueError, KeyError) as exc:  # per-rule times are extras
            log(f"{server.name} /api/v1/rules failed: {str(exc)[:300]}")
            return
        if first and not groups:
            return
        for g in groups:
            for i, r in enumerate(g["rules"]):
                key = (g["name"], i)
                if r.get("lastEvaluation") != self.seen.get(key):
                    self.seen[key], self.names[key] = r.get("lastEvaluation"), r.get("name", "?")
                    if not first:
                        self.times.setdefault(key, []).append(r.get("evaluationTime", 0.0))

    def top(self, n: int = 10) -> list[tuple[float, str, str, int]]:
        """(mean seconds, group, rule, evaluations), most expensive first."""
        rows = [(statistics.mean(t), k[0], self.names[k], len(t)) for k, t in self.times.items()]
        return sorted(rows, reverse=True)[:n]

    def group_sums(self) -> dict[str, float]:
        """Sum over each group's rules of their mean evaluationTime (seconds)."""
        out: dict[str, float] = {}
        for k, t in self.times.items():
            out[k[0]] = out.get(k[0], 0.0) + statistics.mean(t)
        return out


def rule_times_usable(times: RuleTimes, groups: dict[str, tuple[float, int]]) -> tuple[bool, str]:
    """Per-rule times are costs only if, in every group, they add up to no more than the group's own
    time (rules of a group run one after the other); 20% slack for timing between polls."""
    sums, worst = times.group_sums(), (0.0, "")
    for g, (d, _) in groups.items():
        if g in sums and d and not math.isnan(d):
            worst = max(worst, (sums[g] / d, g))
    if not sums:
        return False, "no per-rule evaluationTime was reported"
    return worst[0] <= 1.2, f"per-rule times add up to {worst[0]:.2f}x the group time at most ({worst[1]})"


def measure_prometheus(prom: Server, groups: list[str], evaluations: int, rule_times: RuleTimes | None = None,
                       timeout: float = 1800) -> dict[str, tuple[float, int]]:
    """Mean prometheus_rule_group_last_duration_seconds per group over `evaluations` distinct
    evaluations (a new prometheus_rule_group_last_evaluation_timestamp_seconds = a new reading)."""
    seen: dict[str, float] = {}
    durations: dict[str, list[float]] = {g: [] for g in groups}
    deadline = time.monotonic() + timeout
    first = True
    while time.monotonic() < deadline:
        samples = prom.metrics()
        if rule_times:
            rule_times.poll(prom)
        last = {prom_group(l): v for n, l, v in samples if n == "prometheus_rule_group_last_duration_seconds"}
        stamp = {prom_group(l): v for n, l, v in samples
                 if n == "prometheus_rule_group_last_evaluation_timestamp_seconds"}
        for g in groups:
            if g in stamp and stamp[g] != seen.get(g):
                if not first:  # the first reading may predate the measurement
                    durations[g].append(last[g])
                seen[g] = stamp[g]
        first = False
        if all(len(d) >= evaluations for d in durations.values()):
            break
        time.sleep(3)
    return {g: (statistics.mean(d) if d else math.nan, len(d)) for g, d in durations.items()}


# ------------------------------------------------------------------------------------------------
# VictoriaMetrics + vmalert
# ------------------------------------------------------------------------------------------------

def start_vm(work: Path, scrape_config: Path) -> Server:
    port = free_port()
    return Server("victoria-metrics", [str(TOOLS / "victoria-metrics"), f"-storageDataPath={work / 'vm-data'}",
                                       "-retentionPeriod=30d", f"-httpListenAddr=127.0.0.1:{port}",
                                       f"-promscrape.config={scrape_config}", "-loggerLevel=WARN",
                                       # the naive group's raw 14-day windows run past the 30 s default
                                       "-search.maxQueryDuration=10m",
                                       # count_series() lists every series of the last day (default 30000)
                                       # and MetricsQL queries may select them all (default 300000)
                                       "-search.maxSeries=100000000", "-search.maxUniqueTimeseries=100000000"],
                  port, work, "/health")


def import_vm(vm: Server, plan: Plan, fleet, phases: Phases) -> None:
    """POST the same windows (same seeds, so the same samples) to /api/v1/import/prometheus, streamed,
    two at a time, plus the stretch from t_end to now that Prometheus got from live scrapes."""
    def body(window, metrics, step):
        buf = []
        for chunk in exposition(fleet, metrics, window[0], window[1], step, plan.origin, ts_unit=1000):
            buf.append(chunk)
            if len(buf) >= 64:
                yield "".join(buf).encode()
                buf = []
        yield "".join(buf).encode()

    def one(job):
        window, metrics, step = job
        r = requests.post(vm.url + "/api/v1/import/prometheus", data=body(window, metrics, step), timeout=3600)
        r.raise_for_status()

    now = int(time.time()) // plan.step * plan.step
    jobs = [(w, plan.history_metrics, plan.history_step) for w in plan.history_windows()]
    jobs += [((plan.t_fine, plan.t_end), plan.all_metrics, plan.step), ((plan.t_end, now), plan.all_metrics, plan.step)]
    t = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(one, jobs))
    requests.get(vm.url + "/internal/force_flush", timeout=600)
    phases.add("VM import (generate + POST, wall)", time.monotonic() - t)


def start_vmalert(work: Path, vm: Server, rule_files: list[Path], notifier: str, name: str = "vmalert") -> Server:
    port = free_port()
    return Server(name, [str(TOOLS / "vmalert"), *[f"-rule={f}" for f in rule_files],
                         f"-datasource.url={vm.url}", f"-remoteWrite.url={vm.url}", f"-notifier.url={notifier}",
                         f"-evaluationInterval={GLOBAL_INTERVAL}s", f"-httpListenAddr=127.0.0.1:{port}",
                         "-loggerLevel=WARN"],
                  port, work, "/health")


def vmalert_sums(samples) -> dict[str, tuple[float, float]]:
    """{group: (sum, count)} of vmalert_iteration_duration_seconds."""
    s = {l.get("group"): v for n, l, v in samples if n == "vmalert_iteration_duration_seconds_sum"}
    c = {l.get("group"): v for n, l, v in samples if n == "vmalert_iteration_duration_seconds_count"}
    return {g: (s[g], c.get(g, 0.0)) for g in s}


def measure_vmalert(vmalert: Server, groups: list[str], evaluations: int, rule_times: RuleTimes | None = None,
                    timeout: float = 1800) -> dict[str, tuple[float, int]]:
    """Mean iteration duration per group: delta sum / delta count of the summary over the window.
    Per-rule times (rule_times, from vmalert's /api/v1/rules) are polled too; whether they are usable
    is checked against the group times (rule_times_usable): in vmalert 1.79 the recording rules of a
    group shared one lastEvaluation and their evaluationTime values added up to many times the group's
    iteration time."""
    before = vmalert_sums(vmalert.metrics())
    deadline = time.monotonic() + timeout
    while True:
        if rule_times:
            rule_times.poll(vmalert)
        time.sleep(5)
        now = vmalert_sums(vmalert.metrics())
        counts = {g: now.get(g, (0, 0))[1] - before.get(g, (0, 0))[1] for g in groups}
        if all(c >= evaluations for c in counts.values()) or time.monotonic() > deadline:
            break
    return {g: ((now[g][0] - before.get(g, (0, 0))[0]) / counts[g] if counts[g] else math.nan, int(counts[g]))
            for g in groups}


def vmalert_iterations(samples) -> dict[str, float]:
    return {g: c for g, (_, c) in vmalert_sums(samples).items()}


# ------------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------------

@dataclass
class Result:
    """What one backend measured."""
    groups: dict[str, tuple[float, int]] = field(default_factory=dict)
    naive: tuple[float, int] | None = None
    raw_series: float = 0
    recorded_series: float = 0
    raw_series_24h: float = 0  # series with a sample in the last 24 h (the series API)
    recorded_series_24h: float = 0
    recorded_by_name: dict[str, float] = field(default_factory=dict)
    history_points: dict[str, float] = field(default_factory=dict)  # samples of BACKFILLED over the history
    top_rules: list[tuple[float, str, str, int]] = field(default_factory=list)  # see RuleTimes.top
    load: list[float] = field(default_factory=list)  # 1-minute load average at the measurement's start, end
    warm: float = 0.0  # seconds the rules had been evaluated before the measurement
    cores: float = math.nan  # process_cpu_seconds_total per second of the server during the measurement
    failures: dict[str, float] = field(default_factory=dict)  # failed evaluations per group, whole run
    rule_times_note: str = ""  # whether the per-rule times add up (see rule_times_usable)
    load_during: list[float] = field(default_factory=list)  # 1-min load average min, mean, max (LoadSampler)


def cpu_seconds(server: Server) -> tuple[float, float]:
    return time.monotonic(), metric_value(server.metrics(), "process_cpu_seconds_total") or 0.0


def cores_since(server: Server, start: tuple[float, float]) -> float:
    end = cpu_seconds(server)
    return (end[1] - start[1]) / (end[0] - start[0])




def series_since(server: Server, match: str, seconds: int) -> float:
    """Series with a sample in the last `seconds` (/api/v1/series): counts the hourly and daily baseline
    records too, which an instant query sees only in the minutes after they are written."""
    try:
        r = requests.get(server.url + "/api/v1/series", params={"match[]": match, "start": time.time() - seconds,
                                                               "end": time.time()}, timeout=600)
        r.raise_for_status()
    except requests.RequestException as exc:  # a count missing from the report, not a lost run
        log(f"{server.name} /api/v1/series failed: {str(exc)[:300]}")
        return math.nan
    return len(r.json()["data"])


def count_series(server: Server, res: Result) -> None:
    res.raw_series, res.recorded_series = server.scalar(f"count({RAW_SERIES})"), server.scalar(f"count({RECORDED_SERIES})")
    res.raw_series_24h = series_since(server, RAW_SERIES, 86400)
    res.recorded_series_24h = series_since(server, RECORDED_SERIES, 86400)
    by_name = server.query('sort_desc(count by (__name__) ({__name__=~".+:.+"}))')
    res.recorded_by_name = {r["metric"]["__name__"]: float(r["value"][1]) for r in by_name}


def count_history(server: Server, plan: Plan, res: Result) -> None:
    """Samples of the backfilled series over the whole history: proof the backfill wrote something."""
    days = (int(time.time()) - plan.t_start) // 86400 + 1
    for name in BACKFILLED:
        res.history_points[name] = server.scalar(f"sum(count_over_time({name}[{days}d]))")


def fmt_ms(seconds: float) -> str:
    return "-" if seconds is None or math.isnan(seconds) else f"{seconds * 1000:.1f}"


def share(res: Result, intervals: dict[str, int]) -> float:
    return sum(d / intervals[g] for g, (d, _) in res.groups.items() if not math.isnan(d))


def baseline_time(res: Result, intervals: dict[str, int]) -> float:
    """The baseline groups' evaluation time per evaluation of the fast group (the one the naive z-scores
    replace): the fast group's time plus the slow groups' (hourly history, 6-hourly statistics), pro rata."""
    fast = intervals.get(conventions.BASELINE_GROUP, 300)
    return sum(d * min(1.0, fast / intervals.get(g, fast)) for g, (d, _) in res.groups.items() if "baseline" in g)


def report(args, plan: Plan, rules: RuleSet, prom: Result, vm: Result | None, phases: Phases,
           samples: int, inputs: Inputs | None = None) -> str:
    both = [("Prometheus", prom), ("vmalert", vm)] if vm else [("Prometheus", prom)]
    ver = engine_versions()
    lines = [f"# Fleet rule-evaluation benchmark: {plan.gpus} GPUs, {plan.days} days", "",
             f"Reproduce: `.venv/bin/python benchmarks/fleet.py {' '.join(sys.argv[1:])}`  ",
             f"Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
             f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB; engines (Debian packages "
             "in .tools/bin, versions from .tools/versions): "
             + ", ".join(f"{n} {ver[n]}" for n in ENGINES) + f" (`prometheus --version`: {self_reported()})"
             ". Numbers are from this one run.", "",
             "## Method", "",
             f"- Data: {plan.gpus} x {MODEL_NAME} on {-(-plan.gpus // 8)} nodes, {len(plan.all_metrics) - 1} "
             f"dcgm-exporter fields per GPU + `up` per node. History: {plan.days}d every {plan.history_step}s of "
             f"the fields the baseline rules{' and the naive z-scores' if args.naive else ''} read "
             f"({', '.join(m[8:] for m in plan.history_metrics)}); the last {plan.fine_hours}h every field every "
             f"{plan.step}s; {samples / 1e6:.0f}M raw samples. Then a live synthetic exporter, scraped every "
             f"{plan.step}s, one target per node.",
             "- Prometheus: raw samples via `promtool tsdb create-blocks-from openmetrics`, one file per 54h block. "
             "VictoriaMetrics: the same samples via /api/v1/import/prometheus.",
             f"- Downsampled baseline history: `rulesgen backfill victoriametrics --days {plan.days}` (vmalert "
             + (f"replay) and `rulesgen backfill prometheus --days {plan.days}` (promtool create-blocks-from rules)."
                if args.prom_backfill_days >= plan.days else
                "replay); Prometheus got that same history, exported from VictoriaMetrics and ingested with promtool "
                "(`rulesgen backfill prometheus` is too slow at this size, see the notes"
                + (f"; it ran here over {args.prom_backfill_days} day(s) to time it" if args.prom_backfill_days else
                   "; it was not run here") + ")."),
             f"- Rules: {', '.join(f.name for f in rules.files)} from alerts/prometheus/, copied once at the start "
             + (f"(commit {inputs.commit}{' with uncommitted changes to these files' if inputs.dirty else ''}; "
                f"sha256 of the rule files and exporter/dcgm-counters.csv: {inputs.digest}) " if inputs else "")
             + "and used by both engines. Groups "
             f"with an interval above {MEASURE_INTERVAL}s ran from a copy at {MEASURE_INTERVAL}s (cost per "
             "evaluation does not depend on the interval, and it gives more readings); shares use the real "
             "intervals. Prometheus: mean of `prometheus_rule_group_last_duration_seconds` over distinct "
             "evaluations; vmalert: delta sum / delta count of `vmalert_iteration_duration_seconds`. The two "
             "backends ran one after the other, never together.",
             "- Share of interval = sum over groups of (evaluation time / real interval): the share of one core "
             "spent evaluating the rules.", "",
             "## Rule groups (mean wall time per evaluation)", "",
             "| group | real interval | Prometheus ms (n) | share of interval | vmalert ms (n) | share of interval |",
             "|---|---|---|---|---|---|"]
    for g in rules.intervals:
        p = prom.groups.get(g, (math.nan, 0))
        v = vm.groups.get(g, (math.nan, 0)) if vm else (math.nan, 0)
        iv = rules.intervals[g]
        lines.append(f"| {g} | {iv}s | {fmt_ms(p[0])} ({p[1]}) | {p[0] / iv:.3%} | {fmt_ms(v[0])} ({v[1]}) | "
                     f"{v[0] / iv:.3%} |")
    vm_share = f"{share(vm, rules.intervals):.3%}" if vm else "-"
    lines += [f"| **all rulesgen groups** | | | **{share(prom, rules.intervals):.3%}** | | **{vm_share}** |", "",
              "Target: all groups together <= 5% of their evaluation interval at 800 GPUs.", ""]
    for name, r in both:
        engine = f"{name} {engine_label(ver, 'prometheus' if name == 'Prometheus' else 'vmalert')}"
        if r.top_rules:
            lines += [f"Most expensive rules in {engine} (mean evaluationTime from /api/v1/rules, ms; "
                      f"rules run one after the other within a group; {r.rule_times_note}): " + "; ".join(
                          f"{rule} ({group}) {sec * 1000:.1f}" for sec, group, rule, _ in r.top_rules), ""]
        elif r.rule_times_note:
            lines += [f"No per-rule times for {engine}: {r.rule_times_note}, so its evaluationTime values "
                      "are not per-rule costs.", ""]
    lines += ["## Series", "", "| | Prometheus | VictoriaMetrics |", "|---|---|---|",
              f"| raw (DCGM_* and up) | {prom.raw_series:.0f} | {f'{vm.raw_series:.0f}' if vm else '-'} |",
              f"| recorded by all recording rules (name contains ':') | {prom.recorded_series:.0f} | "
              f"{f'{vm.recorded_series:.0f}' if vm else '-'} |",
              f"| recorded / raw | {prom.recorded_series / prom.raw_series:.2f} | "
              f"{f'{vm.recorded_series / vm.raw_series:.2f}' if vm and vm.raw_series else '-'} |",
              f"| raw, with a sample in the last 24 h | {prom.raw_series_24h:.0f} | "
              f"{f'{vm.raw_series_24h:.0f}' if vm else '-'} |",
              f"| recorded, with a sample in the last 24 h (adds the hourly and daily baseline records) | "
              f"{prom.recorded_series_24h:.0f} | {f'{vm.recorded_series_24h:.0f}' if vm else '-'} |",
              f"| recorded / raw, last 24 h | {prom.recorded_series_24h / max(prom.raw_series_24h, 1):.2f} | "
              f"{f'{vm.recorded_series_24h / max(vm.raw_series_24h, 1):.2f}' if vm else '-'} |",
              *[f"| samples of {n} over the history (backfill + live) | {prom.history_points.get(n, 0):.0f} | "
                f"{f'{vm.history_points.get(n, 0):.0f}' if vm else '-'} |" for n in BACKFILLED],
              "", "Target: recorded <= raw. Series counted at the end of the measurement (instant query, 5m "
              "lookback). Recorded series by name (Prometheus, largest first):", "",
              ", ".join(f"{n} {v:.0f}" for n, v in list(prom.recorded_by_name.items())[:12]), ""]
    if prom.naive:
        vn = vm.naive if vm and vm.naive else (math.nan, 0)
        iv = rules.intervals
        vm_ratio = vn[0] / baseline_time(vm, iv) if vm and baseline_time(vm, iv) else math.nan
        lines += ["## Naive z-scores on raw samples vs the rulesgen baseline group", "",
                  f"Naive group (run alone, after the rulesgen measurement): for {', '.join(NAIVE_GAUGES)}: "
                  f"`(avg_over_time(X[1h]) - avg_over_time(X[{plan.days}d])) / stddev_over_time(X[{plan.days}d])`; "
                  f"for {', '.join(NAIVE_COUNTERS)}: `(rate(X[1h]) - avg_over_time(rate(X[1h])[{plan.days}d:1h])) "
                  f"/ stddev_over_time(rate(X[1h])[{plan.days}d:1h])`. Raw history step {plan.history_step}s. It is "
                  "compared with the rulesgen baseline groups (peers and the alert every 5 minutes, the history statistics "
                  "hourly), per 5-minute evaluation: the fast group's time plus 1/12 of the hourly group's.", "",
                  "| | Prometheus | vmalert |", "|---|---|---|",
                  f"| naive group, ms per evaluation (n) | {fmt_ms(prom.naive[0])} ({prom.naive[1]}) | "
                  f"{fmt_ms(vn[0])} ({vn[1]}) |",
                  f"| rulesgen baseline groups, ms per 5-minute evaluation | {fmt_ms(baseline_time(prom, iv))} | "
                  f"{fmt_ms(baseline_time(vm, iv)) if vm else '-'} |",
                  f"| ratio naive / baseline | {prom.naive[0] / baseline_time(prom, iv):.1f}x | {vm_ratio:.1f}x |", "",
                  "Target: ratio >= 25x.", ""]
    lines += ["## Resources and phases", "", "| what | value |", "|---|---|"]
    lines += [f"| peak RSS {name} | {v / 2**30:.2f} GiB |" for name, v in PEAK_RSS.items()]
    lines += [f"| {name} | {s:.0f} s |" for name, s in phases.seconds.items()]
    lines += [f"| failed rule evaluations, {name} (whole run, by group) | "
              f"{', '.join(f'{g}: {v:.0f}' for g, v in r.failures.items() if v) or 'none'} |" for name, r in both]
    lines += [f"| {name}: rules running before the measurement / CPU cores used during it (server(s), scrapes "
              f"included) / 1-min load average at its start and end | {r.warm / 60:.0f} min / {r.cores:.3f} / "
              f"{' / '.join(f'{x:.1f}' for x in r.load)} |" for name, r in both]
    lines += [f"| {name}: machine's 1-min load average during the measurement, every 15 s (min / mean / max; "
              f"2 cores, other work included) | {' / '.join(f'{x:.1f}' for x in r.load_during)} |"
              for name, r in both if r.load_during]
    lines += ["", "## Caveats", "",
              "- Contention: evaluation times are wall times on a 2-core machine, so they include waiting for a "
              "core (scrapes of the synthetic exporter, which runs in this Python process, share it); the load "
              "averages above show how busy the machine was.",
              "- The live rules ran for only the minutes shown above before the measurement: windows over "
              "recorded series longer than that (`[30m]` of gpu:* in the baseline group, `[1h]`-`[6h]` in the "
              "health/fleet alerts) held fewer samples than in steady state. The backfilled baseline history "
              "(hourly points, daily sums) was complete."]
    lines += [f"- {n}" for n in phases.notes]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------------

def transplant_history(vm: Server, plan: Plan, data_dir: Path, work: Path) -> int:
    """Prometheus blocks of the downsampled history that vmalert's replay wrote into VictoriaMetrics:
    every series whose name contains ':' (only the backfill has written any so far), exported per name
    (OpenMetrics wants each family in one piece) and ingested with promtool. Returns samples."""
    names = [n for n in requests.get(vm.url + "/api/v1/label/__name__/values", timeout=60).json()["data"] if ":" in n]
    path, samples = work / "history.om", 0
    with open(path, "w") as f:
        for name in names:
            f.write(f"# TYPE {name} gauge\n")
            r = requests.get(vm.url + "/api/v1/export", params={"match[]": name, "start": plan.t_start,
                                                                "end": plan.t_end}, stream=True, timeout=3600)
            for line in r.iter_lines():
                d = json.loads(line)
                labels = ",".join(f'{k}="{escape(v)}"' for k, v in sorted(d["metric"].items()) if k != "__name__")
                f.writelines(f"{name}{{{labels}}} {om_float(v)} {ts / 1000:.3f}\n"
                             for v, ts in zip(d["values"], d["timestamps"]))
                samples += len(d["values"])
        f.write("# EOF\n")
    promtool_ingest(path, data_dir)
    path.unlink()
    return samples


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def om_float(v: float) -> str:
    return "NaN" if v != v else "+Inf" if v == math.inf else "-Inf" if v == -math.inf else repr(float(v))


def run_prometheus(args, plan, rules, fleet, work, exporter, phases) -> Result:
    """Gap-fill the raw data up to now, start Prometheus on the blocks, optionally time `rulesgen
    backfill prometheus`, wait for compaction, then measure the rulesgen groups and the naive group."""
    data_dir = work / "prom-data"
    t = time.monotonic()
    gap_end = int(time.time()) // plan.step * plan.step
    write_openmetrics(work / "gap.om", fleet, plan.all_metrics, plan.t_end, gap_end, plan.step, plan.origin)
    promtool_ingest(work / "gap.om", data_dir)
    (work / "gap.om").unlink()
    phases.add("Prometheus: raw gap since t_end generated + ingested", time.monotonic() - t)
    copies = shortened_copies(rules, work / "rules")
    config = work / "prometheus.yml"
    prometheus_config(config, copies, exporter.scrape_config(f"{plan.step}s"))
    prom = start_prometheus(work, data_dir, config)
    try:
        phases.add("Prometheus startup (to /-/ready)", prom.wait_ready())
        rules_since = time.monotonic()
        if args.prom_backfill_days:
            seconds = run_backfill("prometheus", prom.url, args.prom_backfill_days, plan.t_end - 3600,
                                   work / "backfill", phases)
            if seconds is not None:
                per = seconds / (plan.gpus * span_days(args.prom_backfill_days, plan.t_end - 3600))
                phases.notes.append(f"`rulesgen backfill prometheus --days {args.prom_backfill_days}` took "
                                    f"{seconds:.0f} s: {per * 1000:.0f} ms per GPU-day "
                                    f"({per * plan.gpus * plan.days / 3600:.1f} h for {plan.days} days at this rate).")
            if args.prom_backfill_days < plan.days and (work / "backfill").exists():
                shutil.rmtree(work / "backfill")
        t = time.monotonic()
        load_blocks(prom, work / "backfill", data_dir)
        phases.add("Prometheus: blocks loaded + overlapping blocks compacted", time.monotonic() - t)
        groups = list(rules.intervals)
        wait_iterations(prom, groups, 3, prom_iterations, timeout=1800)
        t = time.monotonic()
        load, cpu = os.getloadavg()[0], cpu_seconds(prom)
        times, sampler = RuleTimes(), LoadSampler()
        res = Result(groups=measure_prometheus(prom, groups, args.evaluations, times),
                     load=[load, os.getloadavg()[0]], warm=t - rules_since)
        res.load_during = sampler.stop()
        res.cores = cores_since(prom, cpu)
        res.failures = prom_failures(prom.metrics())
        res.top_rules = times.top()
        res.rule_times_note = rule_times_usable(times, res.groups)[1]
        phases.add("Prometheus measurement", time.monotonic() - t)
        count_series(prom, res)
        count_history(prom, plan, res)
        if args.naive:
            try:
                prometheus_config(config, [naive_rule_file(plan.days, work)], exporter.scrape_config(f"{plan.step}s"))
                requests.post(prom.url + "/-/reload", timeout=60).raise_for_status()
                wait_iterations(prom, ["naive-zscore-raw"], 1, prom_iterations, timeout=1800)
                res.naive = measure_prometheus(prom, ["naive-zscore-raw"], 3)["naive-zscore-raw"]
            except (RuntimeError, requests.RequestException) as exc:
                phases.notes.append(f"The naive group did not complete on Prometheus: {str(exc)[:300]}")
        return res
    finally:
        prom.stop()


def run_vm(args, plan, rules, fleet, work, exporter, phases) -> Result:
    """Import the same raw data, backfill with vmalert replay (and hand that history to Prometheus when
    Prometheus does not backfill itself), then measure the rulesgen groups and the naive group."""
    scrape = work / "vm-scrape.yml"
    scrape.write_text(yaml.safe_dump({"scrape_configs": [exporter.scrape_config(f"{plan.step}s")]}))
    vm = start_vm(work, scrape)
    phases.notes.append("victoria-metrics ran with -search.maxQueryDuration=10m so the naive group's raw "
                        "14-day windows can finish, and higher -search.maxSeries/-search.maxUniqueTimeseries "
                        "for the series counts. `rulesgen backfill victoriametrics` needs none of them: it sends "
                        "one day per range query.")
    try:
        vm.wait_ready()
        import_vm(vm, plan, fleet, phases)
        seconds = run_backfill("victoriametrics", vm.url, plan.days, plan.t_end, None, phases)
        if seconds is not None:
            per = seconds / (plan.gpus * span_days(plan.days, plan.t_end))
            phases.notes.append(f"`rulesgen backfill victoriametrics`: {per * 1000:.1f} ms per GPU-day.")
        requests.get(vm.url + "/internal/force_flush", timeout=600)
        if args.prom_backfill_days < plan.days:
            t = time.monotonic()
            n = transplant_history(vm, plan, work / "prom-data", work)
            phases.add("VM backfill exported + ingested into Prometheus blocks", time.monotonic() - t)
            phases.notes.append(f"Prometheus' downsampled history ({n} samples) is the one vmalert's replay "
                                "computed, exported from VictoriaMetrics and ingested with promtool: promtool's "
                                "own rule backfill is too slow at this size (see its ms per GPU-day).")
        copies = shortened_copies(rules, work / "rules")
        notifier = f"http://127.0.0.1:{exporter.port}"
        vmalert = start_vmalert(work, vm, copies, notifier)
        try:
            phases.add("vmalert startup", vmalert.wait_ready())
            rules_since = time.monotonic()
            groups = list(rules.intervals)
            wait_iterations(vmalert, groups, 3, vmalert_iterations, timeout=1800)
            t = time.monotonic()
            load, cpu = os.getloadavg()[0], (cpu_seconds(vm), cpu_seconds(vmalert))
            times, sampler = RuleTimes(), LoadSampler()
            res = Result(groups=measure_vmalert(vmalert, groups, args.evaluations, times),
                         load=[load, os.getloadavg()[0]], warm=t - rules_since)
            res.load_during = sampler.stop()
            usable, why = rule_times_usable(times, res.groups)
            res.top_rules = times.top() if usable else []
            res.rule_times_note = why
            res.cores = cores_since(vm, cpu[0]) + cores_since(vmalert, cpu[1])
            res.failures = vmalert_failures(vmalert.metrics())
            phases.add("vmalert measurement", time.monotonic() - t)
        finally:
            vmalert.stop()
        count_series(vm, res)
        count_history(vm, plan, res)
        if args.naive:
            naive = start_vmalert(work, vm, [naive_rule_file(plan.days, work)], notifier, "vmalert-naive")
            try:
                naive.wait_ready()
                wait_iterations(naive, ["naive-zscore-raw"], 1, vmalert_iterations, timeout=1800)
                res.naive = measure_vmalert(naive, ["naive-zscore-raw"], 3)["naive-zscore-raw"]
            except (RuntimeError, requests.RequestException) as exc:
                phases.notes.append(f"The naive group did not complete on vmalert: {str(exc)[:300]}")
            finally:
                naive.stop()
        return res
    finally:
        vm.stop()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", type=int, default=800)
    p.add_argument("--days", type=int, default=14)
    p.add_argument("--scrape-interval", dest="step", type=int, default=60, help="seconds (live and fine window)")
    p.add_argument("--history-step", type=int, default=None, help="seconds between history samples "
                   "(default: the scrape interval)")
    p.add_argument("--fine-hours", type=int, default=3, help="last hours with every field at the scrape interval")
    p.add_argument("--evaluations", type=int, default=5, help="evaluations per group to average")
    p.add_argument("--naive", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--prom-backfill-days", type=int, default=None, help="days `rulesgen backfill prometheus` "
                   "computes (default --days; 0: skip). Fewer than --days: timed only, and Prometheus gets the "
                   "history vmalert's replay computed")
    p.add_argument("--tmp", default=None, help="parent of the temporary directory")
    p.add_argument("--out", default=None, help="report path (default benchmarks/results/fleet-<N>.md)")
    args = p.parse_args(argv)
    args.history_step = args.history_step or args.step
    args.prom_backfill_days = args.days if args.prom_backfill_days is None else args.prom_backfill_days
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="fleet-bench-", dir=args.tmp))
    inputs = Inputs.snapshot(work / "inputs")
    rules = RuleSet.load(inputs.rule_files)
    plan = make_plan(args, rules, inputs.counters_csv)
    fleet = make_fleet(args.gpus)
    phases = Phases()
    exporter = Exporter(fleet, plan.all_metrics[:-1], plan.origin, plan.step)
    log(f"{args.gpus} GPUs, {args.days}d, work dir {work}; history metrics: {plan.history_metrics}")
    try:
        samples = ingest_prometheus(plan, fleet, work / "prom-data", work, phases)
        vm = run_vm(args, plan, rules, fleet, work, exporter, phases)
        prom = run_prometheus(args, plan, rules, fleet, work, exporter, phases)
    finally:
        Server.stop_all()
        exporter.close()
        shutil.rmtree(work, ignore_errors=True)
    PEAK_RSS["fleet.py itself (data generator, live exporter)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    text = report(args, plan, rules, prom, vm, phases, samples, inputs)
    out = Path(args.out) if args.out else HERE / "results" / f"fleet-{args.gpus}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
