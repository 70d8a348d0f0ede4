"""A row per active failure mode of a group, and its alerts as annotations on that row's panels.
Row and panel ids come from the failure mode's place in the catalog (conventions.failure_mode_row_id),
so the alerts' dashboard_url links stay stable whatever is disabled."""
from __future__ import annotations

from grafanalib.core import Panel

from ...model import conventions
from ...model.catalog import FailureMode
from ...model.panels import PANELS, ROW
from .baselines import baseline_mode_panels
from .context import DATASOURCE, SCOPE_KEYS, Context
from .job_signals import ROWS, mode_panels
from .layout import collapsed_section
from .links import with_view_links
from .panels import SEVERITY_COLOR, alert_panels

# The rows made by hand rather than read from a failure mode's alerts, by builder id (panel_specs.PANELS);
# catalog/dashboards.yaml says which failure mode's row each one draws.
HAND_MADE_ROWS = {"rows.baseline_deviation": baseline_mode_panels, **ROWS}


def active_modes(ctx: Context, group: str) -> list[tuple[int, FailureMode]]:
    """(index among the catalog's failure modes of the group, failure mode) for the active ones: the
    index fixes the panel ids the alerts link to, whatever is disabled."""
    inactive = dict(ctx.rules.inactive)
    modes = [fm for fm in ctx.catalog.failure_modes if fm.group == group]
    return [(i, fm) for i, fm in enumerate(modes) if fm.id not in inactive]


def failure_mode_panels(ctx: Context, fm: FailureMode) -> list[Panel]:
    """The row's panels, main panel first: the hand-made row catalog/dashboards.yaml gives the failure mode,
    else the panels read from its alerts (for a mode reading the training jobs' own metrics, its alerts)."""
    row = next((p.panel for p in ctx.catalog.hand_made_panels
                if PANELS[p.panel].kind == ROW and p.failure_mode == fm.id), None)
    if row is not None:
        return HAND_MADE_ROWS[row](ctx, ctx.hand_made(row))
    if fm.job_metrics:  # the training jobs' own metrics: job_signals.py
        return mode_panels(ctx, fm)
    return alert_panels(ctx, fm)


def failure_mode_rows(ctx: Context, group: str, y: int) -> tuple[list[Panel], int]:
    """A collapsed row per active failure mode of the group, its panels inside it with their data links."""
    out: list[Panel] = []
    for i, fm in active_modes(ctx, group):
        row_id = conventions.failure_mode_row_id(i)
        panels = [with_view_links(ctx, p) for p in failure_mode_panels(ctx, fm)]
        if len(panels) >= 99:  # pragma: no cover - a row owns ids row_id .. row_id + 99
            raise ValueError(f"failure mode {fm.id} has too many panels")
        laid, y = collapsed_section(fm.title, row_id, panels, y)
        out += laid
    return out, y


def alert_annotations(ctx: Context, group: str, panels: list[Panel], declared: set[str]) -> list[dict]:
    """One annotation per failure mode: its firing alerts, drawn on its row's panels only (panels: every panel
    of the dashboard, those of collapsed rows too), filtered by the variables the dashboard declares."""
    out = []
    for i, fm in active_modes(ctx, group):
        row_id = conventions.failure_mode_row_id(i)
        ids = sorted(p.id for p in panels if row_id < p.id < row_id + 100)
        if not ids:
            continue
        keys = [k for k in ("cluster", "host", "gpu") if k in SCOPE_KEYS[fm.scope] and ctx.variables.name(k) in declared]
        matchers = ", ".join(x for x in ['alertstate="firing"', f'failure_mode="{fm.id}"', ctx.variables.matchers(keys)] if x)
        severities = [ctx.severity(fm, a.severity) for a in fm.alerts]
        worst = min(severities, key=lambda s: ("critical", "warning", "info").index(s))
        out.append({"name": f"{fm.title} alerts", "datasource": DATASOURCE, "enable": True, "hide": False,
                    "iconColor": SEVERITY_COLOR[worst], "expr": f"ALERTS{{{matchers}}}", "step": "1m",
                    "titleFormat": "{{alertname}}", "textFormat": ctx.legend(fm.scope) + " ({{severity}})",
                    "tagKeys": "severity,action", "useValueForTime": False, "filter": {"exclude": False, "ids": ids}})
    return out
