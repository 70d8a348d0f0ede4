"""Day two of a GitOps repository (issue 38, items 2-5): nothing passes by accident, the lock keeps its
promise, hand edits are never lost silently, and the smaller papercuts. Engine-free: where a command runs
promtool or vmalert, a stand-in script plays it (what it prints is what the real one prints)."""
import json
import os
import stat
import sys
from pathlib import Path

import pytest
import yaml

from conftest import run_cli


def _init(path: Path, *args):
    result = run_cli("init", str(path), *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture
def repo(tmp_path):
    """A folder `rulesgen init` scaffolded (its example scenario expects ecc_uncorrectable on gpu 1)."""
    d = tmp_path / "repo"
    _init(d)
    return d


def _script(path: Path, body: str) -> str:
    """An executable Python script (a stand-in for an engine binary)."""
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# ---- 2. nothing passes by accident ------------------------------------------------------------------------

def test_check_without_a_config_is_a_usage_error_naming_the_folder(tmp_path):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    result = run_cli("check", cwd=folder)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"no ./rulesgen.yaml here ({folder}) and no --config" in result.stderr
    assert "missing" not in result.stderr  # not a comparison with the bundled defaults' outputs


def test_lint_without_rule_files_is_a_usage_error_naming_the_folder(tmp_path):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    result = run_cli("lint", cwd=folder)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"nothing to lint here ({folder})" in result.stderr and "alerts/prometheus/*.yaml" in result.stderr
    assert "dashboards/*.json" in result.stderr
    assert "0 file(s)" not in result.stderr


def test_lint_of_a_dashboards_folder_judges_its_json(tmp_path):
    """`rulesgen lint dashboards` (a folder) lints the dashboards in it, not only its provider.yaml: a
    panel linking to a dashboard missing from the folder is found."""
    from conftest import ROOT
    folder = tmp_path / "dashboards"
    folder.mkdir()
    for name in ("provider.yaml", "gpu-health.json", "gpu-on-call.json"):
        (folder / name).write_text((ROOT / "dashboards" / name).read_text())
    result = run_cli("lint", "--format", "json", str(folder), cwd=ROOT)
    report = json.loads(result.stdout)
    assert sorted(Path(p).name for p in report["files"]) == ["gpu-health.json", "gpu-on-call.json", "provider.yaml"]
    assert result.returncode == 1 and report["findings"], result.stderr  # links to the dashboards left out
    assert {Path(f["path"]).suffix for f in report["findings"]} == {".json"}


@pytest.mark.parametrize("config", ["failure_modes:\n  ecc_uncorrectable: {enabled: false}\n",
                                    "groups:\n  health: {enabled: false}\n"])
def test_a_scenario_expecting_a_mode_the_config_does_not_render_is_an_error_at_render(repo, config):
    (repo / "rulesgen.yaml").write_text(config)
    for command in ("render", "check", "test"):
        result = run_cli(command, cwd=repo)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert ("scenarios/example-ghost-loss-dbe.yaml:" in result.stderr
                and "error[inactive-failure-mode]" in result.stderr
                and "expects failure mode 'ecc_uncorrectable'" in result.stderr), (command, result.stderr)
    assert not (repo / "alerts").exists()


def test_a_scenario_expecting_an_unknown_mode_is_an_error_at_render(repo):
    example = repo / "scenarios" / "example-ghost-loss-dbe.yaml"
    example.write_text(example.read_text().replace("failure_mode: ecc_uncorrectable", "failure_mode: ecc_uncorectable"))
    result = run_cli("render", cwd=repo)
    assert result.returncode == 1
    assert "scenarios/example-ghost-loss-dbe.yaml:" in result.stderr and "'ecc_uncorectable'" in result.stderr


# promtool's report of a failed promql_expr_test, as promtool 3.5 and 2.42 print it (tests/promtool/ of the example,
# its first query: the expected alert's first firing)
FAKE_PROMTOOL = """\
import json, sys, yaml
doc = yaml.safe_load(open(sys.argv[-1]))
test = doc["tests"][0]["promql_expr_test"][0]
print("  FAILED:")
print(f"    expr: {json.dumps(test['expr'])}, time: {test['eval_time']},")
print("        exp: {} 1E+00")
print("        got: nil")
sys.exit(1)
"""


def test_rulesgen_test_names_the_failed_scenario_and_expectation_above_promtools_output(repo, tmp_path):
    promtool = _script(tmp_path / "promtool", FAKE_PROMTOOL)
    result = run_cli("test", cwd=repo, env={**os.environ, "RULESGEN_PROMTOOL": promtool})
    assert result.returncode == 1, result.stderr
    out = result.stdout
    assert out.startswith("FAIL scenarios/example-ghost-loss-dbe.yaml (scenario example-ghost-loss-dbe, "
                          "test tests/promtool/example-ghost-loss-dbe.yaml):\n"), out
    assert ('  - expected GPUECCUncorrectable{Hostname="gpu-node-01", gpu="1"} (failure mode ecc_uncorrectable) '
            "to first fire between 1h and 1h5m (evaluated at 2h): it never fired\n") in out
    # promtool's own words stay, below rulesgen's
    assert out.index("it never fired") < out.index("promtool test rules tests/promtool/example-ghost-loss-dbe.yaml:\n") \
        < out.index("  FAILED:") < out.index("got: nil")
    assert out.endswith("1 of 1 scenario test(s) failed\n")


def test_failed_queries_are_read_back_to_what_they_check():
    """Each kind of query in a scenario's test: an expectation's first firing, its continuity, the alerts
    nobody expected (promtool's `got:` series)."""
    from rulesgen.builders.promtool_tests import expr_tests
    from rulesgen.engines.replay import explain_failures
    from rulesgen.load.scenarios import Expectation, Scenario
    expect = Expectation("gpu_lost", (("Hostname", "n1"),), 600, 300, continuous=True)
    s = Scenario("s", "scenarios/s.yaml", "d", 30, 30, 3600, (), (expect,), ())
    (first, _, _), (cont, _, _), (unexpected, _, _) = expr_tests(s)
    output = "\n".join(f"    expr: {json.dumps(expr)}, time: 1h,\n        exp: x\n        got: {got}"
                       for expr, got in ((first, "{} 0E+00"), (cont, "nil"),
                                         (unexpected, '{alertname="GPUHot", alertstate="firing", gpu="0"} 1E+00')))
    assert explain_failures(s, output, {"gpu_lost": ["GPULost"]}) == [
        'expected GPULost{Hostname="n1"} (failure mode gpu_lost) to first fire between 10m and 15m (evaluated at 1h): '
        "it fired, but first outside that window",
        'expected GPULost{Hostname="n1"} (failure mode gpu_lost) to keep firing, as one label set, from 15m to the end '
        "(evaluated at 1h): it never fired",
        'alerts fired by 1h that the scenario neither expects nor allows (also_allowed): GPUHot{gpu="0"}']


def test_the_generated_makefile_tolerates_an_empty_scenario_folder(repo, tmp_path):
    """git keeps no empty folder: a repository whose scenarios were all removed has no scenarios/ at all in CI.
    make render, check and test then pass (tests/promtool/*.yaml matches nothing: no promtool test run)."""
    for p in (repo / "scenarios").iterdir():
        p.unlink()
    (repo / "scenarios").rmdir()
    calls = tmp_path / "calls"
    # promtool and vmalert-tool fail on a pattern that matches nothing, or a file that is not there
    fake = _script(tmp_path / "tool", "import glob, os, sys\n"
                   f"open({str(calls)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
                   "missing = [a for a in sys.argv[1:] if '*' in a and not glob.glob(a) or a.endswith('.yaml') and not glob.glob(a)]\n"
                   "sys.exit(1 if missing else 0)\n")
    rulesgen = Path(sys.executable).with_name("rulesgen")
    env = {**os.environ, "RULESGEN_PROMTOOL": fake}
    import subprocess
    for target in ("render", "check", "test", "test-vmalert"):
        made = subprocess.run(["make", target, f"RULESGEN={rulesgen}", f"PROMTOOL={fake}", f"VMALERT_TOOL={fake}"],
                              cwd=repo, capture_output=True, text=True, env=env, timeout=300)
        assert made.returncode == 0, (target, made.stdout, made.stderr)
    assert "test rules" not in calls.read_text() and "unittest" not in calls.read_text()  # nothing to replay
    assert "check rules alerts/prometheus/" in calls.read_text()
    flow = yaml.safe_load((repo / ".github/workflows/gpu-rules.yaml").read_text())
    steps = {s.get("name"): s for job in flow["jobs"].values() for s in job["steps"]}
    assert "hashFiles('tests/vmalert/*.yaml')" in steps["vmalert-tool unittest"]["if"]


# ---- 3. the lock keeps its promise --------------------------------------------------------------------------

def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_older_rulesgen_than_the_lock_pins_refuses_to_render_unless_allowed(repo):
    from rulesgen import lock
    name, version = lock.installed()
    (repo / "rulesgen.lock").write_text(lock.text(name, "99.0"))
    before = _tree(repo)
    refused = run_cli("render", cwd=repo)
    assert refused.returncode == 1
    assert (f"rulesgen.lock pins {name}==99.0, newer than the installed {name}=={version}" in refused.stderr
            and "--allow-downgrade" in refused.stderr and "nothing written" in refused.stderr), refused.stderr
    assert _tree(repo) == before
    allowed = run_cli("render", "--allow-downgrade", cwd=repo)
    assert allowed.returncode == 0, allowed.stderr
    assert f"rulesgen.lock pinned {name}==99.0; rendered with {name}=={version}" in allowed.stderr
    assert lock.pinned(repo) == (name, version) and (repo / "alerts/prometheus/health.yaml").is_file()


def test_a_missing_lock_fails_check_and_render_recreates_it_with_a_warning(repo):
    from rulesgen import lock
    assert run_cli("render", cwd=repo).returncode == 0
    assert run_cli("check", cwd=repo).returncode == 0
    (repo / "rulesgen.lock").unlink()
    check = run_cli("check", cwd=repo)
    assert check.returncode == 1 and "rulesgen.lock is missing" in check.stderr, check.stderr
    doc = json.loads(run_cli("check", "--format", "json", cwd=repo).stdout)
    assert doc["up_to_date"] is True and "is missing" in doc["lock_mismatch"]
    render = run_cli("render", cwd=repo)
    assert render.returncode == 0 and "rulesgen.lock was missing: recreated it, pinning" in render.stderr, render.stderr
    assert lock.pinned(repo) == lock.installed()
    assert run_cli("check", cwd=repo).returncode == 0


def test_the_lock_refuses_lines_of_its_own_kind_only_and_a_rewrite_keeps_comments(repo):
    """rulesgen.lock holds comments and one pin: another requirement or a pip option is an error at its line
    (render and check; nothing written), comments survive the rewrite of the pin."""
    from rulesgen import lock
    name, version = lock.installed()
    (repo / "rulesgen.lock").write_text(f"# our team's note\n--index-url https://pypi.internal/simple\n{name}=={version}\n"
                                        "requests==2.31.0\n")
    before = _tree(repo)
    for command in ("render", "check"):
        result = run_cli(command, cwd=repo)
        assert result.returncode == 1, (command, result.stderr)
        assert "rulesgen.lock:2:1: error[lock-format]: '--index-url https://pypi.internal/simple': not a comment" in result.stderr
        assert "rulesgen.lock:4:1: error[lock-format]: 'requests==2.31.0': another requirement (requests)" in result.stderr
    assert _tree(repo) == before
    (repo / "rulesgen.lock").write_text(f"# our team's note\n{name}==0.0.1\n")
    assert run_cli("render", cwd=repo).returncode == 0
    assert (repo / "rulesgen.lock").read_text() == f"# our team's note\n{name}=={version}\n"


def test_versions_are_ordered_as_pip_orders_them():
    from rulesgen.lock import version_key
    ordered = ["0+unknown", "0.1.0.dev1", "0.1.0a1", "0.1.0rc1", "0.1", "0.1.0+local.2", "0.1.0.post1", "0.1.1",
               "0.10.0", "1!0.0.1"]
    keys = [version_key(v) for v in ordered]
    assert all(a < b for a, b in zip(keys, keys[1:])), ordered
    assert version_key("0.1") == version_key("0.1.0") and version_key("banana") is None


# ---- 4. hand edits are never lost silently ----------------------------------------------------------------

@pytest.fixture
def rendered_repo(repo):
    result = run_cli("render", cwd=repo)
    assert result.returncode == 0, result.stderr
    return repo


def test_render_names_every_hand_edited_or_read_only_file_and_writes_nothing_without_force(rendered_repo):
    repo = rendered_repo
    health = repo / "alerts/prometheus/health.yaml"
    health.write_text(health.read_text() + "# our tweak\n")
    dashboard = repo / "dashboards/gpu-health.json"
    doc = json.loads(dashboard.read_text())
    doc["title"] = "our GPUs"
    dashboard.write_text(json.dumps(doc, indent=2))
    locked = repo / "alerts/prometheus/fleet.yaml"
    locked.chmod(0o444)  # unedited, but read-only: someone meant it to stay as it is
    (repo / "rulesgen.yaml").write_text("urls: {runbook_base: 'https://runbooks.example.com/'}\n")  # every alert changes
    before = _tree(repo)
    refused = run_cli("render", cwd=repo)
    assert refused.returncode == 1, refused.stderr
    assert refused.stdout == ""
    assert ("alerts/prometheus/health.yaml (edited since the last render)\n" in refused.stderr
            and "dashboards/gpu-health.json (edited since the last render)\n" in refused.stderr
            and "alerts/prometheus/fleet.yaml (read-only)\n" in refused.stderr
            and "render would overwrite or remove 3 file(s)" in refused.stderr
            and "nothing written" in refused.stderr and "--force" in refused.stderr), refused.stderr
    assert _tree(repo) == before and not locked.stat().st_mode & 0o222
    forced = run_cli("render", "--force", cwd=repo)
    assert forced.returncode == 0, forced.stderr
    assert "# our tweak" not in health.read_text() and json.loads(dashboard.read_text())["title"] != "our GPUs"
    assert "https://runbooks.example.com/" in locked.read_text()
    assert run_cli("check", cwd=repo).returncode == 0


def test_render_will_not_remove_a_generated_file_edited_since(rendered_repo):
    repo = rendered_repo
    test = repo / "tests/promtool/example-ghost-loss-dbe.yaml"
    test.write_text(test.read_text() + "# our note\n")
    (repo / "scenarios/example-ghost-loss-dbe.yaml").unlink()  # its tests are no longer generated
    refused = run_cli("render", cwd=repo)
    assert refused.returncode == 1 and "tests/promtool/example-ghost-loss-dbe.yaml (edited since the last render)" in refused.stderr
    assert test.read_text().endswith("# our note\n")
    assert run_cli("render", "--force", cwd=repo).returncode == 0 and not test.exists()


def test_a_file_at_a_planned_path_that_rulesgen_did_not_write_is_not_overwritten(rendered_repo):
    repo = rendered_repo
    (repo / "rulesgen.yaml").write_text("outputs:\n  vmrule: {enabled: true}\n")
    mine = repo / "deploy/victoriametrics-operator/kustomization.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("resources: [ours.yaml]\n")
    refused = run_cli("render", cwd=repo)
    assert refused.returncode == 1
    assert "deploy/victoriametrics-operator/kustomization.yaml (not written by rulesgen's last render)" in refused.stderr
    assert mine.read_text() == "resources: [ours.yaml]\n"


def test_two_renders_are_byte_identical_and_check_still_finds_stale_outputs(repo, tmp_path):
    assert run_cli("render", cwd=repo).returncode == 0
    first = _tree(repo)
    assert "rulesgen.manifest" in first
    assert run_cli("render", cwd=repo).returncode == 0
    assert _tree(repo) == first
    other = tmp_path / "other"
    other.mkdir()
    (other / "rulesgen.yaml").write_bytes(first["rulesgen.yaml"])
    (other / "scenarios").mkdir()
    (other / "scenarios/example-ghost-loss-dbe.yaml").write_bytes(first["scenarios/example-ghost-loss-dbe.yaml"])
    assert run_cli("render", cwd=other).returncode == 0
    assert {k: v for k, v in _tree(other).items() if k != ".github/workflows/gpu-rules.yaml"} == \
        {k: v for k, v in first.items() if k in _tree(other)}
    health = repo / "alerts/prometheus/health.yaml"
    health.write_text(health.read_text() + "# edited\n")
    stale = run_cli("check", cwd=repo)
    assert stale.returncode == 1 and "alerts/prometheus/health.yaml: differs from a fresh render" in stale.stderr


def test_init_force_keeps_a_backup_of_each_file_it_replaces_and_says_so(repo):
    config = repo / "rulesgen.yaml"
    config.write_text("selector: 'job=\"ours\"'\n")
    (repo / "Makefile").write_text("ours:\n\ttrue\n")
    first = run_cli("init", ".", "--force", cwd=repo)
    assert first.returncode == 0, first.stderr
    assert (repo / "rulesgen.yaml.bak").read_text() == "selector: 'job=\"ours\"'\n"
    assert (repo / "Makefile.bak").read_text() == "ours:\n\ttrue\n"
    assert "note: kept the replaced rulesgen.yaml as rulesgen.yaml.bak\n" in first.stdout
    assert "note: kept the replaced Makefile as Makefile.bak\n" in first.stdout
    assert not (repo / "rulesgen.lock.bak").exists() and "rulesgen.lock.bak" not in first.stdout  # unchanged: no copy
    config.write_text("profiling: false\n")
    second = run_cli("init", ".", "--force", cwd=repo)
    assert (repo / "rulesgen.yaml.bak").read_text() == "selector: 'job=\"ours\"'\n"  # a backup is never overwritten
    assert (repo / "rulesgen.yaml.bak.1").read_text() == "profiling: false\n"
    assert "note: kept the replaced rulesgen.yaml as rulesgen.yaml.bak.1\n" in second.stdout


# ---- 5. smaller items ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("labels, expected", [
    ("  namespace: x\n  pod: x\n", "rulesgen.yaml:3:3: error[bad-value]: labels.pod: 'x' is also labels.namespace: each "
                                   "role needs a label of its own (the rules would group and join by x twice, e.g. "
                                   "`group_left (x, x)`, and take the pod for the namespace)"),
    ("  pod: namespace\n", "rulesgen.yaml:2:3: error[bad-value]: labels.pod: 'namespace' is also labels.namespace (its "
                           "default)"),
    ("  cluster: Hostname\n", "rulesgen.yaml:2:3: error[bad-value]: labels.cluster: 'Hostname' is also labels.host (its "
                              "default)"),
    ("  host: gpu\n", "rulesgen.yaml:2:3: error[bad-value]: labels.host: 'gpu' is a label of the GPU's identity"),
    ("  host_sources: [Hostname, exported_pod]\n  pod: exported_pod\n",
     "rulesgen.yaml:2:3: error[bad-value]: labels.host_sources[1]: 'exported_pod' is labels.pod"),
])
def test_two_label_roles_on_one_label_are_refused_at_the_config_line(tmp_path, monkeypatch, labels, expected):
    from conftest import errors_of

    from rulesgen.load.settings import load_settings
    monkeypatch.chdir(tmp_path)
    Path("rulesgen.yaml").write_text("labels:\n" + labels)
    errors = errors_of(load_settings, Path("rulesgen.yaml"))
    assert len(errors) == 1 and errors[0].startswith(expected), errors


