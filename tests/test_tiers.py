"""Rule tiers (local, partial, global) and the sharded topology (README "Sharded topology")."""
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

import live_rules
from conftest import ROOT, replay_env, replay_fixture
from treeasserts import canonical, has, joins, reads
from rulesgen.artifacts import MANIFEST, load_inputs, plan
from rulesgen.builders.rules import build_rules
from rulesgen.builders.sharded import SHARD_PREFIX, build_sharded
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.checks import lint_files
from rulesgen.model.output import Rule
from rulesgen.promql import tree
from rulesgen.promql.tree import names_read
from rulesgen.render.shard_config import static_path
from rulesgen.render.sharded import allowlist_regex
from rulesgen.promql.tiers import GLOBAL, LOCAL, PARTIAL, Classifier, classify

PARTITION = ("Hostname", "hostname", "instance")


def tiers_of(*rules: tuple[str, str], alerts=()) -> dict:
    """{name: Tier} of synthetic recording rules (name, expr) and alerts (name, expr, labels)."""
    objs = [Rule(expr=e, record=n) for n, e in rules] + [Rule(expr=e, alert=n, labels=tuple(sorted(l.items())))
                                                          for n, e, l in alerts]
    c = Classifier(objs, PARTITION)
    return {(r.record or r.alert): t for r, t in zip(objs, c.tiers)}


# -- synthetic expressions: each tier, and what follows from it --------------------------------------

def test_per_gpu_and_per_node_aggregates_are_local():
    t = tiers_of(("gpu:t:max", 'max by (cluster, Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP)'),
                 ("node:t:median", "quantile by (cluster, Hostname) (0.5, gpu:t:max)"),
                 ("target:up:min", "min by (instance) (up)"))
    assert {n: x.tier for n, x in t.items()} == {"gpu:t:max": LOCAL, "node:t:median": LOCAL, "target:up:min": LOCAL}


@pytest.mark.parametrize("op", ["sum", "count", "min", "max", "group", "avg"])
def test_decomposable_aggregate_over_the_partition_key_is_partial(op):
    t = tiers_of(("gpu:p:max", "max by (cluster, Hostname, gpu) (DCGM_FI_DEV_POWER_USAGE)"),
                 ("cluster:p:x", f"{op} by (cluster) (gpu:p:max)"))
    assert t["cluster:p:x"].tier == PARTIAL
    assert f"{op} by (cluster)" in t["cluster:p:x"].why


@pytest.mark.parametrize("expr", [
    "quantile by (cluster) (0.5, gpu:p:max)",
    "stddev by (cluster) (gpu:p:max)",
    "topk by (cluster) (3, gpu:p:max)",
    "sum by (cluster) (gpu:p:max) / on (cluster) count by (cluster) (gpu:p:max)",  # a share of partials
    "gpu:p:max / on (cluster, workload) group_left () gpu:q:max",  # a join across nodes
    "sum by (cluster) (gpu:p:max) > 3",  # a threshold on a partial value
])
def test_whole_fleet_expressions_are_global(expr):
    t = tiers_of(("gpu:p:max", "max by (cluster, Hostname, gpu, workload) (DCGM_FI_DEV_POWER_USAGE)"),
                 ("gpu:q:max", "max by (cluster, Hostname, gpu, workload) (DCGM_FI_DEV_GPU_TEMP)"),
                 ("x:y:z", expr))
    assert t["x:y:z"].tier == GLOBAL, t["x:y:z"]


def test_downstream_of_global_is_global_and_says_which_record():
    t = tiers_of(("gpu:p:max", "max by (cluster, Hostname, gpu, workload) (DCGM_FI_DEV_POWER_USAGE)"),
                 ("job:p:median", "quantile by (cluster, workload) (0.5, gpu:p:max)"),
                 ("gpu:p_vs_job:ratio", "gpu:p:max / on (cluster, workload) group_left () job:p:median"),
                 alerts=[("Slow", "gpu:p_vs_job:ratio < 0.9", {"action": "investigate"}),
                         ("AfterSlow", 'max by (cluster, Hostname, gpu) (ALERTS{alertname="Slow"})', {})])
    assert t["gpu:p_vs_job:ratio"].tier == GLOBAL and "job:p:median" in t["gpu:p_vs_job:ratio"].why
    assert t["Slow"].tier == GLOBAL and "gpu:p_vs_job:ratio" in t["Slow"].why
    assert t["AfterSlow"].tier == GLOBAL and "ALERTS of Slow" in t["AfterSlow"].why


