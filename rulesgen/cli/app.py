"""The `rulesgen` command group and what its commands share: the config file, the plan, errors."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import click

from .. import artifacts as arts
from .. import interrupts
from ..catalog import bundled_catalog_dir
from ..engines.tools import ToolMissing
from ..errors import RulesgenError

DEFAULT_CONFIG = "rulesgen.yaml"


def config_path(path: str | None) -> Path | None:
    if path:
        p = Path(path)
        if not p.exists():
            raise click.BadParameter(f"{path}: file not found", param_hint="--config")
        return p
    return Path(DEFAULT_CONFIG) if Path(DEFAULT_CONFIG).exists() else None


def render_config(config: str | None, defaults: bool, verb: str = "render") -> str | None:
    """The config of a command that writes or compares the outputs (render, test, check): --config, else
    ./rulesgen.yaml; without either, a usage error unless --defaults asks for the bundled defaults (a render
    of the defaults in the wrong folder would write dozens of files, or remove the outputs a config enabled;
    a check of them would report every output of another config as missing)."""
    if defaults and config:
        raise click.UsageError(f"--defaults and --config exclude each other: --defaults {verb}s without a config file")
    if defaults and Path(DEFAULT_CONFIG).exists():
        raise click.UsageError(f"--defaults: ./{DEFAULT_CONFIG} exists and would be ignored; drop --defaults to {verb} "
                               f"with it, or delete it to {verb} the defaults")
    if not config and not defaults and not Path(DEFAULT_CONFIG).exists():
        raise click.UsageError(f"no ./{DEFAULT_CONFIG} here ({Path.cwd()}) and no --config: run `rulesgen init` to write one, "
                               f"pass --config FILE, or --defaults to {verb} the bundled defaults")
    return config


def check_out_folder(out: str, files: int) -> None:
    """A render writes into a folder with a rulesgen.yaml, a new or empty one, or one it rendered into
    before; anything else (a home folder, another project) is a usage error before anything is written."""
    folder = Path(out)
    if not folder.is_dir() or (folder / DEFAULT_CONFIG).exists() or not any(folder.iterdir()):
        return
    if arts.earlier_render(folder):
        return
    raise click.UsageError(f"--out {out}: this folder holds other files, no {DEFAULT_CONFIG} and no earlier render; "
                           f"rendering would write {files} files into it (alerts/, dashboards/, tests/ ...): render into "
                           f"an empty folder, or run `rulesgen init {out}` first")


def warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def placeholder_url_warnings(settings) -> None:
    """Links left at their defaults point at this project's repository or an example host, not at yours."""
    where = settings.source if settings.source != "<defaults>" else "the defaults"
    for key, value in settings.placeholder_urls:
        what = ("runbook_url points at this project's own runbooks" if key == "runbook_base"
                else "dashboard_url points at an example host")
        warn(f"{where}: urls.{key} is not set: every alert's {what} ({value}); set urls.{key} in {DEFAULT_CONFIG}")
    sharding = settings.sharding
    if settings.sharding_unused:
        w = settings.where("sharding")
        warn(f"{w.path}:{w.line}:{w.col}: sharding: is not used: topology is single, so only the single server's files "
             "are rendered; set topology: sharded (or leave topology out) to render the shards' files from it")
    if settings.topology == "sharded" and sharding.write_url is None:
        warn(f"{where}: sharding.write_url is not set: the shards' configuration in alerts/sharded/ remote-writes to an "
             f"example host ({sharding.url}); set sharding.write_url (your global store's remote-write endpoint) in "
             f"{DEFAULT_CONFIG}")


def apply_size_warnings(plan) -> None:
    """A dashboard resource too big for a client-side `kubectl apply` (its last-applied annotation, render/kube.py)."""
    from ..render.kube import ANNOTATION_LIMIT, LAST_APPLIED, oversized
    for path, size in oversized(plan.artifacts):
        warn(f"{path}: a client-side `kubectl apply` would write {size:,} bytes of annotations ({LAST_APPLIED}), over "
             f"Kubernetes' {ANNOTATION_LIMIT:,}: apply it with `kubectl apply --server-side`")


def fail(exc: RulesgenError) -> None:
    """Print the diagnostics and exit 1: as JSON on stdout for a command run with --format json (a script
    reading its output gets the errors in the same form as its results), else one line each on stderr."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.params.get("fmt") == "json":
        emit_json({"errors": [{"path": d.path, "line": d.line, "col": d.col, "severity": d.severity, "code": d.code,
                               "message": d.message} for d in exc.diagnostics]})
        sys.exit(1)
    for d in exc.diagnostics:
        click.echo(styled(str(d)), err=True)
    click.echo(f"{len(exc.diagnostics)} error(s); nothing written.", err=True)
    sys.exit(1)


def plan_or_fail(catalog, config, scenarios, parse_with_promtool=False, scenario_tests=None):
    ctx = click.get_current_context(silent=True)
    explicit = ctx is not None and ctx.get_parameter_source("scenarios") not in (None, click.core.ParameterSource.DEFAULT)
    if scenarios and explicit and not Path(scenarios).is_dir():
        raise click.BadParameter(f"{scenarios}: no such folder (without it the generated scenario tests in "
                                 f"tests/promtool/ and tests/vmalert/ would be removed)", param_hint="--scenarios")
    try:
        plan = arts.plan(Path(catalog), config_path(config), Path(scenarios) if scenarios else None, scenario_tests)
        if parse_with_promtool:
            promtool_parse(plan)
        return plan
    except RulesgenError as exc:
        fail(exc)


def promtool_parse(plan) -> None:
    """Full PromQL parse by the real promtool when it is available (the builders parse every expression
    with promql-parser, which follows Prometheus 2.45; promtool is the final judge)."""
    from ..engines.tools import find_tool
    from ..engines.validate import promtool_problems
    try:
        promtool = find_tool("promtool")
    except ToolMissing:
        click.echo("note: promtool not found, PromQL checked by promql-parser only (run `make tools`)", err=True)
        return
    problems = promtool_problems(plan.rules, promtool)
    if problems:
        raise RulesgenError(problems)


SCENARIO_DIRS = ("fixtures/scenarios", "scenarios")


def scenario_warnings(plan, scenarios) -> None:
    if plan.scenario_tests and scenarios and not plan.scenarios:
        where = f"no scenario in {scenarios}" if Path(scenarios).is_dir() else f"no scenarios folder ({', '.join(SCENARIO_DIRS)})"
        warn(f"{where}: tests/promtool/ and tests/vmalert/ get no tests (generated ones there are removed); "
             f"pass --scenarios DIR")


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
scenario_tests_option = click.option(
    "--scenario-tests/--no-scenario-tests", "scenario_tests", default=None,
    help="Plan tests/promtool/ and tests/vmalert/ (one unit test per scenario) or not "
         "[default: the config's outputs.scenario_tests, on unless set to false].")
common = [catalog_option, config_option, scenarios_option, scenario_tests_option]
defaults_option = click.option("--defaults", is_flag=True,
                               help=f"Use the bundled defaults without a config file (needed when there is no ./{DEFAULT_CONFIG}).")


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
            error(str(exc))
            ctx.exit(1)


@click.group(cls=RulesgenGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version(), "--version", prog_name="rulesgen", message="%(prog)s %(version)s")
@click.option("--no-color", is_flag=True, help="Never colour (also: NO_COLOR=1). Colour is used on terminals only.")
@click.pass_context
def main(ctx, no_color):
    """Generate Prometheus/VictoriaMetrics rules, promtool tests and dashboards for GPU failure modes."""
    if no_color or colour_off():
        ctx.color = False