def test_a_price_per_gpu_hour_given_as_a_plain_number_is_the_price_of_every_model(tmp_path):
    from conftest import errors_of

    from rulesgen.load.settings import load_settings
    config = tmp_path / "rulesgen.yaml"
    for text, price in (("3", 3.0), ("2.5", 2.5)):
        config.write_text(f"dashboards:\n  price_per_gpu_hour: {text}\n")
        dashboards = load_settings(config).dashboards
        assert (dashboards.price_default, dashboards.prices) == (price, ())
    config.write_text("dashboards:\n  price_per_gpu_hour: cheap\n")
    assert errors_of(load_settings, config) == [
        f"{config}:2:3: error[bad-type]: dashboards.price_per_gpu_hour must be a number (per GPU-hour, every model) or "
        "a mapping (default, models), got 'cheap'"]
    config.write_text("dashboards:\n  price_per_gpu_hour: -1\n")
    assert "must be at least 0" in errors_of(load_settings, config)[0]


# vmalert -replay against a server that is not there: five retries and a fatal line, each with the whole
# URL-encoded query (kilobytes), as vmalert 1.145 logs them
FAKE_VMALERT = """\
import sys
query = "query=" + "%28label_replace%28quantile_over_time%280.5%2C+" * 120
url = f"http://127.0.0.1:1/api/v1/query_range?end=2026-11-27T23%3A00%3A01Z&nocache=1&{query}&start=2026-11-27T00%3A00%3A00Z&step=3600s"
cause = f'error getting response from {url}": dial tcp4 127.0.0.1:1: connect: connection refused'
for i in range(1, 6):
    print(f'2026-11-28T23:08:5{i}.119Z\\terror\\tVictoriaMetrics/app/vmalert/rule/rule.go:129\\tattempt {i} to execute '
          f'rule "gpu:dcgm_baseline:value_30m_hourly" failed: {cause}', file=sys.stderr)
print(f'2026-11-28T23:09:02.126Z\\tfatal\\tVictoriaMetrics/app/vmalert/rule/group.go:631\\trule '
      f'"gpu:dcgm_baseline:value_30m_hourly": {cause}', file=sys.stderr)
sys.exit(255)
"""