def test_an_alert_with_branches_of_both_tiers_is_split_and_joins_on_the_host_see_its_local_half():
    t = tiers_of(("gpu:e:max", "max by (cluster, Hostname, gpu) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL)"),
                 ("fleet:n:count", "count by (cluster) (up)"),
                 alerts=[("Down", "max by (cluster, Hostname) (up == 0) or (max_over_time(fleet:n:count[1h]) "
                                  "unless count by (cluster) (up))", {"failure_mode": "down"}),
                         ("Ecc", 'gpu:e:max > 0 or (max without (alertname) (ALERTS{alertname="Ecc"}) '
                                 'and on (cluster, Hostname) ALERTS{failure_mode="down"})', {"failure_mode": "ecc"}),
                         ("EccAnyDown", 'gpu:e:max > 0 and on (cluster) ALERTS{failure_mode="down"}',
                          {"failure_mode": "ecc_any"})])
    assert t["Down"].tier == GLOBAL and t["Down"].why.startswith("split: 1 of its 2")
    assert t["Ecc"].tier == LOCAL  # the global half (per cluster) cannot match on Hostname
    assert t["EccAnyDown"].tier == GLOBAL


def test_alerts_reader_of_local_alerts_is_local():
    t = tiers_of(("gpu:e:max", "max by (cluster, Hostname, gpu) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL)"),
                 alerts=[("Ecc", "gpu:e:max > 0", {"action": "drain"}),
                         ("Drained", 'max by (cluster, Hostname, gpu) (ALERTS{action="drain"})', {})])
    assert t["Drained"].tier == LOCAL


def test_set_only_read_of_a_partial_is_local():
    t = tiers_of(("gpu:t:max", "max by (cluster, Hostname, gpu, modelName) (DCGM_FI_DEV_GPU_TEMP)"),
                 ("model:gpus:count", "count by (cluster, modelName) (gpu:t:max)"),
                 ("model:limit:value", "model:gpus:count * 0 + 87"),
                 ("model:gpus_x2:value", "model:gpus:count * 2"),
                 ("gpu:hot:state", "gpu:t:max > on (cluster, modelName) group_left () model:limit:value"))
    assert t["model:limit:value"].tier == LOCAL and "set-only" in t["model:limit:value"].why
    assert t["model:gpus_x2:value"].tier == GLOBAL
    assert t["gpu:hot:state"].tier == LOCAL


def test_set_only_record_read_over_time_is_global():
    """A job's last sighting (a set-only record of a per-job max) read through a range or an offset: a job
    rescheduled onto another shard's node has part of that history on each shard (tests/test_slos.py's
    two-shard proof of the training SLO found it)."""
    t = tiers_of(("job:step:max", "max by (cluster, workload) (training_step)"),
                 ("job:seen:at", "job:step:max * 0 + time()"),
                 ("job:last:range", "time() - last_over_time(job:seen:at[6h])"),
                 ("job:last:offset", "time() - job:seen:at offset 1m"),
                 ("job:seen:now", "job:seen:at > 0"))
    assert t["job:seen:at"].tier == LOCAL and t["job:seen:now"].tier == LOCAL
    for name in ("job:last:range", "job:last:offset"):
        assert t[name].tier == GLOBAL and "over time" in t[name].why, (name, t[name])


# -- the rendered rules ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def model():
    catalog, settings = load_inputs(bundled_catalog_dir(), ROOT / "rulesgen.yaml")
    rules = build_rules(catalog, settings)
    return catalog, settings, rules


@pytest.fixture(scope="module")
def rule_tiers(model):
    _, settings, rules = model
    flat = list(rules.rules)
    c = classify(flat, settings)
    return {(r.record or r.alert): t for r, t in zip(flat, c.tiers)}


def test_a_rule_set_is_classified_once_for_the_same_texts(model):
    """classify keeps its Classifier per process for the same rules' texts (they are all it reads), and a
    changed text is classified anew."""
    _, settings, rules = model
    flat = list(rules.rules)
    c = classify(flat, settings)
    assert classify([replace(r, source=None, template_expr=None) for r in flat], settings) is c
    i = next(i for i, r in enumerate(flat) if r.record == "gpu:dcgm_gpu_temp:max")
    changed = classify([replace(r, expr=f"sum({r.expr})") if k == i else r for k, r in enumerate(flat)], settings)
    assert changed is not c and c.tiers[i].tier == LOCAL and changed.tiers[i].tier == PARTIAL


