"""`rulesgen replay`: scenario files through promtool, optionally as another exporter dialect, with a plot."""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click

from .. import artifacts as arts
from ..engines.replay import format_outcome, replay
from ..engines.tools import ToolMissing
from ..errors import RulesgenError
from .app import catalog_option, config_option, emit_json, error, fail, format_option, plan_or_fail


@click.command(name="replay")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@catalog_option
@config_option
@click.option("--jobs", "-j", default=os.cpu_count() or 1, show_default="CPU count", help="promtool runs in parallel.")
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Also draw the scenario's series and when each alert was pending/firing to this PNG "
                   "(one scenario only; needs matplotlib: pip install 'dcgm-rulesgen[plot]').")
@click.option("--dialect", "dialect_names", multiple=True, metavar="NAME",
              help="Replay as another exporter/scrape set-up records it (repeatable): a preset such as "
                   "exporter-4.9, or axes joined by '+', e.g. hostname+names-4.9+scrape-60s. "
                   "`rulesgen replay --list-dialects` lists them.")
@click.option("--list-dialects", is_flag=True, is_eager=True, expose_value=False,
              callback=lambda ctx, _param, value: _list_dialects(ctx) if value else None,
              help="List the dialect axes and presets, then exit.")
@format_option
def replay_cmd(files, catalog, config, jobs, plot_path, dialect_names, fmt):
    """Replay scenario FILES through promtool: what fired, when, and whether it matches `expect`."""
    import tempfile

    from ..load.dialects import apply, parse_dialect
    from ..load.scenarios import load_scenarios
    if plot_path and len(files) != 1:
        raise click.UsageError("--plot takes exactly one scenario file")
    if plot_path:
        from ..engines.plot import PlotUnavailable, pyplot
        try:
            pyplot()  # before the replay, not after it
        except PlotUnavailable as exc:
            error(str(exc))
            sys.exit(1)
    plan = plan_or_fail(catalog, config, None)
    try:
        scenarios = load_scenarios([Path(f) for f in files], plan.catalog.alert_modes,
                                   known_metrics={n for m in plan.catalog.metrics for n in m.names},
                                   job_metrics=plan.settings.job_metrics.names)
        scenarios = arts.for_settings(scenarios, plan.settings, plan.resolved)
        dialects = [parse_dialect(d) for d in dialect_names]
    except RulesgenError as exc:
        fail(exc)
    if dialects:
        scenarios = [apply(s, d, plan.catalog) for s in scenarios for d in dialects]
    failed = 0
    outcomes = []
    modes = plan.catalog.alert_modes
    with tempfile.TemporaryDirectory(prefix="rulesgen-rules-") as tmp:
        arts.write_all(Path(tmp), [a for a in plan.artifacts if a.path.startswith("alerts/")])
        rule_paths = [Path(tmp, f.path) for f in plan.rules.files if f.path not in arts.DASHBOARD_ONLY]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(replay, s, rule_paths, modes) for s in scenarios]
            for future in futures:
                try:
                    outcome = future.result()
                except ToolMissing as exc:
                    error(str(exc))
                    sys.exit(1)
                if fmt == "text":
                    click.echo(_coloured(format_outcome(outcome, plan.settings.host_label)))
                outcomes.append(outcome)
                failed += not outcome.ok
        if plot_path:
            _plot(scenarios[0], rule_paths, plan, Path(plot_path))
    if fmt == "json":
        emit_json({"matched": len(scenarios) - failed, "total": len(scenarios),
                   "scenarios": [_outcome_json(o) for o in outcomes]})
    else:
        click.echo(f"{len(scenarios) - failed}/{len(scenarios)} scenarios match their expectations")
    sys.exit(1 if failed else 0)


def _coloured(text: str) -> str:
    """PASS green, FAIL / FALSE ALERT / MISSING red (on a terminal only: click.echo drops it elsewhere)."""
    first, _, rest = text.partition("\n")
    word = first.split(" ", 1)[0]
    first = click.style(word, fg="green" if word == "PASS" else "red", bold=True) + first[len(word):]
    rest = rest.replace("[FALSE ALERT]", click.style("[FALSE ALERT]", fg="red")).replace(
        "  MISSING:", "  " + click.style("MISSING", fg="red") + ":")
    return first + ("\n" + rest if rest else "")


def _outcome_json(o) -> dict:
    """{name, path, description, ok, fired: [{alertname, failure_mode, severity, first_firing_seconds, labels,
    verdict}], missing: [explanations]}; verdict is expected | allowed | false_alert (as the text report)."""
    def verdict(f):
        if f in o.unexpected:
            return "false_alert"
        expected = any(e.failure_mode == f.failure_mode for e in o.scenario.expect)
        return "allowed" if f.failure_mode in o.scenario.also_allowed and not expected else "expected"
    fired = [{"alertname": dict(f.labels).get("alertname"), "failure_mode": f.failure_mode,
              "severity": dict(f.labels).get("severity"), "first_firing_seconds": f.first_firing,
              "labels": dict(f.labels), "verdict": verdict(f)} for f in o.fired]
    return {"name": o.scenario.name, "path": o.scenario.path, "description": o.scenario.description, "ok": o.ok,
            "fired": fired, "missing": list(o.missing)}


def _list_dialects(ctx) -> None:
    from ..load.dialects import describe
    click.echo("\n".join(describe()))
    ctx.exit(0)


def _plot(scenario, rule_paths, plan, out: Path) -> None:
    from ..engines.plot import PlotUnavailable, draw, plot_data
    try:
        data = plot_data(scenario, rule_paths, plan.catalog, plan.settings.host_label)
        draw(data, out, plan.settings.host_label)
    except (PlotUnavailable, ToolMissing) as exc:
        error(str(exc))
        sys.exit(1)
    click.echo(f"plot: {out} ({len(data.metrics)} series panels, {len(data.spans)} pending/firing spans)")
