"""Detection latency against the class targets of benchmarks/latency_targets.yaml.

Every scenario is replayed through promtool at 15, 30 and 60 s scrapes (rulesgen's dialects resample
the input series; the expectations do not change). Scenarios written at coarser steps (the multi-day
baseline histories) are replayed as written. For each expectation: the first firing after the fault
becomes visible (`after`), next to its class target. Normal-load scenarios must stay quiet at every
scrape: their false alerts are counted in the same run.

Run: .venv/bin/python benchmarks/latency.py   (part of `make bench`)
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rulesgen import artifacts  # noqa: E402
from rulesgen.promql import tree as promql_tree  # noqa: E402
from rulesgen.catalog import bundled_catalog_dir  # noqa: E402
from rulesgen.load.dialects import apply, parse_dialect  # noqa: E402
from rulesgen.durations import format_duration, parse_duration  # noqa: E402
from rulesgen.engines.replay import Outcome, replay  # noqa: E402
from rulesgen.load.scenarios import Scenario, load_scenarios  # noqa: E402

SCRAPES = (15, 30, 60)
TARGETS = ROOT / "benchmarks" / "latency_targets.yaml"


@dataclass(frozen=True)
class Target:
    klass: str
    seconds: int


def targets_for(plan) -> tuple[dict[str, Target], dict[str, Target]]:
    """(by failure mode, by scenario) from latency_targets.yaml; scenario entries win."""
    by_mode, by_scenario = {}, {}
    alerts = {r.failure_mode: r for r in plan.rules.rules if r.alert}
    for c in yaml.safe_load(TARGETS.read_text())["classes"]:
        seconds = parse_duration(c["target"])
        for fm in c.get("failure_modes", []):
            extra = 0
            if c.get("plus_idle_time") and fm in alerts:
                rule = alerts[fm]
                extra = rule.for_seconds + max(promql_tree.windows(rule.tree), default=0)
            by_mode[fm] = Target(c["name"], seconds + extra)
        for name in c.get("scenarios", []):
            by_scenario[name] = Target(c["name"], seconds)
    return by_mode, by_scenario


def variants(s: Scenario, catalog) -> list[tuple[str, Scenario]]:
    if s.interval > max(SCRAPES):
        return [("as written", s)]
    return [(f"{n}s", apply(s, parse_dialect(f"scrape-{n}s"), catalog)) for n in SCRAPES]


def first_firing(o: Outcome, failure_mode: str, labels: tuple[tuple[str, str], ...]) -> int | None:
    times = [f.first_firing for f in o.fired if f.failure_mode == failure_mode and set(labels) <= set(f.labels)]
    return min(times) if times else None


def fmt(seconds: int | None) -> str:
    if seconds is None:
        return "missed"
    return f"{seconds / 60:.1f}m" if seconds < 6 * 3600 else f"{seconds / 3600:.1f}h"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="scenario names (default: all)")
    args = parser.parse_args()
    plan = artifacts.plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None)
    modes = [fm.id for fm in plan.catalog.failure_modes]
    paths = sorted((ROOT / "fixtures/scenarios").glob("*.yaml"))
    scenarios = load_scenarios([p for p in paths if not args.names or p.stem in args.names], modes)
    runs = [(s, label, v) for s in scenarios for label, v in variants(s, plan.catalog)]
    with tempfile.TemporaryDirectory() as tmp:
        artifacts.write_all(Path(tmp), [a for a in plan.artifacts if a.path.startswith("alerts/")])
        rule_paths = [Path(tmp, f.path) for f in plan.rules.files if f.path not in artifacts.DASHBOARD_ONLY]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            outcomes = list(pool.map(lambda r: replay(r[2], rule_paths, modes), runs))
    results: dict[tuple[str, str], Outcome] = {(s.name, label): o for (s, label, _), o in zip(runs, outcomes)}
    by_mode, by_scenario = targets_for(plan)

    print("\nDetection latency: first firing after the fault becomes visible (the scenario's `after`), at 15/30/60 s")
    print("scrapes (multi-day baseline scenarios as written, 5-minute steps); the worst of the three against the class target.")
    header = f"| failure mode | scenario | {' | '.join(f'{n}s' for n in SCRAPES)} | target | class | verdict |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    missed = slow = 0
    for s in scenarios:
        for e in s.expect:
            labels = [label for (name, label) in results if name == s.name]
            firings = {label: first_firing(results[(s.name, label)], e.failure_mode, e.labels) for label in labels}
            lat = {label: None if t is None else t - e.after for label, t in firings.items()}
            target = by_scenario.get(s.name) or by_mode.get(e.failure_mode)
            cells = [fmt(lat[f"{n}s"]) if f"{n}s" in lat else (fmt(lat["as written"]) if n == SCRAPES[0] else "")
                     for n in SCRAPES]
            worst = None if any(v is None for v in lat.values()) else max(lat.values())
            if worst is None:
                verdict, missed = "MISSED", missed + 1
            elif target is None:
                verdict = "no target"
            elif "as written" in lat and s.name not in by_scenario:
                verdict = f"n/a: {format_duration(s.interval)} steps"
            elif worst <= target.seconds:
                verdict = "meets"
            else:
                verdict, slow = "SLOWER", slow + 1
            print(f"| {e.failure_mode} | {s.name} | {' | '.join(cells)} | "
                  f"{format_duration(target.seconds) if target else '-'} | {target.klass if target else '-'} | {verdict} |")
    normal = [s for s in scenarios if s.is_normal]
    print(f"\nNormal-load scenarios quiet at every scrape: "
          f"{sum(all(not o.unexpected for (n, _), o in results.items() if n == s.name) for s in normal)}/{len(normal)}")
    for (name, label), o in sorted(results.items()):
        for f in o.unexpected:
            print(f"  false alert: {name} @ {label}: {dict(f.labels).get('alertname')} {dict(f.labels)}")
    print(f"expectations missed: {missed}, slower than target: {slow}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
