"""The adoption path and the repository `rulesgen init` makes, as a team uses it: the generated config
tells the truth about the defaults, CI runs check/lint/amtool/promtool with a pinned rulesgen and
verified downloads, a subdirectory gets a workflow GitHub runs, scenarios that match no selector are
named; exporter/ serves GPU Operator users; `rulesgen list` and the rules themselves say when the
exporter's counters leave a failure mode blind."""
import dataclasses
import hashlib
import io
import platform
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import batches
import live_rules
import pytest
import yaml
from conftest import ROOT, run_cli
from treeasserts import has

from rulesgen import lock
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.load.config_template import config_template, uncomment
from rulesgen.load.resolved import check_against_catalog
from rulesgen.load.settings import Settings, load_settings
from rulesgen.promql import tree as promql_tree

CATALOG = load_catalog(bundled_catalog_dir())


def _init(path: Path, *args):
    result = run_cli("init", str(path), *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


# ---- rulesgen.yaml: generated from the defaults ----------------------------------------------------------

def test_generated_config_uncommented_is_exactly_the_defaults(tmp_path):
    text = config_template(CATALOG)
    config = tmp_path / "rulesgen.yaml"
    config.write_text(uncomment(text))
    settings = load_settings(config)
    check_against_catalog(settings, CATALOG)
    defaults = Settings()
    for f in dataclasses.fields(Settings):
        if f.name not in ("source", "where_of_mode", "where_of_key", "given_urls", "sharding_unused", "failure_modes"):
            assert getattr(settings, f.name) == getattr(defaults, f.name), f.name
    modes = dict(settings.failure_modes)
    for fm in CATALOG.failure_modes:
        shown = modes[fm.id]
        assert dict(shown.thresholds) == {t.name: t.value for t in fm.thresholds}, fm.id
        fors = {a.for_seconds for a in fm.alerts}
        assert shown.for_seconds == (fors.pop() if len(fors) == 1 else None), fm.id
        assert shown.enabled is None  # `enabled: true` would override a disabled group: not a default
    # the values the user found lying (issue 21): catalog values, not the old template's
    assert modes["ecc_correctable_rate"].thresholds == tuple((t.name, t.value) for t in
                                                              CATALOG.failure_mode("ecc_correctable_rate").thresholds)
    assert "\n# dashboards:\n" in text and "#     default: 2\n" in text


def test_init_writes_the_generated_config(tmp_path):
    _init(tmp_path / "repo")
    assert (tmp_path / "repo" / "rulesgen.yaml").read_text() == config_template(CATALOG)


# ---- the generated Makefile and workflow ---------------------------------------------------------------

def _targets(makefile: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^([a-z][a-z0-9-]*):", makefile, re.M)}


def test_every_make_target_a_hint_names_exists_in_the_generated_makefile(tmp_path):
    repo = tmp_path / "repo"
    out = _init(repo).stdout
    targets = _targets((repo / "Makefile").read_text())
    hints = [out, (repo / ".github/workflows/gpu-rules.yaml").read_text(), (repo / "Makefile").read_text()]
    hints += [p.read_text() for p in (ROOT / "rulesgen").rglob("*.py")]  # e.g. "promtool not found ... `make tools`"
    named = {t for text in hints for t in re.findall(r"`make ([a-z][a-z0-9-]*)", text)}
    named |= {t for t in re.findall(r"run: make ([a-z][a-z0-9-]*)", hints[1])}
    assert {"tools", "check", "lint", "test", "render"} <= named
    assert named - targets == set(), f"hints name make targets the generated Makefile lacks: {named - targets}"


def test_workflow_runs_check_lint_amtool_promtool_with_the_pinned_rulesgen(tmp_path):
    repo = tmp_path / "repo"
    _init(repo)
    flow = yaml.safe_load((repo / ".github/workflows/gpu-rules.yaml").read_text())
    runs = [s["run"] for job in flow["jobs"].values() for s in job["steps"] if "run" in s]
    assert "python -m pip install --disable-pip-version-check -r rulesgen.lock" in runs
    for cmd in ("make check", "make lint", "make tools", "make test", "make check-alertmanager", "make test-vmalert"):
        assert cmd in runs, cmd
    assert flow["defaults"]["run"]["working-directory"] == "."
    makefile = (repo / "Makefile").read_text()
    assert "$(RULESGEN) check --scenarios scenarios" in makefile and "$(RULESGEN) lint" in makefile
    assert "$(AMTOOL) check-config alertmanager/rulesgen.yaml" in makefile
    assert "| tar" not in makefile and "| tar" not in (repo / ".github/workflows/gpu-rules.yaml").read_text()


def test_init_in_a_subdirectory_writes_the_workflow_at_the_git_root(tmp_path):
    root = tmp_path / "gitops"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    sub = root / "clusters" / "prod" / "gpu"
    out = _init(sub).stdout
    assert not (sub / ".github").exists(), "GitHub never runs a workflow below the repository root"
    flow_path = root / ".github" / "workflows" / "gpu-rules-clusters-prod-gpu.yaml"
    flow = yaml.safe_load(flow_path.read_text())
    assert flow["defaults"]["run"]["working-directory"] == "clusters/prod/gpu"
    assert "hashFiles('clusters/prod/gpu/tests/vmalert/*.yaml')" in flow_path.read_text()
    assert "gpu-rules-clusters-prod-gpu.yaml" in out and "working in clusters/prod/gpu/" in out
    assert (sub / "Makefile").is_file() and (sub / "rulesgen.lock").is_file()


def test_init_prints_the_adoption_steps_in_order(tmp_path):
    out = _init(tmp_path / "repo").stdout
    steps = [out.index(f"  {i}. ") for i in (1, 2, 3, 4)]
    assert steps == sorted(steps)
    tail = out[steps[0]:]
    assert tail.index("exporter/") < tail.index("PrometheusRule") < tail.index("alertmanager/rulesgen.yaml") \
        < tail.index("dashboards")
    assert "gpu-operator-clusterpolicy-patch.yaml" in tail
    # step 1 names the same blind modes `rulesgen list` marks (both from the catalog's default_enabled)
    listing = run_cli("list").stdout.split("METRICS")[0]
    marked = [line.split()[0] for line in listing.splitlines() if "needs opt-in counters (exporter/)" in line]
    assert f"default counters leave {', '.join(marked)} blind" in tail


# ---- make tools: every download checked against its release's sums ---------------------------------------

def _os_arch():
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
    return platform.system().lower(), arch


def _tarball(path: Path, members: dict[str, str]):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))


