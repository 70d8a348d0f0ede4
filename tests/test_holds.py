"""Every alert's hold, in `make test`: for each mode of the catalog, the cheapest scenario that expects it
(and PER_ALERT's, for the alerts of a mode that scenario does not fire) is replayed through promtool on the
rules its expected alerts need (the alerts and every record they read, transitively, and the alerts their
ALERTS selectors can match), in the rendered order, so each alert computes exactly what the whole rule set
computes. The first firing of every expectation must lie in its window, and that of each alert of its mode
firing for it, named with its severity and action, equal the one recorded in tests/first_firing.yaml: a longer
or shorter `for`, window or threshold, another severity or action shows as a changed page, to be reviewed like
a changed rendered file.

CI replays every scenario on the whole rule set (tests/test_scenarios.py, test_victoriametrics.py); this
file is what `make test` can afford for all of them (a fraction of the rules, a sample of scenarios).

After a deliberate change: `.venv/bin/python -m pytest tests/test_holds.py --update-first-firing`
rewrites tests/first_firing.yaml (review its diff)."""
import json
import re
import types
from pathlib import Path

import pytest
import yaml

import batches
import shard_equality as se
from conftest import ROOT, cheapest_per_mode, replay_fixture
from rulesgen import artifacts
from rulesgen.builders import promtool_tests
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.load.scenarios import load_scenarios
from rulesgen.load.settings import load_settings
from rulesgen.promql.graph import Graph

RECORDED = ROOT / "tests" / "first_firing.yaml"


def _scenarios():
    catalog = load_catalog(bundled_catalog_dir())
    found = load_scenarios(sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml")),
                           [fm.id for fm in catalog.failure_modes])
    return catalog, {s.name: s for s in artifacts.for_settings(found, load_settings(ROOT / "rulesgen.yaml"))}


CATALOG, SCENARIOS = _scenarios()


# The alerts of a mode that its cheapest scenario does not fire, each by the cheapest scenario that does (a mode
# with several alerts: its critical and warning halves). test_every_alert_of_the_rules_is_held holds that together
# with the per-mode sample they fire every alert of the rendered rules.
PER_ALERT = {"GPUMemoryRemapCritical": "memory-retired-pages-v100", "GPUXIDErrorCritical": "xid-119-gsp-timeout",
             "GPUXIDErrorWarning": "memory-remap-pending", "GPUXIDErrorInfo": "xid-31-mmu-fault"}


def sample() -> list[str]:
    """For every failure mode of the catalog (in its order), the scenario expecting it with the fewest
    evaluation steps x series, and PER_ALERT's; a mode that no scenario expects fails here, naming it."""
    for mode in CATALOG.failure_modes:
        assert any(e.failure_mode == mode.id for s in SCENARIOS.values() for e in s.expect), (
            f"failure mode {mode.id}: no scenario in fixtures/scenarios expects it")
    return sorted({*cheapest_per_mode(SCENARIOS, [mode.id for mode in CATALOG.failure_modes]), *PER_ALERT.values()})


SAMPLE = sample()


def needed_rules(files: list[Path], modes: set[str]) -> list[dict]:
    """The rendered rule files cut to the rules the alerts of `modes` need, groups and order kept."""
    docs = [yaml.safe_load(f.read_text()) for f in files]
    rules = [types.SimpleNamespace(**r) for doc in docs for g in doc["groups"] for r in g["rules"]]
    graph = Graph(rules)
    todo = [i for i, r in enumerate(rules) if getattr(r, "alert", None) and r.labels.get("failure_mode") in modes]
    keep: set[int] = set()
    while todo:
        i = todo.pop()
        if i not in keep:
            keep.add(i)
            todo.extend(graph.read_rules(i))
    out, i = [], 0
    for doc in docs:
        groups = []
        for g in doc["groups"]:
            kept = [r for k, r in enumerate(g["rules"], start=i) if k in keep]
            i += len(g["rules"])
            if kept:
                groups.append({**g, "rules": kept})
        if groups:
            out.append({"groups": groups})
    return out


def on_needed_rules(docs: list[dict], modes: set[str], workdir: Path) -> list[dict]:
    """The test documents (of one rule set) pointed at its rules cut to what `modes` need, written to workdir."""
    cut = needed_rules([Path(f) for f in docs[0]["rule_files"]], modes)
    paths = []
    for k, rules in enumerate(cut):
        paths.append(workdir / f"rules-{k}.yaml")
        paths[-1].write_text(json.dumps(rules))
    for doc in docs:
        doc["rule_files"] = list(map(str, paths))
        doc["group_eval_order"] = [g["name"] for rules in cut for g in rules["groups"]]
    return docs


