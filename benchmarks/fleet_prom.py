"""Prometheus side of benchmarks/fleet.py: raw blocks via promtool, the server, `rulesgen backfill`,
block loading, and the rule groups' evaluation times."""
from __future__ import annotations

import json
import math
import shutil
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from fleet_data import write_openmetrics
from fleet_measure import RuleTimes
from fleet_plan import GLOBAL_INTERVAL, RULESGEN, TOOLS, Phases, Plan
from fleet_servers import Server, log, metric_value, run_tool
from rulesgen.processes import free_port

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


def prom_group(labels: dict[str, str]) -> str:
    return labels.get("rule_group", "").split(";")[-1]


def prom_failures(samples) -> dict[str, float]:
    out = {prom_group(l): v for n, l, v in samples if n == "prometheus_rule_evaluation_failures_total"}
    # Prometheus 3 labels it by sample type (type="float", "histogram"): the sum over them
    out["(tsdb out-of-bounds samples)"] = sum(v for n, _, v in samples if n == "prometheus_tsdb_out_of_bound_samples_total")
    return out


def prom_iterations(samples) -> dict[str, float]:
    return {prom_group(l): v for n, l, v in samples if n == "prometheus_rule_group_iterations_total"}


def measure_prometheus(prom: Server, groups: list[str], evaluations: int, rule_times: RuleTimes | None = None,
                       timeout: float = 1800, summary=statistics.mean) -> dict[str, tuple[float, int]]:
    """prometheus_rule_group_last_duration_seconds per group over `evaluations` distinct evaluations (a new
    prometheus_rule_group_last_evaluation_timestamp_seconds = a new reading), summarised by `summary`
    (mean; the sharded bench takes the median, robust to the evaluations that waited on another server
    sharing the cores)."""
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
    return {g: (summary(d) if d else math.nan, len(d)) for g, d in durations.items()}


