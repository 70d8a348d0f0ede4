"""rulesgen/checks/: every check module, imported by name, has for each Check it declares a planted rule
file (tests/checks_table.py) that must give exactly its finding, at its line and column, and a clean twin
that must give none. No engine binary: every test here runs with an empty PATH and fails if anything
starts a process."""
import json
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from checks_table import CHECK_MODULES, HEADER, INFRASTRUCTURE, TABLE, declared
from conftest import ROOT, edit, run_cli
from rulesgen import checks
from rulesgen.builders.rules import build_rules
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.checks import CHECKS, check_of, lint_files
from rulesgen.checks.base import DASHBOARD, FILES, GROUP, LOAD, RULE
from rulesgen.checks.registry import MODULES
from rulesgen.checks.runner import GENERATED_MARK, is_rulesgen_file
from rulesgen.checks.template_labels import labels_used
from rulesgen.errors import Diagnostic
from rulesgen.load.settings import Settings
from rulesgen.render.prometheus import render_rule_file


@pytest.fixture(autouse=True)
def no_binaries(monkeypatch):
    """lint needs no engine: starting any process fails the test."""
    def refuse(self, *args, **kwargs):
        raise AssertionError(f"lint started a process: {args[:1]}")
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


def test_the_guard_refuses_a_process():
    with pytest.raises(AssertionError, match="lint started a process"):
        subprocess.run([sys.executable, "-c", "pass"])


def file_name(text: str) -> str:
    """A planted dashboard (checks_table.TABLE: it starts with "{") is linted as dashboard.json."""
    return "dashboard.json" if text.startswith("{") else "rules.yaml"


def lint_text(tmp_path: Path, text: str, **kwargs) -> list[Diagnostic]:
    path = tmp_path / file_name(text)
    path.write_text(text)
    beside = kwargs.pop("beside", {})
    for name, other in beside.items():
        (tmp_path / name).write_text(other)
    if beside:
        return lint_files([path, *(tmp_path / name for name in beside)], **kwargs)
    return lint_files([path], **kwargs)


@pytest.mark.parametrize("name", CHECK_MODULES)
def test_each_check_modules_planted_files_give_exactly_its_findings(tmp_path, name):
    """rulesgen.checks.<name>, imported by name: each Check it declares has a planted row in TABLE whose
    file gives exactly that finding (tests/test_layout.py counts the module as tested through this)."""
    found_checks = declared(name)
    assert found_checks and None not in found_checks, f"rulesgen.checks.{name} declares no CHECK or CHECKS"
    assert [c.code for c in found_checks if c.code not in TABLE] == [], f"rulesgen.checks.{name}: no planted row"
    for check in found_checks:
        planted, kwargs, (line, col), _ = TABLE[check.code]
        found = lint_text(tmp_path, planted, **kwargs)
        assert [(f.code, f.line, f.col, f.severity) for f in found] == [(check.code, line, col, check.severity)], found
        assert str(found[0]).startswith(f"{tmp_path / file_name(planted)}:{line}:{col}: {check.severity}[{check.code}]: ")


@pytest.mark.parametrize("code", TABLE)
def test_clean_twin_gives_nothing(tmp_path, code):
    _, kwargs, _, clean = TABLE[code]
    assert lint_text(tmp_path, clean, **kwargs) == []


def test_every_check_has_a_row_and_a_module_in_the_registry():
    assert set(TABLE) == set(CHECKS)
    package = {m.name for m in pkgutil.iter_modules(checks.__path__)} - set(INFRASTRUCTURE)
    assert package == {m.__name__.rsplit(".", 1)[1] for m in MODULES} == set(CHECK_MODULES)
    assert {c.code for name in CHECK_MODULES for c in declared(name)} == set(CHECKS)
    for check in CHECKS.values():
        assert check.severity in ("error", "warning") and check.doc and check.scope in (LOAD, FILES, GROUP, RULE, DASHBOARD)
        assert (check.run is None) == (check.scope == LOAD), check.code


