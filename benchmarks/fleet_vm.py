"""VictoriaMetrics side of benchmarks/fleet.py: the server, the raw import, vmalert and its groups'
evaluation times."""
from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from fleet_data import exposition
from fleet_measure import RuleTimes
from fleet_plan import GLOBAL_INTERVAL, TOOLS, Phases, Plan
from fleet_servers import Server
from rulesgen.processes import free_port

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


def vmalert_failures(samples) -> dict[str, float]:
    out: dict[str, float] = {}
    for n, l, v in samples:
        if n in ("vmalert_recording_rules_errors_total", "vmalert_alerting_rules_errors_total"):
            out[l.get("group", "")] = out.get(l.get("group", ""), 0) + v
    return out


