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

import json
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from servers import Prometheus, VictoriaMetrics, blocks_from_openmetrics

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


def whole_seconds(t: str | float) -> int:
    """A timestamp of the server's, its milliseconds cut. promtool evaluates a group at the hour plus an offset
    with milliseconds (a hash of the rule file's temp path): rounded, a time a fraction of a second before a
    minute passes it, and the minute a subquery's last step was looks like the next (1 run in 120)."""
    return int(float(t))


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
    squares = points(f'{conventions.BASELINE_DAILY_SUMSQ}{{signal="gpu_temp"}}', end, after)
    assert {g: [pytest.approx(v) for _, v in s] for g, s in squares.items()} == {
        str(g): [sum(expected_hourly(g, h) ** 2 for h in hours)] for g in range(GPUS)}
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
    data = blocks_from_openmetrics(promtool, openmetrics(start, end), tmp_path / "data")
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
            return {r["metric"]["gpu"]: [(whole_seconds(t), float(v)) for t, v in r["values"]] for r in result}
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


# --- the SLOs' hourly sums ------------------------------------------------------------------------------------

def _capacity_fleet() -> tuple[int, list[dict]]:
    """8 hours at one sample a minute, 4 GPUs on 2 nodes of cluster c9 (the other fleets' cluster is c1): GPU 0 of
    n1 drained (ECC) 2h-3h30m; n2's exporter down 5h-6h (its GPUs gone, the alert pending 5 minutes, then firing);
    GPU 1 of n1 lost at 7h to the end (gpu_lost pending, then firing), so the capacity SLO's two memories (a GPU
    kept in the inventory while an alert names it, with its driver) both hold for minutes at a time."""
    minutes = 8 * 60
    slot = lambda gaps: " ".join("_" if any(a <= m < b for a, b in gaps) else "1" for m in range(minutes + 1))  # noqa: E731
    span = lambda a, b: slot([(0, a), (b, minutes + 1)])  # noqa: E731
    series = []
    for host, driver in (("n1", "550.90.07"), ("n2", "560.35.03")):
        for g in range(2):
            gaps = [(300, 360)] if host == "n2" else [(420, minutes + 1)] if g == 1 else []
            gpu = f'cluster="c9", Hostname="{host}", gpu="{g}", UUID="GPU-{host}-{g}", modelName="NVIDIA H100 80GB HBM3"'
            series.append({"series": f"gpu:dcgm_reporting:timestamp{{{gpu}}}", "values": slot(gaps)})
            series.append({"series": f'DCGM_FI_DEV_GPU_TEMP{{job="dcgm-exporter", {gpu}, DCGM_FI_DRIVER_VERSION="{driver}"}}',
                           "values": slot(gaps)})
    ecc = ('alertname="GPUEccUncorrectable", cluster="c9", Hostname="n1", gpu="0", UUID="GPU-n1-0", '
           'failure_mode="ecc_uncorrectable", severity="critical", action="drain"')
    lost = ('alertname="GPULost", cluster="c9", Hostname="n1", gpu="1", UUID="GPU-n1-1", modelName="NVIDIA H100 80GB HBM3", '
            'failure_mode="gpu_lost", severity="critical", action="drain"')
    down = 'alertname="DCGMExporterDown", cluster="c9", Hostname="n2", failure_mode="exporter_down", severity="warning", action="investigate"'
    for labels, pending, firing in ((ecc, None, (120, 210)), (lost, (421, 423), (423, minutes + 1)),
                                    (down, (300, 305), (305, 360))):
        for state, window in (("pending", pending), ("firing", firing)):
            if window:
                series.append({"series": f'ALERTS{{alertstate="{state}", {labels}}}', "values": span(*window)})
    return minutes, series


def _slo_inputs() -> tuple[int, list[tuple[str, list]]]:
    """The capacity fleet above and test_slos' training and job-success fleets (one sample a minute), side by side:
    (minutes, [(series, one value or None per minute)]). A staleness marker becomes a missing sample: a server
    loaded from blocks has none, so the one-server replay must not either."""
    from rulesgen.load.scenarios import STALE, expand
    from test_slos import _job_success_fleet, _training_restart_fleet
    fleets = [_capacity_fleet(), _training_restart_fleet()[:2], _job_success_fleet()[:2]]
    minutes = max(m for m, _ in fleets)
    out: dict[str, list] = {}
    for _, series in fleets:
        for s in series:
            values = [None if v is STALE else v for v in expand(s["values"])]
            assert s["series"] not in out, f"two fleets feed {s['series']}"
            out[s["series"]] = values + [None] * (minutes + 2 - len(values))  # a slot after the data: its end
    return minutes, list(out.items())


