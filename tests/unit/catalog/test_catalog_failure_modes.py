"""rulesgen/catalog/failure_modes.py: a failure mode's thresholds (value within its range), windows, alerts
and covers, on the minimal catalog's failure_modes.yaml and planted variants of it."""
from dataclasses import replace

import pytest

from conftest import MINIMAL_CATALOG
from rulesgen.catalog.failure_modes import check_covers, is_zero_duration, parse_range, read_failure_modes
from rulesgen.errors import Collector, Where
from unit_yaml import printed, written

MODES = MINIMAL_CATALOG["failure_modes.yaml"]
WINDOWED = (MODES.replace("expr: gpu:dcgm_gpu_temp:max > [[ t.celsius ]]",
                          "expr: max_over_time(gpu:dcgm_gpu_temp:max[[ w.hold ]]) > [[ t.celsius ]]")
            .replace("    alerts:\n", "    windows:\n      - {name: hold, value: 10m, source: test}\n    alerts:\n"))
KNOWN = {"DCGM_FI_DEV_GPU_TEMP"}


def read(tmp_path, text, profiling=frozenset()):
    path, doc = written(tmp_path, "failure_modes.yaml", text)
    errors = Collector()
    return path, read_failure_modes(doc, errors, KNOWN, set(profiling)), errors


def test_a_mode_with_its_threshold_window_alert_and_runbook(tmp_path):
    _, (fm,), errors = read(tmp_path, WINDOWED)
    assert errors.items == []
    assert (fm.id, fm.group, fm.scope, fm.metrics, fm.needs_profiling) == ("hot_gpu", "health", "gpu",
                                                                          ("DCGM_FI_DEV_GPU_TEMP",), False)
    (t,) = fm.thresholds
    assert (t.name, t.value, t.unit, str(t.range)) == ("celsius", 85, "C", "[0, 150]")
    assert [(w.name, w.seconds, w.where.line) for w in fm.windows] == [("hold", 600, 17)]
    assert [(a.severity, a.action, a.for_seconds, a.where.line) for a in fm.alerts] == [("warning", "investigate", 300, 22)]
    assert (fm.runbook.check, fm.runbook.act, fm.workload_from) == (("look",), ("fix",), "gpu:dcgm_workload:info")


def test_a_mode_reading_a_profiling_metric_needs_profiling(tmp_path):
    _, (fm,), _ = read(tmp_path, MODES, profiling={"DCGM_FI_DEV_GPU_TEMP"})
    assert fm.needs_profiling


def test_out_of_range_a_zero_for_and_an_unknown_job_metric_name_their_lines(tmp_path):
    text = (MODES.replace("value: 85", "value: 185").replace("for: 5m", "for: 0s")
            .replace("    runbook:", "    job_metrics: [loss, acc]\n    runbook:"))
    path, (fm,), errors = read(tmp_path, text)
    assert fm.job_metrics == ("loss",)
    assert printed(errors) == [
        f"{path}:12:9: error[out-of-range]: failure mode hot_gpu threshold celsius: 185 is out of its range [0, 150]",
        f"{path}:19:9: error[out-of-range]: failure mode hot_gpu alert.for must be above 0s: one bad sample would page someone",
        f"{path}:23:5: error[bad-value]: failure mode hot_gpu: job_metrics 'acc' is not a job-metric input (loss, step_duration)",
    ]


def test_two_alerts_of_one_severity_are_an_error_at_the_second(tmp_path):
    alert = MODES[MODES.index("      - severity: warning"):MODES.index("    runbook:")]
    path, _, errors = read(tmp_path, MODES.replace("    runbook:", alert + "    runbook:"))
    assert printed(errors) == [
        f"{path}:23:9: error[duplicate-severity]: failure mode hot_gpu: more than one alert with severity 'warning' "
        "(combine them with 'or')"]


@pytest.mark.parametrize("text, inside, outside", [
    ("[0, 1]", (0, 1), (-0.1, 1.1)), ("(0, inf)", (0.5, 1e9), (0,)), ("[-inf, 0]", (), ()), ("(-1, 1]", (1,), (-1,))])
def test_ranges(text, inside, outside):
    errors = Collector()
    valid = parse_range(text, Where("f.yaml", 3), "x", errors)
    assert all(v in valid for v in inside) and not any(v in valid for v in outside)
    assert [d.code for d in errors.items] == (["bad-value"] if text.startswith("[-inf") else [])


@pytest.mark.parametrize("text", ["[0, inf]", "[2, 1]", "0..1", "[a, b]"])
def test_not_a_range_is_an_error_at_its_place(text):
    errors = Collector()
    parse_range(text, Where("f.yaml", 3, 7), "threshold x", errors)
    assert printed(errors) == [f"f.yaml:3:7: error[bad-value]: threshold x: range {text!r} is not an interval like "
                               "[0, 1], [0, inf) or (1, inf)"]


def test_zero_durations():
    assert is_zero_duration("0s") and is_zero_duration("0m")
    assert not is_zero_duration("5m") and not is_zero_duration(None) and not is_zero_duration("soon")


def test_covers_must_name_another_mode(tmp_path):
    _, (hot,), _ = read(tmp_path, MODES)
    modes = [replace(hot, covers=(("hot_gpu", ""), ("hot_gpus", ""))), replace(hot, id="hot_gpus")]
    errors = Collector()
    check_covers(modes, [], None, errors)
    # hot_gpus exists: only the self-cover is an error, said as such (no did-you-mean pointing at itself)
    assert [d.message for d in errors.items] == ["failure mode hot_gpu covers itself: name another failure mode"]
    assert errors.items[0].line == 2  # the mode's id line


@pytest.mark.parametrize("old,new", [("- id: hot_gpu", "- id: hot__gpu"), ("- name: celsius", "- name: max__celsius"),
                                     ("- id: hot_gpu", "- id: hot_gpu_")])
def test_an_id_or_threshold_name_with_a_double_or_trailing_underscore_is_refused(tmp_path, old, new):
    """A threshold renders as __threshold__MODE__NAME__ (model/thresholds.py): `__` in either would let two
    placeholders overlap."""
    assert MODES.count(old) == 1
    path, _, errors = read(tmp_path, MODES.replace(old, new))
    line = MODES.replace(old, new).splitlines().index(next(x for x in MODES.replace(old, new).splitlines() if new in x)) + 1
    assert any(e.startswith(f"{path}:{line}:") and "error[bad-value]" in e and repr(new.split(": ")[1]) in e
               for e in printed(errors)), printed(errors)
