"""`rulesgen backfill` against real servers started here on 127.0.0.1: Prometheus 3.5 (raw samples
loaded with `promtool tsdb create-blocks-from openmetrics`, history written with
`create-blocks-from rules`) and victoria-metrics + vmalert replay (1.145). Binaries from Debian's
packages (`make tools`); temp data dirs; every server is stopped at the end. The same test passes on
Debian stable's Prometheus 2.42: RULESGEN_PROMTOOL=.tools/bin/promtool-2.42
RULESGEN_PROMETHEUS=.tools/bin/prometheus-2.42.

The raw data are built so the expected history is known exactly: each GPU's temperature is constant
within an hour and steps every hour, so the 30-minute median at a whole hour is the previous hour's
value, and a day's sums follow."""
from __future__ import annotations

import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from servers import Prometheus, VictoriaMetrics

from rulesgen.model import conventions
from rulesgen import processes
from rulesgen.promql import text as promql
from rulesgen.engines.backfill import DAY, HOUR
from rulesgen.load.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
GPUS = 4
DAYS = 3
STEP = 60
LABELS = 'job="dcgm-exporter",Hostname="node-a",modelName="NVIDIA H100 80GB HBM3"'



def temp(gpu: int, t: int) -> int:
    return 60 + gpu + (t // HOUR) % 5


def expected_hourly(gpu: int, at: int) -> float:
    """The live value at `at`: median of the evaluation steps in (at - 30m, at], each the newest raw sample."""
    step = Settings().evaluation_interval
    steps = range(at - at % step - 1800 + step, at - at % step + 1, step)
    return statistics.median(temp(gpu, s - (s % STEP)) for s in steps)


def raw_series(start: int, end: int):
    """(metric, labels, value(t)) for every GPU: busy, unconstrained, steady power and clock; GPU 1
    logs a correctable ECC error every minute."""
    for g in range(GPUS):
        labels = f'{LABELS},gpu="{g}",UUID="GPU-{g:08d}"'
        yield "DCGM_FI_DEV_GPU_TEMP", labels, lambda t, g=g: temp(g, t)
        yield "DCGM_FI_DEV_MEMORY_TEMP", labels, lambda t, g=g: temp(g, t) + 5
        yield "DCGM_FI_DEV_POWER_USAGE", labels, lambda t, g=g: 600 + 10 * g
        yield "DCGM_FI_DEV_SM_CLOCK", labels, lambda t, g=g: 1980 - 15 * g
        yield "DCGM_FI_DEV_GPU_UTIL", labels, lambda t: 100
        yield "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", labels, lambda t: 0
        yield "DCGM_FI_DEV_FB_USED", labels, lambda t: 1000
        yield "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", labels, lambda t, g=g: (t - start) // 60 if g == 1 else 0
        yield "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", labels, lambda t: 0


def openmetrics(start: int, end: int) -> str:
    lines = []
    for name, labels, value in raw_series(start, end):
        lines.append(f"# TYPE {name} gauge")
        lines += [f"{name}{{{labels}}} {value(t)} {t}" for t in range(start, end, STEP)]
    return "\n".join(lines) + "\n# EOF\n"


def span():
    """Raw data for DAYS days ending at a midnight two days ago (inside any retention)."""
    end = int(time.time()) // DAY * DAY - 2 * DAY
    return end - DAYS * DAY, end


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / ".venv" / "bin" / "rulesgen"), *args], capture_output=True, text=True, cwd=ROOT)


def by_gpu(result: list[dict]) -> dict[str, float]:
    return {r["metric"]["gpu"]: float(r["value"][1]) for r in result}


