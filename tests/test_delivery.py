"""Delivery into real stacks: Kubernetes resources, Alertmanager (real amtool), runbooks, init and
the dcgm-exporter counters (lint: tests/test_checks.py)."""
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import run_cli


def load(path: Path):
    return yaml.safe_load(path.read_text())


DELAY = {"PrometheusRule": "query_offset", "VMRule": "eval_delay"}


def test_prometheus_rule_and_vmrule_wrap_the_same_groups(rendered, promtool, vmalert, tmp_path):
    """The repository's config is sharded and keeps the single server's objects (sharding.single_server_objects):
    those wrap alerts/prometheus/ (rulesgen.io/tier: single), the tiers' objects wrap the tiers' plain files, the
    global groups with their query delay added (each kind's own field); the single server's VMRule groups
    evaluate outputs.vmrule.eval_delay (10 s) in the past, with victoria-metrics' latency_offset to match (vmalert
    and victoria-metrics default to 30 s, a quarter of the 2-minute hardware target) and without aligning the query
    time to the interval (up to one more interval late). A user's sharded render has no single objects
    (tests/test_sharding_config.py)."""
    for folder, api, kind in (("prometheus-operator", "monitoring.coreos.com/v1", "PrometheusRule"),
                              ("victoriametrics-operator", "operator.victoriametrics.com/v1beta1", "VMRule")):
        single = {p.stem: load(p) for p in (rendered / "alerts" / "prometheus").glob("*.yaml")}
        tiers = {f"{tier}-{p.stem}": load(p) for tier in ("shard", "global")
                 for p in (rendered / "alerts" / "sharded" / tier).glob("*.yaml")}
        for d, plain in ((rendered / "deploy" / folder, single), (rendered / "deploy" / f"{folder}-sharded", tiers)):
            resources = sorted(p for p in d.glob("rulesgen-*.yaml"))
            assert len(resources) == len(plain)
            for p in resources:
                doc = load(p)
                assert (doc["apiVersion"], doc["kind"]) == (api, kind)
                assert doc["metadata"]["namespace"] == "monitoring"
                tier = doc["metadata"]["labels"]["rulesgen.io/tier"]
                assert (tier == "single") == (plain is single)
                spec = tmp_path / f"{d.name}-{p.name}"
                spec.write_text(yaml.safe_dump(doc["spec"]))
                if kind == "VMRule":  # vmalert reads the groups as the operator hands them over
                    proc = subprocess.run([vmalert, "-dryRun", f"-rule={spec}"], capture_output=True, text=True)
                    assert proc.returncode == 0, proc.stdout + proc.stderr
                single_vm = kind == "VMRule" and tier == "single"
                delays = {g.pop(DELAY[kind], None) for g in doc["spec"]["groups"]}
                assert delays == ({"1m"} if tier == "global" else {"10s"} if single_vm else {None})
                params = [(g.pop("params", None), g.pop("eval_alignment", None)) for g in doc["spec"]["groups"]]
                assert params == [({"latency_offset": ["10s"]}, False) if single_vm else (None, None)] * len(params)
                assert doc["spec"] == plain[p.stem.removeprefix("rulesgen-")]
                spec.write_text(yaml.safe_dump(doc["spec"]))
                proc = subprocess.run([promtool, "check", "rules", str(spec)], capture_output=True, text=True)
                assert proc.returncode == 0, proc.stdout + proc.stderr
            kustomization = load(d / "kustomization.yaml")
            assert kustomization["resources"] == [p.name for p in resources]
    labels = load(rendered / "deploy/prometheus-operator-sharded/rulesgen-shard-health.yaml")["metadata"]["labels"]
    assert labels["release"] == "kube-prometheus-stack"
    assert "release" not in load(rendered / "deploy/prometheus-operator-sharded/rulesgen-global-fleet.yaml")["metadata"]["labels"]


