"""The rendered rules proven on VictoriaMetrics: the scenarios' tests/vmalert/ files pass
`vmalert-tool unittest` (MetricsQL and vmalert's rule evaluation in one process, no server to run),
judged by the same expectations as tests/promtool/. rulesgen/builders/vmalert_tests.py builds the files;
docs/victoriametrics.md explains the format decisions and the engine differences.

vmalert-tool costs about three times promtool's CPU per scenario (docs/victoriametrics.md, section 4).
`make test` replays the representative SUBSET below (5 scenarios, about 2 minutes of CPU); the others are
marked slow: CI (`make test-vm-all REPLAY=rest`) replays those of ON_VMALERT_TOOL (every normal scenario, each
failure mode at each scrape interval), `make test-exhaustive` (marker exhaustive, on demand) the rest; one of
them: -k its name.
"""
import dataclasses
import os
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

import batches
import conftest
from conftest import ROOT
from treeasserts import canonical
from rulesgen.artifacts import DASHBOARD_ONLY, load_inputs
from rulesgen.promql import graph as rule_graph
from rulesgen.builders import promtool_tests, vmalert_tests
from rulesgen.builders.rules import build_rules
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.model.output import Rule
from rulesgen.render.prometheus import render_rule_file, rule_dict
from rulesgen.render.yamltext import dump
from rulesgen.load.scenarios import STALE, Expectation, Scenario, expand, load_scenarios

SCENARIO_DIR = ROOT / "fixtures" / "scenarios"
ALL = sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))

SUBSET = [
    # health: the six DBEs of fleet-capacity-degraded below (gpu-lost-*, which shows the engines'
    # documented differences, and the other health scenarios run in `make test-vm-all`)
    # efficiency (changes() differs between the engines)
    "dataloader-starvation",
    # baselines (fails without the dependency levels; the 9-day histories run in `make test-vm-all`)
    "baseline-deviation-hot-gpu",
    # fleet (reads ALERTS written by the other groups: the last level)
    "fleet-capacity-degraded",
    # jobs (the training jobs' own metrics; VictoriaMetrics drops NaN samples: docs/victoriametrics.md)
    "loss-nan-fp16-overflow",
    # normal load: a GPU touching its thermal limits for a minute (restarted counters, an idle node, MIG ... in
    # `make test-vm-all`: the quiet scenarios carry every field, so each makes every rule live in the batch; this
    # one adds 20 s of vmalert-tool CPU to it, the restarted counters 47 s, measured 2026-11-30)
    "normal-thermal-touch",
]

# vmalert-tool is CPU-bound: one Go thread per process and a lazier GC do the same work with about 20%
# less CPU when every core already runs one file (~200 MB per process). The environment wins.
TOOL_ENV = {"GOMAXPROCS": "1", "GOGC": "400"}


def scenario_models(names=None):
    catalog = load_catalog(bundled_catalog_dir())
    paths = [SCENARIO_DIR / f"{n}.yaml" for n in (names or ALL)]
    return load_scenarios(paths, [fm.id for fm in catalog.failure_modes])


def _on_vmalert_tool() -> list[str]:
    """CI's vmalert-tool proof: every quiet claim (the normal scenarios), SUBSET, and each failure mode at each
    scrape interval by its cheapest firing scenario (MetricsQL's documented differences, docs/victoriametrics.md,
    are in its windows, lookback, staleness and NaN, which meet the data at its scrape interval). The other
    fault scenarios repeat a mode at an interval held here; promtool replays them all (the suite took 31% less
    on 2026-12-01: docs/testing.md, "What CI proves")."""
    models = {s.name: s for s in scenario_models()}
    kept = [name for name, s in models.items() if s.is_normal or name in SUBSET]
    modes = [fm.id for fm in load_catalog(bundled_catalog_dir()).failure_modes]
    return sorted({*kept, *conftest.cheapest_per_mode_and_interval(models, modes, covered=kept)})


