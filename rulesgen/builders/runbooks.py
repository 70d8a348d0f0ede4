"""The runbook pages: each failure mode's text from the catalog with what this configuration renders of it
(its alerts, effective thresholds, limits, dashboard panel); render/runbooks.py writes them as Markdown."""
from __future__ import annotations

from ..durations import format_duration
from ..load import jobmetrics
from ..load.resolved import Resolved
from ..load.settings import Settings
from ..model import conventions
from ..model.catalog import Catalog
from ..model.output import RuleSet, RunbookPage
from .rules import limit_sources


def build_runbooks(catalog: Catalog, settings: Settings, rules: RuleSet, resolved: Resolved) -> list[RunbookPage]:
    pages = []
    for view in resolved.modes:
        fm = view.fm
        alerts = tuple({"alert": r.alert, "severity": dict(r.labels)["severity"], "action": dict(r.labels)["action"],
                        "for_text": format_duration(r.for_seconds), "expr": r.expr}
                       for r in rules.rules if r.failure_mode == fm.id)
        thresholds = tuple({"name": t.name, "value": t.value, "unit": t.unit, "source": " ".join(t.source.split())}
                           for t in view.thresholds)
        dashboard = conventions.dashboard_url(settings.grafana_base_url, fm.group).split("?")[0]
        health = catalog.health if catalog.health is not None and catalog.health.failure_mode == fm.id else None
        pages.append(RunbookPage(conventions.runbook_path(fm.id), fm, alerts, thresholds, view.inactive or "",
                                 tuple(limit_sources(catalog, fm)), dashboard, health,
                                 tuple(jobmetrics.input_names(settings, fm.job_metrics))))
    return pages
