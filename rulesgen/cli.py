"""Command line. The only module that prints or exits: 0 ok, 1 findings/errors, 2 usage."""
from __future__ import annotations

import os
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click

from . import artifacts as arts
from . import jobmetrics
from .catalog import bundled_catalog_dir
from .durations import rfc3339
from .errors import RulesgenError
from .render.counters import parse_counters
from .replay import format_outcome, replay, run_promtool_test
from .tools import ToolMissing

DEFAULT_CONFIG = "rulesgen.yaml"


def _config(path: str | None) -> Path | None:
    if path:
        p = Path(path)
        if not p.exists():
            raise click.BadParameter(f"{path}: file not found", param_hint="--config")
        return p
    return Path(DEFAULT_CONFIG) if Path(DEFAULT_CONFIG).exists() else None


def _fail(exc: RulesgenError) -> None:
    for d in exc.diagnostics:
        click.echo(str(d), err=True)
    click.echo(f"{len(exc.diagnostics)} error(s); nothing written.", err=True)
    sys.exit(1)


def _plan(catalog, config, scenarios, parse_with_promtool=False):
    try:
        plan = arts.plan(Path(catalog), _config(config), Path(scenarios) if scenarios else None)
        if parse_with_promtool:
            _promtool_parse(plan)
        return plan
    except RulesgenError as exc:
        _fail(exc)


def _promtool_parse(plan) -> None:
    """Full PromQL parse by the real promtool when it is available (the builders parse every expression
    with promql-parser, which follows Prometheus 2.45; promtool is the final judge)."""
    from .tools import find_tool
    from .validate import promtool_problems
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


@click.group()
def main():
    """Generate Prometheus/VictoriaMetrics rules, promtool tests and dashboards for GPU failure modes."""


@main.command()
@with_common
@click.option("--out", default=".", show_default=True, help="Output root (alerts/, tests/promtool/ ...).")
def render(catalog, config, scenarios, out):
    """Render every output file (all or none)."""
    plan = _plan(catalog, config, scenarios, parse_with_promtool=True)
    changed = arts.write_all(Path(out), plan.artifacts)
    click.echo(f"rendered {len(plan.artifacts)} files ({len(changed)} changed) into {out}")
    for name in changed:
        click.echo(f"  {name}")


@main.command()
@with_common
@click.option("--out", default=".", show_default=True)
def check(catalog, config, scenarios, out):
    """Fail when the committed outputs differ from a fresh render."""
    plan = _plan(catalog, config, scenarios, parse_with_promtool=True)
    diffs = arts.differences(Path(out), plan.artifacts)
    if diffs:
        for d in diffs:
            click.echo(d, err=True)
        click.echo("outputs are stale: run `make render` and commit the result", err=True)
        sys.exit(1)
    click.echo(f"{len(plan.artifacts)} generated files are up to date")


@main.command()
@with_common
@click.option("--out", default=".", show_default=True)
def test(catalog, config, scenarios, out):
    """Render, then run promtool on every scenario test in tests/promtool/."""
    plan = _plan(catalog, config, scenarios)
    arts.write_all(Path(out), plan.artifacts)
    files = sorted(Path(out, a.path) for a in plan.artifacts if a.path.startswith("tests/promtool/"))
    if not files:
        click.echo("no scenarios found", err=True)
        sys.exit(1)
    try:
        rc, output = run_promtool_test(files)
    except ToolMissing as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(output.rstrip())
    sys.exit(0 if rc == 0 else 1)


@main.command(name="replay")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--catalog", default=str(bundled_catalog_dir()), show_default="bundled catalog/")
@click.option("--config", default=None)
@click.option("--jobs", "-j", default=os.cpu_count() or 1, show_default="CPU count", help="promtool runs in parallel.")
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Also draw the scenario's series and when each alert was pending/firing to this PNG "
                   "(one scenario only; needs matplotlib: pip install 'rulesgen[plot]').")
@click.option("--dialect", "dialect_names", multiple=True, metavar="NAME",
              help="Replay as another exporter/scrape set-up records it (repeatable): a preset such as "
                   "exporter-4.9, or axes joined by '+', e.g. hostname+names-4.9+scrape-60s. "
                   "`rulesgen replay --list-dialects` lists them.")
@click.option("--list-dialects", is_flag=True, is_eager=True, expose_value=False,
              callback=lambda ctx, _param, value: _list_dialects(ctx) if value else None,
              help="List the dialect axes and presets, then exit.")
