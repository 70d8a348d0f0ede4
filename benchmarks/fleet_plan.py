"""Plan of benchmarks/fleet.py: the rule files found at run time, the inputs snapshot, which metrics
the history needs and its time windows, the engines' versions, and small run-time helpers (phase
timings, the load sampler)."""
from __future__ import annotations

import hashlib
import math
import os
import re
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rulesgen.promql import graph as rule_graph
from rulesgen.durations import parse_duration
from rulesgen.model.output import Rule
from fleet_data import exporter_fields
from fleet_servers import log

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
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


# The SLOs the fleet benchmark adds to rulesgen.yaml (--slos): all three, at their catalog defaults.
SLO_SECTION = """
slos:
  gpu_capacity: {objective: 99.5}
  training_time: {objective: 95}
  job_success: {objective: 99}
"""


def render_with_slos(dest: Path) -> Path:
    """rulesgen.yaml with SLO_SECTION appended, rendered into dest: its alerts/prometheus/ (the committed rule
    files plus slos.yaml)."""
    dest.mkdir(parents=True, exist_ok=True)
    config = dest / "rulesgen.yaml"
    config.write_text((ROOT / "rulesgen.yaml").read_text() + SLO_SECTION)
    subprocess.run([str(RULESGEN), "render", "--config", str(config), "--out", str(dest / "out"), "--no-scenario-tests"],
                   check=True, capture_output=True, text=True, timeout=600)
    return dest / "out" / "alerts" / "prometheus"


def shortened_copies(files: list[Path], dest: Path) -> list[Path]:
    """Copies of the rule files with group intervals above MEASURE_INTERVAL cut to it (the cost of an
    evaluation does not depend on the interval; shares use the real ones)."""
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for f in files:
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
    def snapshot(cls, dest: Path, rules_dir: Path = RULES_DIR) -> "Inputs":
        dest.mkdir(parents=True, exist_ok=True)
        sources = sorted(rules_dir.glob("*.yaml")) + [ROOT / "exporter" / "dcgm-counters.csv"]
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
        # a render's rule files (--slos) come from the code, the catalog and the config
        rel = ([str(src.relative_to(ROOT)) for src in sources] if rules_dir.is_relative_to(ROOT)
               else ["rulesgen", "catalog", "rulesgen.yaml", "exporter/dcgm-counters.csv"])
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


@dataclass
class Phases:
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        log(f"{name}: {seconds:.1f}s")


