"""Engine fit (rulesgen/builders/engine_fit.py, README "Engine fit"): no group above max_rules_per_group, the rules
reading ALERTS in groups of their own unless linked to them, no chain of reads cut twice, the regrouping changing nothing any rule reads at any evaluation
step, lint's checks of each, and the group delay field written only where an engine accepts it."""
import functools
import math
import random
import subprocess
from pathlib import Path

import pytest
import yaml

import shard_equality as se
from conftest import ROOT, errors_of, replay_fixture

from rulesgen import artifacts
from rulesgen.builders import engine_fit
from rulesgen.builders import rules as rule_builder
from rulesgen.catalog import load_catalog
from rulesgen.checks import CHECKS, alerts_reader_mixed, lint_files
from rulesgen.errors import Where
from rulesgen.load.scenarios import load_scenarios
from rulesgen.load.settings import load_settings
from rulesgen.model.output import KubeOutput, Rule, RuleFile, RuleGroup
from rulesgen.render import kube
from rulesgen.render.prometheus import render_rule_file


def _rule_files(rendered: Path) -> list[tuple[str, dict]]:
    """(file, group) of every rendered rule file, in promtool's evaluation order."""
    out = []
    for f in sorted((rendered / "alerts" / "prometheus").glob("*.yaml")):
        out += [(f.name, g) for g in yaml.safe_load(f.read_text())["groups"]]
    return out


def test_every_group_fits_mimir_and_prometheus_concurrency(rendered):
    groups = _rule_files(rendered)
    assert len(groups) <= engine_fit.MIMIR_MAX_GROUPS_PER_TENANT
    for _, g in groups:
        assert len(g["rules"]) <= 20, g["name"]
        assert set(g) <= {"name", "interval", "rules"}, g["name"]  # every engine reads these files
    names = [g["name"] for _, g in groups]
    assert len(names) == len(set(names))
    # The two groups the issue names are split, their ALERTS readers apart.
    assert "rulesgen-gpu-signals-reads-alerts" in names and "rulesgen-health-alerts-reads-alerts-1" in names


def test_no_chain_of_reads_crosses_more_than_one_group_boundary(monkeypatch, rendered):
    """Issue 39 item 5: with Mimir's 20 rules a group, no rule is more than one evaluation behind its
    inputs because of the split (before: the ghost-loss, divergence and plateau alerts up to three), and
    the rendered rule files are these pieces; lint finds no ALERTS reader beside rules unrelated to it."""
    lag = {}
    for f in _unsplit(monkeypatch):
        for g in f.groups:
            for rule, behind in engine_fit.chain_lag(engine_fit.split_group(g, 20)):
                lag[_key(rule)] = behind
    assert max(lag.values()) == 1  # some chain is cut once: the recording group holds 75 rules
    assert all(lag[k] <= 1 for k in lag), sorted((v, k) for k, v in lag.items() if v > 1)
    assert lag[_key(Rule(expr="", record="gpu:ghost_loss:minutes"))] == 1  # three before
    assert not [f for f in lint_files(sorted((rendered / "alerts" / "prometheus").glob("*.yaml")))
                if f.code == "alerts-reader-mixed"]


def _unsplit(monkeypatch):
    """The rule files as rendered before engine fit (each kind in one group, as the catalog orders it)."""
    monkeypatch.setattr(rule_builder.engine_fit, "fit", lambda files, limit: tuple(files))
    catalog = load_catalog(ROOT / "catalog")
    return rule_builder.build_rules(catalog, load_settings(ROOT / "rulesgen.yaml")).files


def _evaluation_order(groups_in_order) -> dict[str, int]:
    """Position of each rule (by record or alert name and its labels) in one evaluation step."""
    order = {}
    for g in groups_in_order:
        for r in g.rules:
            order[_key(r)] = len(order)
    return order


def _key(r) -> str:
    return f"{r.record or r.alert}{sorted(r.labels)}"


