"""The path of a failure mode's alerts from the catalog through the rule model to every output file,
by names alone (`rulesgen explain` prints it): catalog file:line -> alert rule and group -> the
recording rules it reads (the dependency graph of the PromQL trees, transitively) -> rule files,
Kubernetes wrappers, vmalert-tool copy, dashboard panel, runbook and the tests that expect it."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..artifacts import DASHBOARD_ONLY, Plan
from ..builders import vmalert_tests
from ..errors import Where
from ..model import conventions
from ..model.output import Rule
from ..promql.graph import Graph
from ..promql.tree import metric_names, selectors
from ..render import kube


@dataclass(frozen=True)
class Placed:
    """A rule and where the model puts it."""
    rule: Rule
    group: str
    path: str


def _where(where: Where | None, record: str | None = None) -> str:
    if where is None:
        if record and (record.startswith((conventions.LIMIT_PREFIX, conventions.GPU_LIMIT_PREFIX))
                       or record == conventions.MODEL_GPUS):
            return "the catalog's gpu_models.yaml limits (builders/rules.py)"
        return "rulesgen's builders (no catalog entry of its own)"
    return f"{shown_path(where.path)}:{where.line}"


def shown_path(path: str) -> str:
    """A catalog file as its folder and name, never a machine's absolute path: relative to the working
    directory when the folder is under it (catalog/failure_modes.yaml), else the folder's name
    (the bundled catalog, installed as rulesgen/_catalog, shows as catalog/)."""
    folder, name = os.path.split(path)
    try:
        rel = os.path.relpath(folder or ".")
    except ValueError:  # another drive
        rel = ".."
    if rel == ".":
        return name
    if rel.startswith(".."):
        base = os.path.basename(os.path.normpath(folder))
        rel = "catalog" if base == "_catalog" else base
    return f"{Path(rel).as_posix()}/{name}"


def _placed(plan: Plan) -> list[Placed]:
    return [Placed(r, g.name, f.path) for f in plan.rules.files for g in f.groups for r in g.rules]


def _also(plan: Plan, placed: Placed, levels: dict[str, str]) -> list[str]:
    """The other files that carry a rule file's group: Kubernetes wrappers and the vmalert-tool copy."""
    paths = {a.path for a in plan.artifacts}
    out = [p for p in (kube.resource_path(placed.path, k) for k in (kube.PROMETHEUS_RULE, kube.VMRULE)) if p in paths]
    name = placed.rule.alert or placed.rule.record
    if name in levels and vmalert_tests.RULES_FILE in paths:
        out.append(f"{vmalert_tests.RULES_FILE} (group {levels[name]})")
    return out


def _levels(plan: Plan) -> dict[str, str]:
    """Rule name -> its group in the vmalert-tool copy (tests/vmalert/rules/levels.yaml)."""
    if not plan.scenarios:
        return {}
    copy = vmalert_tests.vmalert_rule_file([f for f in plan.rules.files if f.path not in DASHBOARD_ONLY])
    return {(r.alert or r.record): g.name for g in copy.groups for r in g.rules}


def _reads(graph: Graph, placed: list[Placed], expr: str, depth: int, seen: set[str], parent: str | None = None) -> list[str]:
    lines = []
    pad = "  " * depth
    for name in graph.records_read([expr], transitive=False):
        if name == parent:
            lines.append(f"{pad}{name}  (itself: its previous value)")
            continue
        if name in seen:
            lines.append(f"{pad}{name}  (above)")
            continue
        seen.add(name)
        writers = [placed[i] for i in graph.writers[name]]
        where = ", ".join(dict.fromkeys(f"group {p.group} in {p.path}" for p in writers))
        lines.append(f"{pad}{name}  {where}; from {_where(writers[0].rule.source, name)}")
        for p in writers:
            raw = metric_names(p.rule.expr)
            if raw:
                lines.append(f"{pad}  exporter series: {', '.join(raw)}")
            lines += _reads(graph, placed, p.rule.expr, depth + 1, seen, name)
    return lines


