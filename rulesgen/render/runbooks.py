"""One Markdown runbook per failure mode, rendered from the catalog with jinja2 (sandboxed,
StrictUndefined: a template typo is an error, never an empty section)."""
from __future__ import annotations

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from ..durations import format_duration
from ..model.conventions import runbook_path
from ..model.output import Artifact, RunbookPage
from ..model.slos import SLO_FAILURE_MODE, Slo, absent_alert_name
from ..model.slos import alert_name as slo_alert_name
from ..promql.text import format_number

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


def render_runbooks(pages: list[RunbookPage]) -> list[Artifact]:
    template = _ENV.get_template("runbook.md.j2")
    return [Artifact(p.path, template.render(fm=p.fm, alerts=p.alerts, thresholds=p.thresholds, inactive=p.inactive,
                                             limits=p.limits, dashboard=p.dashboard, health=p.health,
                                             job_inputs=p.job_inputs))
            for p in pages]


def render_slo_runbook(slos: tuple[Slo, ...]) -> Artifact:
    """The slo_burn page every SLO alert's runbook_url opens: each SLO rendered, its tiers as a table."""
    pages = [{"slo": s, "objective": format_number(s.objective), "period": format_duration(s.period),
              "budget": format_number(round(s.budget * 100, 6)) + "%", "absent": absent_alert_name(s),
              "absent_for": format_duration(s.spec.input_absent_for),
              "absent_when": {"job": "a job that exported its steps within the day, whose pods hold GPUs, exports none",
                              "kube_job": "a cluster whose GPU Jobs finished within the day has no kube-state-metrics Job series"
                              }.get(s.spec.scope, "a cluster counted within the day has no GPU in the inventory"),
              "tiers": [{"alert": slo_alert_name(s, cls), "name": t.name, "cls": cls, "long": format_duration(t.long),
                         "short": format_duration(t.short), "factor": format_number(round(t.factor(s.period), 2)),
                         "share": f"{t.budget_share:.0%}"} for t, cls in s.tiers]}
             for s in slos]
    return Artifact(runbook_path(SLO_FAILURE_MODE), _ENV.get_template("slo_runbook.md.j2").render(slos=pages))