@pytest.mark.parametrize("name,tier", [
    ("gpu:dcgm_gpu_temp:max", LOCAL), ("GPUECCUncorrectable", LOCAL), ("GPUThermalThrottling", LOCAL),
    ("node:dcgm_sm_clock_busy:median", LOCAL), ("model:dcgm_limit_gpu_max_operating_temp_c:value", LOCAL),
    ("gpu:dcgm_drain_alert:firing", LOCAL), ("GPURepairNotHeld", LOCAL),
    ("model:dcgm_gpus:count", PARTIAL), ("fleet:dcgm_power_usage:sum", PARTIAL), ("fleet:dcgm_sm_active:avg", PARTIAL),
    ("job:dcgm_sm_clock_busy:median", GLOBAL), ("GPUStraggler", GLOBAL), ("fleet:dcgm_baseline_peers:mad", GLOBAL),
    ("GPUBaselineDeviation", GLOBAL), ("GPUFleetCapacityDegraded", GLOBAL), ("GPUGhostLoss", GLOBAL),
])
def test_rendered_rule_tiers(rule_tiers, name, tier):
    assert rule_tiers[name].tier == tier, rule_tiers[name]


def test_every_rule_has_a_tier_and_a_reason(rule_tiers):
    assert all(t.tier in (LOCAL, PARTIAL, GLOBAL) and t.why for t in rule_tiers.values())


# -- topology: sharded -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sharded(model):
    _, settings, rules = model
    return build_sharded(rules, replace(settings, topology="sharded"))


def _names(files):
    return {(r.record or r.alert) for f in files for g in f.groups for r in g.rules}


def test_every_rule_lands_once_in_its_tier(model, sharded, rule_tiers):
    _, _, rules = model
    shard, glob = _names(sharded.shard_files), _names(sharded.global_files)
    for r in rules.rules:
        name = r.record or r.alert
        t = rule_tiers[name]
        split = t.why.startswith("split:")  # an alert whose `or` branches are of both tiers: a half in each
        assert (name in glob) == (t.tier == GLOBAL or (t.tier == PARTIAL and name in glob)), name
        assert (name in shard) == (t.tier != GLOBAL or split), name
    assert [n for n, t in rule_tiers.items() if t.why.startswith("split:")] == ["GPUExporterDown"]
    assert {n for n in shard if n.startswith(SHARD_PREFIX)} <= set(sharded.forwarded)


def test_global_reads_only_forwarded_series_or_its_own_records(sharded):
    written = _names(sharded.global_files)
    for f in sharded.global_files:
        for g in f.groups:
            for r in g.rules:
                for name in names_read(r.expr):
                    assert name in written or name in sharded.forwarded, (r.record or r.alert, name)


def test_allowlist_is_exactly_what_the_global_tier_reads_from_the_shards(sharded):
    written = _names(sharded.global_files)
    read = {n for f in sharded.global_files for g in f.groups for r in g.rules for n in names_read(r.expr)} - written
    assert set(sharded.forwarded) == read


def test_partial_records_keep_the_shard_label_and_are_combined(sharded):
    text = "\n".join(r.expr for f in sharded.global_files for g in f.groups for r in g.rules)
    assert "sum by (cluster) (shard:GPUFleetCapacityDegraded_1:count)" in text  # counts summed
    assert "max by (cluster, namespace, pod, rank, workload) (shard:rank_training_loss_finite:max)" in text  # re-maxed
    shard_text = "\n".join(r.expr for f in sharded.shard_files for g in f.groups for r in g.rules)
    assert "max without (shard)" not in shard_text


def test_local_parts_of_global_rules_run_on_the_shards(sharded):
    """The baseline z record is global for its fleet-peer branch only: its history and node-peer branches are
    computed on the shards (one sparse record), so the per-GPU history never leaves them."""
    shard_records = {r.record: r.expr for f in sharded.shard_files for g in f.groups for r in g.rules if r.record}
    assert "gpu:dcgm_baseline_history:mean" in shard_records["shard:gpu_dcgm_baseline_deviation_z_1:local"]
    assert "gpu:dcgm_baseline_history:mean" not in sharded.forwarded
    assert "gpu:dcgm_baseline:value_30m" in sharded.forwarded  # the fleet's peer median needs every GPU's value