ON_VMALERT_TOOL = _on_vmalert_tool()
# outside SUBSET: marked slow, deselected by make test; outside ON_VMALERT_TOOL: exhaustive (make test-exhaustive)
REPLAYED = conftest.replay_cases(ALL, SUBSET, marks=lambda name: () if name in ON_VMALERT_TOOL else (pytest.mark.exhaustive,))


def replayed_files():
    catalog, settings = load_inputs(bundled_catalog_dir(), ROOT / "rulesgen.yaml")
    return [f for f in build_rules(catalog, settings).files if f.path not in DASHBOARD_ONLY]


def test_ci_replays_every_quiet_claim_and_every_failure_mode_at_every_scrape_interval():
    models = scenario_models()
    assert conftest.modes_at_intervals(s for s in models if s.name in ON_VMALERT_TOOL) == conftest.modes_at_intervals(models)
    assert {s.name for s in models if s.is_normal} | set(SUBSET) < set(ON_VMALERT_TOOL) < set(ALL)
    assert conftest.marked(REPLAYED, "exhaustive") == set(ALL) - set(ON_VMALERT_TOOL)


def test_subset_covers_every_group_and_a_normal_scenario():
    catalog = load_catalog(bundled_catalog_dir())
    group_of = {fm.id: fm.group for fm in catalog.failure_modes}
    scenarios = scenario_models(SUBSET)
    assert {group_of[e.failure_mode] for s in scenarios for e in s.expect} == set(group_of.values())
    assert sum(s.is_normal for s in scenarios) >= 1


# --- the document builder (no binaries) ------------------------------------------------------------

def _scenario(**changes) -> Scenario:
    s = Scenario(name="probe", path="fixtures/scenarios/probe.yaml", description="probe", interval=30,
                 evaluation_interval=60, duration=3600,
                 series=(('up{job="dcgm-exporter", instance="10.0.0.1:9400"}', "1x120"),
                         ('m{gpu="0"}', "0x40 stale _x10 1+1x68")),
                 expect=(Expectation("ecc_uncorrectable", (("Hostname", "node-1"), ("gpu", "0")), 1200, 180),),
                 also_allowed=("xid_error",))
    return dataclasses.replace(s, **changes)


def test_document_is_vmalert_tool_format_with_promtools_queries():
    s = _scenario()
    doc = vmalert_tests.scenario_test(s, ["rules/levels.yaml"], ["rulesgen-level1", "rulesgen-level2"])
    assert list(doc) == ["rule_files", "evaluation_interval", "group_eval_order", "tests"]
    assert doc["rule_files"] == ["rules/levels.yaml"] and doc["evaluation_interval"] == "1m"
    assert doc["group_eval_order"] == ["rulesgen-level1", "rulesgen-level2"]
    (group,) = doc["tests"]
    assert set(group) == {"name", "interval", "input_series", "metricsql_expr_test"}
    assert group["interval"] == "30s"
    assert group["input_series"] == [{"series": k, "values": v} for k, v in s.series]  # verbatim (see below)
    expected, unexpected = group["metricsql_expr_test"]
    assert {t["eval_time"] for t in group["metricsql_expr_test"]} == {"1h"}
    # first firing measured from the replay's start: vmalert-tool 1.145 starts at 0, later ones at 2000-01-01
    first = promtool_tests.first_firing_expr(s, {"failure_mode": "ecc_uncorrectable", "Hostname": "node-1", "gpu": "0"})
    assert canonical(expected["expr"]) == canonical(f"(({first} - time() + 3600) >= bool 1200) * (({first} - time() + 3600) <= bool 1380)")
    assert expected["exp_samples"] == [{"labels": "{}", "value": 1}]
    assert unexpected == {"expr": promtool_tests.unexpected_expr(s), "eval_time": "1h", "exp_samples": []}
    # promtool's own expectation stays as it was (time starts at 0 there)
    assert canonical(promtool_tests.expectation_expr(s, s.expect[0])) == canonical(f"({first} >= bool 1200) * ({first} <= bool 1380)")


