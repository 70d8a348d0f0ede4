"""The `rulesgen` command group and what its commands share: the config file, the plan, errors."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import click

from .. import artifacts as arts
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
        click.echo(styled(str(d)), err=True)
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


# Every option more than one command takes is declared here once, with its help: the commands use these.
catalog_option = click.option("--catalog", default=str(bundled_catalog_dir()), show_default="bundled catalog/",
                              help="Catalog directory (failure_modes.yaml, metrics.yaml ...).")
config_option = click.option("--config", default=None, metavar="FILE",
                             help=f"User config [default: ./{DEFAULT_CONFIG} if present].")
scenarios_option = click.option("--scenarios", default=_default_scenarios, show_default="./fixtures/scenarios, else ./scenarios",
                                help="Scenario directory for tests/promtool.")
out_option = click.option("--out", default=".", show_default=True, metavar="DIR",
                          help="Output root (alerts/, tests/promtool/, dashboards/ ...).")
diff_option = click.option("--diff", "show_diff", is_flag=True,
                           help="Print a unified diff of the files a render would change (a/ on disk, b/ rendered).")
format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                             help="text for people; json: one document on stdout, keys sorted (shapes: docs/cli.md).")
common = [catalog_option, config_option, scenarios_option]


def with_common(f):
    for option in reversed(common):
        f = option(f)
    return f


def emit_json(doc) -> None:
    """One JSON document on stdout, keys sorted, never coloured."""
    click.echo(json.dumps(doc, sort_keys=True, indent=2), color=False)


SEVERITY_COLOURS = {"error": "red", "warning": "yellow"}
_SEVERITY = re.compile(r": (error|warning)\[")


def styled(line: str) -> str:
    """A diagnostic line (path:line:col: severity[code]: message) with its severity word coloured;
    click.echo drops the colour when the stream is not a terminal or colour is off."""
    m = _SEVERITY.search(line)
    if not m:
        return line
    word = click.style(m.group(1), fg=SEVERITY_COLOURS[m.group(1)], bold=True)
    return line[:m.start(1)] + word + line[m.end(1):]


def error(message: str) -> None:
    """`error: message` on stderr (the word coloured on a terminal)."""
    click.echo(f"{click.style('error', fg='red', bold=True)}: {message}", err=True)


def version() -> str:
    """The installed distribution's version (dcgm-rulesgen), else the package's own (a checkout)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    from .. import __version__
    try:
        return dist_version("dcgm-rulesgen")
    except PackageNotFoundError:
        return __version__


def colour_off() -> bool:
    """https://no-color.org: NO_COLOR set and not empty turns colour off."""
    return bool(os.environ.get("NO_COLOR"))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version(), "--version", prog_name="rulesgen", message="%(prog)s %(version)s")
@click.option("--no-color", is_flag=True, help="Never colour (also: NO_COLOR=1). Colour is used on terminals only.")
@click.pass_context
def main(ctx, no_color):
    """Generate Prometheus/VictoriaMetrics rules, promtool tests and dashboards for GPU failure modes."""
    if no_color or colour_off():
        ctx.color = False
