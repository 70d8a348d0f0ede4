"""Render wall time on the bundled catalog and on a generated catalog 10x larger (ratios from one run),
printed as a table, never asserted in the test suite. Detection latency is benchmarks/latency.py.

Run: make bench   (or: .venv/bin/python benchmarks/run.py)
"""
from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rulesgen import artifacts  # noqa: E402
from rulesgen.catalog import bundled_catalog_dir  # noqa: E402



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
    render_table()


if __name__ == "__main__":
    main()
