"""The small shared helpers: durations, label sets, local processes."""
import subprocess
import sys

import pytest

from rulesgen import processes
from rulesgen.durations import duration_seconds, format_duration, parse_duration, rfc3339
from rulesgen.promql.text import escape, label_set, series_labels


@pytest.mark.parametrize("text, seconds", [("1h30m", 5400), ("5m", 300), ("90s", 90), ("0s", 0), ("14d", 14 * 86400),
                                           ("1d2h3m4s", 93784)])
def test_durations_read_and_write_prometheus_notation(text, seconds):
    assert parse_duration(text) == duration_seconds(text) == seconds
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize("text", ["5 minutes", "", "1.5h", "30ms", "m", "1m1h", None, 300])
def test_a_bad_duration_is_none_or_a_clear_error(text):
    assert parse_duration(text) is None
    with pytest.raises(ValueError, match="is not a duration like 30s, 5m, 1h30m"):
        duration_seconds(text)


def test_rfc3339():
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(1_700_000_000) == "2023-11-14T22:13:20Z"


def test_label_sets_of_series_promtool_output_and_exposition_text():
    assert series_labels('DCGM_FI_DEV_GPU_TEMP{Hostname="node-1", gpu = "0"}') == {"Hostname": "node-1", "gpu": "0"}
    assert series_labels("up") == {}
    assert label_set('{alertname="GPULost", UUID="GPU-1"}') == {"alertname": "GPULost", "UUID": "GPU-1"}
    # Values come back unescaped: quotes, backslashes, newlines, and Go's strconv.Quote (promtool's output).
    assert label_set(r'a="say \"hi\"", b="C:\\x", c="one\ntwo", d="\x41\u00e9", e="ü"') == {
        "a": 'say "hi"', "b": "C:\\x", "c": "one\ntwo", "d": "Aé", "e": "ü"}


def test_escape_round_trips_through_label_set():
    value = 'H100 "SXM"\\80GB\nrev'
    assert label_set(f'modelName="{escape(value)}"') == {"modelName": value}


def test_run_captures_output_and_names_a_failure():
    ok = processes.run([sys.executable, "-c", "print('out')"])
    assert (ok.returncode, ok.stdout) == (0, "out\n")
    bad = processes.run([sys.executable, "-c", "import sys; sys.exit('broken')"])
    assert bad.returncode == 1
    assert processes.failure(bad).endswith("failed (1):\nbroken")


def test_wait_ready_says_when_a_server_exits_first():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    with pytest.raises(processes.NotReady, match="exited"):
        processes.wait_ready(proc, f"http://127.0.0.1:{processes.free_port()}/health", timeout=30)
    processes.stop(proc)
