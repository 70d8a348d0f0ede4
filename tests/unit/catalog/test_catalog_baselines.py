"""rulesgen/catalog/baselines.py: baselines.yaml's signals, their limits and the statistics constants."""
from rulesgen.catalog.baselines import read_baselines
from rulesgen.errors import Collector
from unit_yaml import printed, written

KNOWN = {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"}
BASELINES = """\
statistics:
  mad_to_sigma: {value: 1.4826, source: Rousseeuw}
  min_history_points: {value: 24, source: one day}
  peer_outlier_z: {value: 2.5, source: Leys}
baselines:
  - signal: temperature
    metric: DCGM_FI_DEV_GPU_TEMP
    unit: celsius
    description: die temperature
    value: quantile_over_time(0.5, x[30m])
    busy_only: true
    direction: up
    alert: true
    floor: {value: 1, source: sensor step}
    min_delta: {value: 5, source: noise}
    same_load: power
  - signal: power
    metric: DCGM_FI_DEV_POWER_USAGE
    unit: watt
    description: power draw
    value: avg_over_time(y[30m])
    busy_only: true
    direction: down
    alert: false
    peers: false
    floor: {value: 2.5, source: sensor}
    min_delta: {value: 10, source: noise}
"""


def test_signals_limits_and_statistics(tmp_path):
    _, doc = written(tmp_path, "baselines.yaml", BASELINES)
    errors = Collector()
    signals, stats = read_baselines(doc, errors, KNOWN)
    assert errors.items == []
    assert [(b.signal, b.metric, b.direction, b.alert, b.peers, b.same_load) for b in signals] == [
        ("temperature", "DCGM_FI_DEV_GPU_TEMP", "up", True, True, "power"),
        ("power", "DCGM_FI_DEV_POWER_USAGE", "down", False, False, None)]
    assert [(b.floor.value, b.floor.unit, b.min_delta.value, b.min_delta.source) for b in signals] == [
        (1.0, "celsius", 5.0, "noise"), (2.5, "watt", 10.0, "noise")]
    assert signals[0].where.line == 10  # the value template's line
    assert (stats.mad_to_sigma.value, stats.min_history_points.value, stats.min_history_points.unit) == (1.4826, 24.0, "points")


def test_planted_mistakes_name_their_lines(tmp_path):
    text = (BASELINES.replace("same_load: power", "same_load: powr").replace("floor: {value: 2.5", "floor: {value: 0")
            .replace("metric: DCGM_FI_DEV_GPU_TEMP", "metric: DCGM_FI_DEV_GPU_TMP")
            .replace("min_history_points: {value: 24,", "min_history_points: {value: 0.5,"))
    path, doc = written(tmp_path, "baselines.yaml", text)
    errors = Collector()
    read_baselines(doc, errors, KNOWN)
    assert printed(errors) == [
        f"{path}:3:24: error[bad-type]: statistics min_history_points.value must be an integer, got 0.5",
        f"{path}:7:5: error[unknown-metric]: baseline temperature: unknown metric 'DCGM_FI_DEV_GPU_TMP' "
        "(did you mean 'DCGM_FI_DEV_GPU_TEMP'?)",
        f"{path}:16:5: error[unknown-signal]: baseline temperature: names unknown baseline signal 'powr' "
        "(did you mean 'power'?)",
        f"{path}:26:13: error[bad-value]: baseline power: floor must be above 0 (it divides)",
    ]


def test_a_signal_that_reads_its_peers_must_not_be_compared_with_them(tmp_path):
    text = BASELINES.replace("    peers: false\n", "    reads_peers: true\n")
    path, doc = written(tmp_path, "baselines.yaml", text)
    errors = Collector()
    read_baselines(doc, errors, KNOWN)
    assert printed(errors) == [
        f"{path}:25:5: error[bad-value]: baseline power: a signal that reads its peers is compared with its own "
        "history only (set peers: false)"]


def test_a_signal_cannot_guard_itself_nor_be_defined_twice(tmp_path):
    text = BASELINES.replace("same_load: power", "same_load: temperature").replace("signal: power", "signal: temperature")
    path, doc = written(tmp_path, "baselines.yaml", text)
    errors = Collector()
    read_baselines(doc, errors, KNOWN)
    assert printed(errors) == [
        f"{path}:16:5: error[bad-value]: baseline temperature: same_load and alert_signal cannot name the signal itself",
        f"{path}:17:5: error[duplicate-id]: baseline signal 'temperature' already defined on line 6",
    ]