def replay_cmd(files, catalog, config, jobs, plot_path, dialect_names):
    """Replay scenario FILES through promtool: what fired, when, and whether it matches `expect`."""
    import tempfile

    from .dialects import apply, parse_dialect
    from .scenarios import load_scenarios
    if plot_path and len(files) != 1:
        raise click.UsageError("--plot takes exactly one scenario file")
    plan = _plan(catalog, config, None)
    try:
        scenarios = load_scenarios([Path(f) for f in files], [fm.id for fm in plan.catalog.failure_modes],
                                   known_metrics={n for m in plan.catalog.metrics for n in m.names},
                                   job_metrics=plan.settings.job_metrics.names)
        dialects = [parse_dialect(d) for d in dialect_names]
    except RulesgenError as exc:
        _fail(exc)
    if dialects:
        scenarios = [apply(s, d, plan.catalog) for s in scenarios for d in dialects]
    failed = 0
    modes = [fm.id for fm in plan.catalog.failure_modes]
    with tempfile.TemporaryDirectory(prefix="rulesgen-rules-") as tmp:
        arts.write_all(Path(tmp), [a for a in plan.artifacts if a.path.startswith("alerts/")])
        rule_paths = [Path(tmp, f.path) for f in plan.rules.files if f.path not in arts.DASHBOARD_ONLY]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(replay, s, rule_paths, modes) for s in scenarios]
            for future in futures:
                try:
                    outcome = future.result()
                except ToolMissing as exc:
                    click.echo(f"error: {exc}", err=True)
                    sys.exit(1)
                click.echo(format_outcome(outcome, plan.settings.host_label))
                failed += not outcome.ok
        if plot_path:
            _plot(scenarios[0], rule_paths, plan, Path(plot_path))
    click.echo(f"{len(scenarios) - failed}/{len(scenarios)} scenarios match their expectations")
    sys.exit(1 if failed else 0)


def _list_dialects(ctx) -> None:
    from .dialects import describe
    click.echo("\n".join(describe()))
    ctx.exit(0)


def _plot(scenario, rule_paths, plan, out: Path) -> None:
    from .plot import PlotUnavailable, draw, plot_data
    try:
        data = plot_data(scenario, rule_paths, plan.catalog, plan.settings.host_label)
        draw(data, out, plan.settings.host_label)
    except (PlotUnavailable, ToolMissing) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(f"plot: {out} ({len(data.metrics)} series panels, {len(data.spans)} pending/firing spans)")


@main.command(name="push")
@click.option("--grafana-url", required=True, help="Grafana base URL, e.g. https://grafana.example.com")
@click.option("--folder", default=None, help="Grafana folder (default: dashboards.folder in rulesgen.yaml, else GPU).")
@click.option("--timeout", default=10.0, show_default=True, type=click.FloatRange(min=0.1), help="Seconds per HTTP request.")
@click.option("--catalog", default=str(bundled_catalog_dir()), show_default="bundled catalog/")
@click.option("--config", default=None)
def push_cmd(grafana_url, folder, timeout, catalog, config):
    """Import the dashboards into a Grafana folder, idempotent by uid (token from GRAFANA_TOKEN)."""
    import json

    from .conventions import folder_uid
    from .push import PushError, push
    token = os.environ.get("GRAFANA_TOKEN", "")
    if not token:
        click.echo("error: GRAFANA_TOKEN is not set: export a Grafana service-account token with Editor rights", err=True)
        sys.exit(2)
    plan = _plan(catalog, config, None)
    dashboards = [json.loads(a.text) for a in plan.artifacts if a.path.startswith("dashboards/") and a.path.endswith(".json")]
    folder = folder or plan.settings.dashboards.folder
    try:
        pushed = push(grafana_url, token, dashboards, folder, folder_uid(folder), timeout)
    except PushError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    for d in pushed:
        click.echo(f"  {d.uid}  {d.title:<20} version {d.version}  {d.url}")
    click.echo(f"pushed {len(pushed)} dashboards into folder {folder!r} at {grafana_url}")