def _alerts_read(placed: list[Placed], rule: Rule) -> list[str]:
    """Alerts whose ALERTS series a rule's ALERTS selectors can select (by name and labels)."""
    alerting = [s for s in selectors(rule.expr) if s.name == "ALERTS"]
    return sorted({p.rule.alert for p in placed if p.rule.alert and p.rule is not rule
                   and any(s.may_select({**dict(p.rule.labels), "alertname": p.rule.alert}) for s in alerting)})


def _alert_readers(graph: Graph, placed: list[Placed], alert: Rule) -> list[str]:
    """Rules whose ALERTS selectors can select this alert (by its name and labels)."""
    labels = {**dict(alert.labels), "alertname": alert.alert}
    out = []
    for i in graph.readers("ALERTS"):
        rule = placed[i].rule
        if rule is not alert and any(s.may_select(labels) for s in selectors(rule.expr) if s.name == "ALERTS"):
            out.append(rule.alert or rule.record)
    return sorted(set(out))


def _panel(plan: Plan, group: str, panel_id: int) -> tuple[str, str, int] | None:
    """(dashboard file, title of the panel, panels in its row) for an alert's dashboard_url."""
    path = conventions.dashboard_file(conventions.GROUP_DASHBOARD[group])
    art = next((a for a in plan.artifacts if a.path == path), None)
    if art is None:
        return None
    top = json.loads(art.text).get("panels", [])
    panels = [q for p in top for q in (p, *p.get("panels", []))]  # a collapsed row holds its panels
    row = panel_id - 1
    title = next((p.get("title", "") for p in panels if p.get("id") == panel_id), None)
    if title is None:
        return None
    return path, title, sum(1 for p in panels if row < p.get("id", 0) < row + 100)


def alert_path(plan: Plan, fm_id: str) -> list[str]:
    """Lines of text (indented by two spaces) tracing the failure mode's alerts to the output files."""
    placed = _placed(plan)
    graph = Graph([p.rule for p in placed])
    levels = _levels(plan)
    fm = plan.catalog.failure_mode(fm_id)
    lines: list[str] = []
    seen: set[str] = set()
    alerts = [p for p in placed if p.rule.alert and p.rule.failure_mode == fm_id]
    for p in alerts:
        labels = dict(p.rule.labels)
        lines.append(f"  {_where(p.rule.source)}  alert ({labels.get('severity')})")
        lines.append(f"    -> {p.rule.alert}  group {p.group} in {p.path}")
        also = _also(plan, p, levels)
        if also:
            lines.append(f"       also in {', '.join(also)}")
        raw = metric_names(p.rule.expr)
        if raw:
            lines.append(f"       exporter series: {', '.join(raw)}")
        reads = _reads(graph, placed, p.rule.expr, 4, seen)
        if reads:
            lines.append("       reads:")
            lines += ["  " + x for x in reads]
        read_alerts = _alerts_read(placed, p.rule)
        if read_alerts:
            lines.append(f"       reads ALERTS of {', '.join(read_alerts)}")
        readers = _alert_readers(graph, placed, p.rule)
        if readers:
            lines.append(f"       read back (ALERTS) by {', '.join(readers)}")
    if alerts:
        panel_id = conventions.failure_mode_panel_id(plan.resolved.mode(fm.id).index_in_group)
        panel = _panel(plan, fm.group, panel_id)
        if panel:
            path, title, count = panel
            lines.append(f"  dashboard: {path} panel {panel_id} \"{title}\" "
                         f"(the alerts' dashboard_url; {count} panel(s) in the row)")
    runbook = conventions.runbook_path(fm.id)
    if any(a.path == runbook for a in plan.artifacts):
        lines.append(f"  runbook: {runbook} (the alerts' runbook_url)")
    expecting = [s.name for s in plan.scenarios if any(e.failure_mode == fm.id for e in s.expect)]
    paths = {a.path for a in plan.artifacts}
    tests = [p for s in expecting for p in (f"tests/promtool/{s}.yaml", f"{vmalert_tests.TESTS_DIR}/{s}.yaml") if p in paths]
    if tests:
        lines.append(f"  tests expecting it: {', '.join(tests)}")
    elif not plan.scenarios and not plan.settings.outputs.scenario_tests:
        lines.append("  tests expecting it: not among the outputs (outputs.scenario_tests: false; --scenario-tests lists them)")
    return lines