def test_normal_scenario_has_only_the_nothing_fires_query():
    doc = vmalert_tests.scenario_test(_scenario(expect=(), also_allowed=()), ["r.yaml"], ["g"])
    (only,) = doc["tests"][0]["metricsql_expr_test"]
    assert canonical(only["expr"]) == canonical('max_over_time(ALERTS{alertstate="firing"}[1h1m])') and only["exp_samples"] == []


def _rule(name: str, expr: str, alert: bool = False) -> Rule:
    return Rule(expr=expr, alert=name, failure_mode="x") if alert else Rule(expr=expr, record=name)


def test_rule_levels_follow_promtool_order():
    rules = [
        _rule("a:x:sum", "sum(m)"),
        _rule("b:x:sum", 'a:x:sum * on () group_left last_over_time(d:x:sum[1h])'),  # d comes later: previous value
        _rule("c:x:sum", 'b:x:sum + c:x:sum offset 1m'),      # itself: previous value, no constraint
        _rule("d:x:sum", 'label_replace(vector(0), "x", "a:x:sum", "", "")'),  # a name in a string is not a read
        _rule("Hot", "c:x:sum > 1", alert=True),
        _rule("Cold", "a:x:sum < 1", alert=True),
        _rule("Many", 'count(ALERTS{alertstate="firing"}) > 2', alert=True),
    ]
    assert vmalert_tests.rule_levels(rules) == [1, 2, 3, 2, 4, 2, 5]


def test_rule_copy_keeps_every_rule_and_puts_readers_after_what_they_read():
    files = replayed_files()
    copy = vmalert_tests.vmalert_rule_file(files)
    original = [r for f in files for g in f.groups for r in g.rules]
    copied = [r for g in copy.groups for r in g.rules]
    assert sorted(map(repr, map(rule_dict, copied))) == sorted(map(repr, map(rule_dict, original)))
    assert [g.name for g in copy.groups] == [f"rulesgen-level{i}" for i in range(1, len(copy.groups) + 1)]
    assert all(g.interval_seconds is None for g in copy.groups)
    assert "\n  interval:" not in render_rule_file(copy)
    level = {id(r): i for i, g in enumerate(copy.groups) for r in g.rules}
    position = {id(r): i for i, r in enumerate(original)}
    for g in copy.groups:  # inside a level, promtool order
        assert [position[id(r)] for r in g.rules] == sorted(position[id(r)] for r in g.rules)
    graph = rule_graph.Graph(original)  # an alert's ALERTS read by its name and fixed labels: test_promql_tree
    for k, reader in enumerate(original):
        for read in (original[j] for j in graph.read_rules(k) - {k}):
            if position[id(read)] < position[id(reader)]:
                assert level[id(read)] < level[id(reader)], (reader.record or reader.alert, read.record or read.alert)
            else:
                assert level[id(read)] >= level[id(reader)], (reader.record or reader.alert, read.record or read.alert)
    fleet = next(r for r in original if r.failure_mode == "fleet_capacity_degraded")
    # reads the firing ALERTS whose action is drain: after every alert that drains, and only those
    drains = [r for r in original if r.alert and dict(r.labels).get("action") == "drain"]
    assert len(drains) > 3 and level[id(fleet)] > max(level[id(r)] for r in drains)
    assert len(copy.groups) < 15  # 29 while every ALERTS selector counted as reading every alert


# vmalert-tool 1.145's reading of input_series values (app/vmalert-tool/unittest/input.go,
# parseInputValue), ported to check that our scenarios mean the same to both tools. Known differences
# from promtool: `_x0` is one missing sample (promtool: none), `a+bxN` is a+b*i (promtool adds b step by
# step, so fractional steps may differ in the last bit), and `stale` takes no `xN`.
_VM_NUMBER = re.compile(r"(?i)[+x-]?(?:\d+(?:\.\d*)?|\.\d+|inf|nan|_)(?:e[+-]?\d+)?[+x-]?")


