"""Reading a running server's rule evaluations for benchmarks/fleet.py (and sharded.py): wait for
evaluations, per-rule times from /api/v1/rules, CPU used."""
from __future__ import annotations

import math
import statistics
import time

import requests

from fleet_servers import Server, log, metric_value

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


def cpu_seconds(server: Server) -> tuple[float, float]:
    return time.monotonic(), metric_value(server.metrics(), "process_cpu_seconds_total") or 0.0


def cores_since(server: Server, start: tuple[float, float]) -> float:
    end = cpu_seconds(server)
    return (end[1] - start[1]) / (end[0] - start[0])




