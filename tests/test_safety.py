"""Nothing destructive without a word, nonsense values refused at their line, and a render that is all
or none even when interrupted (issue 21 items 3 and 4). Each case runs the real `rulesgen` command in a
subprocess and checks its message, its exit code and which files it touched."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import conftest
from conftest import ROOT, edit, errors_of

from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.settings import Settings

COMMITTED = ROOT / "rulesgen.yaml"
PROMTOOL_NOTE = "note: promtool not found"


def without_promtool_note(stderr: str) -> str:
    """stderr without the line a machine without promtool adds to every render (PromQL then checked by
    promql-parser only): these tests are about the other messages, and run with or without engines."""
    return "".join(x for x in stderr.splitlines(keepends=True) if not x.startswith(PROMTOOL_NOTE))


def run_cli(*args, **kwargs):
    result = conftest.run_cli(*args, **kwargs)
    result.stderr = without_promtool_note(result.stderr)
    return result


def user_config(path: Path) -> Path:
    """The repository's config as a GitOps repository keeps it, its scenario tests among the outputs (this
    repository renders them where they run: outputs.scenario_tests is false)."""
    text = COMMITTED.read_text()
    assert "\n  scenario_tests: false\n" in text
    path.write_text(text.replace("\n  scenario_tests: false\n", "\n  scenario_tests: true\n"))
    return path
TMP_PREFIX = ".rulesgen-render-"  # rulesgen.artifacts.TMP_PREFIX (spelled out: the tests must also run on older code)
USAGE = "Usage: rulesgen render [OPTIONS]\nTry 'rulesgen render --help' for help.\n\nError: "


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def temporaries(folder: Path) -> list[str]:
    return [p.relative_to(folder).as_posix() for p in folder.rglob("*") if TMP_PREFIX in p.as_posix() or "rulesgen-tmp" in p.name]


@pytest.fixture
def scenarios(tmp_path):
    """One real scenario, so that tests/promtool/ and tests/vmalert/ are part of what is written."""
    d = tmp_path / "scenarios"
    d.mkdir()
    shutil.copy(ROOT / "fixtures/scenarios/thermal-throttling-cooling-failure.yaml", d)
    return d


@pytest.fixture
def repo(tmp_path, scenarios):
    """A GitOps folder rendered with the repository's config (8 PrometheusRule files among its outputs)."""
    d = tmp_path / "repo"
    d.mkdir()
    user_config(d / "rulesgen.yaml")
    result = run_cli("render", "--scenarios", str(scenarios), cwd=d)
    assert result.returncode == 0, result.stderr
    assert len(list((d / "deploy/prometheus-operator").glob("*.yaml"))) >= 8
    return d


# --- 1. the bad-input table: input, message, exit code, files touched ----------------------------------

def test_empty_config_is_an_error_not_a_render_of_the_defaults(repo, scenarios):
    before = tree(repo)
    (repo / "rulesgen.yaml").write_text("")
    result = run_cli("render", "--scenarios", str(scenarios), cwd=repo)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "rulesgen.yaml:1:1: error[empty-config]: rulesgen.yaml is empty: rendering it would mean every default (and "
        "remove the outputs it enabled); restore it (git checkout), or delete it and run with --defaults to render the defaults",
        "1 error(s); nothing written.",
    ]
    assert tree(repo) == {**before, "rulesgen.yaml": b""}


def test_a_config_of_comments_only_is_a_deliberate_choice_of_the_defaults(tmp_path):
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text("# every key at its default\n")
    from rulesgen.settings import load_settings
    assert load_settings(cfg).scrape_interval == Settings().scrape_interval


def test_render_without_a_config_is_a_usage_error_unless_defaults_is_asked_for(tmp_path):
    folder = tmp_path / "home"
    folder.mkdir()
    result = run_cli("render", cwd=folder)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (f"{USAGE}no ./rulesgen.yaml here ({folder}) and no --config: run `rulesgen init` to write one, "
                             "pass --config FILE, or --defaults to render the bundled defaults\n")
    assert tree(folder) == {}
    ok = run_cli("render", "--defaults", cwd=folder)
    assert ok.returncode == 0, ok.stderr
    assert (folder / "alerts/prometheus/health.yaml").is_file()


