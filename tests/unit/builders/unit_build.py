"""Shared by the builder unit tests: the bundled catalog with rulesgen's default settings, loaded and built
in-process once per session (no CLI, no binary: starting a process while it builds fails)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from functools import lru_cache

from rulesgen.artifacts import load_inputs
from rulesgen.builders.dashboards.context import Context
from rulesgen.builders.rules import build_rules
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.load.resolved import Resolved, resolve
from rulesgen.load.settings import Settings
from rulesgen.model.catalog import Catalog
from rulesgen.model.output import RuleSet


@dataclass(frozen=True)
class Built:
    catalog: Catalog
    settings: Settings
    resolved: Resolved
    rules: RuleSet
    ctx: Context


def _refuse(*args, **kwargs):
    raise AssertionError(f"a builder started a process: {args[:2]}")


@lru_cache(maxsize=None)
def bundled() -> Built:
    """The bundled catalog, rulesgen's defaults (no rulesgen.yaml), its rules and the dashboards' Context."""
    start, subprocess.Popen.__init__ = subprocess.Popen.__init__, _refuse
    try:
        catalog, settings = load_inputs(bundled_catalog_dir(), None)
        resolved = resolve(catalog, settings)
        rules = build_rules(catalog, settings, resolved)
        return Built(catalog, settings, resolved, rules, Context.of(catalog, settings, rules, resolved))
    finally:
        subprocess.Popen.__init__ = start


# Grafana's variables, a value each, so that a dashboard query parses as PromQL (as tests/test_dashboards.py does)
GRAFANA_VARIABLES = (("$__rate_interval", "5m"), ("$__interval", "1m"), ("$__range_s", "3600"), ("$__range", "1h"))


def grafana_free(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES:
        expr = expr.replace(variable, value)
    return expr


def with_context(built: Built, catalog: Catalog | None = None, settings: Settings | None = None) -> Context:
    """The dashboards' Context of another catalog or settings (the rules rebuilt for them)."""
    catalog, settings = catalog or built.catalog, settings or built.settings
    resolved = resolve(catalog, settings)
    return Context.of(catalog, settings, build_rules(catalog, settings, resolved), resolved)
