"""Offline checks of rule files beyond promtool, in the manner of cloudflare/pint.

Each finding is `file:line:col: severity[code]: message`, the format of every rulesgen diagnostic
(errors.py). Each check is declared in CHECKS with its severity and whether it is part of rulesgen's
contract (the labels and annotations every rulesgen alert carries, its naming of fleet records): contract
checks judge rulesgen's own files (its header, groups named rulesgen-*) and, on request, any file;
the generic checks judge every file."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import conventions, engine_fit, label_flow, promql_print, promql_tree
from .conventions import is_sparse
from .errors import RulesgenError, Where
from .model import IDENTITY_GROUPS
from .tiers import DEFAULT_SHARD_LABEL, GLOBAL, Classifier
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


@dataclass(frozen=True)
class Check:
    code: str
    severity: str  # error | warning
    contract: bool  # rulesgen's contract: applied to foreign files only with --contract
    summary: str


CHECKS = {c.code: c for c in (
    Check("yaml-syntax", "error", False, "the file does not parse as YAML"),
    Check("duplicate-key", "error", False, "a mapping repeats a key"),
    Check("bad-key", "error", False, "a mapping key is not a string"),
    Check("promql-syntax", "error", False, "the expression does not parse as PromQL"),
    Check("rate-window", "warning", False, "rate()-like window under 4 scrape intervals"),
    Check("raw-long-window", "warning", False, "long range over raw series: downsample first"),
    Check("dense-long-window", "warning", False, "a day or more over a series written every evaluation"),
    Check("instant-slow-record", "warning", False, "instant read of a record written every 5m or less often"),
    Check("alert-for", "warning", False, "alert without `for`"),
    Check("value-in-label", "warning", False, "$value in a label: every new value starts a new alert"),
    Check("contract-label", "warning", True, "rulesgen alerts carry labels severity, failure_mode, action"),
    Check("contract-annotation", "warning", True, "rulesgen alerts carry summary, description, runbook_url, dashboard_url"),
    Check("fleet-per-pod", "warning", True, "rulesgen's fleet:* aggregates drop per-pod labels"),
    Check("alert-identity", "error", True, "a hardware alert carries only its subject's identity labels (README \"Alert identity\")"),
    Check("group-size", "warning", False, "a group holds more rules than max_rules_per_group (Mimir rejects it above "
          "-ruler.max-rules-per-rule-group, default 20)"),
    Check("group-count", "warning", False, "more groups than Mimir's -ruler.max-rule-groups-per-tenant default (70)"),
    Check("alerts-reader-mixed", "warning", False, "a rule reading ALERTS shares its group with other rules: Prometheus 3 "
          "then evaluates that whole group serially"),
    Check("engine-field", "error", False, "a group field some engine reading plain rule files rejects (query_offset, "
          "eval_delay ...)"),
    Check("tier-local", "error", False, "a rule declared for the shards (a `# Tier shard` file) needs the whole fleet: "
          "it aggregates the partition key away non-decomposably or reads a global result (README \"Sharded topology\")"),
)}
# Group fields of a plain rule file, and the engines reading such files (README "Engine fit") that accept
# each: a field missing from an engine's list makes it reject the whole file.
ENGINES = ("Prometheus 2.42", "Prometheus 3.5", "vmalert 1.145")
GROUP_FIELDS = {
    "name": ENGINES, "interval": ENGINES, "limit": ENGINES, "rules": ENGINES,
    "query_offset": ("Prometheus 3.5",),  # Prometheus >= 2.53 (model/rulefmt RuleGroup.QueryOffset)
    "labels": ("Prometheus 3.5", "vmalert 1.145"),  # Prometheus >= 3.0
    **{k: ("vmalert 1.145",) for k in ("eval_delay", "eval_offset", "eval_alignment", "concurrency", "type", "headers",
                                       "notifier_headers", "params", "debug", "tenant")},
}
UNLISTED = Check("?", "warning", False, "")


def check_of(code: str) -> Check:
    return CHECKS.get(code, UNLISTED)


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    code: str
    message: str
    col: int = 1

    @property
    def severity(self) -> str:
        return check_of(self.code).severity

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.severity}[{self.code}]: {self.message}"


GENERATED_MARK = "Generated by rulesgen"
GROUP_PREFIX = "rulesgen-"


def is_rulesgen_file(path: Path, groups) -> bool:
    """rulesgen's own output: its header, or groups named rulesgen-*."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:300]
    except OSError:
        return False
    return GENERATED_MARK in head or any(str(g.get("name", "")).startswith(GROUP_PREFIX) for g in groups)