def test_defaults_beside_a_config_is_a_usage_error(repo):
    before = tree(repo)
    result = run_cli("render", "--defaults", cwd=repo)
    assert result.returncode == 2
    assert result.stderr == (f"{USAGE}--defaults: ./rulesgen.yaml exists and would be ignored; drop --defaults to render "
                             "with it, or delete it to render the defaults\n")
    assert tree(repo) == before


def test_a_typo_in_scenarios_is_a_usage_error_and_keeps_the_generated_tests(repo):
    before = tree(repo)
    assert any(p.startswith("tests/promtool/") for p in before)
    result = run_cli("render", "--scenarios", "scenaros", cwd=repo)
    assert result.returncode == 2
    assert result.stderr == (f"{USAGE}Invalid value for --scenarios: scenaros: no such folder (without it the generated "
                             "scenario tests in tests/promtool/ and tests/vmalert/ would be removed)\n")
    assert tree(repo) == before


def test_no_scenarios_folder_at_all_is_said_on_stderr(tmp_path):
    folder = tmp_path / "repo"
    folder.mkdir()
    user_config(folder / "rulesgen.yaml")
    result = run_cli("render", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "warning: no scenarios folder (fixtures/scenarios, scenarios): tests/promtool/ and tests/vmalert/ get no tests "
        "(generated ones there are removed); pass --scenarios DIR"]


def scenario_tests_off(repo: Path) -> None:
    config = repo / "rulesgen.yaml"
    config.write_text(config.read_text().replace("\n  scenario_tests: true\n", "\n  scenario_tests: false\n"))


def test_scenario_tests_turned_off_are_removed_by_name_and_not_warned_about(repo, scenarios):
    """outputs.scenario_tests: false (as in this repository): render lists the generated tests it removes;
    no scenarios folder is then no warning; --scenario-tests plans them again for one command."""
    tests = sorted(p for p in tree(repo) if p.startswith(("tests/promtool/", "tests/vmalert/")))
    assert "tests/promtool/thermal-throttling-cooling-failure.yaml" in tests
    scenario_tests_off(repo)
    result = run_cli("render", "--scenarios", str(scenarios), cwd=repo)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert [f"  {p} (removed)" for p in tests] == sorted(x for x in result.stdout.splitlines() if x.startswith("  tests/"))
    assert not [p for p in tree(repo) if p.startswith("tests/")]
    assert run_cli("check", "--scenarios", str(scenarios), cwd=repo).returncode == 0
    stale = run_cli("check", "--scenarios", str(scenarios), "--scenario-tests", cwd=repo)
    assert stale.returncode == 1 and "tests/promtool/thermal-throttling-cooling-failure.yaml: missing" in stale.stderr
    no_folder = run_cli("render", cwd=repo)  # no fixtures/scenarios nor scenarios/ here
    assert (no_folder.returncode, no_folder.stderr) == (0, "")


