"""rulesgen/cli/outputs.py in-process (click's CliRunner) on conftest's one-mode catalog, on a machine with
no engine (find_tool finds nothing) but for `test`, which runs the real promtool; where push would call
Grafana (which cannot run here) that function is replaced by a fake that records what the command hands it."""
import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from conftest import HOT_GPU_SCENARIO
from rulesgen import lock, processes
from rulesgen.cli import outputs
from rulesgen.engines import push as push_module
from rulesgen.engines import tools
from rulesgen.engines.push import Pushed
from rulesgen.model.conventions import folder_uid
from rulesgen.promql.tree import comparisons, names_read, number



@pytest.fixture
def catalog(minimal_catalog, tmp_path, monkeypatch):
    """In an empty folder (no rulesgen.yaml), with no engine to be found (find_tool, wherever a module bound
    it, finds nothing: it would find the repository's .tools/bin whatever PATH says) and none to be run."""
    def missing(name):
        raise tools.ToolMissing(f"{name} not found")

    def refuse(cmd, *args, **kwargs):
        raise AssertionError(f"a unit test ran {cmd[:1]}")
    real = tools.find_tool
    for module in [m for name, m in sys.modules.items() if name.startswith("rulesgen.")]:
        if getattr(module, "find_tool", None) is real:
            monkeypatch.setattr(module, "find_tool", missing)
    monkeypatch.setattr(processes, "run", refuse)
    monkeypatch.chdir(tmp_path)
    return str(minimal_catalog)


def run(command, *args, env=None):
    result = CliRunner().invoke(command, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_render_writes_every_file_and_says_promql_was_not_checked_by_promtool(catalog, tmp_path):
    result = run(outputs.render, "--catalog", catalog, "--defaults", "--out", "out")
    assert result.exit_code == 0, result.stderr
    assert "note: promtool not found, PromQL checked by promql-parser only" in result.stderr
    written = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file()
                     and p.name != lock.LOCK)
    assert result.stdout.splitlines()[0] == f"rendered {len(written)} files ({len(written)} changed) into out"
    assert result.stdout.splitlines()[1:-1] == [f"  {p}" for p in written]
    assert result.stdout.splitlines()[-1] == f"wrote {lock.LOCK} (pins {'=='.join(lock.installed())}): commit it with the outputs"
    [alert] = [r for g in yaml.safe_load((tmp_path / "out/alerts/prometheus/health.yaml").read_text())["groups"]
               for r in g["rules"] if "alert" in r]
    [cmp] = comparisons(alert["expr"])
    assert (alert["alert"], names_read(cmp.lhs), cmp.op, number(cmp.rhs)) == ("GPUHotGPU", ("gpu:dcgm_gpu_temp:max",), ">", 85)


def test_check_after_render_then_after_an_edit(catalog, tmp_path):
    assert run(outputs.render, "--catalog", catalog, "--defaults", "--out", "out").exit_code == 0
    ok = run(outputs.check, "--catalog", catalog, "--defaults", "--out", "out")
    assert ok.exit_code == 0 and ok.stdout.endswith(" generated files are up to date\n")
    runbook = tmp_path / "out/runbooks/hot-gpu.md"
    runbook.write_text(runbook.read_text() + "edited\n")
    stale = run(outputs.check, "--catalog", catalog, "--defaults", "--out", "out", "--format", "json")
    doc = json.loads(stale.stdout)
    assert stale.exit_code == 1 and doc["up_to_date"] is False and doc["lock_mismatch"] is None
    assert doc["changes"] == [{"path": "runbooks/hot-gpu.md", "state": "differs"}]
    dry = run(outputs.render, "--catalog", catalog, "--defaults", "--out", "out", "--diff")
    assert dry.exit_code == 0 and "-edited" in dry.stdout and runbook.read_text().endswith("edited\n")


