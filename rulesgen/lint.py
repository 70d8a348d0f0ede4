"""Offline checks of rendered rule files beyond promtool, in the manner of cloudflare/pint.

Each finding is `file:line: code: message`."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .conventions import is_sparse
from .errors import RulesgenError
from .fields import parse_duration
from .yamlsource import Node, load_file, where_of

CONTRACT_LABELS = ("severity", "failure_mode", "action")
CONTRACT_ANNOTATIONS = ("summary", "description", "runbook_url", "dashboard_url")
WORKLOAD_LABELS = ("pod", "namespace", "container", "exported_pod", "exported_namespace", "exported_container")
_RATE = re.compile(r"\b(rate|irate|increase|deriv|delta|idelta)\s*\(\s*([^\[\(\)]*?)\[(\w+)\]")
_RANGE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^{}]*\})?\s*\[(\w+)\]")
_BY = re.compile(r"\b(by|without)\s*\(([^)]*)\)")


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.code}: {self.message}"


DAY = 86400


def lint_files(paths: list[Path], scrape_interval: int = 15, long_window: int = 3600) -> list[Finding]:
    findings: list[Finding] = []
    for path in paths:
        try:
            doc = load_file(path)
        except RulesgenError as exc:
            findings += [Finding(d.path, d.line, d.code, d.message) for d in exc.diagnostics]
            continue
        for group in (doc or {}).get("groups", []) if isinstance(doc, Node) else []:
            for rule in group.get("rules", []):
                findings += lint_rule(str(path), rule, scrape_interval, long_window)
    return sorted(findings)


def lint_rule(path: str, rule: Node, scrape_interval: int, long_window: int) -> list[Finding]:
    out = []
    name = rule.get("alert") or rule.get("record") or "?"
    expr = str(rule.get("expr", ""))
    line = where_of(rule, "expr").line

    def add(code, message, at=line):
        out.append(Finding(path, at, code, f"{name}: {message}"))

    for fn, selector, window in _RATE.findall(expr):
        seconds = parse_duration(window)
        if seconds is not None and seconds < 4 * scrape_interval:
            add("rate-window", f"{fn}() over [{window}] is shorter than 4x the scrape interval ({4 * scrape_interval}s)")
    for metric, _, window in _RANGE.findall(expr):
        seconds = parse_duration(window)
        if seconds is not None and seconds >= long_window and ":" not in metric:
            add("raw-long-window", f"[{window}] over raw series {metric}: downsample with a recording rule first")
        elif seconds is not None and seconds >= DAY and ":" in metric and not is_sparse(metric):
            add("dense-long-window", f"[{window}] over recorded series {metric}, written at every evaluation: count "
                                     "an event series (one sample per event, named ...:onset) or read daily sums")
    if "alert" in rule:
        rule_line = where_of(rule, "alert").line
        if "for" not in rule:
            add("alert-for", "alert has no `for`: one bad sample pages someone", rule_line)
        labels = rule.get("labels") or {}
        for key in CONTRACT_LABELS:
            if key not in labels:
                add("contract-label", f"missing label {key!r}", rule_line)
        annotations = rule.get("annotations") or {}
        for key in CONTRACT_ANNOTATIONS:
            if key not in annotations:
                add("contract-annotation", f"missing annotation {key!r}", rule_line)
        for key, value in labels.items():
            if "$value" in str(value) or ".Value" in str(value):
                add("value-in-label", f"label {key!r} uses $value: every new value starts a new alert",
                    where_of(labels, key).line)
    elif str(rule.get("record", "")).startswith("fleet:"):
        for kind, labels in _BY.findall(expr):
            names = {x.strip() for x in labels.split(",")}
            if kind == "without" or names & set(WORKLOAD_LABELS):
                add("fleet-per-pod", f"fleet aggregate keeps per-pod labels ({kind} ({labels.strip()}))")
    return out