def test_rulesgen_test_runs_scenario_tests_that_are_not_outputs_in_a_temporary_folder(repo, scenarios, promtool):
    scenario_tests_off(repo)
    assert run_cli("render", "--scenarios", str(scenarios), cwd=repo).returncode == 0
    before = tree(repo)
    env = {**os.environ, "PATH": f"{Path(promtool).parent}{os.pathsep}{os.environ['PATH']}"}
    result = run_cli("test", "--scenarios", str(scenarios), cwd=repo, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
    assert tree(repo) == before


def test_a_scenario_tests_value_that_is_not_a_boolean_names_the_key(repo, scenarios):
    before = tree(repo)
    (repo / "rulesgen.yaml").write_text("outputs:\n  scenario_tests: sometimes\n")
    result = run_cli("render", "--scenarios", str(scenarios), cwd=repo)
    assert (result.returncode, result.stderr) == (1, "rulesgen.yaml:2:3: error[bad-type]: outputs.scenario_tests must be "
                                                     "true or false, got 'sometimes'\n1 error(s); nothing written.\n")
    assert tree(repo) == {**before, "rulesgen.yaml": b"outputs:\n  scenario_tests: sometimes\n"}


def test_render_into_a_folder_of_other_files_is_a_usage_error(tmp_path, scenarios):
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine\n")
    config = user_config(tmp_path / "rulesgen.yaml")
    result = run_cli("render", "--config", str(config), "--scenarios", str(scenarios), "--out", str(home), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"{USAGE}--out {home}: this folder holds other files, no rulesgen.yaml and no earlier "
                                    f"render; rendering would write ")
    assert result.stderr.endswith(f"files into it (alerts/, dashboards/, tests/ ...): render into an empty folder, or run "
                                  f"`rulesgen init {home}` first\n")
    assert tree(home) == {"notes.txt": b"mine\n"}


def test_links_left_at_their_defaults_are_said_on_stderr(tmp_path, scenarios):
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "rulesgen.yaml").write_text("profiling: true\n")
    result = run_cli("render", "--scenarios", str(scenarios), cwd=folder)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "warning: rulesgen.yaml: urls.runbook_base is not set: every alert's runbook_url points at this project's own "
        "runbooks (https://github.com/rulesgen/rulesgen/blob/main/runbooks/); set urls.runbook_base in rulesgen.yaml",
        "warning: rulesgen.yaml: urls.grafana_base is not set: every alert's dashboard_url points at an example host "
        "(http://grafana.example.com); set urls.grafana_base in rulesgen.yaml",
    ]
    (folder / "rulesgen.yaml").write_text("urls:\n  runbook_base: https://git.example.org/gpu/runbooks/\n"
                                          "  grafana_base: https://grafana.corp.example\n")
    again = run_cli("render", "--scenarios", str(scenarios), cwd=folder)
    assert (again.returncode, again.stderr) == (0, "")


def test_the_repository_render_says_nothing_on_stderr():
    """`make render` here: the repository's rulesgen.yaml names its links and fixtures/scenarios exists."""
    with tempfile.TemporaryDirectory() as out:
        result = run_cli("render", "--out", out)
        assert (result.returncode, result.stderr) == (0, "")


def test_overrides_out_of_their_range_name_the_key_and_the_range(repo, scenarios):
    before = tree(repo)
    (repo / "rulesgen.yaml").write_text("""\
failure_modes:
  ecc_correctable_rate:
    thresholds: {per_minute: -5}
  straggler:
    for: 0s
    thresholds: {clock_ratio: 5}
""")
    result = run_cli("render", "--scenarios", str(scenarios), cwd=repo)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "rulesgen.yaml:3:18: error[out-of-range]: failure_modes.ecc_correctable_rate.thresholds.per_minute: -5 is out of "
        "range [0, inf) (errors/min; catalog value 10)",
        "rulesgen.yaml:5:5: error[out-of-range]: failure_modes.straggler.for: 0s is out of range (0s, inf): straggler needs "
        "a hold (catalog: 5m), or one bad sample pages someone",
        "rulesgen.yaml:6:18: error[out-of-range]: failure_modes.straggler.thresholds.clock_ratio: 5 is out of range [0, 1] "
        "(ratio; catalog value 0.8)",
        "3 error(s); nothing written.",
    ]
    assert tree(repo) == {**before, "rulesgen.yaml": (repo / "rulesgen.yaml").read_bytes()}