def test_slow_shard_records_mark_their_end_and_the_global_tier_drops_the_mark(sharded):
    """A shard record written every 5m is read over two intervals, which would outlive a series that
    ended (a local alert condition that cleared): the record writes -Inf once after a series ends and the
    global tier reads it `> -Inf`, so it sees what the shard's newest evaluation has."""
    intervals = {g.name: g.interval_seconds for f in sharded.shard_files for g in f.groups}
    slow = {r.record: (g, r.expr) for f in sharded.shard_files for g in f.groups for r in g.rules
            if r.record and r.record.startswith(SHARD_PREFIX) and intervals[g.name] >= 300}
    assert "shard:gpu_dcgm_baseline_deviation_z_1:local" in slow
    global_exprs = [r.expr for f in sharded.global_files for g in f.groups for r in g.rules]
    for name, (group, expr) in slow.items():
        last = f"last_over_time({name}[{2 * group.interval_seconds // 60}m])"
        assert joins(expr)[0].op == "or" and joins(expr)[0].rhs == canonical(f"({last} > -Inf) * 0 - Inf"), name
        readers = [e for e in global_exprs if reads(e, name)]
        assert readers, name
        for e in readers:  # every read of it is that last value, kept while it is above -Inf
            reads_of = [s for s in tree.selectors(e) if s.name == name]
            assert {(s.function, s.range) for s in reads_of} == {("last_over_time", 2 * group.interval_seconds)}, name
            assert has(e, f"{last} > -Inf"), name


def test_a_records_read_of_its_own_past_value_keeps_its_tier():
    own = "count by (cluster) (x) or (last_over_time(r[10m]) > -Inf) * 0 - Inf"
    t = tiers_of(("r", own), ("q", "count by (cluster) (x)"),
                 ("s", "count by (cluster) (y) or (last_over_time(q[10m]) > -Inf) * 0 - Inf"))
    assert t["r"].tier == PARTIAL
    assert t["s"].tier == GLOBAL  # another partial record's value is not its own


@pytest.mark.parametrize("expr,named", [
    ("x", True), ("rate(x[5m])", False), ('label_replace(x, "a", "b", "", "")', True), ("x > 3", True),
    ("x > bool 3", False), ("x * 2", False), ("max by (a) (x)", False), ("topk(1, x)", True),
    ("max by (a) (x) > 1 and y", False), ("sum(x) or y", True), ("abs(x)", False),
])
def test_which_expressions_keep_a_metric_name(expr, named):
    from rulesgen.builders.sharded import may_have_name
    from rulesgen.promql.tree import parse
    assert may_have_name(parse(expr)) is named


def test_global_alerts_naming_a_gpu_keep_its_identity(sharded):
    from rulesgen.promql import labels as label_flow
    rules = [r for f in sharded.global_files for g in f.groups for r in g.rules]
    records = label_flow.record_labels([(r.record, r.expr) for r in rules if r.record])
    for r in rules:
        if r.alert in ("GPUStraggler", "GPUBaselineDeviation", "GPUGhostLoss"):
            carried = label_flow.output_labels(r.expr, records)
            assert carried.open or {"cluster", "Hostname", "gpu", "UUID"} <= carried.known, r.alert


@pytest.fixture(scope="module")
def sharded_render(tmp_path_factory):
    """The repository's render (topology: sharded) and the same config with topology: single, with one
    scenario (its promtool and vmalert-tool tests are among the files compared)."""
    single_cfg = tmp_path_factory.mktemp("single") / "rulesgen.yaml"
    doc = yaml.safe_load((ROOT / "rulesgen.yaml").read_text())
    doc["topology"] = "single"
    del doc["sharding"]  # one server's config: no shards
    single_cfg.write_text(yaml.safe_dump(doc))
    scenarios = tmp_path_factory.mktemp("scenarios")
    shutil.copy(ROOT / "fixtures" / "scenarios" / "shard-capacity-two-plus-two.yaml", scenarios)
    sharded_plan = plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", scenarios, scenario_tests=True)
    single_plan = plan(bundled_catalog_dir(), single_cfg, scenarios, scenario_tests=True)
    return single_plan, sharded_plan