def test_regrouping_keeps_what_every_rule_reads_at_every_step(monkeypatch, rendered):
    """Every two rules of which one reads the other (a record and its reader, an alert and a rule whose
    ALERTS selector can select it) are evaluated in the same order as before the split, within one
    promtool evaluation step (group_eval_order, then rule order): every rule sees the same values at the
    same step, so every alert fires at the same step (the latency table of docs/performance.md stands)."""
    before_files = _unsplit(monkeypatch)
    before = [g for f in before_files for g in f.groups]
    rules = [r for g in before for r in g.rules]
    pos_before = _evaluation_order(before)
    # After: the group order promtool is given in the rendered tests, over the rendered files' groups.
    test = yaml.safe_load((rendered / "tests" / "promtool" / "ecc-uncorrectable-dbe.yaml").read_text())
    by_name = {}
    for f in sorted((rendered / "alerts" / "prometheus").glob("*.yaml")):
        for g in yaml.safe_load(f.read_text())["groups"]:
            by_name[g["name"]] = RuleGroup(g["name"], tuple(
                Rule(expr=r["expr"], record=r.get("record"), alert=r.get("alert"),
                     labels=tuple(sorted((r.get("labels") or {}).items()))) for r in g["rules"]))
    after = [by_name[n] for n in test["group_eval_order"]]
    pos_after = _evaluation_order(after)
    replayed = {_key(r) for g in after for r in g.rules}
    checked = 0
    for i, a in enumerate(rules):
        for b in rules[i + 1:]:
            if _key(a) in replayed and _key(b) in replayed and (engine_fit.reads(a, b) or engine_fit.reads(b, a)):
                checked += 1
                assert (pos_before[_key(a)] < pos_before[_key(b)]) == (pos_after[_key(a)] < pos_after[_key(b)]), (
                    a.record or a.alert, b.record or b.alert)
    assert checked > 200  # the records, their readers and the ALERTS readers of every replayed file


def _random_group(seed: int, size: int) -> RuleGroup:
    """Records reading earlier and later records, alerts, and rules reading some alerts' ALERTS."""
    rnd = random.Random(seed)
    rules = []
    for i in range(size):
        reads = [f"r:x:{j}" for j in rnd.sample(range(size), k=min(size, rnd.randint(0, 3)))]
        expr = " + ".join(f"sum({n})" for n in reads) or "vector(1)"
        kind = rnd.random()
        if kind < 0.2:
            expr += f' unless on () ALERTS{{alertname="A{rnd.randrange(size)}"}}'
        if kind < 0.6:
            rules.append(Rule(expr=expr, record=f"r:x:{i}"))
        else:
            rules.append(Rule(expr=expr, alert=f"A{i}", labels=(("severity", "warning"),)))
    return RuleGroup("g", tuple(rules), 60)


class _LintGroup:
    """A split piece as lint's alerts-reader-mixed reads a group: its rules as YAML mappings."""

    def __init__(self, piece: RuleGroup):
        self.rules = [{"expr": r.expr, **({"record": r.record} if r.record else {"alert": r.alert, "labels": dict(r.labels)})}
                      for r in piece.rules]

    def hit(self, message: str) -> str:
        return message


@pytest.mark.parametrize("seed", range(40))
def test_split_of_any_group_is_within_limit_isolated_and_order_preserving(seed):
    group = _random_group(seed, 10 + seed)
    limit = 5 + seed % 7
    pieces = engine_fit.split_group(group, limit)
    assert sorted(map(_key, (r for p in pieces for r in p.rules))) == sorted(map(_key, group.rules))
    assert all(len(p.rules) <= limit and p.interval_seconds == 60 for p in pieces)
    serial = [engine_fit.serial_reason(r.expr) is not None for r in group.rules]
    staged = engine_fit._staged(serial, engine_fit.related_pairs(group.rules), limit)
    for p in pieces:
        kinds = {engine_fit.serial_reason(r.expr) is not None for r in p.rules}
        assert len(pieces) == 1 or ("reads-alerts" in p.name) == (True in kinds), p.name
        if len(kinds) == 2:  # a rule unrelated to the piece's ALERTS readers would be serial for nothing
            assert staged is not None and not list(alerts_reader_mixed.run(_LintGroup(p)))
    if staged is not None:
        assert max(lag for _, lag in engine_fit.chain_lag(pieces)) <= 1
    before, after = _evaluation_order([group]), _evaluation_order(pieces)
    for i, j in engine_fit.related_pairs(group.rules):
        a, b = _key(group.rules[i]), _key(group.rules[j])
        assert before[a] < before[b] and after[a] < after[b]
    assert engine_fit.split_group(group, limit) == pieces  # deterministic
    assert len({p.name for p in pieces}) == len(pieces)