@main.command(name="list")
@click.option("--catalog", default=str(bundled_catalog_dir()), show_default="bundled catalog/")
@click.option("--config", default=None)
@click.option("--counters", "counters_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="A dcgm-exporter counters CSV: report the failure modes it leaves blind.")
@click.option("--job-metrics", "job_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="What a training job exports (its /metrics page, e.g. `curl POD:9090/metrics`): report the "
                   "job failure modes inactive for it, for lack of input.")
def list_cmd(catalog, config, counters_file, job_file):
    """Failure modes (active or not, and why) and metrics (which need profiling)."""
    from .coverage import coverage
    plan = _plan(catalog, config, None)
    inactive = dict(plan.rules.inactive)
    if job_file:
        exported = jobmetrics.exposition_names(Path(job_file).read_text(errors="replace"))
        for fm in plan.catalog.failure_modes:
            missing = jobmetrics.missing_inputs(plan.settings, fm.job_metrics, exported)
            if missing and fm.id not in inactive:
                inactive[fm.id] = f"no input: {job_file} exports no {' / '.join(missing)}"
    enabled = parse_counters(Path(counters_file).read_text()) if counters_file else None
    report = coverage(plan.catalog, plan.rules, enabled) if enabled is not None else {}
    click.echo("FAILURE MODES")
    for fm in plan.catalog.failure_modes:
        state = f"inactive: {inactive[fm.id]}" if fm.id in inactive else "active"
        if fm.id in report and report[fm.id].state != "covered":
            state = report[fm.id].describe()
        prof = " [needs profiling]" if fm.needs_profiling else ""
        if fm.job_metrics and fm.id not in inactive:  # optional input: quiet for jobs that do not export it
            names = ", ".join(jobmetrics.input_names(plan.settings, fm.job_metrics))
            prof += f" [needs job metrics: {names}; silent for jobs without them]"
        sev = "/".join(a.severity for a in fm.alerts)
        click.echo(f"  {fm.id:<26} {fm.group:<10} {sev:<24} {state}{prof}")
    if job_file:
        lacking = [fm.id for fm in plan.catalog.failure_modes if inactive.get(fm.id, "").startswith("no input:")]
        click.echo(f"\n{job_file}: {len(lacking)} job failure mode(s) inactive for lack of input: {', '.join(lacking) or 'none'}")
        click.echo("the job-metrics contract: README \"Job metrics\" (names and labels from job_metrics: in rulesgen.yaml)")
        return
    if enabled is not None:
        blind = [fm_id for fm_id, c in report.items() if c.state == "blind"]
        click.echo(f"\n{counters_file}: {len(blind)} failure mode(s) blind: {', '.join(blind) or 'none'}")
        click.echo("render exporter/dcgm-counters.csv (make render) for a counters file that enables every field the rules read")
        return
    click.echo("\nMETRICS")
    for m in plan.catalog.metrics:
        flags = ", ".join(x for x in ("profiling" if m.profiling else "", "default" if m.default_enabled else "opt-in") if x)
        click.echo(f"  {m.name:<48} {m.type:<8} {m.unit:<10} {flags}")


@main.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def init(directory, force):
    """Scaffold a GitOps repository in DIRECTORY: rulesgen.yaml, Makefile, CI workflow, example scenario."""
    from .init import scaffold
    written, skipped = scaffold(Path(directory), force)
    for rel in written:
        click.echo(f"wrote {Path(directory, rel)}")
    for rel in skipped:
        click.echo(f"kept existing {Path(directory, rel)} (use --force to overwrite)")
    click.echo("next: cd into it, run `make render`, commit, and let CI run `make test`")


@main.command()
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--config", default=None)
def lint(files, config):
    """Offline checks of rendered rule FILES (default alerts/prometheus/*.yaml), in the manner of pint."""
    from .lint import lint_files
    try:
        from .settings import load_settings
        settings = load_settings(_config(config))
    except RulesgenError as exc:
        _fail(exc)
    paths = [Path(f) for f in files] or sorted(Path("alerts/prometheus").glob("*.yaml"))
    findings = lint_files(paths, settings.scrape_interval)
    for f in findings:
        click.echo(str(f))
    click.echo(f"{len(paths)} file(s), {len(findings)} finding(s)", err=True)
    sys.exit(1 if findings else 0)


@main.command()
@click.argument("failure_mode")
@with_common
def explain(failure_mode, catalog, config, scenarios):
    """What FAILURE_MODE detects, its PromQL, thresholds, runbook, and its path to the output files."""
    plan = _plan(catalog, config, scenarios)
    ids = [fm.id for fm in plan.catalog.failure_modes]
    if failure_mode not in ids:
        from .fields import did_you_mean
        click.echo(f"error: unknown failure mode {failure_mode!r}{did_you_mean(failure_mode, ids)}", err=True)
        sys.exit(2)
    fm = plan.catalog.failure_mode(failure_mode)
    wrap = lambda text: textwrap.fill(" ".join(text.split()), 100, initial_indent="  ", subsequent_indent="  ")  # noqa: E731
    click.echo(f"{fm.id}: {fm.title} ({fm.group}, scope {fm.scope})\n\n{wrap(fm.summary)}\n")
    click.echo(f"WHAT IT MEANS\n{wrap(fm.meaning)}\n\nWHY IT MATTERS\n{wrap(fm.why)}\n")
    click.echo("THRESHOLDS")
    overrides = dict(plan.settings.for_mode(fm.id).thresholds)
    for t in fm.thresholds:
        value = overrides.get(t.name, t.value)
        click.echo(f"  {t.name} = {value} {t.unit}{' (from rulesgen.yaml)' if t.name in overrides else ''}")
        click.echo(wrap("source: " + t.source))
    if not fm.thresholds:
        click.echo("  (none)")
    click.echo("\nALERTS")
    for rule in plan.rules.rules:
        if rule.failure_mode == fm.id:
            labels = dict(rule.labels)
            click.echo(f"  {rule.alert}  severity={labels['severity']} action={labels['action']} for={rule.for_seconds}s")
            click.echo(textwrap.indent(rule.expr, "    "))
    if fm.id in dict(plan.rules.inactive):
        click.echo(f"  inactive: {dict(plan.rules.inactive)[fm.id]}")
    covered_by = {}
    for m in plan.catalog.failure_modes:
        for target, value in m.covers:
            if target == fm.id:
                covered_by.setdefault(m.id, []).append(value)
    if fm.covers or covered_by:
        click.echo("\nONE FAULT, ONE ALERT")
        for target in dict.fromkeys(t for t, _ in fm.covers):
            values = [v for t, v in fm.covers if t == target and v]
            click.echo(wrap(f"covers {target}" + (f" ({', '.join(values)})" if values else "") + " on the same GPU"))
        for source, values in covered_by.items():
            values = [v for v in values if v]
            click.echo(wrap(f"covered by {source}" + (f" ({', '.join(values)})" if values else "") + " on the same GPU"))
    health = plan.catalog.health
    if health is not None and health.failure_mode == fm.id:
        click.echo(f"\nDCGM CODES (catalog/dcgm_health.yaml, label {health.label})")
        click.echo(wrap("drain (critical on FAIL): " + ", ".join(c.code for c in health.codes if c.health_class == "drain")))
        click.echo(wrap("every other code: warning, investigate"))
    click.echo("\nRUNBOOK\n  Check:")
    for line in fm.runbook.check:
        click.echo(f"   - {line}")
    click.echo("  Do:")
    for line in fm.runbook.act:
        click.echo(f"   - {line}")
    from .lineage import alert_path
    click.echo("\nPATH (catalog -> rules -> files)")
    for line in alert_path(plan, fm.id) or ["  (no alert rendered)"]:
        click.echo(line)


def _time(value: str | None) -> int:
    """Unix seconds or RFC 3339 (2026-11-01T00:00:00Z); None means now."""
    import time
    from datetime import datetime
    if value is None:
        return int(time.time())
    if value.isdigit():
        return int(value)
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither unix seconds nor RFC 3339 (2026-11-01T00:00:00Z)")


def _backfill_options(f):
    for option in reversed([
        click.option("--url", required=True, help="The server's HTTP address, e.g. http://127.0.0.1:9090."),
        click.option("--days", type=click.IntRange(1, 60), default=None,
                     help="Days of history to compute [default: the baseline window, baselines.window]."),
        click.option("--end", default=None, help="End of the history (unix seconds or RFC 3339) [default: now]."),
        click.option("--catalog", default=str(bundled_catalog_dir()), show_default="bundled catalog/"),
        click.option("--config", default=None),
    ]):
        f = option(f)
    return f


@main.group()
def backfill():
    """Compute the baseline history for past days from the raw samples on a server."""


def _backfill_plan(catalog, config, days, end):
    from . import backfill as bf
    plan = _plan(catalog, config, None)
    span = bf.Span.of(days or plan.settings.baselines.window // bf.DAY, _time(end))
    try:
        files = bf.backfill_files(plan.rules, plan.settings.evaluation_interval)
    except bf.BackfillError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    return bf, span, files


@backfill.command(name="prometheus")
@_backfill_options
@click.option("--output-dir", required=True, help="Where to write the TSDB blocks.")
def backfill_prometheus(url, days, end, catalog, config, output_dir):
    """TSDB blocks via `promtool tsdb create-blocks-from rules`; move them into the data directory."""
    from .tools import find_tool
    bf, span, files = _backfill_plan(catalog, config, days, end)
    try:
        bf.prometheus(files, url, span, Path(output_dir), find_tool("promtool"))
    except (bf.BackfillError, ToolMissing) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(f"baseline history {rfc3339(span.start)} .. {rfc3339(span.end)} written to {output_dir}/.\n"
               f"Move the block directories into Prometheus' data directory (--storage.tsdb.path); it loads them "
               f"within a minute (retention must cover {(span.end - span.start) // bf.DAY} days).")


@backfill.command(name="victoriametrics")
@_backfill_options
@click.option("--write-url", default=None, help="Remote-write address if not --url (e.g. vminsert).")
def backfill_victoriametrics(url, days, end, catalog, config, write_url):
    """vmalert replay: reads raw samples from --url, writes the history back with remote write."""
    from .tools import find_tool
    bf, span, files = _backfill_plan(catalog, config, days, end)
    try:
        bf.victoriametrics(files, url, span, find_tool("vmalert"), write_url)
    except (bf.BackfillError, ToolMissing) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(f"baseline history {rfc3339(span.start)} .. {rfc3339(span.end)} written to {write_url or url}.")


if __name__ == "__main__":  # pragma: no cover
    main()
