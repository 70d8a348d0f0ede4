"""Benchmarks, printed as tables (never asserted in the test suite).

1. Detection latency per failure mode over the positive scenarios: first firing minus fault start,
   next to the physical floor (`for` + one evaluation interval) and the target (`for` + 2 intervals).
2. Render wall time on the bundled catalog and on a generated catalog 10x larger (ratios from one run).

Run: make bench   (or: .venv/bin/python benchmarks/run.py [--skip-latency])
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rulesgen import artifacts, promql_tree  # noqa: E402
from rulesgen.catalog import bundled_catalog_dir  # noqa: E402
from rulesgen.replay import replay  # noqa: E402
from rulesgen.scenarios import load_scenarios  # noqa: E402




def fmt(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds / 60:.1f}m"


def latency_table() -> None:
    plan = artifacts.plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None)
    modes = [fm.id for fm in plan.catalog.failure_modes]
    scenarios = [s for s in load_scenarios(sorted((ROOT / "fixtures/scenarios").glob("*.yaml")), modes) if s.expect]
    with tempfile.TemporaryDirectory() as tmp:
        artifacts.write_all(Path(tmp), [a for a in plan.artifacts if a.path.startswith("alerts/")])
        rule_paths = [Path(tmp, f.path) for f in plan.rules.files if f.path not in artifacts.DASHBOARD_ONLY]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            outcomes = list(pool.map(lambda s: replay(s, rule_paths, modes), scenarios))
    alerts = {r.alert: r for r in plan.rules.rules if r.alert}
    print("\nDetection latency (first firing - fault start), per expectation. floor = for + 1 evaluation;")
    print("target = for + 2 evaluations; window = longest *_over_time window in the alert, whose averaging")
    print("adds up to that much lag on top of `for` (a deliberate trade: noise and pauses do not reset it).")
    print(f"{'failure mode':<24} {'alert':<26} {'scenario':<36} {'latency':>8} {'for':>6} {'window':>7} {'floor':>6} "
          f"{'target':>7}  verdict")
    for o in outcomes:
        step = o.scenario.evaluation_interval
        for e in o.scenario.expect:
            hits = sorted((f.first_firing, dict(f.labels)["alertname"]) for f in o.fired
                          if f.failure_mode == e.failure_mode and set(e.labels) <= set(f.labels))
            if not hits:
                print(f"{e.failure_mode:<24} {'-':<26} {o.scenario.name:<36} {'missed':>8}")
                continue
            first, name = hits[0]
            rule = alerts[name]
            window = max((c.range for c in promql_tree.range_calls(rule.tree) if c.function.endswith("_over_time") and c.selector),
                         default=0)
            latency, floor, target = first - e.after, rule.for_seconds + step, rule.for_seconds + 2 * step
            verdict = "within target" if latency <= target else (
                "within target + window" if latency <= target + window else "slower")
            print(f"{e.failure_mode:<24} {name:<26} {o.scenario.name:<36} {fmt(latency):>8} {fmt(rule.for_seconds):>6} "
                  f"{fmt(window):>7} {fmt(floor):>6} {fmt(target):>7}  {verdict}")
    bad = [o.scenario.name for o in outcomes if not o.ok]
    print(f"scenarios matching their expectations: {len(outcomes) - len(bad)}/{len(outcomes)} {bad or ''}")


def scaled_catalog(factor: int, dest: Path) -> None:
    """The bundled catalog with every failure mode and signal repeated `factor` times under new names."""
    src = bundled_catalog_dir()
    for name in ("metrics.yaml", "xid.yaml", "gpu_models.yaml"):
        shutil.copy(src / name, dest / name)
    signals = yaml.safe_load((src / "signals.yaml").read_text())["signals"]
    modes = yaml.safe_load((src / "failure_modes.yaml").read_text())["failure_modes"]
    out_signals, out_modes = list(signals), list(modes)
    for i in range(1, factor):
        for s in signals:
            level, metric, op = s["record"].split(":")
            out_signals.append({**s, "record": f"{level}:{metric}_copy{i}:{op}"})
        for m in modes:
            out_modes.append({**m, "id": f"{m['id']}_copy{i}"})
    (dest / "signals.yaml").write_text(yaml.safe_dump({"signals": out_signals}, sort_keys=False))
    (dest / "failure_modes.yaml").write_text(yaml.safe_dump({"failure_modes": out_modes}, sort_keys=False))


def time_render(catalog: Path, out: Path, repeats: int = 5) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        plan = artifacts.plan(catalog, None, None)
        artifacts.write_all(out, plan.artifacts)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def render_table() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp, "catalog10x")
        big.mkdir()
        scaled_catalog(10, big)
        base = time_render(bundled_catalog_dir(), Path(tmp, "out1"))
        scaled = time_render(big, Path(tmp, "out10"))
    print("\nRender wall time (median of 5, plan + write, no scenarios)")
    print(f"{'catalog':<22} {'seconds':>8}  target")
    print(f"{'bundled':<22} {base:>8.3f}  <= 1 s")
    print(f"{'generated 10x':<22} {scaled:>8.3f}  ratio {scaled / base:.1f}x (target <= 10x: grows no faster than the catalog)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    render_table()
    if not args.skip_latency:
        latency_table()


if __name__ == "__main__":
    main()