DAY = 86400
DEFAULT_PARTITION = ("Hostname", "hostname", "instance")  # tiers.partition_labels of the default settings


def lint_files(paths: list[Path], scrape_interval: int = 15, long_window: int = 3600,
               contract: bool | None = None, partition: tuple[str, ...] = DEFAULT_PARTITION,
               max_rules: int = engine_fit.MIMIR_MAX_RULES_PER_GROUP) -> list[Finding]:
    """contract: None holds rulesgen's own files to its contract and spares foreign ones; True holds
    every file to it, False none. partition: the labels a shard's nodes are split by (tier-local).
    max_rules: rules per group at most (0: no limit)."""
    findings: list[Finding] = []
    docs = []
    for path in paths:
        try:
            docs.append((path, load_file(path)))
        except RulesgenError as exc:
            findings += [Finding(d.path, d.line, d.code, d.message, d.col) for d in exc.diagnostics]
    per_file = [(path, list((doc or {}).get("groups", []) if isinstance(doc, Node) else [])) for path, doc in docs]
    groups = [(path, g) for path, gs in per_file for g in gs]
    judged = {str(path): contract if contract is not None else is_rulesgen_file(path, gs) for path, gs in per_file}
    slow = {}
    for _, group in groups:
        interval = parse_duration(str(group.get("interval", "1m"))) or 60
        if interval >= SLOW_INTERVAL:
            slow.update({str(r["record"]): interval for r in group.get("rules", []) if "record" in r})
    records = label_flow.record_labels([(str(r["record"]), str(r.get("expr", ""))) for _, g in groups
                                        for r in g.get("rules", []) if "record" in r and _parses(r)])
    findings += lint_groups(groups, max_rules)
    for path, group in groups:
        identity = engine_fit.base_group(str(group.get("name", "")), IDENTITY_GROUP_NAMES) is not None
        for rule in group.get("rules", []):
            findings += [f for f in lint_rule(str(path), rule, scrape_interval, long_window, slow,
                                             records if identity else None)
                         if judged[str(path)] or not check_of(f.code).contract]
    findings += tier_findings(per_file, partition)
    return sorted(findings, key=lambda f: (f.path, f.line, f.col, f.code, f.message))


def lint_groups(groups: list[tuple[Path, Node]], max_rules: int) -> list[Finding]:
    """Engine fit (engine_fit.py): group size, group count, ALERTS readers in groups of their own, and
    group fields every engine reading plain rule files accepts."""
    out = []
    for n, (path, group) in enumerate(groups, start=1):
        name = str(group.get("name", "?"))
        at_name = where_of(group, "name")
        rules = [r for r in group.get("rules", []) or [] if isinstance(r, dict)]
        if n == engine_fit.MIMIR_MAX_GROUPS_PER_TENANT + 1:
            out.append(Finding(str(path), at_name.line, "group-count",
                               f"{name}: group {n} of {len(groups)}: Grafana Mimir accepts {engine_fit.MIMIR_MAX_GROUPS_PER_TENANT} "
                               "groups per tenant by default (-ruler.max-rule-groups-per-tenant)", at_name.col))
        if max_rules and len(rules) > max_rules:
            out.append(Finding(str(path), at_name.line, "group-size",
                               f"{name}: {len(rules)} rules, above {max_rules} (Grafana Mimir's ruler rejects a group above "
                               "-ruler.max-rules-per-rule-group, default 20; `rulesgen render` splits its own groups "
                               "at max_rules_per_group)", at_name.col))
        reasons = [(r, engine_fit.serial_reason(str(r.get("expr", "")))) for r in rules]
        serial = [(r, why) for r, why in reasons if why]
        if serial and len(serial) < len(rules):
            first, why = serial[0]
            out.append(Finding(str(path), at_name.line, "alerts-reader-mixed",
                               f"{name}: {len(serial)} of its {len(rules)} rules make Prometheus 3's dependency analysis give up "
                               f"({first.get('alert') or first.get('record')} {why}), so it evaluates the whole group "
                               "serially; move them to a group of their own", at_name.col))
        for key in group if isinstance(group, dict) else ():
            engines = GROUP_FIELDS.get(str(key))
            if engines is not None and engines != ENGINES:
                at = where_of(group, key)
                rejecting = [e for e in ENGINES if e not in engines]
                out.append(Finding(str(path), at.line, "engine-field",
                                   f"{name}: group field {key!r} is accepted only by {', '.join(engines)}: "
                                   f"{', '.join(rejecting)} reject the whole file (a plain rule file is read by all of "
                                   f"{', '.join(ENGINES)})", at.col))
    return out