def _fake_releases(base: Path, os_, arch, versions):
    """Release directories laid out as GitHub serves them, each binary a script printing its name."""
    script = "#!/bin/sh\necho {}\n"
    prom, am, vm = versions
    assets = {
        ("prometheus", f"v{prom}"): (f"prometheus-{prom}.{os_}-{arch}.tar.gz",
                                     {f"prometheus-{prom}.{os_}-{arch}/promtool": script.format("promtool")}, "sha256sums.txt"),
        ("alertmanager", f"v{am}"): (f"alertmanager-{am}.{os_}-{arch}.tar.gz",
                                     {f"alertmanager-{am}.{os_}-{arch}/amtool": script.format("amtool")}, "sha256sums.txt"),
        ("vm", f"v{vm}"): (f"vmutils-{os_}-{arch}-v{vm}.tar.gz", {"vmalert-tool-prod": script.format("vmalert-tool"),
                                                                "vmalert-prod": script.format("vmalert")},
                           f"vmutils-{os_}-{arch}-v{vm}_checksums.txt"),
    }
    out = {}
    for (project, tag), (asset, members, sums) in assets.items():
        d = base / project / tag
        d.mkdir(parents=True)
        _tarball(d / asset, members)
        digest = hashlib.sha256((d / asset).read_bytes()).hexdigest()
        (d / sums).write_text(f"{'0' * 64}  other-asset.tar.gz\n{digest}  {asset}\n")
        out[project] = (d, asset, sums)
    return out


