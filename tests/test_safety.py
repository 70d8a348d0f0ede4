"""Nothing destructive without a word, and nonsense values refused at their line (issue 21 item 3). Each
case runs the real `rulesgen` command in a subprocess and checks its message, its exit code and which
files it touched (tests/gitops.py); tests/test_interrupts.py holds the all-or-none half."""
import os
import shutil
import tempfile
from pathlib import Path

from conftest import ROOT, edit, errors_of
from gitops import USAGE, run_cli, set_scenario_tests, tree, user_config

from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.load.settings import Settings, load_settings

pytest_plugins = ["gitops"]  # its fixtures: scenarios, repo

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
    from rulesgen.load.settings import load_settings
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
    set_scenario_tests(repo / "rulesgen.yaml", False)


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


def test_rulesgen_test_runs_scenario_tests_that_are_not_outputs_in_a_temporary_folder(repo, scenarios, promtool, tmp_path):
    scenario_tests_off(repo)
    assert run_cli("render", "--scenarios", str(scenarios), cwd=repo).returncode == 0
    before = tree(repo)
    short = tmp_path / "short"  # an hour at 60 s: the replay's cost is rules x steps
    short.mkdir()
    shutil.copy(ROOT / "fixtures/scenarios/gpu-lost-hard-loss-60s.yaml", short)
    env = {**os.environ, "PATH": f"{Path(promtool).parent}{os.pathsep}{os.environ['PATH']}"}
    result = run_cli("test", "--scenarios", str(short), cwd=repo, env=env)
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
        "rank:training_step:seconds reads a [5m] rate window, which needs 4 scrapes, so scrape_interval must "
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


def test_a_label_name_prometheus_reserves_is_a_config_error(tmp_path):
    """labels.cluster: __name__ once rendered a dashboard query that does not parse (found by
    test_properties, seed 742277): names starting with __ are Prometheus' own."""
    config = tmp_path / "rulesgen.yaml"
    config.write_text("labels:\n  cluster: __name__\n")
    errors = errors_of(load_settings, config)
    assert len(errors) == 1 and errors[0].startswith(f"{config}:2:3: error[bad-value]: labels.cluster: "), errors