def vmalert_tool_values(text: str, origin: bool = True) -> list:
    out: list = []
    for item in text.split():
        if item == "stale":
            out.append(STALE)
            continue
        parts = _VM_NUMBER.findall(item)
        if len(parts) == 1:
            out.append(None if parts[0] == "_" else float(parts[0]))
        elif len(parts) == 2 and parts[0][-1] == "x":
            base, n = parts[0][:-1], int(parts[1])
            if base == "_":
                out += [None] * max(n, 1)
            elif origin and float(base) != 0:
                out += vmalert_tool_values(f"{base}+0x{n}", False)
            else:
                out += [float(base) * i for i in range(n + 1)]
        elif len(parts) == 3:
            a, sign = float(parts[0][:-1]), parts[0][-1]
            out += [a + v if sign == "+" else a - v for v in vmalert_tool_values(parts[1] + parts[2], False)]
        else:
            raise ValueError(item)
    return out


def test_input_notation_port_agrees_with_the_documented_differences():
    assert vmalert_tool_values("1x3 _x2 stale -2+4x3 1-2x2") == \
        [1, 1, 1, 1, None, None, STALE, -2, 2, 6, 10, 1, -1, -3]
    assert vmalert_tool_values("1 _x0 2") == [1, None, 2] and expand("1 _x0 2") == [1, 2]


def test_every_scenario_means_the_same_to_vmalert_tool_and_promtool():
    """So the input series are copied verbatim; a scenario using `_x0` or fractional `a+bxN` steps
    would need them rewritten."""
    def same(values):  # NaN (a training loss) is never equal to itself
        return [repr(v) if isinstance(v, float) and v != v else v for v in values]
    # Both readings take a values string token by token, so each distinct token is checked once (and a token
    # that reads otherwise is traced back to a series using it).
    tokens = set()
    for s in scenario_models():
        for _, values in s.series:
            tokens.update(values.split())
    for tok in tokens:
        if same(vmalert_tool_values(tok)) != same(expand(tok)):
            name, series = next((s.name, series[:80]) for s in scenario_models() for series, values in s.series
                                if tok in values.split())
            pytest.fail(f"{name}: {series}: {tok!r} reads otherwise")


# --- vmalert-tool --------------------------------------------------------------------------------

def run_unittest(binary: str, path: Path, timeout: int = 900) -> tuple[int, str, float]:
    started = time.monotonic()
    proc = subprocess.run([binary, "unittest", "--files", path.name], cwd=path.parent, capture_output=True,
                          text=True, timeout=timeout, env={**TOOL_ENV, **os.environ})
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started


@pytest.mark.engines
def test_vmalert_tool_evaluates_groups_at_the_test_interval_and_chains_only_across_groups(vmalert_tool, tmp_path):
    """Why tests/vmalert/rules/levels.yaml exists: inside one group a rule reads the previous
    evaluation of the rule before it (promtool: this one); a later group reads this evaluation; and
    a group's `interval:` does not change how often it runs."""
    (tmp_path / "rules.yaml").write_text(dump({"groups": [
        {"name": "one", "interval": "5m", "rules": [{"record": "a", "expr": "sum(m)"},
                                                    {"record": "lag", "expr": "sum(m) - a"}]},
        {"name": "two", "rules": [{"record": "same", "expr": "sum(m) - a"}]}]}))
    count = 'count_over_time({__name__="%s"}[30m])'
    (tmp_path / "probe.yaml").write_text(dump({
        "rule_files": ["rules.yaml"], "evaluation_interval": "1m", "group_eval_order": ["one", "two"],
        "tests": [{"interval": "1m", "input_series": [{"series": 'm{k="v"}', "values": "0+1x30"}],
                   "metricsql_expr_test": [
                       {"expr": count % "a", "eval_time": "30m", "exp_samples": [{"labels": "{}", "value": 30}]},
                       {"expr": "max(max_over_time(lag[30m]))", "eval_time": "30m",  # max: a background flush
                        "exp_samples": [{"labels": "{}", "value": 1}]},         # may land between the two
                       {"expr": "max(max_over_time(same[30m])) + min(min_over_time(same[30m]))", "eval_time": "30m",
                        "exp_samples": [{"labels": "{}", "value": 0}]}]}]}))
    rc, output, _ = run_unittest(vmalert_tool, tmp_path / "probe.yaml", timeout=120)
    assert rc == 0, output