def test_a_lock_for_another_version_fails_check_and_render_updates_it(catalog, tmp_path):
    assert run(outputs.render, "--catalog", catalog, "--defaults", "--out", "out").exit_code == 0
    (tmp_path / "out" / lock.LOCK).write_text(lock.text(lock.DISTRIBUTION, "0.0.1"))
    name, version = lock.installed()
    assert outputs.lock_mismatch(tmp_path / "out").startswith(f"rulesgen.lock pins {lock.DISTRIBUTION}==0.0.1 but {name}=={version}")
    failed = run(outputs.check, "--catalog", catalog, "--defaults", "--out", "out")
    assert failed.exit_code == 1 and "rulesgen.lock pins" in failed.stderr
    updated = run(outputs.render, "--catalog", catalog, "--defaults", "--out", "out")
    assert "warning: rulesgen.lock pinned dcgm-rulesgen==0.0.1" in updated.stderr
    assert lock.pinned(tmp_path / "out") == (name, version) and outputs.lock_mismatch(tmp_path / "out") is None


def test_test_runs_the_scenario_tests_from_a_scratch_folder_when_they_are_not_outputs(minimal_catalog, promtool,
                                                                                       tmp_path, monkeypatch):
    """With the real promtool: the scenario's unit test passes, and nothing is written where outputs go."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "hot-gpu-one.yaml").write_text(HOT_GPU_SCENARIO)
    (tmp_path / "rulesgen.yaml").write_text("outputs:\n  scenario_tests: false\n")
    result = run(outputs.test, "--catalog", str(minimal_catalog), "--scenarios", "scenarios", "--out", "out")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout and not (tmp_path / "out").exists()
    broken = HOT_GPU_SCENARIO.replace("values: '90x30'", "values: '40x30'")  # never hot: the expected alert is missing
    (tmp_path / "scenarios" / "hot-gpu-one.yaml").write_text(broken)
    failed = run(outputs.test, "--catalog", str(minimal_catalog), "--scenarios", "scenarios", "--out", "out")
    assert failed.exit_code == 1 and "FAILED" in failed.stdout and "got: nil" in failed.stdout
    # rulesgen's words first (tests/test_day_two.py holds them without an engine), promtool's below
    assert failed.stdout.startswith("FAIL scenarios/hot-gpu-one.yaml (scenario hot-gpu-one, "), failed.stdout
    assert "(failure mode hot_gpu)" in failed.stdout and failed.stdout.index("it never fired") < failed.stdout.index("FAILED")
    assert not (tmp_path / "out").exists()


def test_test_without_promtool_says_so(catalog, tmp_path):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "hot-gpu-one.yaml").write_text(HOT_GPU_SCENARIO)
    result = run(outputs.test, "--catalog", catalog, "--defaults", "--scenarios", "scenarios", "--out", "out")
    assert result.exit_code == 1 and "error: promtool not found" in result.stderr
    assert (tmp_path / "out/tests/promtool/hot-gpu-one.yaml").is_file()  # outputs.scenario_tests defaults on


def test_lint_json_lists_the_findings_of_the_files_given(catalog, tmp_path):
    (tmp_path / "team.yaml").write_text("groups:\n- name: team\n  rules:\n  - alert: Hot\n    expr: vector(1)\n")
    result = run(outputs.lint, "team.yaml", "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {"files": ["team.yaml"], "findings": [
        {"path": "team.yaml", "line": 4, "col": 5, "severity": "warning", "code": "alert-for",
         "message": "Hot: alert has no `for`: one bad sample pages someone"}]}


def test_push_hands_grafana_the_rendered_dashboards_and_the_folder(catalog, monkeypatch):
    calls = []

    def fake_push(url, token, dashboards, folder, uid, timeout):
        calls.append((url, token, folder, uid, timeout))
        return [Pushed(d["uid"], d["title"], f"/d/{d['uid']}", 1) for d in dashboards]
    monkeypatch.setattr(push_module, "push", fake_push)
    result = run(outputs.push_cmd, "--grafana-url", "https://grafana.test", "--catalog", catalog, "--folder", "GPU team",
                 env={"GRAFANA_TOKEN": "t0ken"})
    assert result.exit_code == 0, result.stderr
    assert calls == [("https://grafana.test", "t0ken", "GPU team", folder_uid("GPU team"), 10.0)]
    assert result.stdout.splitlines()[-1] == "pushed 7 dashboards into folder 'GPU team' at https://grafana.test"
    assert Path("dashboards").exists() is False  # nothing written
