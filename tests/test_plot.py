"""`rulesgen replay SCENARIO --plot OUT.png`: the data it draws (series, pending and firing spans read
from the real promtool), not pixels."""
import re

import pytest

from conftest import run_cli
from rulesgen.artifacts import DASHBOARD_ONLY, plan, write_all
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.engines.plot import Span, draw, expand_values, plot_data, spans_from_states
from rulesgen.load.scenarios import load_scenario

GPU = ('job="dcgm-exporter", instance="10.0.0.1:9400", Hostname="node-1", gpu="0", UUID="GPU-0", '
       'modelName="NVIDIA H100 80GB HBM3", namespace="ml", pod="train-0"')
# One H100 at 70 C for 20 minutes, then at 92 C (past its 87 C limit) for 40 minutes. Its power jitters
# as a live GPU's does (constant power and temperature under load is frozen telemetry).
SCENARIO = f"""\
name: plot-thermal
description: one H100 runs hot from 20 minutes on. Its temperature passes the model limit.
interval: 30s
duration: 1h
series:
  - series: 'DCGM_FI_DEV_GPU_TEMP{{{GPU}}}'
    values: '70x39 92x80'
  - series: 'DCGM_FI_DEV_POWER_USAGE{{{GPU}}}'
    values: '{" ".join(str(650 + 3 * (i % 2)) for i in range(121))}'
  - series: 'DCGM_FI_DEV_SM_CLOCK{{{GPU}}}'
    values: '1980x120'
  - series: 'DCGM_FI_DEV_GPU_UTIL{{{GPU}}}'
    values: '98x120'
  - series: 'DCGM_FI_DEV_FB_USED{{{GPU}}}'
    values: '60000x120'
expect:
  - failure_mode: thermal_throttling
    labels: {{Hostname: node-1, gpu: "0"}}
    after: 20m
    within: 12m
"""


# one worker runs the file, so its replay (the `data` fixture, about 5 s) runs once, not in each worker
pytestmark = pytest.mark.xdist_group("plot")


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("scenario") / "plot-thermal.yaml"
    path.write_text(SCENARIO)
    return path


@pytest.fixture(scope="module")
def data(scenario_file, tmp_path_factory, promtool):
    p = plan(bundled_catalog_dir(), None, None)
    out = tmp_path_factory.mktemp("rules")
    write_all(out, [a for a in p.artifacts if a.path.startswith("alerts/")])
    rules = [out / f.path for f in p.rules.files if f.path not in DASHBOARD_ONLY]
    scenario = load_scenario(scenario_file, [fm.id for fm in p.catalog.failure_modes])
    return plot_data(scenario, rules, p.catalog, "Hostname")


def test_expanding_notation_as_promtool_documents_it():
    assert expand_values("-2+4x3") == [-2, 2, 6, 10]
    assert expand_values("1-2x4") == [1, -1, -3, -5, -7]
    assert expand_values("1x4") == [1, 1, 1, 1, 1]
    assert expand_values("1 _x3 stale") == [1, None, None, None, None]
    assert expand_values("0.5 _ 1e3 2.5+0.5x1") == [0.5, None, 1000, 2.5, 3.0]


def test_spans_join_consecutive_evaluations_of_one_state():
    states = ([{"alertname": "A", "gpu": "0", "alertstate": "pending", "at": str(t)} for t in (60, 90, 120)]
              + [{"alertname": "A", "gpu": "0", "alertstate": "firing", "at": str(t)} for t in (150, 180, 300)])
    assert spans_from_states(states, 30) == [
        Span("A", (("alertname", "A"), ("gpu", "0")), "pending", 60, 150),
        Span("A", (("alertname", "A"), ("gpu", "0")), "firing", 150, 210),
        Span("A", (("alertname", "A"), ("gpu", "0")), "firing", 300, 330),
    ]


def test_plot_data_has_the_series_and_the_alert_pending_then_firing(data):
    assert data.metrics[0] == "DCGM_FI_DEV_GPU_TEMP"
    assert set(data.metrics) == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK",
                                 "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"}
    temp = next(s for s in data.series if s.metric == "DCGM_FI_DEV_GPU_TEMP")
    assert len(temp.values) == 121 and temp.values[39] == 70 and temp.values[40] == 92 and temp.times[40] == 1200
    # The scenario exports no ECC field, so GPUCountersMissing goes pending after its hour of settling
    # (it would fire a day later); the thermal alert's spans are the ones this scenario is about.
    thermal = [s for s in data.spans if s.alertname == "GPUThermalThrottling"]
    assert [s.state for s in thermal] == ["pending", "firing"]
    assert {s.alertname for s in data.spans} - {"GPUThermalThrottling"} <= {"GPUCountersMissing"}
    pending, firing = thermal
    hold = next(r.for_seconds for r in plan(bundled_catalog_dir(), None, None).rules.rules
                if r.alert == "GPUThermalThrottling")
    assert 1200 < pending.start < 1200 + 300  # once the 4-minute median passes 87 C
    assert pending.end == firing.start == pending.start + hold  # held for the rule's `for`
    assert firing.end == 3600 + 30  # firing until the end of the replay


def test_draw_writes_a_png(data, tmp_path):
    out = tmp_path / "plot.png"
    draw(data, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_cli_replay_plot(scenario_file, tmp_path, promtool):
    out = tmp_path / "replay.png"
    result = run_cli("replay", str(scenario_file), "--plot", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    counts = re.findall(rf"plot: {re.escape(str(out))} \(5 series panels, (\d+) pending/firing spans\)", result.stdout)
    assert counts and int(counts[0]) >= 2, result.stdout  # thermal pending then firing (GPUCountersMissing may pend)
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_cli_plot_takes_one_scenario(scenario_file, tmp_path):
    result = run_cli("replay", str(scenario_file), str(scenario_file), "--plot", str(tmp_path / "x.png"))
    assert result.returncode == 2 and "--plot takes exactly one scenario file" in result.stderr