def test_the_vmrule_eval_delay_is_a_setting_checked_at_its_line(tmp_path):
    from rulesgen.load.settings import load_settings
    from rulesgen.errors import RulesgenError
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text("outputs:\n  vmrule:\n    enabled: true\n    eval_delay: 25s\n")
    assert load_settings(cfg).outputs.vmrule.eval_delay == 25
    cfg.write_text("outputs:\n  vmrule:\n    enabled: true\n    eval_delay: 0s\n  prometheus_rule:\n    eval_delay: 5s\n")
    with pytest.raises(RulesgenError) as info:
        load_settings(cfg)
    assert [str(d).replace(str(cfg), "rulesgen.yaml") for d in info.value.diagnostics] == [
        "rulesgen.yaml:4:5: error[out-of-range]: outputs.vmrule.eval_delay is outside [1s, 10m]: vmalert evaluates this "
        "far in the past, so that the newest scrape has been written (at least the scrape's duration, at most its "
        "scrape_timeout) and an alert is still on time",
        "rulesgen.yaml:6:5: error[unknown-key]: outputs.prometheus_rule: unknown key 'eval_delay'"]


def test_dashboard_resources_carry_every_dashboard(rendered):
    dashboards = sorted((rendered / "dashboards").glob("*.json"))
    if not dashboards:
        pytest.fail("no dashboards rendered")
    cms = [load(p) for p in sorted((rendered / "deploy/grafana-dashboards").glob("rulesgen-*.yaml"))]
    assert len(cms) == len(dashboards)
    for cm, dash in zip(cms, dashboards):
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["metadata"]["annotations"]["grafana_folder"] == "GPU"
        assert list(cm["data"]) == [dash.name] and json.loads(cm["data"][dash.name]) == json.loads(dash.read_text())
    for gd in (load(p) for p in (rendered / "deploy/grafana-operator").glob("rulesgen-*.yaml")):
        assert gd["apiVersion"] == "grafana.integreatly.org/v1beta1" and gd["kind"] == "GrafanaDashboard"
        assert gd["spec"]["instanceSelector"] == {"matchLabels": {"dashboards": "grafana"}}


AMTOOL_ROUTES = [
    ({"severity": "critical", "failure_mode": "ecc_uncorrectable"}, "gpu-pager"),
    ({"severity": "warning", "failure_mode": "thermal_throttling"}, "gpu-tickets"),
    ({"severity": "info", "failure_mode": "tensor_cores_idle"}, "gpu-null"),
]


