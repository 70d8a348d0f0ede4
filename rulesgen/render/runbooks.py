"""One Markdown runbook per failure mode, rendered from the catalog with jinja2 (sandboxed,
StrictUndefined: a template typo is an error, never an empty section)."""
from __future__ import annotations

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from .. import conventions, jobmetrics
from ..durations import format_duration
from ..model import Catalog
from ..output import Artifact, RuleSet
from ..resolved import Resolved
from ..settings import Settings

_ENV = SandboxedEnvironment(
    loader=jinja2.PackageLoader("rulesgen", "templates"),  # package data: works from a checkout and a wheel
    undefined=jinja2.StrictUndefined, autoescape=False, trim_blocks=True, lstrip_blocks=True,
    keep_trailing_newline=True,
)


def table_cell(value) -> str:
    """A Markdown table cell: a `|` (a PromQL regex a|b, |x - median|) ends the cell unless escaped,
    even inside a code span."""
    return str(value).replace("|", "\\|")


_ENV.filters["cell"] = table_cell


def runbook_path(failure_mode_id: str) -> str:
    return "runbooks/" + conventions.runbook_url("", failure_mode_id).lstrip("/")


def render_runbooks(catalog: Catalog, settings: Settings, rules: RuleSet, resolved: Resolved) -> list[Artifact]:
    template = _ENV.get_template("runbook.md.j2")
    out = []
    for view in resolved.modes:
        fm = view.fm
        alerts = [{"alert": r.alert, "severity": dict(r.labels)["severity"], "action": dict(r.labels)["action"],
                   "for_text": format_duration(r.for_seconds), "expr": r.expr}
                  for r in rules.rules if r.failure_mode == fm.id]
        thresholds = [{"name": t.name, "value": t.value, "unit": t.unit, "source": " ".join(t.source.split())}
                      for t in view.thresholds]
        dashboard = conventions.dashboard_url(settings.grafana_base_url, fm.group, settings.host_label,
                                              conventions.failure_mode_panel_id(view.index_in_group)).split("?")[0]
        health = catalog.health if catalog.health is not None and catalog.health.failure_mode == fm.id else None
        from ..builders.rules import limit_sources
        text = template.render(fm=fm, alerts=alerts, thresholds=thresholds, inactive=view.inactive or "",
                               limits=limit_sources(catalog, fm),
                               dashboard=dashboard, health=health,
                               job_inputs=tuple(jobmetrics.input_names(settings, fm.job_metrics)))
        out.append(Artifact(runbook_path(fm.id), text))
    return out