def test_extra_labels_may_not_name_a_label_the_alerts_set(repo, scenarios):
    before = tree(repo)
    (repo / "rulesgen.yaml").write_text("extra_labels:\n  team: gpu\n  severity: low\n  cluster: prod\n")
    result = run_cli("render", "--scenarios", str(scenarios), cwd=repo)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "rulesgen.yaml:3:3: error[contract-label]: extra_labels.severity: every alert sets 'severity' itself (so do "
        "failure_mode, action, cluster, Hostname, gpu, UUID, modelName, namespace, pod); change a failure mode's with "
        "failure_modes.<id>.severity",
        "rulesgen.yaml:4:3: error[contract-label]: extra_labels.cluster: every alert sets 'cluster' itself (so do "
        "severity, failure_mode, action, Hostname, gpu, UUID, modelName, namespace, pod); choose another label name",
        "2 error(s); nothing written.",
    ]
    assert tree(repo) == {**before, "rulesgen.yaml": (repo / "rulesgen.yaml").read_bytes()}


def test_a_scrape_interval_the_windows_do_not_support_is_an_error_at_render(repo, scenarios):
    before = tree(repo)
    (repo / "rulesgen.yaml").write_text("profiling: true\nscrape_interval: 5m\n")
    result = run_cli("render", "--scenarios", str(scenarios), cwd=repo)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "rulesgen.yaml:2:1: error[out-of-range]: scrape_interval 5m is above what the rules support: "
        "gpu:dcgm_clock_event_thermal:active reads a [5m] rate window, which needs 4 scrapes, so scrape_interval must "
        "be at most 1m15s",
        "1 error(s); nothing written.",
    ]
    assert tree(repo) == {**before, "rulesgen.yaml": (repo / "rulesgen.yaml").read_bytes()}


def test_the_largest_accepted_scrape_interval_renders_rules_lint_accepts(tmp_path):
    (tmp_path / "rulesgen.yaml").write_text("scrape_interval: 75s\nurls: {runbook_base: 'https://x.example/', "
                                            "grafana_base: 'https://g.example'}\n")
    (tmp_path / "scenarios").mkdir()
    assert run_cli("render", cwd=tmp_path).returncode == 0
    lint = run_cli("lint", cwd=tmp_path)
    assert lint.returncode == 0, lint.stdout
    (tmp_path / "rulesgen.yaml").write_text("scrape_interval: 76s\n")
    assert run_cli("lint", cwd=tmp_path).returncode == 1  # the limit is lint's own
    assert run_cli("render", cwd=tmp_path).returncode == 1


# --- 2. the catalog carries each threshold's range --------------------------------------------------

def test_every_threshold_of_the_bundled_catalog_has_a_range_its_value_is_in():
    catalog = load_catalog(bundled_catalog_dir())
    thresholds = [(m.id, t) for m in catalog.failure_modes for t in m.thresholds]
    assert len(thresholds) > 50
    for fm_id, t in thresholds:
        assert str(t.range) != "(-inf, inf)", (fm_id, t.name)
        assert t.value in t.range
    by_name = {(m, t.name): str(t.range) for m, t in thresholds}
    assert by_name[("ecc_correctable_rate", "per_minute")] == "[0, inf)"
    assert by_name[("straggler", "clock_ratio")] == "[0, 1]"
    assert by_name[("ecc_uncorrectable", "errors")] == "[0, inf)"
    assert by_name[("loss_divergence", "ratio")] == "(1, inf)"


def test_catalog_threshold_outside_its_range_or_without_one_and_a_zero_for_are_load_errors(minimal_catalog):
    fm = minimal_catalog / "failure_modes.yaml"
    edit(fm, "        value: 85\n", "        value: 185\n")
    edit(fm, "for: 5m", "for: 0s")
    f = str(fm)
    assert errors_of(load_catalog, minimal_catalog) == [
        f"{f}:12:9: error[out-of-range]: failure mode hot_gpu threshold celsius: 185 is out of its range [0, 150]",
        f"{f}:19:9: error[out-of-range]: failure mode hot_gpu alert.for must be above 0s: one bad sample would page someone",
    ]
    edit(fm, '        range: "[0, 150]"\n', '        range: "0 to 150"\n')
    assert errors_of(load_catalog, minimal_catalog)[0] == (
        f"{f}:14:9: error[bad-value]: failure mode hot_gpu threshold celsius: range '0 to 150' is not an interval like "
        "[0, 1], [0, inf) or (1, inf)")
    edit(fm, '        range: "0 to 150"\n', "")
    assert errors_of(load_catalog, minimal_catalog)[0] == (
        f"{f}:11:9: error[missing-key]: failure mode hot_gpu threshold: missing required key 'range'")