@pytest.mark.parametrize("limit", [1, 5, 20])
@pytest.mark.parametrize("over", [-1, 0, 1, 2, 21])
@pytest.mark.parametrize("chained", [False, True])
def test_a_run_is_cut_into_the_fewest_pieces_within_the_limit(limit, over, chained):
    """The fallback cut of split_group (a run of one kind), at the limit's edges: a run one rule over the
    limit (21 rules against Mimir's 20) is two pieces. The random groups above reach that edge rarely."""
    n = max(1, limit + over)
    pairs = {(k, k + 1) for k in range(n - 1)} if chained else set()
    pieces = engine_fit._cut(list(range(n)), limit, pairs)
    assert [k for p in pieces for k in p] == list(range(n))
    assert len(pieces) == math.ceil(n / limit) and all(len(p) <= limit for p in pieces)


def test_a_reader_evaluated_before_its_writer_stays_before_it():
    """A rule may read the previous evaluation's value of a rule after it (here an ALERTS reader and the
    alert it reads): splitting must not move the reader after the writer."""
    group = RuleGroup("rulesgen-x", (
        Rule(expr='sum(ALERTS{alertname="Hot"})', record="r:alerts:sum"),
        Rule(expr="r:a:b > 1", alert="Hot", labels=(("severity", "warning"),)),
        Rule(expr="vector(1)", record="r:a:b"),
        Rule(expr="r:alerts:sum > 0", alert="Many", labels=(("severity", "warning"),)),
    ), 60)
    assert engine_fit.split_group(group, 20) == (group,)  # one chain: one group
    apart = RuleGroup("rulesgen-x", (Rule(expr="vector(2)", record="r:c:d"), *group.rules), 60)
    pieces = engine_fit.split_group(apart, 20)
    assert [(p.name, [r.record or r.alert for r in p.rules]) for p in pieces] == [
        ("rulesgen-x", ["r:c:d"]), ("rulesgen-x-reads-alerts", ["r:alerts:sum", "Hot", "r:a:b", "Many"])]
    pieces = engine_fit.split_group(apart, 3)  # cut: the reader still before its writer
    order = [r.record or r.alert for p in pieces for r in p.rules]
    assert order.index("r:alerts:sum") < order.index("Hot") and order.index("r:alerts:sum") < order.index("Many")


def test_a_group_equal_to_one_split_before_is_split_into_its_own_rules():
    """The pieces are worked out once per process for the same texts (a test suite plans the same catalog
    again and again), but each split returns the rules it was given: with their own catalog positions."""
    def group(path):
        return RuleGroup("rulesgen-y", tuple(
            Rule(expr=f'sum(ALERTS{{alertname="A{i}"}})' if i % 3 == 0 else f"vector({i})", record=f"r:y:{i}",
                 source=Where(path, i + 1, 1)) for i in range(25)), 60)
    first, second = engine_fit.split_group(group("a/failure_modes.yaml"), 20), engine_fit.split_group(group("b/failure_modes.yaml"), 20)
    assert first == second and len(first) == 2  # equal: sources are not compared
    assert {r.source.path for p in first for r in p.rules} == {"a/failure_modes.yaml"}
    assert {r.source.path for p in second for r in p.rules} == {"b/failure_modes.yaml"}
    changed = engine_fit.split_group(RuleGroup("rulesgen-y", group("a").rules[:5], 60), 20)
    assert [len(p.rules) for p in changed] == [2, 3]  # another group: its own pieces


def test_prometheus_dependency_analysis_conditions():
    """rules/group.go (3.5) buildDependencyMap gives up on a selector without a metric-name matcher and on
    one whose name matcher matches ALERTS or ALERTS_FOR_STATE."""
    assert engine_fit.serial_reason('ALERTS{alertstate="firing"}') == "reads ALERTS"
    assert engine_fit.serial_reason("max_over_time(ALERTS_FOR_STATE[5m])") == "reads ALERTS_FOR_STATE"
    assert engine_fit.serial_reason('{__name__=~"ALERTS.*"}') == "reads ALERTS"
    assert engine_fit.serial_reason('count({__name__!="up", job="x"})') == "reads ALERTS"
    assert engine_fit.serial_reason('{job="x"}') == "a selector without a metric name"
    assert engine_fit.serial_reason('{__name__=~"DCGM_FI_DEV_GPU_TEMP|DCGM_FI_DEV_MEMORY_TEMP"}') is None
    assert engine_fit.serial_reason("rate(DCGM_FI_DEV_XID_ERRORS[5m])") is None