def test_contract_checks_spare_foreign_files_unless_asked(tmp_path):
    """A contract check reports on a foreign file only with contract=True; on rulesgen's own file
    (its header, or a group named rulesgen-*) it reports unasked, and contract=False silences it."""
    planted, _, (line, _), _ = TABLE["contract-label"]
    assert lint_text(tmp_path, planted) == []
    assert [f.code for f in lint_text(tmp_path, HEADER + planted)] == ["contract-label"]
    assert [f.code for f in lint_text(tmp_path, planted.replace("name: team", "name: rulesgen-team"))] == ["contract-label"]
    assert lint_text(tmp_path, HEADER + planted, contract=False) == []


def test_the_runner_knows_rulesgens_own_files(tmp_path):
    """runner.is_rulesgen_file: the header mark in the first 300 characters, or a group named rulesgen-*."""
    own, foreign = tmp_path / "own.yaml", tmp_path / "foreign.yaml"
    own.write_text(HEADER + "groups: []\n")
    foreign.write_text("# " + "x" * 300 + GENERATED_MARK + "\ngroups: []\n")
    assert is_rulesgen_file(own, []) and not is_rulesgen_file(foreign, [])
    assert is_rulesgen_file(foreign, [{"name": "team"}, {"name": "rulesgen-health"}])
    assert not is_rulesgen_file(tmp_path / "gone.yaml", [])


def test_findings_are_sorted_by_file_line_and_code(tmp_path):
    b, a = tmp_path / "b.yaml", tmp_path / "a.yaml"
    b.write_text(TABLE["alert-for"][0])
    a.write_text(TABLE["rate-window"][0].replace("expr: rate", "expr: vector(1)\n  - alert: Hot\n    expr: rate"))
    assert [(Path(f.path).name, f.line, f.code) for f in lint_files([b, a])] == [
        ("a.yaml", 6, "alert-for"), ("a.yaml", 7, "rate-window"), ("b.yaml", 4, "alert-for")]


def test_options_move_the_limits(tmp_path):
    assert lint_text(tmp_path, TABLE["rate-window"][3], scrape_interval=30)[0].code == "rate-window"
    assert lint_text(tmp_path, TABLE["group-size"][0], max_rules=0) == []
    assert lint_text(tmp_path, TABLE["raw-long-window"][0], long_window=3 * 3600) == []


def test_a_loader_diagnostic_no_check_declares_is_a_warning(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"groups: []\n# \xe9\n")
    [found] = lint_files([path])
    assert (found.code, found.severity) == ("unreadable-file", "warning") and check_of("no-such-check").severity == "warning"


def test_lint_and_render_share_one_diagnostic_type(tmp_path):
    [found] = lint_text(tmp_path, TABLE["alert-for"][0])
    assert type(found) is Diagnostic
    assert str(Diagnostic("a.yaml", 1, 2, "bad-duration", "m")) == "a.yaml:1:2: error[bad-duration]: m"


def test_committed_rule_files_lint_clean():
    """The committed outputs (`make check` keeps them equal to a render): no finding on the plain files,
    no error on the sharded ones judged together (the shards' `without (shard)` sums are warnings-free too)."""
    plain = sorted((ROOT / "alerts" / "prometheus").glob("*.yaml"))
    sharded = sorted((ROOT / "alerts" / "sharded").glob("*/*.yaml"))
    assert plain and sharded
    assert lint_files(plain) == []
    assert [f for f in lint_files(sharded, 60) if f.severity == "error"] == []