def _notation(values: list, stale: bool = False) -> str:
    """promtool's notation; stale: a staleness marker where a series stops (VictoriaMetrics ends a series at
    its last sample where Prometheus keeps it for its 5-minute lookback)."""
    out = ["_" if v is None else repr(v) for v in values]
    if stale:
        out = ["stale" if v is None and k and values[k - 1] is not None else x for k, (v, x) in enumerate(zip(values, out))]
    return " ".join(out)


def _metric(text: str) -> dict[str, str]:
    """A series in promtool's notation, `name{a="b", ...}`, as its labels with __name__."""
    name = text.split("{")[0]
    return {"__name__": name, **promql.label_set(text[len(name):].strip("{}"))}


def _openmetrics(series: list[tuple[str, list]], start: int) -> str:
    lines, families = [], {}
    for text, values in series:
        families.setdefault(text.split("{")[0], []).append((text, values))
    for name, members in families.items():
        lines.append(f"# TYPE {name} gauge")
        for text, values in members:
            labels = {k: v for k, v in _metric(text).items() if k != "__name__"}
            flat = "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
            lines += [f"{name}{flat} {v:g} {start + 60 * m}" for m, v in enumerate(values) if v is not None]
    return "\n".join(lines) + "\n# EOF\n"


def _live_hourly(promtool: str, rules: Path, series: list[tuple[str, list]], minutes: int, workdir: Path,
                 stale: bool = False):
    """What the live rules count at every minute (one promtool replay of the rendered SLO file, from t=0), and the
    function from (hourly record, labels, hour's end in seconds from t=0) to the sum the live rules write: their
    counts at the minutes in (end - 1h, end]. stale: as VictoriaMetrics reads the series (_notation)."""
    import shard_equality as se
    hourly = {r["record"]: r["expr"].split("(", 1)[1].split("[")[0]
              for g in yaml.safe_load(rules.read_text())["groups"] if g["interval"] == "1h" for r in g["rules"]}
    # the replay runs 10 minutes past the data: a server's samples stay visible for 5 minutes after the last one
    run = se.replay(promtool, [rules], [(s, _notation(v, stale)) for s, v in series], STEP, STEP, (minutes + 10) * 60,
                    "|".join(sorted(set(hourly.values()))), workdir, "live")

    def live(record: str, labels: tuple, end: int) -> list[float]:
        points = run.samples.get((hourly[record], labels), {})
        return [v for t, v in points.items() if end - HOUR < t <= end]
    return hourly, live


@pytest.fixture(scope="module")
def slo_rendered(tmp_path_factory) -> tuple[Path, Path]:
    """test_slos' SLO config and its rendered SLO rule file."""
    from test_slos import SLO_CONFIG
    path = tmp_path_factory.mktemp("slo-backfill") / "rulesgen.yaml"
    path.write_text(SLO_CONFIG)
    result = run_cli("render", "--config", str(path), "--out", str(path.parent / "out"), "--no-scenario-tests")
    assert result.returncode == 0, result.stderr
    return path, path.parent / "out/alerts/prometheus/slos.yaml"


