"""rulesgen/cli/replay.py in-process (click's CliRunner) without promtool: the command's own parts (loading
and selecting the scenarios, dialects, the rule files it hands over, the report in text and JSON, the
exit code) with engines.replay.replay replaced by a fake that records its arguments and returns an
Outcome written here; no engine can be found or run meanwhile."""
import json
import sys

import click
import pytest
from click.testing import CliRunner

from rulesgen import processes
from rulesgen.cli import replay as replay_cli
from rulesgen.engines import tools
from rulesgen.engines.replay import Fired, Outcome
from rulesgen.load.dialects import describe

SCENARIO = """\
name: {name}
description: one GPU runs hot
interval: 1m
duration: 30m
series:
  - series: 'DCGM_FI_DEV_GPU_TEMP{{job="dcgm-exporter", instance="n1:9400", Hostname="n1", gpu="0", UUID="GPU-0", modelName="NVIDIA H100"}}'
    values: '90x30'
expect:
  - failure_mode: hot_gpu
    labels: {{Hostname: n1, gpu: "0"}}
    after: 0s
    within: 10m
"""
HOT = Fired((("Hostname", "n1"), ("alertname", "GPUHotGPU"), ("failure_mode", "hot_gpu"), ("gpu", "0"),
             ("severity", "warning")), 300)
STRAY = Fired((("Hostname", "n1"), ("alertname", "GPUHotGPU"), ("failure_mode", "hot_gpu"), ("gpu", "1"),
               ("severity", "warning")), 600)


@pytest.fixture
def here(minimal_catalog, tmp_path, monkeypatch):
    """Two scenarios (hot-a replays clean, hot-b with a false alert), and the fake replay's calls."""
    real = tools.find_tool

    def missing(name):
        raise tools.ToolMissing(f"{name} not found")

    def refuse(cmd, *args, **kwargs):
        raise AssertionError(f"a unit test ran {cmd[:1]}")
    for module in [m for name, m in sys.modules.items() if name.startswith("rulesgen.")]:
        if getattr(module, "find_tool", None) is real:
            monkeypatch.setattr(module, "find_tool", missing)
    monkeypatch.setattr(processes, "run", refuse)
    monkeypatch.chdir(tmp_path)
    for name in ("hot-a", "hot-b"):
        (tmp_path / f"{name}.yaml").write_text(SCENARIO.format(name=name))
    calls = []

    def fake_replay(scenario, rule_paths, modes):
        calls.append((scenario.name, scenario.interval, sorted(p.name for p in rule_paths if p.is_file()), modes))
        return Outcome(scenario, (HOT,) if scenario.name.startswith("hot-a") else (HOT, STRAY), (),
                       () if scenario.name.startswith("hot-a") else (STRAY,))
    monkeypatch.setattr(replay_cli, "replay", fake_replay)
    return str(minimal_catalog), calls


def run(*args):
    result = CliRunner().invoke(replay_cli.replay_cmd, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_each_scenario_is_replayed_on_the_rendered_rule_files(here):
    catalog, calls = here
    result = run("hot-a.yaml", "hot-b.yaml", "--catalog", catalog, "-j", "1")
    assert sorted(calls) == [(name, 60, ["health.yaml", "recording.yaml"], ["hot_gpu"]) for name in ("hot-a", "hot-b")]
    lines = result.stdout.splitlines()
    assert result.exit_code == 1 and lines[-1] == "1/2 scenarios match their expectations"
    assert lines[0] == "PASS hot-a: one GPU runs hot" and lines[1].endswith("Hostname=n1 gpu=0  [expected]")
    assert "FAIL hot-b: one GPU runs hot" in lines and lines[-2].endswith("Hostname=n1 gpu=1  [FALSE ALERT]")


def test_json_gives_each_fired_alerts_verdict(here):
    catalog, _ = here
    result = run("hot-a.yaml", "hot-b.yaml", "--catalog", catalog, "--format", "json")
    doc = json.loads(result.stdout)
    assert (result.exit_code, doc["matched"], doc["total"]) == (1, 1, 2)
    b = next(s for s in doc["scenarios"] if s["name"] == "hot-b")
    assert (b["ok"], b["path"], b["missing"]) == (False, "hot-b.yaml", [])
    assert [(f["labels"]["gpu"], f["first_firing_seconds"], f["verdict"]) for f in b["fired"]] == [
        ("0", 300, "expected"), ("1", 600, "false_alert")]


def test_a_dialect_replays_each_scenario_as_that_setup_records_it(here):
    catalog, calls = here
    result = run("hot-a.yaml", "--catalog", catalog, "--dialect", "scrape-30s", "--dialect", "scrape-60s")
    assert result.exit_code == 0
    assert sorted((name, interval) for name, interval, _, _ in calls) == [("hot-a@scrape-30s", 30), ("hot-a@scrape-60s", 60)]


def test_an_unknown_dialect_is_an_error_and_nothing_is_replayed(here):
    catalog, calls = here
    result = run("hot-a.yaml", "--catalog", catalog, "--dialect", "exporter-0.1")
    assert result.exit_code == 1 and "exporter-0.1" in result.stderr and calls == []


def test_plot_takes_one_scenario_and_list_dialects_exits(here):
    catalog, calls = here
    result = run("hot-a.yaml", "hot-b.yaml", "--catalog", catalog, "--plot", "x.png")
    assert result.exit_code == 2 and "--plot takes exactly one scenario file" in result.stderr and calls == []
    listed = run("--list-dialects")
    assert (listed.exit_code, listed.stdout) == (0, "\n".join(describe()) + "\n")


def test_coloured_marks_the_verdicts():
    text = replay_cli._coloured("FAIL hot-b: x\n  5m  A  [FALSE ALERT]\n  MISSING: hot_gpu on gpu 0")
    assert click.unstyle(text) == "FAIL hot-b: x\n  5m  A  [FALSE ALERT]\n  MISSING: hot_gpu on gpu 0"
    assert text.startswith(click.style("FAIL", fg="red", bold=True))
    assert click.style("[FALSE ALERT]", fg="red") in text and click.style("MISSING", fg="red") in text
    assert replay_cli._coloured("PASS a: y").startswith(click.style("PASS", fg="green", bold=True))