def test_lint_catches_planted_bad_rules(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("""\
groups:
- name: bad
  rules:
  - record: fleet:bad_util:avg
    expr: avg by (cluster, pod) (DCGM_FI_DEV_GPU_UTIL)
  - alert: BadAlert
    expr: rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[30s]) > 0 and max_over_time(DCGM_FI_DEV_GPU_TEMP[2h]) > 80
      or count_over_time(gpu:dcgm_xid:recent[1d]) > 5 or count_over_time(gpu:dcgm_xid:onset[1d]) > 5
    labels:
      severity: warning
      value: "{{ $value }}"
""")
    assert [str(f) for f in lint_files([bad], contract=True)] == [
        f"{bad}:5:5: warning[fleet-per-pod]: fleet:bad_util:avg: fleet aggregate keeps per-pod labels (by (cluster, pod))",
        f"{bad}:6:5: warning[alert-for]: BadAlert: alert has no `for`: one bad sample pages someone",
        f"{bad}:6:5: warning[contract-annotation]: BadAlert: missing annotation 'dashboard_url'",
        f"{bad}:6:5: warning[contract-annotation]: BadAlert: missing annotation 'description'",
        f"{bad}:6:5: warning[contract-annotation]: BadAlert: missing annotation 'runbook_url'",
        f"{bad}:6:5: warning[contract-annotation]: BadAlert: missing annotation 'summary'",
        f"{bad}:6:5: warning[contract-label]: BadAlert: missing label 'action'",
        f"{bad}:6:5: warning[contract-label]: BadAlert: missing label 'failure_mode'",
        f"{bad}:7:5: warning[dense-long-window]: BadAlert: [1d] over recorded series gpu:dcgm_xid:recent, written at every evaluation: "
        "count an event series (one sample per event, named ...:onset) or read daily sums",
        f"{bad}:7:5: warning[rate-window]: BadAlert: rate() over [30s] is shorter than 4x the scrape interval (60s)",
        f"{bad}:7:5: warning[raw-long-window]: BadAlert: [2h] over raw series DCGM_FI_DEV_GPU_TEMP: downsample with a recording rule first",
        f"{bad}:11:7: warning[value-in-label]: BadAlert: label 'value' uses $value: every new value starts a new alert",
    ]


def test_lint_catches_instant_reads_of_slow_records(tmp_path):
    """A record written every 5 minutes or less often, read with an instant selector: vmalert's 5m
    query step (and Prometheus' 5m lookback for the hourly history) miss it."""
    rules = tmp_path / "slow.yaml"
    rules.write_text("""\
groups:
- name: hourly
  interval: 1h
  rules:
  - record: gpu:slow:mean
    expr: avg_over_time(gpu:fast:value[1h])
- name: fast
  interval: 5m
  rules:
  - record: gpu:fast:value
    expr: DCGM_FI_DEV_GPU_TEMP
  - record: gpu:fast:delta
    expr: gpu:fast:value - gpu:slow:mean
  - record: gpu:fast:delta_ok
    expr: last_over_time(gpu:fast:value[10m]) - last_over_time(gpu:slow:mean[2h])
""")
    assert [f.code + " " + f.message.split(" (")[0] for f in lint_files([rules])] == [
        "instant-slow-record gpu:fast:delta: reads gpu:fast:value",
        "instant-slow-record gpu:fast:delta: reads gpu:slow:mean",
    ]


def test_template_label_reads_the_alerts_labels_as_go_templates_do():
    """$labels.X anywhere, index $labels "X", .Labels.X only where dot is the alert's data (not inside with or
    range, nor a query's (index . 0).Labels); a PromQL string or a }} inside one is no use of a label."""
    assert labels_used("{{ $labels.gpu }} on {{- $labels.Hostname -}}{{ if $labels.xid }}{{ .Labels.xid }}{{ end }}") == [
        "gpu", "Hostname", "xid"]
    assert labels_used('{{ with query (printf `x{a=%q}` (index $labels "cluster")) }}{{ (index . 0).Labels.pod }}'
                       '{{ .Labels.inner }}{{ end }}{{ .Labels.outer }}') == ["cluster", "outer"]
    assert labels_used('{{ range query "up{job=\\"}}\\"}" }}{{ .Labels.instance }}{{ end }}{{ index .Labels "UUID" }}') == ["UUID"]
    assert labels_used('{{ $job := $labels }}{{ $job.pod }}{{ "$labels.quoted" }}{{/* $labels.comment */}} $labels.text') == []


def _lint_catalog(tmp_path: Path, edits: list[tuple[str, str]]) -> list[Diagnostic]:
    """The bundled catalog with `edits` made to failure_modes.yaml, its rule files rendered and linted."""
    catalog = tmp_path / "catalog"
    shutil.copytree(bundled_catalog_dir(), catalog)
    for old, new in edits:
        edit(catalog / "failure_modes.yaml", old, new)
    paths = []
    for f in build_rules(load_catalog(catalog), Settings()).files:
        path = tmp_path / f.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_rule_file(f))
        paths.append(path)
    return lint_files(paths)


