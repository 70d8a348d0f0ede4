"""What the dashboard checks read: each Grafana dashboard file given to `rulesgen lint` (its JSON, its panels,
those of collapsed rows too, its queries, where a panel or key is in the text), all of them together (the
targets of their links) and the series a query may read (DashboardOptions).

A finding names the panel ("panel 101 'GPU lost: ...': ...") at the line of the panel's "id", or the key it is
about; no Grafana runs here, so the checks read the dashboard as Grafana's schema and grafana/dashboard-linter
describe it (lint/rule_*.go: the rules rulesgen applies are listed in docs/cli.md, with the excluded ones)."""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from ..builders.rules import build_rules
from ..builders.series_check import MACROS, produced
from ..catalog import bundled_catalog_dir, load_catalog
from ..load.settings import Settings
from ..model.catalog import Catalog
from ..promql import tree as promql_tree
from ..render.grafana import is_generated_dashboard
from .base import Hit

# Data-link macros Grafana fills from the series, row or value clicked (Grafana docs, "Data link variables").
LINK_MACROS = re.compile(r"\$\{(__field\.(labels\.\w+|name)|__data\.fields\.\w+|__url_time_range|__value\.\w+|"
                         r"__series\.name|__from|__to)\}")
VARIABLE_REF = re.compile(r"\$\{?([A-Za-z_]\w*)")
DATA_PANEL_TYPES = ("timeseries", "stat", "table", "gauge", "bargauge", "graph", "singlestat", "heatmap", "piechart")


@dataclass(frozen=True)
class DashboardOptions:
    """known: the series a panel may read (recorded by the catalog's rules or by a rule file given, a catalog
    metric under any name, a training-job metric, or written by the engines); counters: the catalog's counters."""
    known: frozenset[str] = frozenset()
    counters: frozenset[str] = frozenset()


def catalog_series(catalog: Catalog, settings: Settings) -> DashboardOptions:
    """What the catalog's rendered rules record and its metrics are called (builders/series_check.produced)."""
    known = produced(catalog, settings, build_rules(catalog, settings))
    counters = {n for m in catalog.metrics if m.type == "counter" for n in m.names}
    return DashboardOptions(frozenset(known), frozenset(counters))


@functools.lru_cache(maxsize=1)
def bundled_series() -> DashboardOptions:
    """catalog_series of the bundled catalog under the default settings (lint_files without a catalog given)."""
    return catalog_series(load_catalog(bundled_catalog_dir()), Settings())


def parsed(expr: str) -> str:
    """A query with Grafana's own variables replaced by a value of their kind, so that it parses as PromQL
    (the user's variables stand in label matchers' strings and parse as they are)."""
    for pattern, value in MACROS:
        expr = pattern.sub(value, expr)
    return expr


def title_of(panel: dict) -> str:
    return f"panel {panel.get('id')} {panel.get('title', '')!r}"


@dataclass
class Dashboard:
    """One dashboard file; `board` holds every dashboard given (link targets) and the options."""
    path: str
    text: str
    data: dict
    board: "Board" = field(repr=False)

    @cached_property
    def panels(self) -> list[dict]:
        """Every panel, those of collapsed rows after their row."""
        top = [p for p in self.data.get("panels", []) or [] if isinstance(p, dict)]
        return [q for p in top for q in (p, *[x for x in p.get("panels", []) or [] if isinstance(x, dict)])]

    @cached_property
    def data_panels(self) -> list[dict]:
        return [p for p in self.panels if p.get("type") != "row"]

    @property
    def variables(self) -> list[dict]:
        return [v for v in (self.data.get("templating") or {}).get("list", []) or [] if isinstance(v, dict)]

    @property
    def variable_names(self) -> list[str]:
        return [str(v.get("name")) for v in self.variables]

    @property
    def generated(self) -> bool:
        return is_generated_dashboard(self.text)

    def targets(self, panel: dict) -> Iterator[dict]:
        yield from (t for t in panel.get("targets", []) or [] if isinstance(t, dict) and isinstance(t.get("expr"), str))

    def links(self, panel: dict) -> list[dict]:
        """The panel's data links (fieldConfig.defaults.links) and panel links."""
        defaults = (panel.get("fieldConfig") or {}).get("defaults") or {}
        return [x for x in [*(defaults.get("links") or []), *(panel.get("links") or [])] if isinstance(x, dict)]

    def where(self, pattern: str) -> tuple[int, int]:
        """(line, column) of the first match of pattern in the text, (1, 1) if none."""
        m = re.search(pattern, self.text)
        if not m:
            return 1, 1
        line = self.text.count("\n", 0, m.start()) + 1
        return line, m.start() - (self.text.rfind("\n", 0, m.start()) + 1) + 1

    def hit(self, message: str, panel: dict | None = None, key: str | None = None) -> Hit:
        """A finding about the panel (at its "id"), a key of the dashboard (`key`, a regex), or the dashboard."""
        if panel is not None:
            line, col = self.where(rf'"id":\s*{re.escape(str(panel.get("id")))}\b') if "id" in panel else (1, 1)
            return Hit(self.path, line, col, f"{title_of(panel)}: {message}")
        line, col = self.where(key) if key else (1, 1)
        return Hit(self.path, line, col, message)

    def variable_hit(self, variable: dict, message: str) -> Hit:
        line, col = self.where(rf'"name":\s*{re.escape(json.dumps(str(variable.get("name"))))}')
        return Hit(self.path, line, col, f"variable {variable.get('name')}: {message}")


@dataclass
class Board:
    """Every dashboard given, judged together: the links' targets are among them."""
    dashboards: list[Dashboard]
    options: DashboardOptions

    @cached_property
    def by_uid(self) -> dict[str, Dashboard]:
        return {str(d.data.get("uid")): d for d in self.dashboards if d.data.get("uid")}

    @cached_property
    def tags(self) -> set[str]:
        return {str(t) for d in self.dashboards for t in d.data.get("tags", []) or []}


def load_dashboard(path, text: str) -> dict | str:
    """The dashboard's JSON object, or why it is not one."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return f"does not parse as JSON: {exc}"
    return data if isinstance(data, dict) else "is not a JSON object (a Grafana dashboard is one)"


def query_problem(expr: str) -> str | None:
    problems = promql_tree.problems(parsed(expr))
    return problems[0] if problems else None