@pytest.mark.parametrize("value, message", [
    ("3", "max_rules_per_group: 3 is out of range: 0 (no limit) or [5, 1000]"),
    ("1001", "max_rules_per_group: 1001 is out of range: 0 (no limit) or [5, 1000]"),
    ("-1", "max_rules_per_group: -1 is out of range"),
    ("twenty", "rulesgen.yaml.max_rules_per_group must be an integer, got 'twenty'"),
])
def test_max_rules_per_group_is_validated_by_key(tmp_path, value, message):
    config = tmp_path / "rulesgen.yaml"
    config.write_text(f"evaluation_interval: 1m\nmax_rules_per_group: {value}\n")
    errors = errors_of(load_settings, config)
    assert len(errors) == 1 and errors[0].startswith(f"{config}:2:") and message in errors[0], errors


def test_max_rules_per_group_drives_the_split(tmp_path):
    catalog = load_catalog(ROOT / "catalog")
    sizes = {}
    for limit in (0, 5, 20):
        config = tmp_path / f"{limit}.yaml"
        config.write_text(f"max_rules_per_group: {limit}\n")
        files = rule_builder.build_rules(catalog, load_settings(config)).files
        sizes[limit] = [len(g.rules) for f in files for g in f.groups]
    assert max(sizes[0]) > 20 and max(sizes[20]) <= 20 and max(sizes[5]) <= 5
    assert len(sizes[5]) <= engine_fit.MIMIR_MAX_GROUPS_PER_TENANT
    assert sum(sizes[0]) == sum(sizes[5]) == sum(sizes[20])


def test_lint_checks_group_size_alert_readers_fields_and_count(tmp_path):
    for code in ("group-size", "group-count", "alerts-reader-mixed", "engine-field"):
        assert code in CHECKS
    big = tmp_path / "big.yaml"
    big.write_text("groups:\n- name: big\n  query_offset: 1m\n  eval_delay: 30s\n  rules:\n"
                   + "".join(f"  - record: r:x:{i}\n    expr: vector({i})\n" for i in range(21))
                   + '  - record: r:alerts:count\n    expr: count(ALERTS)\n')
    found = [(f.line, f.code, f.severity) for f in lint_files([big])]
    assert found == [(2, "alerts-reader-mixed", "warning"), (2, "group-size", "warning"),
                     (3, "engine-field", "error"), (4, "engine-field", "error")]
    assert [f.code for f in lint_files([big], max_rules=0)].count("group-size") == 0
    many = tmp_path / "many.yaml"
    many.write_text("groups:\n" + "".join(f"- name: g{i}\n  rules:\n  - record: r:x:{i}\n    expr: vector(1)\n"
                                          for i in range(71)))
    found = lint_files([many])
    assert [(f.code, f.message.split(":")[0]) for f in found] == [("group-count", "g70")]
    # a shard's files go to each shard's own Prometheus or vmalert, never to a Mimir ruler: not counted
    shard = tmp_path / "shard.yaml"
    shard.write_text("# Tier shard (every shard loads this file)\n" + many.read_text())
    assert not [f for f in lint_files([shard]) if f.code == "group-count"]
    assert [(f.path, f.code) for f in lint_files([shard, many])] == [(str(many), "group-count")]


def test_lint_reports_the_unsplit_groups(monkeypatch, tmp_path):
    """The rule files as they were before engine fit fail exactly these checks."""
    paths = []
    for f in _unsplit(monkeypatch):
        paths.append(tmp_path / Path(f.path).name)
        paths[-1].write_text(render_rule_file(f))
    found = sorted({(f.code, f.message.split(":")[0]) for f in lint_files(paths)})
    # not rulesgen-baselines: every rule of it is linked to its ALERTS reader
    assert found == [("alerts-reader-mixed", "rulesgen-efficiency-alerts"), ("alerts-reader-mixed", "rulesgen-gpu-signals"),
                     ("alerts-reader-mixed", "rulesgen-health-alerts"), ("alerts-reader-mixed", "rulesgen-jobs-alerts"),
                     ("group-size", "rulesgen-gpu-signals"), ("group-size", "rulesgen-health-alerts")]