def _where(path: Path, alert: str, key: str) -> int:
    """The line of `key:` in alert's rule (the alert's own line for key "alert")."""
    lines = path.read_text().splitlines()
    start = lines.index(f"  - alert: {alert}")
    return start + 1 + next(i for i, text in enumerate(lines[start:]) if text.strip().lstrip("- ").startswith(key + ":"))


def test_lint_finds_catalog_alerts_that_lost_a_label_their_text_or_identity_needs(tmp_path):
    """The bundled catalog with `xid` dropped from the critical XID alert's aggregation (its summary would
    read "XID  on GPU 0") and the cluster label from the warning XID alert's: lint names both at the rule;
    the catalog as it is renders clean (test_committed_rule_files_lint_clean). The dropped cluster label
    also mixes clusters (cluster-local)."""
    drain = 'max by ([[ gpu ]], xid) (gpu:dcgm_xid{kind}{{xid=~"[[ xid.drain ]]", xid!="79"}})'
    other = 'max by ([[ gpu ]], xid) (gpu:dcgm_xid:recent{xid!~"[[ xid.application ]]|[[ xid.drain ]]|79"})'
    found = _lint_catalog(tmp_path, [
        (drain.format(kind="_last:info"), drain.format(kind="_last:info").replace(", xid)", ")")),
        (drain.format(kind=":recent"), drain.format(kind=":recent").replace(", xid)", ")")),
        (other, other.replace("[[ gpu ]]", "[[ host ]], gpu, UUID, modelName"))])
    health = tmp_path / "alerts" / "prometheus" / "health.yaml"
    assert [(Path(f.path), f.line, f.code, f.message.split(":")[0]) for f in found] == [
        (health, _where(health, "GPUXIDErrorCritical", "description"), "template-label", "GPUXIDErrorCritical"),
        (health, _where(health, "GPUXIDErrorCritical", "summary"), "template-label", "GPUXIDErrorCritical"),
        (health, _where(health, "GPUXIDErrorWarning", "alert"), "scope-identity", "GPUXIDErrorWarning"),
        (health, _where(health, "GPUXIDErrorWarning", "expr"), "cluster-local", "GPUXIDErrorWarning"),
        # its dashboard link selects the alert's cluster
        (health, _where(health, "GPUXIDErrorWarning", "dashboard_url"), "template-label", "GPUXIDErrorWarning"),
        # it reads the warning XID alert's ALERTS, now of every cluster
        (health, _where(health, "GPUDcgmHealthWarning", "expr"), "cluster-local", "GPUDcgmHealthWarning"),
    ]
    assert "reads $labels.xid, which the alert cannot carry" in found[1].message
    assert "cannot carry cluster, which name failure mode xid_error's subject (cluster, Hostname, gpu, UUID)" in found[2].message


