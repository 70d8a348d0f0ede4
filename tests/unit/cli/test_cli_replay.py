"""rulesgen/cli/replay.py in-process (click's CliRunner) with the real promtool: loading and selecting the
scenarios, dialects, the rule files it renders and hands over, the report in text and JSON, the exit code."""
import json

import click
import pytest
from click.testing import CliRunner

from rulesgen.cli import replay as replay_cli
from rulesgen.load.dialects import describe

SERIES = """\
  - series: 'DCGM_FI_DEV_GPU_TEMP{{job="dcgm-exporter", instance="n1:9400", Hostname="n1", gpu="{gpu}", UUID="GPU-{gpu}", modelName="NVIDIA H100"}}'
    values: '90x30'
"""
SCENARIO = """\
name: {name}
description: one GPU runs hot
interval: 1m
duration: 30m
series:
{series}expect:
  - failure_mode: hot_gpu
    labels: {{Hostname: n1, gpu: "0"}}
    after: 0s
    within: 10m
"""


@pytest.fixture
def here(minimal_catalog, tmp_path, monkeypatch, promtool):
    """Two scenarios: hot-a replays clean; in hot-b a second GPU, expected by nobody, runs hot too."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hot-a.yaml").write_text(SCENARIO.format(name="hot-a", series=SERIES.format(gpu="0")))
    (tmp_path / "hot-b.yaml").write_text(SCENARIO.format(name="hot-b", series=SERIES.format(gpu="0") + SERIES.format(gpu="1")))
    return str(minimal_catalog)


def run(*args):
    result = CliRunner().invoke(replay_cli.replay_cmd, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_each_scenario_is_replayed_and_judged(here):
    result = run("hot-a.yaml", "hot-b.yaml", "--catalog", here, "-j", "1")
    lines = result.stdout.splitlines()
    assert result.exit_code == 1 and lines[-1] == "1/2 scenarios match their expectations"
    assert lines[0] == "PASS hot-a: one GPU runs hot" and lines[1].endswith("Hostname=n1 gpu=0  [expected]")
    assert "FAIL hot-b: one GPU runs hot" in lines
    assert any(line.endswith("Hostname=n1 gpu=1  [FALSE ALERT]") for line in lines)


def test_json_gives_each_fired_alerts_verdict(here):
    result = run("hot-a.yaml", "hot-b.yaml", "--catalog", here, "--format", "json")
    doc = json.loads(result.stdout)
    assert (result.exit_code, doc["matched"], doc["total"]) == (1, 1, 2)
    b = next(s for s in doc["scenarios"] if s["name"] == "hot-b")
    assert (b["ok"], b["path"], b["missing"]) == (False, "hot-b.yaml", [])
    verdicts = sorted((f["labels"]["gpu"], f["verdict"]) for f in b["fired"])
    assert verdicts == [("0", "expected"), ("1", "false_alert")]
    assert all(0 < f["first_firing_seconds"] <= 600 for f in b["fired"])


def test_a_dialect_replays_each_scenario_as_that_setup_records_it(here):
    result = run("hot-a.yaml", "--catalog", here, "--dialect", "scrape-30s", "--dialect", "scrape-60s")
    assert result.exit_code == 0, result.stdout + result.stderr
    passed = sorted(line.split(":")[0] for line in result.stdout.splitlines() if line.startswith("PASS "))
    assert passed == ["PASS hot-a@scrape-30s", "PASS hot-a@scrape-60s"]


def test_an_unknown_dialect_is_an_error_and_nothing_is_replayed(here):
    result = run("hot-a.yaml", "--catalog", here, "--dialect", "exporter-0.1")
    assert result.exit_code == 1 and "exporter-0.1" in result.stderr and "PASS" not in result.stdout


def test_plot_takes_one_scenario_and_list_dialects_exits(here):
    result = run("hot-a.yaml", "hot-b.yaml", "--catalog", here, "--plot", "x.png")
    assert result.exit_code == 2 and "--plot takes exactly one scenario file" in result.stderr and result.stdout == ""
    listed = run("--list-dialects")
    assert (listed.exit_code, listed.stdout) == (0, "\n".join(describe()) + "\n")


def test_coloured_marks_the_verdicts():
    text = replay_cli._coloured("FAIL hot-b: x\n  5m  A  [FALSE ALERT]\n  MISSING: hot_gpu on gpu 0")
    assert click.unstyle(text) == "FAIL hot-b: x\n  5m  A  [FALSE ALERT]\n  MISSING: hot_gpu on gpu 0"
    assert text.startswith(click.style("FAIL", fg="red", bold=True))
    assert click.style("[FALSE ALERT]", fg="red") in text and click.style("MISSING", fg="red") in text
    assert replay_cli._coloured("PASS a: y").startswith(click.style("PASS", fg="green", bold=True))