def check_history(points, query, end: int) -> None:
    """`points(selector, start, end)` -> {gpu: [(t, value)]}; `query(expr, at)` -> instant result.
    The hourly points of the last day, the daily sums at its end, and the mean the live alert
    computes from them (the very expression the rules use)."""
    whole = points(f'{conventions.BASELINE_HOURLY}{{signal="gpu_temp"}}', end - (DAYS - 1) * DAY + 1, end)
    for gpu, series in whole.items():  # one point per hour of the span: no hour missed or written twice
        assert len({t for t, _ in series}) == len(series) == (DAYS - 1) * 24, (gpu, [t for t, _ in series])
    hourly = points(f'{conventions.BASELINE_HOURLY}{{signal="gpu_temp"}}', end - DAY + 1, end)
    assert sorted(hourly) == [str(g) for g in range(GPUS)]
    for gpu, series in hourly.items():
        assert len(series) == 24, (gpu, [t for t, _ in series])
        assert [v for _, v in series] == [expected_hourly(int(gpu), t) for t, _ in series], gpu
    after = end + HOUR  # evaluations are offset within the hour by up to 0.999 h (a hash of the group)
    count = points(f'{conventions.BASELINE_DAILY_COUNT}{{signal="gpu_temp"}}', end, after)
    total = points(f'{conventions.BASELINE_DAILY_SUM}{{signal="gpu_temp"}}', end, after)
    hours = range(end - DAY + HOUR, end + 1, HOUR)
    assert {g: [v for _, v in s] for g, s in count.items()} == {str(g): [24] for g in range(GPUS)}
    assert {g: [v for _, v in s] for g, s in total.items()} == {
        str(g): [sum(expected_hourly(g, h) for h in hours)] for g in range(GPUS)}
    from rulesgen.builders.baselines import history_mean_expr
    from rulesgen.catalog import bundled_catalog_dir, load_catalog
    from rulesgen.load.settings import Settings
    from rulesgen.load.settings_sections import BaselineSettings
    sums = points(f'{conventions.BASELINE_DAILY_SUM}{{signal="gpu_temp",gpu="0"}}', end - 14 * DAY, after)["0"]
    counts = points(f'{conventions.BASELINE_DAILY_COUNT}{{signal="gpu_temp",gpu="0"}}', end - 14 * DAY, after)["0"]
    mean = by_gpu(query(history_mean_expr('signal="gpu_temp"', Settings(baselines=BaselineSettings(min_history=DAY)), load_catalog(bundled_catalog_dir()).baseline_statistics), after))
    assert mean["0"] == pytest.approx(sum(v for _, v in sums) / sum(v for _, v in counts))
    sbe = points(f'{conventions.BASELINE_HOURLY}{{signal="ecc_sbe_rate"}}', end - DAY + 1, end)
    assert all(v == pytest.approx(1.0, rel=0.02) for _, v in sbe["1"]) and all(v == 0 for _, v in sbe["0"])


def test_backfill_prometheus_writes_blocks_the_server_reads(tmp_path, promtool, prometheus_bin):
    start, end = span()
    data = tmp_path / "data"
    raw = tmp_path / "raw.om"
    raw.write_text(openmetrics(start, end))
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(raw), str(data)],
                   check=True, capture_output=True)
    blocks = tmp_path / "blocks"
    with Prometheus(prometheus_bin, data) as prom:
        result = run_cli("backfill", "prometheus", "--url", prom.url, "--days", str(DAYS - 1), "--end", str(end),
                         "--output-dir", str(blocks), "--progress")
        assert result.returncode == 0, result.stderr
        assert "Move the block directories" in result.stdout
        # one line per day on stderr (--progress: stderr is a pipe here): the 2 days and the last midnight
        progress = [x for x in result.stderr.splitlines() if x.startswith("backfill: day ")]
        assert [x.split(" (")[0] for x in progress] == ["backfill: day 1/3 done", "backfill: day 2/3 done",
                                                        "backfill: day 3/3 done"], result.stderr
        assert prom.query(conventions.BASELINE_HOURLY, end) == []  # nothing until the blocks are moved in
    written = [b for b in blocks.iterdir() if (b / "meta.json").exists()]
    assert written, "promtool wrote no blocks"
    for b in written:
        shutil.move(str(b), data / b.name)
    with Prometheus(prometheus_bin, data) as prom:
        def points(selector, start, stop):
            result = prom.query(f"{selector}[{stop - start + 1}s]", stop)
            return {r["metric"]["gpu"]: [(round(float(t)), float(v)) for t, v in r["values"]] for r in result}
        check_history(points, prom.query, end)


def test_backfill_victoriametrics_writes_through_vmalert_replay(tmp_path, victoria_metrics, vmalert):
    start, end = span()
    series = []
    for name, labels, value in raw_series(start, end):
        series.append(({"__name__": name, **promql.label_set(labels)}, [(t * 1000, float(value(t))) for t in range(start, end, STEP)]))
    with VictoriaMetrics(victoria_metrics) as vm:
        vm.import_samples(series)
        vm.flush()
        result = run_cli("backfill", "victoriametrics", "--url", vm.url, "--days", str(DAYS - 1), "--end", str(end))
        assert result.returncode == 0, result.stderr
        assert "backfill: day" not in result.stderr  # stderr is not a terminal: quiet by default
        vm.flush()

        def points(selector, start, stop):
            return {m["gpu"]: [(ms // 1000, float(v)) for ms, v in zip(ts, vs)] for m, ts, vs in vm.export(selector, start, stop)}
        check_history(points, vm.query, end)


def test_backfill_fails_clearly_on_an_unreachable_server(tmp_path, promtool):
    result = run_cli("backfill", "prometheus", "--url", f"http://127.0.0.1:{processes.free_port()}", "--days", "1",
                     "--output-dir", str(tmp_path / "blocks"))
    assert result.returncode == 1
    assert "error: promtool failed" in result.stderr