SINGLE_OBJECTS = ("deploy/prometheus-operator/", "deploy/victoriametrics-operator/")


def test_single_topology_is_byte_identical_and_sharded_only_adds(sharded_render):
    """This repository's topology: sharded (sharding.single_server_objects: true) adds its files and changes none
    of one server's, its rule objects included: the proofs compare the tiers with the one server
    (tests/test_sharding_config.py: a user's sharded render leaves those objects out)."""
    single, sharded = sharded_render
    one = {a.path: a.text for a in single.artifacts}
    both = {a.path: a.text for a in sharded.artifacts}
    assert single.sharded is None
    assert len([p for p in one if p.startswith(SINGLE_OBJECTS)]) > 8
    # the manifest lists every file written: the sharded ones add its lines (and nothing else changes)
    manifest = set(both.pop(MANIFEST).splitlines()) - set(one.pop(MANIFEST).splitlines())
    assert all(both[p] == t for p, t in one.items())
    added = set(both) - set(one)
    assert {line.split("  ", 1)[1] for line in manifest} == added
    assert added and all(p.startswith(("alerts/sharded/", "deploy/prometheus-operator-sharded/",
                                       "deploy/victoriametrics-operator-sharded/")) for p in added)
    assert not any("sharded" in p for p in one)


def test_default_settings_are_single(tmp_path):
    from rulesgen.load.settings import Settings, load_settings
    assert Settings().topology == "single"
    cfg = tmp_path / "rulesgen.yaml"
    cfg.write_text("topology: shards\n")
    from rulesgen.errors import RulesgenError
    with pytest.raises(RulesgenError) as exc:
        load_settings(cfg)
    assert "topology must be one of sharded, single" in str(exc.value.diagnostics[0])


def test_kube_objects_are_labelled_by_tier(sharded_render):
    _, sharded = sharded_render
    seen = {}
    for a in sharded.artifacts:
        if a.path.startswith("deploy/prometheus-operator-sharded/rulesgen-"):
            doc = yaml.safe_load(a.text)
            seen[doc["metadata"]["name"]] = doc["metadata"]["labels"]["rulesgen.io/tier"]
    assert seen["rulesgen-shard-health"] == "shard" and seen["rulesgen-global-fleet"] == "global"


def test_remote_write_keeps_exactly_the_forwarded_names(sharded_render):
    import re
    _, sharded = sharded_render
    doc = yaml.safe_load(next(a.text for a in sharded.artifacts if a.path == static_path(0)))
    keep = doc["remote_write"][0]["write_relabel_configs"][0]
    assert keep["action"] == "keep" and keep["source_labels"] == ["__name__"]
    assert keep["regex"] == allowlist_regex(sharded.sharded.forwarded)
    pattern = re.compile(f"(?:{keep['regex']})")
    every = {r.record for r in sharded.rules.rules if r.record}
    kept = {n for n in every if pattern.fullmatch(n)}
    assert kept == {n for n in sharded.sharded.forwarded if n in every}
    assert not pattern.fullmatch("DCGM_FI_DEV_GPU_TEMP") and not pattern.fullmatch("gpu:dcgm_gpu_temp:max")
    assert doc["global"]["external_labels"] == {"shard": "shard-0"}
    # the shard's alerts keep their identity when a node moves to another shard
    assert doc["alerting"]["alert_relabel_configs"] == [{"action": "labeldrop", "regex": "shard"}]


def test_remote_write_fragment_is_a_valid_prometheus_config(promtool, tmp_path):
    path = tmp_path / "prometheus.yml"
    path.write_text((ROOT / static_path(0)).read_text())
    proc = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_rendered_sharded_files_are_committed_and_lint_clean():
    paths = sorted((ROOT / "alerts" / "sharded").glob("*/*.yaml"))
    assert paths
    assert [f for f in lint_files(paths, 60) if f.severity == "error"] == []


