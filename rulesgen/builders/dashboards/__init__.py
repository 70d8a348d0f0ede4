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
chapters (each row says whom it serves), executive and on_call (the audience dashboards, chapters only),
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
from grafanalib.core import Panel, Templating, Time

from ...load.resolved import Resolved
from ...load.settings import Settings
from ...model import conventions
from ...model.catalog import Catalog, FailureMode
from ...model.output import (
    DASHBOARD_GENERATED_NOTE, DASHBOARD_SCHEMA_VERSION, DashboardFile, RuleSet)
from ..series_check import check_reads
from . import executive, on_call
from .baselines import baseline_panels
from .chapters import Chapter, chapter_title
from .context import Context, variable_templates
from .firing import firing_table
from .fleet import fleet_panels
from .jobs import job_panels
from .layout import flattened, section
from .links import dashboard_links, dashboard_tags, used_variables, with_view_links
from .panels import firing_alerts_panel
from .rows import active_modes, alert_annotations, failure_mode_rows

DASHBOARD_TITLES = {
    "gpu-executive": "GPU Executive Overview",
    "gpu-on-call": "GPU On-call",
    "gpu-fleet-overview": "GPU Fleet Overview",
    "gpu-health": "GPU Health",
    "gpu-performance": "GPU Performance",
    "gpu-baselines": "GPU Baselines",
    "gpu-jobs": "GPU Jobs",
}
DASHBOARD_PURPOSE = {
    "gpu-executive": "For leads: capacity, honest utilisation, cost per team and job, job success, inventory.",
    "gpu-on-call": "For on-call: what is firing now and where, nodes by health, exporters down, GPUs lost, "
                   "pending GPU pods, failing jobs.",
    "gpu-fleet-overview": "For the platform team: GPUs by model and health, utilisation by SM active, busy vs idle "
                          "GPU-hours, cost and waste, every alert firing now.",
    "gpu-health": "Debug view for on-call and the hardware team: a row per hardware failure mode, with its alerts as "
                  "annotations.",
    "gpu-performance": "Debug view for job owners: a row per efficiency failure mode, in the order of the diagnosis tree.",
    "gpu-baselines": "Debug view for the hardware team: each GPU against its own downsampled history and its busy "
                     "same-model peers, per baseline signal.",
    "gpu-jobs": "Debug view for job owners: pick a namespace and pod: its GPUs, the spread across its ranks, its "
                "efficiency.",
}


def _group(ctx: Context, group: str) -> list[FailureMode]:
    return [fm for _, fm in active_modes(ctx, group)]


# Each dashboard's chapters: its open rows (title, whom it serves, panels) above its failure-mode rows.
CHAPTERS = {
    "gpu-executive": executive.CHAPTERS,
    "gpu-on-call": on_call.CHAPTERS,
    "gpu-fleet-overview": (Chapter("Fleet", "the platform team: capacity, use, cost and alerts at a glance",
                                   lambda ctx: [*fleet_panels(ctx), firing_table(ctx, list(ctx.catalog.failure_modes))]),),
    "gpu-health": (Chapter("Overview", "on-call: the hardware alerts firing now",
                           lambda ctx: [firing_alerts_panel(ctx, _group(ctx, "health")),
                                        firing_table(ctx, _group(ctx, "health"))]),),
    "gpu-performance": (Chapter("Overview", "job owners: the efficiency alerts firing",
                                lambda ctx: [firing_alerts_panel(ctx, _group(ctx, "efficiency"))]),),
    "gpu-baselines": (Chapter("Baselines by signal", "the hardware team: each GPU against its past and peers",
                              baseline_panels),),
    "gpu-jobs": (Chapter("Job", "job owners: one job's GPUs, ranks and efficiency", job_panels),),
}


def chapter_sections(ctx: Context, chapters) -> tuple[list[Panel], int]:
    """Each chapter's row (ids from 1, its panels after it) open with its panels below it, from the top."""
    panels: list[Panel] = []
    row_id, y = 1, 0
    for chapter in chapters:
        drawn = [with_view_links(ctx, p) for p in chapter.panels(ctx)]
        if not drawn:  # a catalog without what the chapter reads
            continue
        laid, y = section(chapter_title(chapter.title, chapter.audience), row_id,
                          drawn, y, chapter.per_line)
        panels += laid
        row_id = max(p.id for p in laid) + 1
    if row_id > 100:  # pragma: no cover - the failure-mode rows own the ids from 100
        raise ValueError("the chapters take more than 99 panel ids")
    return panels, y


def build_dashboard(ctx: Context, dashboard_id: str) -> GrafanaDashboard:
    """The chapters open, each failure mode's row collapsed below them; the variables its panels use, the links
    to the other dashboards and from each series to its GPU's, node's or job's view (links.py)."""
    panels, y = chapter_sections(ctx, CHAPTERS[dashboard_id])
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
