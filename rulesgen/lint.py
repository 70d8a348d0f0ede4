"""Offline checks of rendered rule files beyond promtool, in the manner of cloudflare/pint.

Each finding is `file:line: code: message`."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import conventions, label_flow, promql_print, promql_tree
from .conventions import is_sparse
from .model import IDENTITY_GROUPS
from .errors import RulesgenError
from .durations import format_duration, parse_duration
from .yamlsource import Node, load_file, where_of

CONTRACT_LABELS = ("severity", "failure_mode", "action")
CONTRACT_ANNOTATIONS = ("summary", "description", "runbook_url", "dashboard_url")
WORKLOAD_LABELS = ("pod", "namespace", "container", "exported_pod", "exported_namespace", "exported_container")
# Labels that change while a hardware fault persists (a pod deleted or rescheduled, an exporter restarted
# elsewhere, a driver upgraded, exporter 4.9 renaming the driver label): an alert about a GPU, node, link
# or cluster that can carry one resolves and fires again under new labels (README "Alert identity").
NOT_IDENTITY = WORKLOAD_LABELS + ("workload", "instance", "job", "DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION")
# ... except the exporter target itself: it is the subject of these while its series name no host.
TARGET_SUBJECT_MODES = {"exporter_down": ("instance",), "telemetry_blind_spot": ("instance",)}
IDENTITY_GROUP_NAMES = tuple(conventions.alert_group(g) for g in IDENTITY_GROUPS) + (conventions.BASELINE_GROUP,)
RATE_FUNCTIONS = ("rate", "irate", "increase", "deriv", "delta", "idelta")
# vmalert asks its datasource with step = -datasource.queryStep (5m by default), which is also the
# lookback of an instant selector: a record written every 5 minutes or less often is missed by an
# instant selector whenever its newest point is one interval old (always, for the hourly history).
SLOW_INTERVAL = 300


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
    docs = []
    for path in paths:
        try:
            docs.append((path, load_file(path)))
        except RulesgenError as exc:
            findings += [Finding(d.path, d.line, d.code, d.message) for d in exc.diagnostics]
    groups = [(path, g) for path, doc in docs for g in ((doc or {}).get("groups", []) if isinstance(doc, Node) else [])]
    slow = {}
    for _, group in groups:
        interval = parse_duration(str(group.get("interval", "1m"))) or 60
        if interval >= SLOW_INTERVAL:
            slow.update({str(r["record"]): interval for r in group.get("rules", []) if "record" in r})
    records = label_flow.record_labels([(str(r["record"]), str(r.get("expr", ""))) for _, g in groups
                                        for r in g.get("rules", []) if "record" in r and _parses(r)])
    for path, group in groups:
        identity = str(group.get("name", "")) in IDENTITY_GROUP_NAMES
        for rule in group.get("rules", []):
            findings += lint_rule(str(path), rule, scrape_interval, long_window, slow, records if identity else None)
    return sorted(findings)


def _parses(rule: Node) -> bool:
    return not promql_tree.problems(str(rule.get("expr", "")))


def lint_rule(path: str, rule: Node, scrape_interval: int, long_window: int,
              slow: dict[str, int] | None = None, identity_records=None) -> list[Finding]:
    """identity_records: for an alert of a hardware group (health, baselines, fleet), the labels of the
    recording rules it may read (label_flow.record_labels): it is checked for alert-identity."""
    out = []
    name = rule.get("alert") or rule.get("record") or "?"
    expr = str(rule.get("expr", ""))
    line = where_of(rule, "expr").line

    def add(code, message, at=line):
        out.append(Finding(path, at, code, f"{name}: {message}"))

    try:
        tree = promql_tree.parse(expr)
    except promql_tree.PromQLSyntaxError as exc:
        add("promql-syntax", f"expression does not parse: {exc}")
        tree = None
    for call in promql_tree.range_calls(tree) if tree else ():
        if call.function in RATE_FUNCTIONS and call.selector and call.range < 4 * scrape_interval:
            add("rate-window", f"{call.function}() over [{format_duration(call.range)}] is shorter than 4x the scrape "
                f"interval ({4 * scrape_interval}s)")
    for s in promql_tree.selectors(tree) if tree else ():
        names = s.names or (promql_print.selector_text(s),)
        if s.range is not None and s.range >= long_window and not any(promql_tree.is_record(n) for n in names):
            add("raw-long-window", f"[{format_duration(s.range)}] over raw series {'|'.join(names)}: "
                "downsample with a recording rule first")
        elif s.range is not None and s.range >= DAY and not all(is_sparse(n) for n in names):
            add("dense-long-window", f"[{format_duration(s.range)}] over recorded series {'|'.join(names)}, written at "
                "every evaluation: count an event series (one sample per event, named ...:onset) or read daily sums")
        for metric in names if s.range is None else ():
            if metric in (slow or {}):
                add("instant-slow-record", f"reads {metric} (written every {slow[metric]}s) with an instant selector: "
                    f"vmalert's 5m query step misses it; use last_over_time({metric}[{2 * slow[metric]}s])")
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
        if identity_records is not None and tree is not None:
            carried = label_flow.output_labels(tree, identity_records)
            allowed = TARGET_SUBJECT_MODES.get(str(labels.get("failure_mode", "")), ())
            bad = [k for k in NOT_IDENTITY if k not in allowed and k not in labels and k in carried.known]
            if bad or carried.open:
                what = (f"can carry {', '.join(bad)}" if bad else "") + (
                    ("; " if bad else "") + "passes a raw series through unaggregated (any of its labels)" if carried.open else "")
                add("alert-identity", f"a hardware alert {what}: a pod deleted or rescheduled, a driver upgrade or "
                    "an exporter restart would resolve it and open a second one; keep the subject's identity only "
                    "(aggregate by it) and name the job in the annotations", rule_line)
        for key, value in labels.items():
            if "$value" in str(value) or ".Value" in str(value):
                add("value-in-label", f"label {key!r} uses $value: every new value starts a new alert",
                    where_of(labels, key).line)
    elif str(rule.get("record", "")).startswith("fleet:"):
        for kind, labels in promql_tree.grouping(tree) if tree else ():
            if kind == "without" or set(labels) & set(WORKLOAD_LABELS):
                add("fleet-per-pod", f"fleet aggregate keeps per-pod labels ({kind} ({', '.join(labels)}))")
    return out