def test_alertmanager_config_passes_amtool_and_routes_by_severity(rendered, amtool):
    config = rendered / "alertmanager" / "rulesgen.yaml"
    proc = subprocess.run([amtool, "check-config", str(config)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for labels, receiver in AMTOOL_ROUTES:
        args = [f"{k}={v}" for k, v in labels.items()]
        proc = subprocess.run([amtool, "config", "routes", "test", f"--config.file={config}", *args],
                              capture_output=True, text=True)
        assert proc.stdout.strip() == receiver, (labels, proc.stdout, proc.stderr)
    doc = load(config)
    assert {"failure_mode=\"gpu_lost\""} == set(doc["inhibit_rules"][0]["source_matchers"])
    assert doc["inhibit_rules"][0]["equal"] == ["cluster", "Hostname", "gpu", "UUID"]
    assert doc["route"]["routes"][0]["group_by"] == ["cluster", "Hostname", "failure_mode"]
    # routes[0] is what users merge under their own root: it carries the catalog's timings itself.
    timings = {k: doc["route"]["routes"][0].get(k) for k in ("group_wait", "group_interval", "repeat_interval")}
    assert timings == {"group_wait": "30s", "group_interval": "5m", "repeat_interval": "4h"}
    # a page waits 10 s, not the route's 30 s (catalog/alertmanager.yaml: a quarter of the 2-minute hardware target)
    waits = {r["matchers"][0]: r.get("group_wait") for r in doc["route"]["routes"][0]["routes"]}
    assert waits == {'severity="critical"': "10s", 'severity="warning"': None, 'severity="info"': None}


def test_amtool_rejects_a_broken_config(tmp_path, rendered, amtool):
    bad = tmp_path / "bad.yaml"
    bad.write_text((rendered / "alertmanager" / "rulesgen.yaml").read_text().replace("receiver: gpu-pager", "receiver: nobody"))
    proc = subprocess.run([amtool, "check-config", str(bad)], capture_output=True, text=True)
    assert proc.returncode != 0


def test_every_runbook_url_resolves_to_a_runbook(rendered):
    for f in (rendered / "alerts" / "prometheus").glob("*.yaml"):
        for g in load(f)["groups"]:
            for r in g["rules"]:
                if "alert" in r:
                    name = r["annotations"]["runbook_url"].rsplit("/", 1)[1]
                    page = rendered / "runbooks" / name
                    assert page.exists(), r["alert"]
                    text = page.read_text()
                    assert r["alert"] in text and "## What to do" in text and "```promql" in text


def _section(text: str, heading: str) -> list[str]:
    """The bullet lines under a `## heading` of a page, up to the next heading."""
    lines = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0].splitlines()
    return [line[2:] for line in lines if line.startswith("- ")]


def test_each_runbook_says_what_its_mode_checks_and_does(rendered):
    """On-call acts on "What to do": each page lists its failure mode's own checks and actions from the catalog,
    in order, each under its heading (a copy slip that lists the checks twice reads as a runbook with no action)."""
    from rulesgen.catalog import bundled_catalog_dir, load_catalog
    from rulesgen.model.conventions import runbook_path
    for fm in load_catalog(bundled_catalog_dir()).failure_modes:
        page = (rendered / runbook_path(fm.id)).read_text()
        assert fm.runbook.act and _section(page, "What to do") == list(fm.runbook.act), fm.id
        assert _section(page, "What to check") == list(fm.runbook.check), fm.id


def test_every_runbook_table_row_has_its_header_cells(rendered):
    """A `|` in a cell (a PromQL regex a|b, |x - median|) must be escaped, even inside a code span,
    or the row gets more cells than its header."""
    import re

    def cells(line: str) -> int:
        return len(re.split(r"(?<!\\)\|", line.strip().strip("|")))

    pages = sorted((rendered / "runbooks").glob("*.md"))
    assert pages
    for page in pages:
        header = None
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if not line.startswith("|"):
                header = None
            elif header is None:
                header = cells(line)
            else:
                assert cells(line) == header, f"{page.name}:{number}: {cells(line)} cells, header has {header}: {line}"


def test_runbook_template_is_strict(tmp_path):
    import jinja2

    from rulesgen.render import runbooks
    with pytest.raises(jinja2.UndefinedError):
        runbooks._ENV.from_string("{{ fm.no_such_field }}").render(fm={})
    with pytest.raises(jinja2.exceptions.SecurityError):
        runbooks._ENV.from_string("{{ ''.__class__.__mro__ }}").render()


def test_counters_enable_what_the_rules_read(rendered, tmp_path):
    csv = (rendered / "exporter" / "dcgm-counters.csv").read_text()
    for field in ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
                  "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_GPU_TEMP"):
        assert f"\n{field}, " in csv
    # dcgm-exporter's default counters enable no ECC counts: the ECC failure modes are blind with them
    defaults = tmp_path / "default-counters.csv"
    defaults.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
                        "DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).\n"
                        "DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.\n")
    default = run_cli("list", "--counters", str(defaults))
    assert default.returncode == 0
    assert "ecc_uncorrectable" in default.stdout.split("blind:")[1]
    ours = run_cli("list", "--counters", str(rendered / "exporter" / "dcgm-counters.csv"))
    assert "0 failure mode(s) blind: none" in ours.stdout
    assert "BLIND" not in ours.stdout and "partial" not in ours.stdout
    values = load(rendered / "exporter" / "dcgm-exporter-values.yaml")
    assert values["customMetrics"] == csv


def test_init_scaffolds_a_repo_that_renders_and_keeps_what_exists(tmp_path):
    """The scaffold; its own make test and make test-vmalert run in make test-package, with the installed wheel
    (tests/test_package.py)."""
    repo = tmp_path / "gitops"
    result = run_cli("init", str(repo))
    assert result.returncode == 0, result.stderr
    for rel in ("rulesgen.yaml", "Makefile", ".github/workflows/gpu-rules.yaml", ".gitignore",
                "scenarios/example-ghost-loss-dbe.yaml"):
        assert (repo / rel).exists(), rel
    again = run_cli("init", str(repo))
    assert "kept existing" in again.stdout
    render = run_cli("render", "--scenarios", "scenarios", cwd=repo)
    assert render.returncode == 0, render.stderr
    assert (repo / "tests" / "promtool" / "example-ghost-loss-dbe.yaml").is_file()
