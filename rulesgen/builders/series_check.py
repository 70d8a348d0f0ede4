"""After build: every series a rule or a dashboard query reads is produced -- recorded by the rule set, a
catalog metric (under any of its names), a training-job metric of the settings' contract, written by
Prometheus itself (ALERTS, up), or exported by kube-state-metrics (model/kube_state.py: the audience
dashboards' pods and Jobs) or the Kubeflow training operator (model/training_operator.py). For any catalog: a rename that leaves a reader behind fails here, naming
the rule (at its catalog position, or its rule file) or the dashboard panel."""
from __future__ import annotations

import json
import re

from grafanalib._gen import DashboardEncoder

from ..errors import Collector, Where
from ..load.mapping import did_you_mean
from ..load.settings import Settings
from ..model import kube_state, training_operator
from ..model.catalog import Catalog
from ..model.output import DashboardFile, RuleSet
from ..promql import tree as promql_tree

ENGINE_SERIES = ("ALERTS", "ALERTS_FOR_STATE", "up")
# Grafana's macros, replaced by values of their kind so that a query parses as PromQL.
MACROS = ((re.compile(r"\$__range_s\b|\$__interval_ms\b"), "3600"),
          (re.compile(r"\$__(range|interval|rate_interval)\b"), "1h"))
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\)$", re.S)


def produced(catalog: Catalog, settings: Settings, rules: RuleSet) -> set[str]:
    return ({r.record for r in rules.rules if r.record} | {n for m in catalog.metrics for n in m.names}
            | set(ENGINE_SERIES) | set(kube_state.SERIES) | set(training_operator.SERIES) | set(settings.job_metrics.names))


def unread(expr: str, known: set[str]) -> list[str]:
    """The series names expr reads that nothing produces (named selectors only; a __name__ regex is not
    a name)."""
    return [n for n in promql_tree.names_read(expr) if n not in known]


def rule_problems(rules: RuleSet, known: set[str], errors: Collector) -> set[str]:
    """Adds an error per rule reading an unknown name; returns those names."""
    reported = set()
    for f in rules.files:
        for g in f.groups:
            for r in g.rules:
                what = f"recording rule {r.record}" if r.record else f"alert {r.alert}"
                for name in unread(r.expr, known):
                    reported.add(name)
                    errors.add(r.source or Where(f.path), "unknown-series",
                               f"{what} ({f.path}, group {g.name}) reads {name!r}: no rule records it and no catalog "
                               f"metric has that name{did_you_mean(name, known)}")
    return reported


def queries(dashboard: DashboardFile):
    """(panel title, PromQL) of every query of the dashboard: targets, annotations, variables."""
    data = json.loads(json.dumps(dashboard.dashboard.to_json_data(), cls=DashboardEncoder))

    def walk(node, title):
        if isinstance(node, dict):
            title = node.get("title", title) if isinstance(node.get("title"), str) else title
            expr = node.get("expr")
            if isinstance(expr, str) and expr:
                yield title, expr
            query = node.get("query")
            if node.get("type") == "query" and isinstance(query, str) and LABEL_VALUES.match(query):
                yield f"variable {node.get('name')}", LABEL_VALUES.match(query).group(1)
            for value in node.values():
                yield from walk(value, title)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value, title)
    yield from walk(data, dashboard.id)


def dashboard_problems(dashboards: list[DashboardFile], known: set[str], errors: Collector,
                       reported: set[str] = frozenset()) -> None:
    """A name a rule already reads wrongly is that rule's error, at its catalog line: a panel drawing the
    same expression adds nothing but a position in an output file."""
    for d in dashboards:
        for title, expr in queries(d):
            for pattern, value in MACROS:
                expr = pattern.sub(value, expr)
            problems = promql_tree.problems(expr)
            if problems:
                errors.add(Where(d.path), "promql-syntax", f"dashboard {d.id}, panel {title!r}: {problems[0]}")
                continue
            for name in unread(expr, known):
                if name in reported:
                    continue
                errors.add(Where(d.path), "unknown-series",
                           f"dashboard {d.id}, panel {title!r} reads {name!r}: no rule records it and no catalog "
                           f"metric has that name{did_you_mean(name, known)}")


def check_reads(catalog: Catalog, settings: Settings, rules: RuleSet, dashboards: list[DashboardFile]) -> None:
    """Raise with every rule and panel that reads a series nothing produces."""
    known = produced(catalog, settings, rules)
    errors = Collector()
    reported = rule_problems(rules, known, errors)
    dashboard_problems(dashboards, known, errors, reported)
    errors.raise_if_any()