def test_lint_fails_a_global_rule_in_a_shard_file(tmp_path):
    src = ROOT / "alerts" / "sharded"
    for p in (src / "shard").glob("*.yaml"):
        (tmp_path / p.name).write_text(p.read_text())
    (tmp_path / "global-recording.yaml").write_text((src / "global" / "recording.yaml").read_text())
    moved = (src / "global" / "efficiency.yaml").read_text().replace("# Tier global (", "# Tier shard (")
    (tmp_path / "moved.yaml").write_text(moved)
    findings = [f for f in lint_files(sorted(tmp_path.glob("*.yaml")), 60) if f.code == "tier-local"]
    assert [f.severity for f in findings] == ["error"]
    assert "GPUStraggler" in findings[0].message and "gpu:dcgm_sm_clock_vs_job:ratio" in findings[0].message


def test_sharded_files_load_in_promtool(promtool):
    paths = sorted(str(p) for p in (ROOT / "alerts" / "sharded").glob("*/*.yaml"))
    proc = subprocess.run([promtool, "check", "rules", *paths], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sharded_files_load_in_vmalert(vmalert):
    proc = subprocess.run([vmalert, "-dryRun", f"-rule={ROOT}/alerts/sharded/*/*.yaml"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_explain_a_rule_shows_its_tier():
    from conftest import run_cli
    result = run_cli("explain", "GPUFleetCapacityDegraded")
    assert result.returncode == 0, result.stderr
    assert "TIER" in result.stdout and "global" in result.stdout and "count by (cluster)" in result.stdout


def _one_shard_test(rendered: Path, tmp_path: Path, scenario: str, tiers: tuple[str, ...] = ("shard", "global")) -> Path:
    """The scenario's promtool test over the sharded files as one shard plus the global tier in one promtool
    (global groups renamed <group>-global and run right after their shard group): with a single shard, every
    combination is of one part and `max without (shard)` drops nothing, so the alerts must be the single
    server's, as the scenario expects them. (The two-shard proof splits the series; this checks the rewrite.)
    Like every replay of the test house, over the rules live on the scenario's input (tests/live_rules.py)."""
    files = []
    for tier in tiers:
        for p in sorted((rendered / "alerts" / "sharded" / tier).glob("*.yaml")):
            if p.name == "aggregates.yaml":
                continue
            doc = yaml.safe_load(p.read_text())
            for g in doc["groups"]:
                g["name"] += "-global" if tier == "global" else ""
            (tmp_path / f"{tier}-{p.name}").write_text(yaml.safe_dump(doc, sort_keys=False, width=100000))
            files.append(str(tmp_path / f"{tier}-{p.name}"))
    names = {g["name"] for f in files for g in yaml.safe_load(Path(f).read_text())["groups"]}
    test = yaml.safe_load((rendered / "tests" / "promtool" / f"{scenario}.yaml").read_text())
    test["group_eval_order"] = [x for g in test["group_eval_order"] for x in (g, g + "-global") if x in names]
    test["rule_files"] = files
    path = tmp_path / f"test-{scenario}.yaml"
    return live_rules.write_pruned(test, path)


ONE_SHARD = ["fleet-capacity-degraded", "straggler", "exporter-down", "counters-missing-ecc"]


@replay_fixture
def one_shard_runs(request):
    """{scenario: (returncode, output)} of promtool on each scenario's one-shard test, run by the test that reads it."""
    rendered, promtool = request.getfixturevalue("rendered"), request.getfixturevalue("promtool")
    base = request.getfixturevalue("tmp_path_factory").mktemp("one-shard")

    def job(scenario: str):
        folder = base / scenario
        folder.mkdir()
        proc = subprocess.run([promtool, "test", "rules", str(_one_shard_test(rendered, folder, scenario))],
                              capture_output=True, text=True, timeout=900, env=replay_env())
        return proc.returncode, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {s: (lambda s=s: job(s)) for s in ONE_SHARD}


@pytest.mark.equality  # make test-sharding (CI)
@pytest.mark.parametrize("scenario", ONE_SHARD)
def test_one_shard_plus_global_gives_the_single_servers_alerts(one_shard_runs, scenario):
    returncode, output = one_shard_runs[scenario]
    assert returncode == 0, output


@pytest.mark.equality
def test_one_shard_check_fails_without_the_global_tier(promtool, rendered, tmp_path):
    path = _one_shard_test(rendered, tmp_path, "fleet-capacity-degraded", tiers=("shard",))
    proc = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=900)
    assert proc.returncode != 0 and "fleet_capacity_degraded" in proc.stdout + proc.stderr