def test_backfill_victoriametrics_against_an_unreachable_server_says_so_briefly(tmp_path):
    vmalert = _script(tmp_path / "vmalert", FAKE_VMALERT)
    result = run_cli("backfill", "victoriametrics", "--url", "http://127.0.0.1:1", "--days", "1", cwd=tmp_path,
                     env={**os.environ, "RULESGEN_VMALERT": vmalert})
    assert result.returncode == 1
    assert len(result.stderr) < 1200, result.stderr
    assert result.stderr.startswith("error: vmalert replay of backfill-hourly.yaml failed (exit 255): vmalert could not "
                                    "reach http://127.0.0.1:1: is --url right, and the server up?\n")
    assert ('error: 5 attempts to execute rule "gpu:dcgm_baseline:value_30m_hourly" failed: error getting response from '
            "http://127.0.0.1:1/api/v1/query_range?end=2026-11-27T23%3A00%3A01Z&start=2026-11-27T00%3A00%3A00Z"
            '&step=3600s&query=...": dial tcp4 127.0.0.1:1: connect: connection refused\n') in result.stderr
    assert "label_replace" not in result.stderr and "quantile_over_time" not in result.stderr


def test_replay_plot_without_matplotlib_fails_before_replaying(tmp_path, monkeypatch):
    from conftest import ROOT
    marker = tmp_path / "promtool-ran"
    promtool = _script(tmp_path / "promtool", f"open({str(marker)!r}, 'w').write('ran')\n")
    monkeypatch.setenv("RULESGEN_PROMTOOL", promtool)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    png = tmp_path / "out.png"
    result = run_cli("replay", str(ROOT / "fixtures/scenarios/gpu-lost-hard-loss-60s.yaml"), "--plot", str(png))
    assert result.returncode == 1
    assert result.stderr.startswith("error: --plot needs matplotlib, which is not installed: pip install "
                                    "'dcgm-rulesgen[plot]'"), result.stderr
    assert not marker.exists(), "the scenario was replayed before the missing matplotlib was noticed"
    assert not png.exists() and result.stdout == ""