def _first_firing_listing(s) -> dict:
    """The first firing time of every alert of the replay, printed by promtool (it expects none)."""
    window = s.duration + s.evaluation_interval
    expr = (f'min_over_time(timestamp(ALERTS{{alertstate="firing"}})[{window}s:{s.evaluation_interval}s])')
    return {"expr": f'label_replace({expr}, "{se.AT}", "{s.duration}", "", "")', "eval_time": f"{s.duration}s",
            "exp_samples": []}


def _onset_listing(s, i: int, e) -> dict:
    """For an expectation repeating an earlier one (a second fault): each alert's first new onset since its
    `after`, tagged repeat_index="i"."""
    expr = promtool_tests.onset_expr(s, 'ALERTS{alertstate="firing"}', e.after)
    expr = f'label_replace(label_replace({expr}, "{se.AT}", "{s.duration}", "", ""), "repeat_index", "{i}", "", "")'
    return {"expr": expr, "eval_time": f"{s.duration}s", "exp_samples": []}


def first_firings(promtool: str, test_files: list[Path], scenarios: list, workdir: Path) -> list[list[dict[str, int]]]:
    """Per scenario, per expectation of it, the first firing (seconds from the start) of each alert of its mode
    that matches it, on the rules its modes need; for a repeated expectation (promtool_tests.repeats), each
    one's first new onset since its `after`. Several scenarios replay as one batch (tests/batches.py, on the
    rules all their modes need: each alert still computes what the whole rule set computes); a batch promtool
    fails is replayed scenario by scenario."""
    docs = on_needed_rules([batches.load(f) for f in test_files], {e.failure_mode for s in scenarios for e in s.expect},
                           workdir)
    for doc, s in zip(docs, scenarios):
        doc["tests"][0]["promql_expr_test"] = [_first_firing_listing(s)] + [
            _onset_listing(s, i, e) for i, e in enumerate(s.expect) if promtool_tests.repeats(s, e)]
    if len(docs) > 1:
        try:
            run, failures = se._run(promtool, batches.merged(docs), workdir, "holds")
        except RuntimeError:
            failures = ("promtool refused the batch",)
        if failures:
            return [first_firings(promtool, [f], [s], workdir)[0] for f, s in zip(test_files, scenarios)]
    else:
        run, failures = se._run(promtool, docs[0], workdir, "holds")
        assert not failures, failures
    listed = [(*batches.untag(dict(labels)), min(points.values())) for (_, labels), points in run.samples.items()]
    return [_firsts(s, [(labels, t) for member, labels, t in listed if member == (k if len(docs) > 1 else None)])
            for k, s in enumerate(scenarios)]


def _firsts(s, firsts: list[tuple[dict, int]]) -> list[dict[str, int]]:
    """Per expectation, {alert: its first firing} of every alert of its mode that matches it (the alert named
    with how it pages: `GPUMemoryRemapWarning{action=investigate, severity=warning}`)."""
    out = []
    for i, e in enumerate(s.expect):
        found: dict[str, int] = {}
        for labels, t in firsts:
            if (labels.get("failure_mode") == e.failure_mode
                    and labels.get("repeat_index") == (str(i) if promtool_tests.repeats(s, e) else None)
                    and all(labels.get(k) == v for k, v in e.labels)):
                alert = _alert(labels)
                found[alert] = min(t, found.get(alert, t))
        out.append(found)
    return out


def _alert(labels: dict) -> str:
    return f"{labels.get('alertname')}{{action={labels.get('action')}, severity={labels.get('severity')}}}"


@replay_fixture
def hold_runs(request):
    """The first firings of the sampled scenarios, in batches (tests/batches.py)."""
    rendered, promtool = request.getfixturevalue("rendered"), request.getfixturevalue("promtool")
    base = request.getfixturevalue("tmp_path_factory").mktemp("holds")
    tests = rendered / "tests" / "promtool"

    def job(names: tuple[str, ...]) -> dict:
        work = base / names[0]
        work.mkdir()
        return dict(zip(names, first_firings(promtool, [tests / f"{n}.yaml" for n in names], [SCENARIOS[n] for n in names],
                                             work)))
    return lambda names: batches.per_batch([tests / f"{n}.yaml" for n in names], job)


