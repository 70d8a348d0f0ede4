"""What every check is made of: its declaration (Check), the views of the rule files it reads (Files,
Group, Rule, each built once by the runner) and a Hit, what its function yields.

A check's function takes the view of its scope and yields Hits; the runner turns each into a
Diagnostic (errors.py) carrying the check's code and severity, so a check cannot report under another's."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from ..builders.engine_fit import MIMIR_MAX_RULES_PER_GROUP, SLOW_INTERVAL
from ..durations import parse_duration
from ..errors import Where
from ..load.yamlsource import Node, where_of
from ..promql import labels as label_flow
from ..promql import tree as promql_tree

LOAD, FILES, GROUP, RULE = "load", "files", "group", "rule"  # scopes: what a check's function takes
DASHBOARD = "dashboard"  # a Grafana dashboard file (dashboard_view.Dashboard), judged with every one given
WORKLOAD_LABELS = ("pod", "namespace", "container", "exported_pod", "exported_namespace", "exported_container")
DEFAULT_PARTITION = ("Hostname", "hostname", "instance")  # tiers.partition_labels of the default settings


class Hit(NamedTuple):
    path: str
    line: int
    col: int
    message: str


@dataclass(frozen=True)
class Check:
    """code: stable, printed in every finding; severity: error | warning; contract: part of rulesgen's
    contract (applied to foreign files only with --contract); doc: one line, for `rulesgen lint`'s docs;
    scope and run: the view the function takes (LOAD: reported by the YAML loader, no function)."""
    code: str
    severity: str
    contract: bool
    doc: str
    scope: str = LOAD
    run: Callable[..., Iterable[Hit]] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Options:
    """identity: (failure_mode, the labels its catalog scope identifies) for scope-identity; an alert of
    another failure mode must carry cluster_label only."""
    scrape_interval: int = 15
    long_window: int = 3600
    partition: tuple[str, ...] = DEFAULT_PARTITION
    max_rules: int = MIMIR_MAX_RULES_PER_GROUP
    cluster_label: str = "cluster"
    identity: tuple[tuple[str, tuple[str, ...]], ...] = ()


def parses(rule: Node) -> bool:
    return not promql_tree.problems(str(rule.get("expr", "")))


@dataclass(frozen=True)
class PlainRule:
    """A YAML rule as tiers.Classifier reads a rule (expr, record or alert, labels), with its node."""
    expr: str
    record: str | None
    alert: str | None
    labels: tuple[tuple[str, str], ...]
    node: Node

    def hit(self, path: str, message: str) -> Hit:
        """A finding about the rule at its expr, its message prefixed by the rule's name."""
        at = where_of(self.node, "expr")
        return Hit(path, at.line, at.col, f"{self.alert or self.record}: {message}")


@dataclass
class Files:
    """Every group of every file given, in order: what the FILES-scope checks read, and what the
    narrower views share (the records written by slow groups, the labels every record carries)."""
    per_file: list[tuple[Path, list[Node]]]
    options: Options

    @cached_property
    def groups(self) -> list[tuple[Path, Node]]:
        return [(path, g) for path, gs in self.per_file for g in gs]

    @cached_property
    def slow(self) -> dict[str, int]:
        """record -> interval (s) of the records written by groups of SLOW_INTERVAL or longer."""
        slow = {}
        for _, group in self.groups:
            interval = parse_duration(str(group.get("interval", "1m"))) or 60
            if interval >= SLOW_INTERVAL:
                slow.update({str(r["record"]): interval for r in group.get("rules", []) or [] if "record" in r})
        return slow

    @cached_property
    def timestamp_records(self) -> set[str]:
        """Records whose value is a sample timestamp (checks/timestamp_skew.py)."""
        return {str(r["record"]) for _, g in self.groups for r in g.get("rules", []) or []
                if "record" in r and parses(r) and promql_tree.timestamp_valued(str(r["expr"]))}

    @cached_property
    def plain_rules(self) -> list[tuple[str, PlainRule]]:
        """(path, rule) of every rule that parses, in file and group order."""
        out = []
        for path, g in self.groups:
            for r in g.get("rules", []) or []:
                if isinstance(r, Node) and parses(r):
                    labels = r.get("labels") or {}
                    out.append((str(path), PlainRule(str(r.get("expr", "")), str(r["record"]) if "record" in r else None,
                                                     str(r["alert"]) if "alert" in r else None,
                                                     tuple((str(k), str(v)) for k, v in labels.items()), r)))
        return out

    @cached_property
    def records(self):
        """The labels each recording rule's result can carry (label_flow.record_labels)."""
        return label_flow.record_labels([(str(r["record"]), str(r.get("expr", ""))) for _, g in self.groups
                                         for r in g.get("rules", []) or [] if "record" in r and parses(r)])

    @cached_property
    def alerts(self) -> dict[str, label_flow.LabelSet]:
        """alert name -> the labels its rules' results can carry together: an alert split by tier is one alert
        in two files (alerts/sharded/), each half carrying the labels of its `or` branches."""
        out: dict[str, label_flow.LabelSet] = {}
        for _, g in self.groups:
            for r in g.get("rules", []) or []:
                if "alert" in r and parses(r):
                    name = str(r["alert"])
                    out[name] = out.get(name, label_flow.EMPTY) | label_flow.output_labels(str(r["expr"]), self.records)
        return out


@dataclass
class Group:
    """One group: its 1-based position among all groups given (n of total) and its mapping rules."""
    path: str
    node: Node
    n: int
    total: int
    files: Files

    @property
    def name(self) -> str:
        return str(self.node.get("name", "?"))

    @cached_property
    def rules(self) -> list:
        return [r for r in self.node.get("rules", []) or [] if isinstance(r, dict)]

    def hit(self, message: str, at: Where | None = None) -> Hit:
        """A finding about the group, at its name (or at `at`), its message prefixed by the group's name."""
        where = at or where_of(self.node, "name")
        return Hit(self.path, where.line, where.col, f"{self.name}: {message}")


@dataclass
class Rule:
    """One rule, its expression parsed once (tree None and error set when it does not parse)."""
    path: str
    node: Node
    group: Node
    files: Files

    @property
    def name(self):
        return self.node.get("alert") or self.node.get("record") or "?"

    @property
    def expr(self) -> str:
        return str(self.node.get("expr", ""))

    @cached_property
    def _parsed(self):
        try:
            return promql_tree.parse(self.expr), None
        except promql_tree.PromQLSyntaxError as exc:
            return None, exc

    @property
    def tree(self):
        return self._parsed[0]

    @property
    def error(self) -> promql_tree.PromQLSyntaxError | None:
        return self._parsed[1]

    @cached_property
    def carried(self) -> label_flow.LabelSet:
        """The labels its result can carry (label_flow.output_labels over the records given); None tree: any."""
        if self.tree is None:
            return label_flow.LabelSet(open=True)
        return label_flow.output_labels(self.tree, self.files.records)

    @property
    def alert_carries(self) -> label_flow.LabelSet:
        """For an alert: what the rules of its name given can carry together (Files.alerts); else carried."""
        return self.files.alerts.get(str(self.node.get("alert")), self.carried) if "alert" in self.node else self.carried

    @property
    def options(self) -> Options:
        return self.files.options

    def hit(self, message: str, at: Where | None = None) -> Hit:
        """A finding about the rule, at its expr (or at `at`), its message prefixed by the rule's name."""
        where = at or where_of(self.node, "expr")
        return Hit(self.path, where.line, where.col, f"{self.name}: {message}")