# --- 3. all or none, even interrupted ------------------------------------------------------------------

INTERRUPT = """\
import os, pathlib, signal, sys
phase, k, sig = os.environ["AT"], int(os.environ["K"]), getattr(signal, os.environ["SIG"])
count = 0
def step():
    global count
    count += 1
    if count == k:
        os.kill(os.getpid(), sig)  # delivered now, or held back until the commit is done
if phase == "rename":  # the k-th rename of the commit phase (patched before rulesgen binds os.replace)
    real = os.replace
    def counted(src, dst):
        real(src, dst)
        step()
    os.replace = counted
else:  # the k-th file written as a temporary
    def counting(write):
        def counted_write(self, data, *args, **kwargs):
            n = write(self, data, *args, **kwargs)
            if self.parent.name.startswith(".rulesgen-render-") or self.name.endswith(".rulesgen-tmp"):
                step()
            return n
        return counted_write
    pathlib.Path.write_bytes = counting(pathlib.Path.write_bytes)
    pathlib.Path.write_text = counting(pathlib.Path.write_text)
from rulesgen.cli import main
sys.argv = ["rulesgen", *sys.argv[1:]]
main()
"""


def _interrupted(folder: Path, args: list[str], at: str, k: int, sig: str = "SIGINT", script: str = INTERRUPT):
    env = {**os.environ, "AT": at, "K": str(k), "SIG": sig}
    result = subprocess.run([sys.executable, "-c", script, "render", *args], cwd=folder,
                            env=env, capture_output=True, text=True, timeout=300)
    result.stderr = without_promtool_note(result.stderr)
    return result


NEW_CONFIG = """\
urls: {runbook_base: "https://git.example.org/gpu/runbooks/", grafana_base: "https://grafana.corp.example"}
extra_labels: {team: gpu-platform}
outputs:
  vmrule: {enabled: true}
"""


def _two_renders(repo: Path, args: list[str], tmp_path: Path):
    """(old tree, new tree) of `render ARGS` in repo with its config, then with NEW_CONFIG: the new config
    changes every rule file and drops the PrometheusRule, dashboard ConfigMap and GrafanaDashboard outputs
    (their stale files are removed). repo is left with the old tree and the new config."""
    old = tree(repo)
    new_dir = tmp_path / "new"
    shutil.copytree(repo, new_dir)
    (new_dir / "rulesgen.yaml").write_text(NEW_CONFIG)
    result = run_cli("render", *args, cwd=new_dir)
    assert result.returncode == 0, result.stderr
    new = tree(new_dir)
    assert any(p.startswith("deploy/prometheus-operator/") for p in old)
    assert not any(p.startswith("deploy/prometheus-operator/") for p in new)
    (repo / "rulesgen.yaml").write_text(NEW_CONFIG)
    return {**old, "rulesgen.yaml": NEW_CONFIG.encode()}, new


@pytest.fixture
def old_and_new(repo, scenarios, tmp_path):
    """The bundled catalog with a scenario: (folder, old tree, new tree, render arguments)."""
    args = ["--scenarios", str(scenarios)]
    return (repo, *_two_renders(repo, args, tmp_path), args)