def test_make_tools_installs_only_what_the_published_sums_vouch_for(tmp_path):
    missing = [t for t in ("make", "curl", "tar", "sha256sum") if not shutil.which(t)]
    assert not missing, f"the generated `make tools` needs {', '.join(missing)} on PATH"
    repo = tmp_path / "repo"
    _init(repo)
    os_, arch = _os_arch()
    versions = ("3.5.0", "0.28.1", "1.145.0")
    rel = _fake_releases(tmp_path / "releases", os_, arch, versions)
    urls = [f"PROMETHEUS_RELEASES=file://{tmp_path}/releases/prometheus",
            f"ALERTMANAGER_RELEASES=file://{tmp_path}/releases/alertmanager",
            f"VICTORIAMETRICS_RELEASES=file://{tmp_path}/releases/vm"]

    def make(*args):
        return subprocess.run(["make", *args, *urls], cwd=repo, capture_output=True, text=True, timeout=120)

    ok = make("tools")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # every engine a rulesgen command in the repository runs (`rulesgen backfill victoriametrics`: vmalert), as the
    # "not found: run `make tools`" hint promises (rulesgen/engines/tools.py)
    for name in ("promtool", "amtool", "vmalert-tool", "vmalert"):
        assert (repo / ".tools" / "bin" / name).is_file(), name
    shutil.rmtree(repo / ".tools")
    # a tampered tarball: its sha256 no longer matches the published one
    for project, target in (("prometheus", "tools-promtool"), ("alertmanager", "tools-amtool"), ("vm", "tools-vmalert-tool")):
        d, asset, sums = rel[project]
        good = (d / asset).read_bytes()
        (d / asset).write_bytes(good + b"\0")
        bad = make(target)
        assert bad.returncode != 0 and "FAILED" in bad.stdout + bad.stderr, (target, bad.stdout, bad.stderr)
        assert not list((repo / ".tools" / "bin").glob("*")), f"{target} installed an unverified binary"
        # a sums file that does not list the asset at all
        (d / asset).write_bytes(good)
        text = (d / sums).read_text()
        (d / sums).write_text("\n".join(line for line in text.splitlines() if asset not in line) + "\n")
        missing = make(target)
        assert missing.returncode != 0 and f"lists no sha256 for {asset}" in missing.stderr, (target, missing.stderr)
        (d / sums).write_text(text)


# ---- rulesgen.lock ---------------------------------------------------------------------------------------

def test_lock_pins_the_installed_rulesgen_and_check_fails_under_another(tmp_path):
    repo = tmp_path / "repo"
    _init(repo)
    name, version = lock.installed()
    assert f"\n{name}=={version}\n" in (repo / "rulesgen.lock").read_text()
    assert lock.pinned(repo) == (name, version)
    assert run_cli("render", cwd=repo).returncode == 0
    assert run_cli("check", cwd=repo).returncode == 0
    (repo / "rulesgen.lock").write_text(f"{name}==0.0.1\n")
    check = run_cli("check", cwd=repo)
    assert check.returncode == 1
    assert f"rulesgen.lock pins {name}==0.0.1 but {name}=={version} is installed" in check.stderr
    render = run_cli("render", cwd=repo)
    assert render.returncode == 0 and "warning: rulesgen.lock pinned" in render.stderr
    assert lock.pinned(repo) == (name, version)
    assert run_cli("check", cwd=repo).returncode == 0


# ---- scenarios against the selector ---------------------------------------------------------------------

def test_render_test_and_replay_name_a_scenario_whose_series_match_no_selector(tmp_path):
    repo = tmp_path / "repo"
    _init(repo)
    example = repo / "scenarios" / "example-ghost-loss-dbe.yaml"
    example.write_text(example.read_text().replace("follows_settings: true\n", ""))
    (repo / "rulesgen.yaml").write_text("selector: 'job=\"gpu-metrics\"'\n")
    expected = ('scenario example-ghost-loss-dbe: none of its 12 DCGM series matches the selector job="gpu-metrics"')
    for args in (("render",), ("test",), ("replay", str(example))):
        result = run_cli(*args, cwd=repo)
        assert result.returncode == 1, args
        assert expected in result.stderr and "error[no-matching-series]" in result.stderr, (args, result.stderr)