_TIER_DECLARATION = re.compile(r"^# Tier (shard|global) \(", re.M)


def declared_tier(path: Path) -> str | None:
    """The tier a rule file's header declares (`# Tier shard (` / `# Tier global (`), else None."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:600]
    except OSError:
        return None
    m = _TIER_DECLARATION.search(head)
    return m.group(1) if m else None


@dataclass(frozen=True)
class _YamlRule:
    expr: str
    record: str | None
    alert: str | None
    labels: tuple[tuple[str, str], ...]
    node: Node


def tier_findings(per_file, partition) -> list[Finding]:
    """tier-local: every rule of a file declared for the shards must be local or partial, as its tree and
    the rules it reads say. Rules of files declared global are not the shards' to read: a shard rule that
    reads a name only they write is global too (the shards never see it)."""
    declared = {str(path): declared_tier(path) for path, _ in per_file}
    if "shard" not in declared.values():
        return []
    rules, where, global_only = [], [], set()
    for path, groups in per_file:
        for g in groups:
            for r in g.get("rules", []) or []:
                if not (isinstance(r, Node) and _parses(r)):
                    continue
                if declared[str(path)] == "global":
                    global_only.add(str(r.get("record") or "ALERTS"))
                    continue
                labels = r.get("labels") or {}
                rules.append(_YamlRule(str(r.get("expr", "")), str(r["record"]) if "record" in r else None,
                                       str(r["alert"]) if "alert" in r else None,
                                       tuple((str(k), str(v)) for k, v in labels.items()), r))
                where.append(str(path))
    global_only -= {r.record for r in rules if r.record} | {"ALERTS"}
    c = Classifier(rules, partition)
    out = []
    for rule, path, t in zip(rules, where, c.tiers):
        if declared[path] != "shard":
            continue
        name = rule.alert or rule.record
        at = where_of(rule.node, "expr")
        unseen = [n for n in promql_tree.names_read(rule.expr) if n in global_only]
        if t.tier == GLOBAL:
            why = f"{t.why}" + (f" [{t.node}]" if t.node else "")
        elif unseen:
            why = f"reads {', '.join(unseen)}, written by the global tier only"
        else:
            continue
        out.append(Finding(path, at.line, "tier-local", f"{name}: declared for the shards but global: {why}; "
                           "move it to the global tier", at.col))
    return out


def shortest_rate_window(rules) -> tuple[int, str] | None:
    """(seconds, rule name) of the shortest rate()-like window over a raw series among `rules` (Rule
    objects): the rate-window check needs scrape_interval <= a quarter of it."""
    best = None
    for rule in rules:
        for call in promql_tree.range_calls(rule.tree):
            if call.function in RATE_FUNCTIONS and call.selector and (best is None or call.range < best[0]):
                best = (call.range, rule.alert or rule.record)
    return best


def _parses(rule: Node) -> bool:
    return not promql_tree.problems(str(rule.get("expr", "")))


def lint_rule(path: str, rule: Node, scrape_interval: int, long_window: int,
              slow: dict[str, int] | None = None, identity_records=None) -> list[Finding]:
    """identity_records: for an alert of a hardware group (health, baselines, fleet), the labels of the
    recording rules it may read (label_flow.record_labels): it is checked for alert-identity."""
    out = []
    name = rule.get("alert") or rule.get("record") or "?"
    expr = str(rule.get("expr", ""))
    at_expr = where_of(rule, "expr")
    line = at_expr.line  # add(code, message, line) still works: a line number, column 1

    def add(code, message, at: int | Where | None = None):
        """at: a Where (line and column), a line number, or None for the rule's expr."""
        where = at_expr if at is None else at if isinstance(at, Where) else Where(path, at)
        out.append(Finding(path, where.line, code, f"{name}: {message}", where.col))

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
        rule_line = where_of(rule, "alert")
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
                    where_of(labels, key))
    elif str(rule.get("record", "")).startswith("fleet:"):
        for kind, labels in promql_tree.grouping(tree) if tree else ():
            if kind == "without" and set(labels) <= {DEFAULT_SHARD_LABEL}:
                continue  # the global tier reading a shard's series (README "Sharded topology")
            if kind == "without" or set(labels) & set(WORKLOAD_LABELS):
                add("fleet-per-pod", f"fleet aggregate keeps per-pod labels ({kind} ({', '.join(labels)}))")
    return out