@pytest.fixture
def small_old_and_new(minimal_catalog, tmp_path):
    """The same on the one-mode test catalog (a render in a second: every commit step can be interrupted)."""
    repo = tmp_path / "small"
    repo.mkdir()
    user_config(repo / "rulesgen.yaml")
    (tmp_path / "no-scenarios").mkdir()
    args = ["--catalog", str(minimal_catalog), "--scenarios", str(tmp_path / "no-scenarios")]
    assert run_cli("render", *args, cwd=repo).returncode == 0
    return (repo, *_two_renders(repo, args, tmp_path), args)


def _commit_steps(repo: Path, old: dict, new: dict) -> int:
    changed = {p for p in new if old.get(p) != new[p]}
    removed = {p for p in old if p not in new}
    return len(changed) + len(removed)


def _reset(repo: Path, old: dict) -> None:
    shutil.rmtree(repo)
    for rel, data in old.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)


def _check_interrupted_commit(repo, old, new, args, k, sig, code):
    steps = _commit_steps(repo, old, new)
    _reset(repo, old)
    result = _interrupted(repo, args, "rename", k, sig)
    assert result.returncode == code, (k, result.stderr)
    assert result.stderr.splitlines()[-1] == (
        f"rulesgen: interrupted by {sig}; the render had finished: {steps} file(s) changed in ."), k
    assert tree(repo) == new, f"interrupted after rename {k} of {steps}: not the new tree"
    assert temporaries(repo) == [], k


def test_ctrl_c_after_every_rename_of_the_commit_phase_leaves_the_new_tree_and_no_temporary(small_old_and_new):
    repo, old, new, args = small_old_and_new
    steps = _commit_steps(repo, old, new)
    assert steps > 20
    for k in range(1, steps + 1):
        _check_interrupted_commit(repo, old, new, args, k, "SIGINT", 130)