@pytest.mark.engines
def test_the_example_follows_the_users_selector_and_host_labels(tmp_path, promtool):
    repo = tmp_path / "repo"
    _init(repo)
    (repo / "rulesgen.yaml").write_text("selector: 'job=\"gpu-metrics\", cluster=\"prod\"'\n"
                                        "labels: {host: node, host_sources: [nodename]}\n")
    assert run_cli("render", cwd=repo).returncode == 0
    test = (repo / "tests" / "promtool" / "example-ghost-loss-dbe.yaml").read_text()
    assert 'job="gpu-metrics"' in test and 'cluster="prod"' in test and 'nodename="gpu-node-01"' in test
    assert "Hostname" not in test.split("input_series:")[1].split("alert_rule_test")[0].split("promql_expr_test")[0]
    # on the rules live on its input (tests/live_rules.py); the scaffold's make test replays every rule in make
    # test-package (tests/test_package.py)
    assert [p.name for p in (repo / "tests" / "promtool").glob("*.yaml")] == ["example-ghost-loss-dbe.yaml"]
    live = tmp_path / "live.yaml"
    live_rules.write_pruned(batches.load(repo / "tests" / "promtool" / "example-ghost-loss-dbe.yaml"), live)
    tested = subprocess.run([promtool, "test", "rules", str(live)], cwd=repo, capture_output=True, text=True)
    assert tested.returncode == 0, tested.stdout + tested.stderr


# ---- exporter/ for the GPU Operator, and `rulesgen list` -------------------------------------------------

def test_exporter_has_a_gpu_operator_variant_with_the_same_counters(rendered_outputs):
    csv = (rendered_outputs / "exporter" / "dcgm-counters.csv").read_text()
    cm = yaml.safe_load((rendered_outputs / "exporter" / "gpu-operator-dcgm-metrics-configmap.yaml").read_text())
    assert (cm["kind"], cm["metadata"]["namespace"]) == ("ConfigMap", "gpu-operator")
    assert cm["data"] == {"dcgm-metrics.csv": csv}  # the key the operator mounts
    patch = yaml.safe_load((rendered_outputs / "exporter" / "gpu-operator-clusterpolicy-patch.yaml").read_text())
    exporter = patch["spec"]["dcgmExporter"]
    assert exporter["config"]["name"] == cm["metadata"]["name"]
    assert {"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcgm-metrics.csv"} in exporter["env"]


def test_list_marks_the_modes_the_default_counters_leave_blind():
    out = run_cli("list").stdout
    lines = {line.split()[0]: line for line in out.split("METRICS")[0].splitlines()[1:] if line.startswith("  ")}
    for mode in ("ecc_uncorrectable", "ecc_correctable_rate", "nvlink_errors", "dcgm_health", "low_occupancy"):
        assert "active, needs opt-in counters (exporter/)" in lines[mode], lines[mode]
    assert lines["gpu_lost"].rstrip().endswith("active")
    assert "opt-in counters: dcgm-exporter's default counters leave ecc_uncorrectable" in out
    assert sum(m.default_enabled for m in CATALOG.metrics) > 0 and not all(m.default_enabled for m in CATALOG.metrics)


# ---- counters_missing: the rules notice their own blindness ----------------------------------------------

def test_counters_missing_reads_no_window_and_waits_a_day(rendered_outputs):
    health = yaml.safe_load((rendered_outputs / "alerts" / "prometheus" / "health.yaml").read_text())
    rules = [r for g in health["groups"] for r in g["rules"] if r.get("labels", {}).get("failure_mode") == "counters_missing"]
    assert len(rules) == 1
    rule = rules[0]
    assert rule["for"] == "1d" and rule["labels"]["severity"] == "info"
    reads = promql_tree.selectors(rule["expr"])
    assert all(s.range is None for s in reads), "a configuration gap needs no long window: `for` holds the day"
    assert {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"} <= {s.name for s in reads}
    assert (rendered_outputs / "runbooks" / "counters-missing.md").is_file()


def test_counters_missing_watches_only_active_modes(tmp_path):
    config = tmp_path / "rulesgen.yaml"
    config.write_text("failure_modes:\n  ecc_uncorrectable: {enabled: false}\n  ecc_correctable_rate: {enabled: false}\n")
    out = tmp_path / "out"
    assert run_cli("render", "--no-scenario-tests", "--config", str(config), "--out", str(out)).returncode == 0
    expr = next(r["expr"] for g in yaml.safe_load((out / "alerts/prometheus/health.yaml").read_text())["groups"]
                for r in g["rules"] if r.get("labels", {}).get("failure_mode") == "counters_missing")
    assert not any("ECC" in name for name in promql_tree.names_read(expr)) and has(expr, "vector(1)")
