"""The `rulesgen` command group and what its commands share: the config file, the plan, errors."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import artifacts as arts
from .. import interrupts
from ..catalog import bundled_catalog_dir
from ..errors import RulesgenError
from ..tools import ToolMissing

DEFAULT_CONFIG = "rulesgen.yaml"


def config_path(path: str | None) -> Path | None:
    if path:
        p = Path(path)
        if not p.exists():
            raise click.BadParameter(f"{path}: file not found", param_hint="--config")
        return p
    return Path(DEFAULT_CONFIG) if Path(DEFAULT_CONFIG).exists() else None


def fail(exc: RulesgenError) -> None:
    for d in exc.diagnostics:
        click.echo(str(d), err=True)
    click.echo(f"{len(exc.diagnostics)} error(s); nothing written.", err=True)
    sys.exit(1)


def plan_or_fail(catalog, config, scenarios, parse_with_promtool=False):
    try:
        plan = arts.plan(Path(catalog), config_path(config), Path(scenarios) if scenarios else None)
        if parse_with_promtool:
            promtool_parse(plan)
        return plan
    except RulesgenError as exc:
        fail(exc)


def promtool_parse(plan) -> None:
    """Full PromQL parse by the real promtool when it is available (the builders parse every expression
    with promql-parser, which follows Prometheus 2.45; promtool is the final judge)."""
    from ..tools import find_tool
    from ..validate import promtool_problems
    try:
        promtool = find_tool("promtool")
    except ToolMissing:
        click.echo("note: promtool not found, PromQL checked by promql-parser only (run `make tools`)", err=True)
        return
    problems = promtool_problems(plan.rules, promtool)
    if problems:
        raise RulesgenError(problems)


SCENARIO_DIRS = ("fixtures/scenarios", "scenarios")


def _default_scenarios() -> str:
    """This repository's fixtures/scenarios, else scenarios/ as `rulesgen init` lays out a GitOps repo."""
    return next((d for d in SCENARIO_DIRS if Path(d).is_dir()), SCENARIO_DIRS[-1])


common = [
    click.option("--catalog", default=str(bundled_catalog_dir()), show_default="bundled catalog/", help="Catalog directory."),
    click.option("--config", default=None, help=f"User config (default: ./{DEFAULT_CONFIG} if present)."),
    click.option("--scenarios", default=_default_scenarios, show_default="./fixtures/scenarios, else ./scenarios",
                 help="Scenario directory for tests/promtool."),
]


def with_common(f):
    for option in reversed(common):
        f = option(f)
    return f


class RulesgenGroup(click.Group):
    """Ctrl-C (and SIGTERM) anywhere: one line and exit 130 (143), never a traceback; an output folder
    that cannot be written: one line naming it, exit 1."""

    def main(self, *args, **kwargs):
        interrupts.install()
        return super().main(*args, **kwargs)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            signum = interrupts.signal_of(exc)
            outcome = getattr(exc, "rulesgen_outcome", "")
            click.echo(f"rulesgen: interrupted by {signum.name}" + (f"; {outcome}" if outcome else ""), err=True)
            ctx.exit(interrupts.EXIT_CODES[signum])
        except arts.OutputError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(1)


@click.group(cls=RulesgenGroup)
def main():
    """Generate Prometheus/VictoriaMetrics rules, promtool tests and dashboards for GPU failure modes."""