def _key(s, e) -> str:
    again = f" again from {e.after}s" if promtool_tests.repeats(s, e) else ""
    return e.failure_mode + "{" + ", ".join(f"{k}={v}" for k, v in e.labels) + "}" + again


def _recorded() -> dict:
    return yaml.safe_load(RECORDED.read_text()) if RECORDED.exists() else {}


@pytest.mark.parametrize("name", SAMPLE)
def test_every_expectation_first_fires_in_its_window_at_its_recorded_time(name, hold_runs, request):
    s, firsts = SCENARIOS[name], hold_runs[name]
    measured = {_key(s, e): {alert: t - e.after for alert, t in sorted(found.items())} for e, found in zip(s.expect, firsts)}
    if request.config.getoption("--update-first-firing"):
        # scenarios no longer in the sample leave the file
        recorded = {k: v for k, v in _recorded().items() if k in SAMPLE}
        recorded[name] = measured
        RECORDED.write_text("# First firing of each expectation, seconds after its `after`, per alert of its mode that\n"
                            "# fires for it, named with how it pages (tests/test_holds.py; rewrite with\n"
                            "# --update-first-firing after a deliberate change, and review the diff).\n"
                            + yaml.safe_dump(dict(sorted(recorded.items())), sort_keys=True))
    for e, found in zip(s.expect, firsts):
        t = min(found.values(), default=None)
        assert t is not None and e.after <= t <= e.after + e.within, (
            f"{name}: {_key(s, e)} first fires at {t} s, expected within [{e.after}, {e.after + e.within}] s")
    assert measured == _recorded().get(name), (
        f"{name}: the first firings changed (seconds after the fault, per alert; was {_recorded().get(name)}): "
        "a changed `for`, window, threshold, severity or action changes when and how a user is paged. If "
        "deliberate, rerun with --update-first-firing and review tests/first_firing.yaml's diff.")


def test_the_recorded_first_firings_are_the_samples():
    """A scenario that left the sample (a cheaper one now covers its modes) leaves tests/first_firing.yaml,
    and one that joined it is recorded: an entry nothing replays would read as a checked page time."""
    recorded = set(_recorded())
    assert recorded == set(SAMPLE), (
        f"tests/first_firing.yaml: not in the sample: {sorted(recorded - set(SAMPLE))}; not recorded: "
        f"{sorted(set(SAMPLE) - recorded)} (rerun tests/test_holds.py with --update-first-firing)")


def test_every_alert_of_the_rules_is_held(rendered):
    """Every alert of the rendered rules has a recorded first firing, with its severity and action, in a
    scenario of the sample: a longer `for` or another severity of a mode's second alert shows too."""
    files = (rendered / "alerts" / "prometheus").glob("*.yaml")
    alerts = {r["alert"] for f in files for g in yaml.safe_load(f.read_text())["groups"] for r in g["rules"] if "alert" in r}
    held = {alert.split("{")[0] for found in _recorded().values() for firsts in found.values() for alert in firsts}
    assert alerts and alerts <= held, (
        f"no scenario of the holds' sample fires {sorted(alerts - held)}: add the cheapest scenario that expects it "
        "to PER_ALERT (tests/test_holds.py), or write one (fixtures/README.md)")


def test_the_sample_covers_every_failure_mode_of_the_catalog():
    fired = {e.failure_mode for name in SAMPLE for e in SCENARIOS[name].expect}
    assert {fm.id for fm in CATALOG.failure_modes} <= fired


def test_the_cut_keeps_an_alert_and_everything_it_reads(rendered):
    files = sorted((rendered / "alerts" / "prometheus").glob("*.yaml"))
    files = [f for f in files if f.stem != "aggregates"]
    cut = needed_rules(files, {"ecc_uncorrectable"})
    kept = [r for doc in cut for g in doc["groups"] for r in g["rules"]]
    modes = {r["labels"]["failure_mode"] for r in kept if "alert" in r}
    assert "ecc_uncorrectable" in modes and modes <= {"ecc_uncorrectable", "gpu_lost", "exporter_down"}, modes
    written = {r.get("record") for r in kept}
    for r in kept:  # every record a kept rule reads is kept
        for name in re.findall(r"\b[a-z_]+:[a-z0-9_]+:[a-z0-9_]+\b", r["expr"]):
            assert name in written, (r.get("alert") or r.get("record"), name)
    everything = sum(len(g["rules"]) for f in files for g in yaml.safe_load(f.read_text())["groups"])
    assert 0 < len(kept) < everything / 3