@pytest.mark.parametrize("sig,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_an_interrupted_render_of_the_bundled_catalog_is_all_new(old_and_new, sig, code):
    repo, old, new, args = old_and_new
    steps = _commit_steps(repo, old, new)
    assert any(p.startswith("tests/promtool/") for p in new) and steps > 40
    for k in (1, steps // 2, steps):
        _check_interrupted_commit(repo, old, new, args, k, sig, code)


def test_an_interrupt_while_the_new_files_are_written_leaves_the_old_tree_and_no_temporary(old_and_new):
    repo, old, new, args = old_and_new
    written = len({p for p in new if old.get(p) != new[p]})
    for k in (1, 2, written):
        _reset(repo, old)
        result = _interrupted(repo, args, "stage", k)
        assert result.returncode == 130, result.stderr
        assert result.stderr.splitlines() == ["rulesgen: interrupted by SIGINT; nothing written into ."]
        assert tree(repo) == old
        assert temporaries(repo) == []


def test_ctrl_c_before_the_render_writes_exits_130_with_one_line(tmp_path):
    script = ("import os, signal, sys\nimport rulesgen.artifacts as arts\nfrom rulesgen.cli import main\n"
              "def plan(*a, **k):\n    os.kill(os.getpid(), signal.SIGINT)\n"
              "arts.plan = plan\nsys.argv = ['rulesgen', 'render', '--defaults']\nmain()\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr) == (130, "rulesgen: interrupted by SIGINT\n")
    assert tree(tmp_path) == {}


def test_ctrl_c_while_the_modules_load_exits_130_with_one_line(tmp_path):
    script = ("import os, signal, sys\n"
              "class Hook:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name == 'rulesgen.cli.replay':\n"
              "            os.kill(os.getpid(), signal.SIGINT)\n"
              "        return None\n"
              "sys.meta_path.insert(0, Hook())\n"
              "from rulesgen.cli import main\n"
              "print('not interrupted')\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "rulesgen: interrupted by SIGINT\n")


def test_a_failed_rename_mid_commit_undoes_every_step(small_old_and_new):
    repo, old, new, args = small_old_and_new
    script = INTERRUPT.replace("        os.kill(os.getpid(), sig)  # delivered now, or held back until the commit is done",
                               "        raise PermissionError(13, 'Permission denied', str(dst_of[0]))")
    script = script.replace("        real(src, dst)\n        step()", "        dst_of[:] = [dst]\n        step()\n        real(src, dst)")
    assert "dst_of[:] = [dst]" in script
    script = script.replace("count = 0\n", "count = 0\ndst_of = [None]\n")
    steps = _commit_steps(repo, old, new)
    for k in (1, steps // 2, steps):
        _reset(repo, old)
        result = _interrupted(repo, args, "rename", k, script=script)
        assert result.returncode == 1, result.stderr
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(f"error: cannot write into {repo}"), result.stderr
        assert result.stderr.endswith(": Permission denied; nothing written\n")
        assert tree(repo) == old, k
        assert temporaries(repo) == []


def test_a_temporary_folder_a_kill_9_leaves_behind_is_ignored_by_git(small_old_and_new):
    """SIGKILL cannot be caught: the temporary folder survives, but it ignores itself (its own .gitignore)."""
    repo, old, new, args = small_old_and_new
    git = shutil.which("git")
    assert git, "git is not on PATH (apt-get install git)"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "old"]):
        subprocess.run([git, *cmd], cwd=repo, env=env, check=True, capture_output=True)
    result = _interrupted(repo, args, "rename", 3, "SIGKILL")
    assert result.returncode == -signal.SIGKILL
    assert [p.name for p in repo.iterdir() if p.name.startswith(TMP_PREFIX)], "expected a leftover temporary folder"
    subprocess.run([git, "add", "-A"], cwd=repo, env=env, check=True)
    staged = subprocess.run([git, "diff", "--cached", "--name-only"], cwd=repo, capture_output=True, text=True).stdout.split()
    assert staged and not [p for p in staged if TMP_PREFIX in p or "rulesgen-tmp" in p]


def test_an_unwritable_output_folder_is_one_line_naming_it(tmp_path, scenarios):
    """Read-only for the user running rulesgen (root ignores permissions: then the render runs as nobody)."""
    top = Path(tempfile.mkdtemp(prefix="rulesgen-ro-"))
    try:
        os.chmod(top, 0o755)
        folder = top / "repo"
        folder.mkdir()
        user_config(folder / "rulesgen.yaml")
        scen = top / "scenarios"
        shutil.copytree(scenarios, scen)
        for p in (top, folder, scen, *scen.iterdir(), folder / "rulesgen.yaml"):
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        os.chmod(folder, 0o555)
        exe = Path(sys.executable).with_name("rulesgen")
        cmd = [str(exe), "render", "--scenarios", str(scen)]
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv: cannot make a folder unwritable")
            cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        result = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=300)
        assert (result.returncode, result.stdout) == (1, "")
        assert without_promtool_note(result.stderr) == f"error: cannot write into {folder}: Permission denied; nothing written\n"
        assert sorted(p.name for p in folder.iterdir()) == ["rulesgen.yaml"]
    finally:
        os.chmod(top / "repo", 0o755)
        shutil.rmtree(top)


def test_a_target_folder_on_another_filesystem_gets_its_own_temporary_folder(tmp_path):
    """A rename is atomic only within one filesystem: dashboards/ symlinked to tmpfs is written through a
    temporary folder there, and none is left on either side."""
    from rulesgen.artifacts import write_all
    from rulesgen.output import Artifact
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem at /dev/shm")
    other = Path(tempfile.mkdtemp(dir=shm))
    try:
        (tmp_path / "dashboards").symlink_to(other)
        arts = [Artifact("alerts/prometheus/a.yaml", "# Generated by rulesgen\na: 1\n"),
                Artifact("dashboards/b.json", '{"b": 1}\n')]
        assert write_all(tmp_path, arts) == ["alerts/prometheus/a.yaml", "dashboards/b.json"]
        assert (other / "b.json").read_text() == '{"b": 1}\n'
        assert temporaries(tmp_path) == [] and [p.name for p in other.iterdir()] == ["b.json"]
    finally:
        shutil.rmtree(other)