def test_lint_asks_the_configured_cluster_label_and_the_catalogs_scopes(tmp_path):
    """`rulesgen lint` reads labels.cluster from --config and each failure mode's scope from --catalog."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(HEADER + TABLE["scope-identity"][3].replace("cluster,", "region,"))
    config = tmp_path / "region.yaml"
    config.write_text("labels:\n  cluster: region\n")
    assert run_cli("lint", str(rules), "--config", str(config)).returncode == 0
    default = run_cli("lint", str(rules))  # the repository's rulesgen.yaml: labels.cluster is cluster
    assert default.returncode == 1 and "error[scope-identity]: GPUHot: cannot carry cluster" in default.stdout
    catalog = tmp_path / "catalog"
    shutil.copytree(bundled_catalog_dir(), catalog)
    edit(catalog / "failure_modes.yaml", "  - id: gpu_lost\n    title: GPU lost\n    group: health\n    scope: gpu\n",
         "  - id: gpu_lost\n    title: GPU lost\n    group: health\n    scope: fleet\n")
    rules.write_text(HEADER + TABLE["scope-identity"][3].replace("Hostname, gpu, UUID", "blind"))
    assert run_cli("lint", str(rules), "--catalog", str(catalog)).returncode == 0
    bundled = run_cli("lint", str(rules))
    assert bundled.returncode == 1 and "cannot carry Hostname, gpu, UUID" in bundled.stdout


# --- Grafana dashboards ---------------------------------------------------------------------------------

def test_committed_dashboards_lint_clean():
    """The rendered dashboards, judged together (`rulesgen lint` does by default): no finding."""
    dashboards = sorted((ROOT / "dashboards").glob("*.json"))
    assert len(dashboards) == 7
    assert lint_files(dashboards) == []


def test_lint_names_the_panel_of_each_fault_planted_in_a_rendered_dashboard(tmp_path):
    """GPU Health with main's faults planted (a title of PromQL, rotmhz, an editable dashboard) and a link, a
    variable and a series that lead nowhere: one finding each, naming its panel; the other four stay clean."""
    for source in sorted((ROOT / "dashboards").glob("*.json")):
        shutil.copy(source, tmp_path / source.name)
    health = tmp_path / "gpu-health.json"
    d = json.loads(health.read_text())
    row = next(p for p in d["panels"] if p["type"] == "row" and p["id"] == 600)  # thermal throttling, collapsed
    main, second = row["panels"][0], row["panels"][1]
    main["title"] = 'Max by (cluster, Hostname) (label replace(timestamp({ name =~"DCGM FI DEV GPU TEMP"})))'
    second["fieldConfig"]["defaults"]["unit"] = "rotmhz"
    second["fieldConfig"]["defaults"]["links"][0]["url"] = "/d/rg-nowhere/x?${__url_time_range}"
    second["targets"][0]["expr"] = second["targets"][0]["expr"].replace("gpu:dcgm_clock_event_thermal:active",
                                                                        "gpu:dcgm_clock_event_thermal:activ")
    d["editable"] = True
    d["templating"]["list"].append(dict(d["templating"]["list"][-1], name="rank"))
    health.write_text(json.dumps(d, sort_keys=True, indent=2) + "\n")
    found = lint_files(sorted(tmp_path.glob("*.json")))
    assert {Path(f.path).name for f in found} == {"gpu-health.json"}
    assert sorted((f.code, f.message.split(":")[0]) for f in found) == [
        ("dashboard-editable", "is editable"),
        ("dashboard-link", "panel 602 'Thermal slowdown active (avg over 4m)'"),
        ("panel-series", "panel 602 'Thermal slowdown active (avg over 4m)'"),
        ("panel-title", f"panel 601 {main['title']!r}"),
        ("panel-unit", "panel 602 'Thermal slowdown active (avg over 4m)'"),
        ("variable-unused", "variable rank"),
    ]


def test_dashboard_checks_judge_foreign_dashboards_by_the_generic_rules_only(tmp_path):
    """panel-series and dashboard-link are rulesgen's contract: a dashboard it did not generate may read other
    exporters' series and link to dashboards not given; --contract holds it to them too."""
    from checks_table import dashboard
    foreign = tmp_path / "mine.json"
    foreign.write_text(dashboard(description="team dashboard", tags=["team"], **{
        "panel3.target.expr": 'max(node_load1{cluster=~"$cluster"})', "panel3.link": "/d/other/x"}))
    assert lint_files([foreign]) == []
    # its tag link and its data link lead to no dashboard given, node_load1 is no catalog series
    assert sorted(f.code for f in lint_files([foreign], contract=True)) == ["dashboard-link", "dashboard-link", "panel-series"]