def test_delay_field_only_where_the_engine_accepts_it(tmp_path, promtool, vmalert):
    """A group's query delay is query_offset in a PrometheusRule (Prometheus >= 2.53), eval_delay in a
    VMRule (vmalert), and absent from plain rule files; each engine loads its own form."""
    files = [RuleFile("alerts/prometheus/global.yaml",
                      (RuleGroup("rulesgen-global", (Rule(expr="vector(1)", record="r:x:one"),), 60, 30),), "test")]
    assert "query_offset" not in render_rule_file(files[0]) and "eval_delay" not in render_rule_file(files[0])
    out = KubeOutput(enabled=True)
    prom = yaml.safe_load(kube.rule_resources(files, out, kube.PROMETHEUS_RULE)[0].text)["spec"]
    vm = yaml.safe_load(kube.rule_resources(files, out, kube.VMRULE)[0].text)["spec"]
    assert prom["groups"][0]["query_offset"] == "30s" and "eval_delay" not in prom["groups"][0]
    assert vm["groups"][0]["eval_delay"] == "30s" and "query_offset" not in vm["groups"][0]
    (tmp_path / "prom.yaml").write_text(yaml.safe_dump(prom))
    (tmp_path / "vm.yaml").write_text(yaml.safe_dump(vm))
    ok = subprocess.run([promtool, "check", "rules", str(tmp_path / "prom.yaml")], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    ok = subprocess.run([vmalert, "-dryRun", f"-rule={tmp_path / 'vm.yaml'}"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr[-500:]
    # ... and each rejects the other's: why plain files carry neither (lint engine-field).
    bad = subprocess.run([promtool, "check", "rules", str(tmp_path / "vm.yaml")], capture_output=True, text=True)
    assert bad.returncode != 0 and "eval_delay" in bad.stdout + bad.stderr
    bad = subprocess.run([vmalert, "-dryRun", f"-rule={tmp_path / 'prom.yaml'}"], capture_output=True, text=True)
    assert bad.returncode != 0 and "query_offset" in bad.stdout + bad.stderr


REGROUPED = ["dcgm-health-covered", "shard-ghost-loss-dbe-other-node"]


@replay_fixture
def regrouped_alerts(request):
    """{(scenario, "unsplit" | "split"): the alerts at each step} for each scenario, and {"groups": (groups
    split, groups unsplit)}: each replay runs when a test reads it."""
    rendered, promtool = request.getfixturevalue("rendered"), request.getfixturevalue("promtool")
    base = request.getfixturevalue("tmp_path_factory").mktemp("regrouped")

    @functools.cache
    def paths() -> dict:
        unsplit = base / "unsplit"
        unsplit.mkdir()
        with pytest.MonkeyPatch.context() as patch:
            files = [f for f in _unsplit(patch) if f.path not in artifacts.DASHBOARD_ONLY]
        for f in files:
            (unsplit / Path(f.path).name).write_text(render_rule_file(f))
        return {"unsplit": [unsplit / Path(f.path).name for f in files], "split": [rendered / f.path for f in files]}

    catalog = load_catalog(ROOT / "catalog")
    scenarios = artifacts.for_settings(load_scenarios([ROOT / "fixtures" / "scenarios" / f"{name}.yaml" for name in REGROUPED],
                                                      [fm.id for fm in catalog.failure_modes]), load_settings(ROOT / "rulesgen.yaml"))

    def job(s, name: str):
        workdir = base / f"{s.name}-{name}"
        workdir.mkdir()
        return se.alerts(se.replay(promtool, paths()[name], list(s.series), s.interval, s.evaluation_interval, s.duration,
                                   "ALERTS", workdir, name), "-")
    return {"groups": lambda: (len(se._groups(paths()["split"])), len(se._groups(paths()["unsplit"]))),
            **{(s.name, name): (lambda s=s, name=name: job(s, name)) for s in scenarios for name in ("unsplit", "split")}}


@pytest.mark.equality
@pytest.mark.parametrize("scenario", REGROUPED)
def test_regrouped_files_alert_exactly_as_the_unsplit_ones(regrouped_alerts, scenario):
    """On promtool, every alert (name, labels, pending or firing) at every evaluation step is the same
    with the regrouped files as with one group per kind: the scenarios exercise covers read through ALERTS
    (dcgm_health, xid_error) and the ghost-loss chain through gpu:hardware_alert:timestamp."""
    split_groups, unsplit_groups = regrouped_alerts["groups"]
    assert split_groups > unsplit_groups
    split, unsplit = regrouped_alerts[(scenario, "split")], regrouped_alerts[(scenario, "unsplit")]
    assert split == unsplit and sum(len(v) for v in split.values()) > 100
