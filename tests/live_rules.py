"""The rules that can write anything in a replay, so a replay evaluates those alone.

Both engines pay for every rule at every evaluation step, whatever the data: promtool parses and runs each
rule's query at each step, vmalert-tool sends each as a query to its own storage. A fault scenario carries only
the series its failure modes read (fixtures/README.md), so most of the rules read series it does not have:
they write nothing at every step, and only cost time (measured on exporter-down, 3 input names, 25 of 128 rules
live: promtool 43 -> 10.5 s, vmalert-tool 53 -> 33 s).

A rule is live when its expression can return a sample given the names a replay holds: its input series' names
and the outputs of live rules (ALERTS: of the live alerts its matchers can select), to a fixed point. An
expression returns nothing when a selector matches no name it could read, and emptiness flows as both engines define it: a function or an
aggregation of nothing is nothing, `a and b` and every arithmetic or comparison between two vectors needs both,
`a or b` either, `a unless b` its left side; `absent()`, `vector()` and the scalar functions always return.
Anything the walk does not know is live. Leaving out a rule that writes nothing changes no other rule's input,
so a replay of the live rules writes the same series and alerts at every step as a replay of all of them
(tests/test_live_rules.py holds that on the engines); the normal scenarios, which carry every field, still
replay every rule.
"""
from __future__ import annotations

import json
from pathlib import Path

import promql_parser as pp

from rulesgen.promql.graph import ALERT_SERIES, known_alert_labels
from rulesgen.promql.text import series_labels
from rulesgen.promql.tree import PromQLSyntaxError, Selector, parse, selector_from
from rulesgen.render import yamltext

ALWAYS = frozenset({"absent", "absent_over_time", "vector", "scalar", "time", "pi"})  # return something whatever they read


def series_name(text: str) -> str:
    """The metric name of a series in promtool's notation (`name{...}` or `{__name__="name", ...}`)."""
    return text.partition("{")[0].strip() or series_labels(text).get("__name__", "")


def _selects(s: Selector, name: str) -> bool:
    return s.name in (None, name) and s.may_select({"__name__": name})


def returns(e: pp.Expr, names: set[str], alerts: list[dict[str, str]]) -> bool:
    """Whether e can return a sample when the engine holds series of these names only, and alerts of these
    rules (each the labels its ALERTS carry whatever its expression gives: graph.known_alert_labels)."""
    if isinstance(e, pp.VectorSelector):
        s = selector_from(e)
        if any(_selects(s, n) for n in names):
            return True
        return any(_selects(s, n) for n in ALERT_SERIES) and any(s.may_select(labels) for labels in alerts)
    if isinstance(e, pp.MatrixSelector):
        return returns(e.vector_selector, names, alerts)
    if isinstance(e, (pp.ParenExpr, pp.UnaryExpr, pp.SubqueryExpr, pp.AggregateExpr)):  # an aggregation's parameter is a scalar
        return returns(e.expr, names, alerts)
    if isinstance(e, pp.Call):
        return e.func.name in ALWAYS or all(returns(a, names, alerts) for a in e.args)
    if isinstance(e, pp.BinaryExpr):
        op = str(e.op)
        if op == "or":
            return returns(e.lhs, names, alerts) or returns(e.rhs, names, alerts)
        if op == "unless":
            return returns(e.lhs, names, alerts)
        return returns(e.lhs, names, alerts) and returns(e.rhs, names, alerts)
    return True  # a number, a string, or a node this walk does not know


def live(rules: list[dict], names: set[str]) -> list[bool]:
    """For each rule (a rule file's dict, in any order), whether it can write anything over input series of
    these names. A rule that does not parse is live."""
    held, alerts = set(names), []
    out = [False] * len(rules)
    changed = True
    while changed:
        changed = False
        for i, rule in enumerate(rules):
            if out[i]:
                continue
            try:
                out[i] = returns(parse(str(rule["expr"])), held, alerts)
            except PromQLSyntaxError:
                out[i] = True
            if out[i]:
                changed = True
                if "alert" in rule:
                    alerts.append(known_alert_labels(rule["alert"], rule.get("labels")))
                else:
                    held.add(rule["record"])
    return out


def pruned(doc: dict, folder: Path) -> dict:
    """The test document (rule files absolute: batches.load) replaying only the rules live over its input
    series: a copy of each rule file in `folder` without the others (and without a group or a file left
    empty; `group_eval_order` keeps the groups left, in order)."""
    names = {series_name(s["series"]) for test in doc["tests"] for s in test["input_series"]}
    files = [yamltext.load(Path(f).read_text()) or {} for f in doc["rule_files"]]
    rules = [r for f in files for g in f.get("groups") or [] for r in g["rules"]]
    keep = {id(r) for r, ok in zip(rules, live(rules, names)) if ok}
    paths, kept_groups = [], set()
    for k, f in enumerate(files):
        groups = [{**g, "rules": [r for r in g["rules"] if id(r) in keep]} for g in f.get("groups") or []]
        groups = [g for g in groups if g["rules"]]
        if groups:  # a file left empty is left out (vmalert refuses a file without groups)
            kept_groups.update(g["name"] for g in groups)
            path = Path(folder) / f"live-{k}-{Path(doc['rule_files'][k]).name}"
            path.write_text(json.dumps({"groups": groups}))  # JSON is YAML to both engines: dumped 50x faster
            paths.append(str(path))
    if not paths:
        return doc
    out = {**doc, "rule_files": paths}
    if doc.get("group_eval_order"):
        out["group_eval_order"] = [g for g in doc["group_eval_order"] if g in kept_groups]
    return out


def write_pruned(doc: dict, path: Path, folder: Path | None = None) -> Path:
    """Write the test document to `path` replaying only its live rules (pruned; their copies in `folder`,
    else beside it) as JSON, which is YAML to both engines; returns the path."""
    path.write_text(json.dumps(pruned(doc, folder or path.parent)))
    return path


def bundled_rule_files(folder: Path, names: tuple[str, ...], config: Path | None = None) -> list[str]:
    """The single-server rule files of the bundled catalog's render (with `config`) whose names are among `names`
    (e.g. "recording.yaml"), written into folder, in their rendered order."""
    from rulesgen import artifacts
    from rulesgen.catalog import bundled_catalog_dir
    plan = artifacts.plan(bundled_catalog_dir(), config, None)
    paths = []
    for f in plan.rules.files:
        if f.path.startswith("alerts/prometheus/") and Path(f.path).name in names:
            path = folder / Path(f.path).name
            path.write_text(next(a.text for a in plan.artifacts if a.path == f.path))
            paths.append(str(path))
    return paths


def promtool_expr_test(promtool: str, rule_files: list[str], folder: Path, interval: str, series: list[dict],
                       checks: list[dict]) -> None:
    """promtool's unit test of `checks` (promql_expr_test) over `series`, on the live rules of rule_files, the
    groups in their files' order (without group_eval_order promtool 2.42 runs them in Go map order)."""
    import subprocess
    import yaml
    order = [g["name"] for p in rule_files for g in yaml.safe_load(Path(p).read_text())["groups"]]
    test = {"rule_files": rule_files, "evaluation_interval": interval, "group_eval_order": order,
            "tests": [{"interval": interval, "input_series": series, "promql_expr_test": checks}]}
    path = write_pruned(test, folder / "test.yaml")
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