@pytest.mark.engines
def test_vmalert_tool_reports_a_missed_expectation_and_a_false_alert(vmalert_tool, tmp_path):
    """The judge works on vmalert-tool: the same replay passes with the right expectation, and fails
    with one on another GPU (missed, and the real alert is then a false one)."""
    labels = ('job="dcgm-exporter", instance="10.0.0.1:9400", cluster="c1", gpu="0", UUID="GPU-0", device="nvidia0", '
              'modelName="NVIDIA H100 80GB HBM3", Hostname="node-1"')
    right = _scenario(name="right", series=(
        ('up{job="dcgm-exporter", instance="10.0.0.1:9400", cluster="c1"}', "1x120"),
        (f"DCGM_FI_DEV_GPU_TEMP{{{labels}}}", "60x120"),
        (f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{labels}}}", "0x40 2x79")), also_allowed=())
    wrong = dataclasses.replace(right, name="wrong", expect=(
        Expectation("ecc_uncorrectable", (("Hostname", "node-1"), ("gpu", "1")), 1200, 180),))
    copy = vmalert_tests.vmalert_rule_file(replayed_files(), path="rules/levels.yaml")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "levels.yaml").write_text(render_rule_file(copy))
    order = [g.name for g in copy.groups]
    results = {}
    for s in (right, wrong):
        (tmp_path / f"{s.name}.yaml").write_text(dump(vmalert_tests.scenario_test(s, ["rules/levels.yaml"], order)))
    with ThreadPoolExecutor(max_workers=2) as pool:
        for s, result in zip((right, wrong), pool.map(lambda s: run_unittest(vmalert_tool, tmp_path / f"{s.name}.yaml", 300),
                                                      (right, wrong))):
            results[s.name] = result
    assert results["right"][0] == 0, results["right"][1]
    rc, output, _ = results["wrong"]
    assert rc != 0
    assert r'gpu=\"1\"' in output and "exp: {} 1E+00" in output  # the missed expectation (query quoted)
    assert re.search(r'got: \{[^}]*alertname="GPUECCUncorrectable"[^}]*gpu="0"', output), output  # the false alert


@conftest.replay_fixture
def vmalert_results(request):
    """vmalert-tool on the rendered scenario tests, in batches (tests/batches.py)."""
    rendered, vmalert_tool = request.getfixturevalue("rendered"), request.getfixturevalue("vmalert_tool")
    return lambda names: batches.jobs([rendered / "tests" / "vmalert" / f"{n}.yaml" for n in names],
                                      lambda f: run_unittest(vmalert_tool, f))


def test_every_scenario_has_a_vmalert_test(rendered):
    assert sorted(p.stem for p in (rendered / "tests" / "vmalert").glob("*.yaml")) == ALL
    assert [p.name for p in (rendered / "tests" / "vmalert" / "rules").glob("*.yaml")] == ["levels.yaml"]
    doc = yaml.safe_load((rendered / "tests" / "vmalert" / f"{ALL[0]}.yaml").read_text())
    levels = yaml.safe_load((rendered / "tests" / "vmalert" / "rules" / "levels.yaml").read_text())
    assert doc["group_eval_order"] == [g["name"] for g in levels["groups"]]


@pytest.mark.engines
@pytest.mark.parametrize("scenario", REPLAYED)
def test_scenario_passes_vmalert_tool(vmalert_results, scenario):
    rc, output, _ = vmalert_results[scenario]
    assert rc == 0, (f"vmalert-tool unittest --files tests/vmalert/{scenario}.yaml failed (promtool's verdict: "
                     f"tests/test_scenarios.py; engine differences: docs/victoriametrics.md):\n{output[-6000:]}")
    # vmalert expands every firing alert's annotations, which promtool checks only where a test names them
    assert "templating error" not in output, output[output.index("templating error") - 300:][:3000]
