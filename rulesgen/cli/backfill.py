"""`rulesgen backfill prometheus|victoriametrics`: the history the rules keep (baselines, SLOs) for past days."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..durations import rfc3339
from ..engines.tools import ToolMissing
from .app import catalog_option, config_option, error, plan_or_fail


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
                     help="Days of history to compute [default: the longest the rules read: the baseline window "
                          "(baselines.window), an SLO's period]."),
        click.option("--only", type=click.Choice(("baselines", "slos")), default=None,
                     help="Backfill this history only [default: every history the rendered rules keep]."),
        click.option("--end", default=None, help="End of the history (unix seconds or RFC 3339) [default: now]."),
        catalog_option,
        config_option,
        click.option("--progress/--no-progress", "progress", default=None,
                     help="One line per day done on stderr [default: when stderr is a terminal]."),
        click.option("--quiet", "-q", is_flag=True, help="No progress lines (same as --no-progress)."),
    ]):
        f = option(f)
    return f


@click.group(name="backfill")
def backfill_group():
    """Compute the history the rules keep for past days from the series on a server: the per-GPU baselines'
    hourly points and daily sums, and the SLOs' hourly sums (docs/slos.md "Backfill")."""


def _backfill_plan(catalog, config, days, end, only):
    from ..builders.slos import active_slos
    from ..engines import backfill as bf
    plan = plan_or_fail(catalog, config, None)
    files = _or_fail(lambda: bf.backfill_files(plan.rules, plan.settings.evaluation_interval, only))
    has_slos = any(f.path == bf.SLO_FILE for f in files)
    has_baselines = any(f.path != bf.SLO_FILE for f in files)
    if plan.settings.topology == "sharded" and has_slos:
        error(f"the SLO history is counted from one server's series (ALERTS, {plan.catalog.named('reporting')}, the job "
              "and kube-state-metrics series); with topology: sharded the global tier holds only the shards' "
              "partial records, so it cannot be backfilled there (docs/slos.md, Backfill). Backfill the baselines "
              "alone with --only baselines.")
        sys.exit(1)
    # how far back each history is read, by what it is called
    windows = {}
    if has_baselines:
        windows["baseline"] = [plan.settings.baselines.window]
    if has_slos:
        windows["SLO"] = [s.period for s in active_slos(plan.catalog, plan.settings)]
    span = bf.Span.of(days or -(-max(w for ws in windows.values() for w in ws) // bf.DAY), _time(end))
    return bf, span, files, " and ".join(windows)


def _or_fail(step):
    """step(), or its error on stderr and exit 1."""
    from ..engines.backfill import BackfillError
    try:
        return step()
    except (BackfillError, ToolMissing) as exc:
        error(str(exc))
        sys.exit(1)


def _progress(progress: bool | None, quiet: bool):
    """As git does: progress on stderr when it is a terminal, unless -q; --progress forces it (logs, CI)."""
    if quiet or progress is False or (progress is None and not sys.stderr.isatty()):
        return None
    return lambda done, total, what: click.echo(f"backfill: day {done}/{total} done ({what})", err=True)


@backfill_group.command(name="prometheus")
@_backfill_options
@click.option("--output-dir", required=True, help="Where to write the TSDB blocks.")
def backfill_prometheus(url, days, only, end, catalog, config, progress, quiet, output_dir):
    """TSDB blocks via `promtool tsdb create-blocks-from rules`; move them into the data directory."""
    from ..engines.tools import find_tool
    bf, span, files, what = _backfill_plan(catalog, config, days, end, only)
    report = _progress(progress, quiet)
    _or_fail(lambda: bf.prometheus(files, url, span, Path(output_dir), find_tool("promtool"), report))
    click.echo(f"{what} history {rfc3339(span.start)} .. {rfc3339(span.end)} written to {output_dir}/.\n"
               f"Move the block directories into Prometheus' data directory (--storage.tsdb.path); it loads them "
               f"within a minute (retention must cover {(span.end - span.start) // bf.DAY} days).")


@backfill_group.command(name="victoriametrics")
@_backfill_options
@click.option("--write-url", default=None, help="Remote-write address if not --url (e.g. vminsert).")
def backfill_victoriametrics(url, days, only, end, catalog, config, progress, quiet, write_url):
    """vmalert replay: reads raw samples from --url, writes the history back with remote write."""
    from ..engines.tools import find_tool
    bf, span, files, what = _backfill_plan(catalog, config, days, end, only)
    report = _progress(progress, quiet)
    _or_fail(lambda: bf.victoriametrics(files, url, span, find_tool("vmalert"), write_url, report))
    click.echo(f"{what} history {rfc3339(span.start)} .. {rfc3339(span.end)} written to {write_url or url}.")
