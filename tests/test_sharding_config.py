"""The shards' configuration from rulesgen.yaml `sharding:` (docs/sharding.md "Deploying"): the section parsed and
range-checked at its line; per source (static, prometheus-operator, vmagent) the files each shard applies as they
are; the tier labels of the rule objects and no single-server object beside them; the global groups' query
delay; lint tier-mix on a deployment folder that mixes tiers. Engine-free: no binary runs."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run_cli
from rulesgen.artifacts import plan
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.errors import RulesgenError
from rulesgen.load.config_template import config_template, uncomment
from rulesgen.load.settings import Settings, load_settings
from rulesgen.catalog import load_catalog

URL = "http://vminsert.monitoring:8480/insert/0/prometheus/api/v1/write"
OUTPUTS = "outputs:\n  prometheus_rule: {enabled: true, labels: {release: kps}}\n  vmrule: {enabled: true}\n"


def _plan(tmp_path: Path, sharding: str, topology: str = "sharded"):
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text(f"topology: {topology}\n{OUTPUTS}{sharding}")
    return {a.path: a.text for a in plan(bundled_catalog_dir(), cfg, None, scenario_tests=False).artifacts}


def _errors(tmp_path: Path, text: str) -> list[str]:
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text(text)
    with pytest.raises(RulesgenError) as exc:
        load_settings(cfg)
    return [str(d).replace(str(cfg), "rulesgen.yaml") for d in exc.value.diagnostics]


# -- 1. the section -------------------------------------------------------------------------------------------

def test_the_sharding_section_is_read_with_its_defaults(tmp_path):
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text(f"sharding:\n  write_url: {URL}\n  label: gpu_shard\n  values: [a, b, c]\n  evaluation_delay: 90s\n")
    sh = load_settings(cfg).sharding
    assert (sh.write_url, sh.label, sh.source, sh.shard_values, sh.shards, sh.evaluation_delay) == (
        URL, "gpu_shard", "static", ("a", "b", "c"), 3, 90)
    d = Settings().sharding  # the defaults: today's label, two static shards, a minute's delay, no URL
    assert (d.write_url, d.label, d.source, d.shard_values, d.evaluation_delay) == (
        None, "shard", "static", ("shard-0", "shard-1"), 60)
    cfg.write_text("sharding:\n  source: prometheus-operator\n  shards: 4\n")
    assert load_settings(cfg).sharding.shard_values == ("0", "1", "2", "3")


def test_sharding_errors_name_their_line_with_a_did_you_mean(tmp_path):
    found = _errors(tmp_path, "topology: sharded\nsharding:\n  write_url: vminsert:8480\n  lable: x\n"
                              "  source: prometheus-operater\n  shards: 0\n  evaluation_delay: 11m\n")
    assert found == [
        "rulesgen.yaml:3:3: error[bad-value]: sharding.write_url: 'vminsert:8480' does not match https?://\\S+",
        "rulesgen.yaml:4:3: error[unknown-key]: sharding: unknown key 'lable' (did you mean 'label'?)",
        "rulesgen.yaml:5:3: error[bad-value]: sharding.source must be one of prometheus-operator, static, vmagent, got "
        "'prometheus-operater' (did you mean 'prometheus-operator'?)",
        "rulesgen.yaml:6:3: error[out-of-range]: sharding.shards: 0 is out of range [1, 1000]",
        "rulesgen.yaml:7:3: error[out-of-range]: sharding.evaluation_delay is outside [0s, 10m]: the global tier must "
        "wait for the shards' remote write, and no longer than an alert can be late"]


@pytest.mark.parametrize("body,message", [
    ("  values: [a, b, a]\n", "'a' is given twice"),
    ("  values: [a, 'b c']\n", "'b c' is not a plain value"),
    ("  source: vmagent\n  values: [a, b]\n", "only with source: static"),
    ("  values: [a, b]\n  shards: 3\n", "sharding.shards: 3, but sharding.values lists 2"),
    ("  label: Hostname\n", "'Hostname' is labels.host"),
    ("  label: instance\n", "'instance' is the series' own"),
    ("  label: __shard\n", "does not match"),
])
def test_sharding_values_and_label_are_range_checked(tmp_path, body, message):
    [error] = _errors(tmp_path, f"sharding:\n{body}")
    assert error.startswith("rulesgen.yaml:") and message in error, error


def test_init_and_the_configuration_doc_document_the_section():
    text = config_template(load_catalog(bundled_catalog_dir()))
    section = yaml.safe_load(uncomment(text))["sharding"]
    assert section == {"label": "shard", "source": "static", "shards": 2, "evaluation_delay": "1m"}
    assert "write_url" in text and "prometheus-operator" in text and "vmagent" in text
    assert "single_server_objects" in text
    doc = (ROOT / "docs" / "configuration.md").read_text()
    for key in ("write_url", "label", "source", "values", "shards", "evaluation_delay", "single_server_objects"):
        assert f"| `sharding.{key}` |" in doc, key


# -- 2. what each shard applies ---------------------------------------------------------------------------------

def test_static_renders_one_fragment_per_value_with_no_placeholder(tmp_path):
    out = _plan(tmp_path, f"sharding:\n  write_url: {URL}\n  label: gpu_shard\n  values: [east, west, north]\n")
    names = sorted(p for p in out if p.startswith("alerts/sharded/remote-write"))
    assert names == [f"alerts/sharded/remote-write-shard-{i}.yaml" for i in range(3)]
    for i, value in enumerate(("east", "west", "north")):
        text = out[f"alerts/sharded/remote-write-shard-{i}.yaml"]
        doc = yaml.safe_load(text)
        assert doc["global"]["external_labels"] == {"gpu_shard": value}
        assert doc["remote_write"][0]["url"] == URL and "example" not in text.lower()
        assert doc["alerting"]["alert_relabel_configs"] == [{"action": "labeldrop", "regex": "gpu_shard"}]
    # the global rules aggregate the configured label away
    glob = "".join(t for p, t in out.items() if p.startswith("alerts/sharded/global/"))
    assert "max without (gpu_shard)" in glob and "max without (shard)" not in glob


def test_the_operator_gets_a_prometheus_patch_and_its_alert_relabelling(tmp_path):
    out = _plan(tmp_path, f"sharding:\n  write_url: {URL}\n  source: prometheus-operator\n  shards: 3\n")
    assert not any(p.startswith("alerts/sharded/remote-write") for p in out)
    spec = yaml.safe_load(out["alerts/sharded/prometheus-operator-patch.yaml"])["spec"]
    assert spec["shards"] == 3 and spec["externalLabels"] == {"shard": "$(SHARD)"}
    [rw] = spec["remoteWrite"]
    assert rw["url"] == URL
    assert rw["writeRelabelConfigs"][0]["sourceLabels"] == ["__name__"] and rw["writeRelabelConfigs"][0]["action"] == "keep"
    assert rw["writeRelabelConfigs"][-1] == {"action": "labeldrop", "regex": "prometheus|prometheus_replica"}
    assert spec["ruleSelector"] == {"matchExpressions": [{"key": "rulesgen.io/tier", "operator": "NotIn",
                                                          "values": ["global", "single"]}]}
    secret = yaml.safe_load(out["alerts/sharded/prometheus-operator-alert-relabel.yaml"])
    assert (secret["kind"], secret["metadata"]["name"]) == ("Secret", spec["additionalAlertRelabelConfigs"]["name"])
    assert yaml.safe_load(secret["stringData"][spec["additionalAlertRelabelConfigs"]["key"]]) == [
        {"action": "labeldrop", "regex": "shard"}]


def test_vmagent_gets_its_cluster_flags_and_a_relabelling_per_member(tmp_path):
    out = _plan(tmp_path, f"sharding:\n  write_url: {URL}\n  source: vmagent\n  shards: 2\n")
    for i in range(2):
        flags = [x for x in out[f"alerts/sharded/vmagent-shard-{i}.flags"].splitlines() if not x.startswith("#")]
        assert flags == ["-promscrape.cluster.membersCount=2", f"-promscrape.cluster.memberNum={i}",
                         f"-remoteWrite.url={URL}",
                         f"-remoteWrite.urlRelabelConfig=alerts/sharded/vmagent-relabel-shard-{i}.yaml"]
        relabel = yaml.safe_load(out[f"alerts/sharded/vmagent-relabel-shard-{i}.yaml"])
        assert relabel[0]["action"] == "keep" and relabel[-1] == {"target_label": "shard", "replacement": str(i)}


def test_an_unset_write_url_is_an_example_host_and_render_warns(tmp_path):
    (tmp_path / "rulesgen.yaml").write_text("topology: sharded\n")
    warned = run_cli("render", "--out", str(tmp_path / "out"), "--config", str(tmp_path / "rulesgen.yaml"))
    assert warned.returncode == 0, warned.stderr
    assert "sharding.write_url is not set" in warned.stderr
    text = (tmp_path / "out" / "alerts" / "sharded" / "remote-write-shard-0.yaml").read_text()
    assert "EXAMPLE HOST" in text and "global-tsdb.example" in text
    (tmp_path / "rulesgen.yaml").write_text(f"topology: sharded\nsharding: {{write_url: '{URL}'}}\n")
    quiet = run_cli("render", "--out", str(tmp_path / "out"), "--config", str(tmp_path / "rulesgen.yaml"))
    assert quiet.returncode == 0 and "sharding.write_url" not in quiet.stderr
    assert "example" not in (tmp_path / "out" / "alerts" / "sharded" / "remote-write-shard-0.yaml").read_text().lower()


def test_rule_objects_carry_their_tier_and_sharded_renders_no_single_server_object(tmp_path):
    sharded = _plan(tmp_path, "sharding:\n  evaluation_delay: 45s\n")
    assert not any(p.startswith(("deploy/prometheus-operator/", "deploy/victoriametrics-operator/")) for p in sharded)
    delays = {}
    for path, text in sharded.items():
        if path.startswith("deploy/") and "-sharded/rulesgen-" in path:
            doc = yaml.safe_load(text)
            labels, tier = doc["metadata"]["labels"], doc["metadata"]["labels"]["rulesgen.io/tier"]
            assert tier == path.rsplit("/", 1)[1].split("-")[1]  # rulesgen-<tier>-<file>
            # only the shard objects carry the output's labels: a `release` ruleSelector never loads the global tier
            assert ("release" in labels) == (tier == "shard" and "prometheus-operator" in path)
            field = "query_offset" if doc["kind"] == "PrometheusRule" else "eval_delay"
            for g in doc["spec"]["groups"]:
                delays.setdefault((doc["kind"], tier), set()).add(g.get(field))
                assert ("eval_delay" if field == "query_offset" else "query_offset") not in g
    assert delays[("PrometheusRule", "global")] == delays[("VMRule", "global")] == {"45s"}
    assert delays[("PrometheusRule", "shard")] == delays[("VMRule", "shard")] == {None}
    # the plain files, read by every engine, carry no delay field (lint engine-field)
    assert not any("query_offset" in t or "eval_delay:" in t for p, t in sharded.items()
                   if p.startswith("alerts/sharded/global/"))
    single = _plan(tmp_path, "", topology="single")
    tiers = {yaml.safe_load(t)["metadata"]["labels"]["rulesgen.io/tier"] for p, t in single.items()
             if p.startswith("deploy/prometheus-operator/rulesgen-")}
    assert tiers == {"single"}


SINGLE_OBJECTS = ("deploy/prometheus-operator/", "deploy/victoriametrics-operator/")


def test_a_users_sharding_section_renders_no_single_server_object_unless_asked(tmp_path):
    """A user's rulesgen.yaml with a sharding: section (topology: sharded, or left out: the section implies it)
    renders the tiers' objects and none of one server's; sharding.single_server_objects: true (this repository's,
    to compare the tiers with one server) renders both, the single ones labelled as such."""
    cfg = tmp_path / "rulesgen.yaml"
    for text in (f"{OUTPUTS}sharding:\n  write_url: {URL}\n",
                 f"topology: sharded\n{OUTPUTS}sharding:\n  write_url: {URL}\n  single_server_objects: false\n"):
        cfg.write_text(text)
        out = {a.path for a in plan(bundled_catalog_dir(), cfg, None, scenario_tests=False).artifacts}
        assert any(p.startswith("deploy/prometheus-operator-sharded/rulesgen-shard-") for p in out), text
        assert not any(p.startswith(SINGLE_OBJECTS) for p in out), text
    cfg.write_text(f"{OUTPUTS}sharding:\n  write_url: {URL}\n  single_server_objects: true\n")
    both = {a.path: a.text for a in plan(bundled_catalog_dir(), cfg, None, scenario_tests=False).artifacts}
    single = {p: t for p, t in both.items() if p.startswith(SINGLE_OBJECTS) and "/rulesgen-" in p}
    plain = [p for p in both if p.startswith("alerts/prometheus/")]
    assert len(single) == 2 * len(plain) > 0 and any(p.startswith("deploy/prometheus-operator-sharded/") for p in both)
    assert {yaml.safe_load(t)["metadata"]["labels"]["rulesgen.io/tier"] for t in single.values()} == {"single"}
    # the repository's own config asks for both (the sharding proof's reference), so its committed tree has both
    assert load_settings(ROOT / "rulesgen.yaml").sharding.single_server_objects
    assert (ROOT / "deploy/prometheus-operator/rulesgen-health.yaml").is_file()


def test_a_sharding_section_beside_topology_single_is_unused_and_render_warns_at_its_line(tmp_path):
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text(f"topology: single\n{OUTPUTS}sharding:\n  write_url: {URL}\n")
    result = run_cli("render", "--out", str(tmp_path / "out"), "--config", str(cfg))
    assert result.returncode == 0, result.stderr
    assert f"warning: {cfg}:5:1: sharding: is not used: topology is single" in result.stderr, result.stderr
    assert not (tmp_path / "out" / "alerts" / "sharded").exists()
    assert (tmp_path / "out" / "deploy" / "prometheus-operator" / "rulesgen-health.yaml").is_file()
    # still checked at its line
    assert _errors(tmp_path, "topology: single\nsharding:\n  single_server_objects: 2\n") == [
        "rulesgen.yaml:3:3: error[bad-type]: sharding.single_server_objects must be true or false, got 2"]


# -- 3. lint tier-mix on a deployment folder ---------------------------------------------------------------------

def test_lint_fails_a_deployment_folder_that_mixes_tiers(tmp_path):
    sharded = ROOT / "deploy" / "prometheus-operator-sharded"
    clean = run_cli("lint", str(sharded))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    single = _plan(tmp_path, "", topology="single")
    mixed = tmp_path / "mixed"
    shutil.copytree(sharded, mixed)
    (mixed / "rulesgen-health.yaml").write_text(single["deploy/prometheus-operator/rulesgen-health.yaml"])
    found = run_cli("lint", str(mixed))
    assert found.returncode == 1
    [line] = [x for x in found.stdout.splitlines() if "tier-mix" in x]
    assert line.startswith(f"{mixed / 'rulesgen-health.yaml'}:") and "error[tier-mix]" in line
    assert "rulesgen-health.yaml is single" in line
    # a kustomization elsewhere applying both folders' objects at once
    apart = tmp_path / "apart"
    (apart / "single").mkdir(parents=True)
    (apart / "single" / "rulesgen-health.yaml").write_text(single["deploy/prometheus-operator/rulesgen-health.yaml"])
    (apart / "sharded").mkdir()
    shutil.copy(sharded / "rulesgen-shard-health.yaml", apart / "sharded")
    (apart / "kustomization.yaml").write_text("resources: [single/rulesgen-health.yaml, sharded/rulesgen-shard-health.yaml]\n")
    found = run_cli("lint", str(apart / "kustomization.yaml"), str(apart / "single"), str(apart / "sharded"))
    assert found.returncode == 1 and f"{apart / 'kustomization.yaml'}:1:1: error[tier-mix]: kustomization" in found.stdout
    # plain files: shard and global rule files in one folder (one rule_files glob)
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(ROOT / "alerts" / "sharded" / "shard" / "fleet.yaml", plain / "shard-fleet.yaml")
    shutil.copy(ROOT / "alerts" / "sharded" / "global" / "fleet.yaml", plain / "global-fleet.yaml")
    found = run_cli("lint", str(plain))
    assert f"{plain / 'global-fleet.yaml'}:1:1: error[tier-mix]" in found.stdout
    # a folder with nothing to lint is a usage error naming it, never the defaults linted instead
    (tmp_path / "empty").mkdir()
    empty = run_cli("lint", str(tmp_path / "empty"))
    assert empty.returncode == 2 and f"nothing to lint in {tmp_path / 'empty'}" in empty.stderr, empty.stderr


# -- 4. the deployment guide -------------------------------------------------------------------------------------

def test_the_deployment_guide_walks_each_stack_to_a_check_and_names_only_rendered_files(tmp_path):
    """docs/sharding.md "Deploying": a. the Prometheus Operator with Thanos or Mimir, b. vmagent, VictoriaMetrics
    and vmalert, each step by step and ending in a query that shows the global tier's series; every file of
    alerts/sharded/ it names is one a render writes (for the source the guide's rulesgen.yaml sets)."""
    text = (ROOT / "docs" / "sharding.md").read_text()
    guide = text.split("\n## Deploying\n", 1)[1].split("\n## ", 1)[0]
    parts = guide.split("\n### ")
    a = next(p for p in parts if p.startswith("a. Prometheus Operator"))
    b = next(p for p in parts if p.startswith("b. vmagent"))
    for part, source in ((a, "prometheus-operator"), (b, "vmagent")):
        assert f"source: {source}" in part
        steps = [int(x.split(".")[0]) for x in part.splitlines() if x[:1].isdigit() and ". " in x[:4]]
        assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 4, steps
        assert "fleet:dcgm_exporter_targets:count" in part.split(f"\n{steps[-1]}. ", 1)[1]  # the last step checks
    assert "kubectl -n monitoring patch prometheus" in a and "--patch-file alerts/sharded/prometheus-operator-patch.yaml" in a
    assert "curl -s \"$QUERY/api/v1/query\"" in a and "vmalert -rule='alerts/sharded/global/*.yaml'" in b
    rendered = set()
    for sharding in ("source: prometheus-operator\n  shards: 4\n", "source: vmagent\n  shards: 2\n",
                     "values: [gpu-a, gpu-b]\n"):
        rendered |= set(_plan(tmp_path, f"sharding:\n  write_url: {URL}\n  {sharding}"))
    import re
    named = set(re.findall(r"alerts/sharded/[\w./-]*\.(?:yaml|flags)", guide))
    assert named and named - rendered <= {"alerts/sharded/shard/*.yaml", "alerts/sharded/global/*.yaml"}, named - rendered
