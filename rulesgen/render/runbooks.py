"""One Markdown runbook per failure mode, rendered from the catalog with jinja2 (sandboxed,
StrictUndefined: a template typo is an error, never an empty section)."""
from __future__ import annotations

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from ..model.output import Artifact, RunbookPage

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
