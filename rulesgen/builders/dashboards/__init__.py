"""Catalog + Settings + RuleSet -> Grafana dashboards (grafanalib objects). Pure: no I/O.

Rows come from the catalog, never from a list kept here: each active failure mode of a group gets a
row in its group's dashboard (conventions.GROUP_DASHBOARD), with one time series per comparison its
alerts make (`avg_over_time(gpu:dcgm_dram_active:ratio[15m]) > [[ t.dram_active ]]` becomes the
panel "DRAM active (avg over 15m)" with a threshold line at 0.8), then one per further recording
rule the alerts read. The first panel of the row is the one the alerts' dashboard_url opens
(conventions.failure_mode_panel_id). Queries read the recording rules, filtered by the dashboard
variables; counters are never read raw.

Modules: context (variables, filters), comparisons and reading (what the alerts compare), prose
(titles, descriptions), panels (constructors, a failure mode's panels), layout and rows (the grid),
fleet, baselines and jobs (each dashboard's own panels, ids 1 .. 99 above the failure-mode rows).
Those hand-made panels, and the hand-made rows (rows.HAND_MADE_ROWS), read catalog names only through
their declaration in catalog/dashboards.yaml (rulesgen/model/panels.py: the builders' ids and roles); an undeclared one
is not drawn. The records and metrics they query are asked for by role (Context.named; rulesgen/model/roles.py,
signals.yaml and metrics.yaml roles:). After build, every query and every rule must read only series the rule
set or the metric catalog produces (builders/series_check.py).
"""
from __future__ import annotations

from grafanalib.core import Annotations
from grafanalib.core import Dashboard as GrafanaDashboard
from grafanalib.core import Templating, Time

from ...load.resolved import Resolved
from ...load.settings import Settings
from ...model import conventions
from ...model.catalog import Catalog, FailureMode
from ...model.output import (
    DASHBOARD_GENERATED_NOTE, DASHBOARD_SCHEMA_VERSION, DashboardFile, RuleSet)
from ..series_check import check_reads
from .baselines import baseline_panels
from .context import Context, variable_templates
from .firing import firing_table
from .fleet import fleet_panels
from .jobs import job_panels
from .layout import flattened, section
from .links import dashboard_links, dashboard_tags, used_variables, with_view_links
from .panels import firing_alerts_panel
from .rows import active_modes, alert_annotations, failure_mode_rows

DASHBOARD_TITLES = {
    "gpu-fleet-overview": "GPU Fleet Overview",
    "gpu-health": "GPU Health",
    "gpu-performance": "GPU Performance",
    "gpu-baselines": "GPU Baselines",
    "gpu-jobs": "GPU Jobs",
}
DASHBOARD_PURPOSE = {
    "gpu-fleet-overview": "Executive view: GPUs by model and health, utilisation by SM active, busy vs idle GPU-hours, cost and waste.",
    "gpu-health": "On-call view: a row per hardware failure mode, with its alerts as annotations.",
    "gpu-performance": "Debug view: a row per efficiency failure mode, in the order of the diagnosis tree.",
    "gpu-baselines": "Each GPU against its own downsampled history and its busy same-model peers, per baseline signal.",
    "gpu-jobs": "Pick a namespace and pod: its GPUs, the spread across its ranks, its efficiency.",
}
def _group(ctx: Context, group: str) -> list[FailureMode]:
    return [fm for _, fm in active_modes(ctx, group)]


# Each dashboard's header row (title, panels) above its failure-mode rows.
HEADERS = {
    "gpu-fleet-overview": ("Fleet", lambda ctx: [*fleet_panels(ctx), firing_table(ctx, list(ctx.catalog.failure_modes))]),
    "gpu-health": ("Overview", lambda ctx: [firing_alerts_panel(ctx, _group(ctx, "health")),
                                            firing_table(ctx, _group(ctx, "health"))]),
    "gpu-performance": ("Overview", lambda ctx: [firing_alerts_panel(ctx, _group(ctx, "efficiency"))]),
    "gpu-baselines": ("Baselines by signal", baseline_panels),
    "gpu-jobs": ("Job", job_panels),
}


def build_dashboard(ctx: Context, dashboard_id: str) -> GrafanaDashboard:
    """The header row open, each failure mode's row collapsed below it; the variables its panels use, the links
    to the other dashboards and from each series to its GPU's, node's or job's view (links.py)."""
    header_title, header = HEADERS[dashboard_id]
    panels, y = section(header_title, 1, [with_view_links(ctx, p) for p in header(ctx)], 0)
    groups = [g for g, d in conventions.GROUP_DASHBOARD.items() if d == dashboard_id]
    for group in groups:
        rows, y = failure_mode_rows(ctx, group, y)
        panels += rows
    used = used_variables(flattened(panels))
    annotations = [a for group in groups for a in alert_annotations(ctx, group, flattened(panels), used)]
    return GrafanaDashboard(
        title=DASHBOARD_TITLES[dashboard_id], uid=conventions.stable_uid(dashboard_id),
        description=f"{DASHBOARD_PURPOSE[dashboard_id]} {DASHBOARD_GENERATED_NOTE}",
        tags=dashboard_tags(dashboard_id, groups), panels=panels, templating=Templating(variable_templates(ctx, used)),
        annotations=Annotations(annotations), links=dashboard_links(dashboard_id), schemaVersion=DASHBOARD_SCHEMA_VERSION,
        time=Time("now-6h", "now"), refresh="1m", timezone="browser", graphTooltip=1, editable=False)


def build_dashboards(catalog: Catalog, settings: Settings, rules: RuleSet,
                     resolved: Resolved | None = None) -> list[DashboardFile]:
    """The dashboards, after checking that every series they and the rules read is produced (series_check)."""
    ctx = Context.of(catalog, settings, rules, resolved)
    files = [DashboardFile(d, conventions.dashboard_file(d), build_dashboard(ctx, d)) for d in DASHBOARD_TITLES]
    check_reads(catalog, settings, rules, files)
    return files