def _slo_case(promtool: str, rules: Path, workdir: Path, stale: bool = False):
    """The fleets (_slo_inputs), what the live rules sum (_live_hourly), and the server's span: the data from a
    midnight two days ago (inside any retention), the backfill's end on the hour after it."""
    minutes, series = _slo_inputs()
    hourly, live = _live_hourly(promtool, rules, series, minutes, workdir, stale)
    start = int(time.time()) // DAY * DAY - 2 * DAY
    return minutes, series, hourly, live, start, start + (minutes // 60 + 1) * HOUR


@pytest.mark.equality  # replays the fleets through the live rules and compares hour by hour: make test-sharding
def test_backfill_writes_the_slos_hourly_sums_the_live_rules_would_have(tmp_path, promtool, prometheus_bin, slo_rendered):
    """The three SLOs' hourly sums, backfilled by `rulesgen backfill prometheus` from the series a server stored
    (the DCGM and job series, kube-state-metrics and rulesgen's ALERTS), equal what the live rules write over the
    same minutes, series by series and hour by hour; a second backfill over the same span writes nothing (the hours
    hold sums already, so no minute is counted twice)."""
    slo_config, rules = slo_rendered
    minutes, series, hourly, live, start, end = _slo_case(promtool, rules, tmp_path)
    data = blocks_from_openmetrics(promtool, _openmetrics(series, start), tmp_path / "data")

    def backfill(prom, blocks: Path) -> list[Path]:
        result = run_cli("backfill", "prometheus", "--only", "slos", "--config", str(slo_config), "--url", prom.url, "--days", "1",
                         "--end", str(end), "--output-dir", str(blocks))
        assert result.returncode == 0, result.stderr
        return [b for b in blocks.iterdir() if (b / "meta.json").exists()]

    with Prometheus(prometheus_bin, data) as prom:
        blocks = backfill(prom, tmp_path / "blocks")
    for b in blocks:
        shutil.move(str(b), data / b.name)
    with Prometheus(prometheus_bin, data) as prom:
        got = {}
        for record in hourly:
            for r in prom.query(f"{record}[{end - start + HOUR}s]", end + HOUR):
                labels = tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__"))
                got.update({(record, labels, whole_seconds(t) - start): float(v) for t, v in r["values"]})
        again = backfill(prom, tmp_path / "again")
    expected = {}
    ends = sorted({t for _, _, t in got})
    for record, labels, _ in got:
        for t in ends:
            if counts := live(record, labels, t):
                expected[(record, labels, t)] = sum(counts)
    assert len(ends) >= minutes // 60 and {r for r, _, _ in got} >= {
        "slo:gpu_capacity_bad:sum_1h", "slo:gpu_capacity_bad_by_driver:sum_1h", "slo:training_time_bad:sum_1h",
        "slo:job_success_bad:sum_1h", "model:slo_gpu_capacity_interruptions:sum_1h"}, sorted(got)[:5]
    assert got == pytest.approx(expected), sorted(set(got.items()) ^ set(expected.items()))[:10]
    # every cause counted: the drained GPU, the node down and the lost GPU's driver
    assert {dict(labels).get("failure_mode") for r, labels, _ in got if r == "slo:gpu_capacity_bad_by_failure_mode:sum_1h"
            } >= {"ecc_uncorrectable", "exporter_down", "gpu_lost"}
    assert sum(json.loads((b / "meta.json").read_text())["stats"].get("numSamples", 0) for b in again) == 0


@pytest.mark.equality  # replays the fleets through the live rules and compares hour by hour: make test-sharding
def test_backfill_writes_the_slos_hourly_sums_through_vmalert_replay(tmp_path, promtool, victoria_metrics, vmalert, slo_rendered):
    """The same on VictoriaMetrics: `rulesgen backfill victoriametrics` (vmalert replay) writes hourly sums that
    equal the live rules' over the same minutes; a second run writes nothing more."""
    slo_config, rules = slo_rendered
    minutes, series, hourly, live, start, end = _slo_case(promtool, rules, tmp_path, stale=True)
    with VictoriaMetrics(victoria_metrics) as vm:
        vm.import_samples([(_metric(text), [((start + 60 * m) * 1000, v) for m, v in enumerate(values) if v is not None])
                           for text, values in series])
        vm.flush()

        def backfill() -> dict:
            result = run_cli("backfill", "victoriametrics", "--only", "slos", "--config", str(slo_config), "--url", vm.url, "--days", "1",
                             "--end", str(end))
            assert result.returncode == 0, result.stderr
            vm.flush()
            return {(record, tuple(sorted((k, v) for k, v in m.items() if k != "__name__")), ms // 1000 - start): v
                    for record in hourly for m, ts, vs in vm.export(record, start - DAY, end + HOUR) for ms, v in zip(ts, vs)}
        got = backfill()
        assert backfill() == got
    # VictoriaMetrics ends a series a minute after its last sample, Prometheus five (with a staleness marker, at
    # once): each hour within two minutes of its counts, where a series starts or stops (exactness: the test above)
    ends = sorted({t for _, _, t in got})
    assert len(ends) >= minutes // 60 and "slo:gpu_capacity_bad_by_driver:sum_1h" in {r for r, _, _ in got}
    far = []
    for record, labels, t in sorted(set(got) | {(r, lb, t) for r, lb, _ in got for t in ends}):
        counts = live(record, labels, t) or live(record, labels, t - HOUR)  # the hour after a series: its tail
        value = got.get((record, labels, t))
        if abs((value or 0) - sum(live(record, labels, t))) > 2 * max(counts or [0]):
            far.append((record, labels, t, value, sum(live(record, labels, t))))
    assert not far, "\n".join(map(str, far))
