"""`rulesgen backfill`: compute the history the rules keep downsampled for past days, so a new deployment is
not blind for weeks: the per-GPU baselines' hourly points and daily sums, and the SLOs' hourly sums.

The live rules build the history one hour at a time (value_30m -> value_30m_hourly -> daily sums).
Backfill evaluators see only the series on the server, never their own output, so the rules
here inline every recording rule they read: the hourly point becomes one expression over raw samples
(subqueries at the live evaluation interval), the daily sums a [DAY_OF_HOURS:1h] subquery of that. Two
files, both evaluated hourly: hourly points, and daily sums written in the first hour of each day (UTC).
promtool shifts evaluations by a hash of the group (like a live server); the subquery still sums exactly
the hours D-23h .. D for any evaluation between midnight D and 01:00, the same hours the live rule sums
at midnight.

The SLOs' hourly sums inline the SLO records only: the capacity SLO counts what rulesgen's own alerts said
(ALERTS) and the GPUs its records saw, so it recounts the hours those were on the server and no others; a
memory (a rule reading its own past) is evaluated in its backfill form (Rule.backfill_expr). An hour for which
the live rules wrote a sum (or an earlier backfill did) is left alone, so the two never count a minute twice.

Prometheus: `promtool tsdb create-blocks-from rules` queries the server and writes TSDB blocks; move
them into the server's data directory (it loads new blocks within a minute). VictoriaMetrics:
`vmalert -replay.*` queries the server and writes the results back with remote write, one run per
day (the daily sums: one evaluation at each midnight).
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import processes
from ..builders import slos as slo_rules
from ..durations import format_duration, rfc3339
from ..model import conventions
from ..model.output import Rule, RuleFile, RuleGroup, RuleSet
from ..promql import printer as promql_print
from ..promql.tree import recorded_names
from ..render.prometheus import render_rule_file
from .victoriametrics import VictoriaMetricsError, run_vmalert

HOUR, DAY = 3600, 86400
# The daily sums' subquery range. Its steps sit on whole hours, and promtool evaluates the daily group at
# midnight plus an offset o in [0, 1h) (a hash of the group and its file, a temp path: a new o each run).
# The range must hold the steps D-23h .. D and not D-24h for every o: over (T - R, T] (Prometheus 3,
# VictoriaMetrics) that is 23h + o < R <= 24h + o, over [T - R, T] (Prometheus 2) 23h + o <= R < 24h + o.
# A millisecond short of a day meets both for every o but the last millisecond of the hour; 23h59m (the
# live rules' DAY_OF_POINTS, for stored points) dropped the day's first hour for o >= 59m, 1 run in 60.
DAY_OF_HOURS = "23h59m59s999ms"
DAILY_FILE = "backfill-daily.yaml"
SLO_FILE = "backfill-slo-hourly.yaml"


class BackfillError(Exception):
    pass


@dataclass(frozen=True)
class Span:
    """[start, end) in unix seconds: start at midnight UTC, end on a whole hour."""
    start: int
    end: int

    @classmethod
    def of(cls, days: int, end: int) -> "Span":
        end -= end % HOUR
        start = end - days * DAY
        return cls(start - start % DAY, end)


def backfill_files(rules: RuleSet, step_seconds: int, only: str | None = None) -> list[RuleFile]:
    """What the rendered rules keep as history: the baselines' files and the SLOs' (either may be absent);
    only: "baselines" or "slos" (the CLI's --only)."""
    files = []
    if only in (None, "baselines"):
        files += _baseline_files(rules, step_seconds)
    if only in (None, "slos"):
        files += _slo_files(rules, step_seconds)
    if not files:
        missing = {"baselines": "no baseline rules rendered (is baseline_deviation disabled?)",
                   "slos": "no SLO rendered (rulesgen.yaml names none under slos:)"}
        raise BackfillError("nothing to backfill: " + "; ".join(v for k, v in missing.items() if only in (None, k)))
    return files


def _baseline_files(rules: RuleSet, step_seconds: int) -> list[RuleFile]:
    """The hourly-points file and the daily-sums file, from the rendered rules. The baseline value's
    first rule only: signals that read the peers' medians (recorded by a second rule) learn their
    history live."""
    recorded: dict[str, str] = {}
    for r in rules.rules:
        if r.record:
            recorded.setdefault(r.record, r.expr)
    if conventions.BASELINE_VALUE not in recorded:
        return []
    live = {k: v for k, v in recorded.items() if k not in conventions.BASELINE_RECORDS}
    step = format_duration(step_seconds)
    hourly = promql_print.inline(recorded[conventions.BASELINE_VALUE], live, step)
    day = f"(\n{hourly}\n)[{DAY_OF_HOURS}:1h]"
    first_hour = "\n  and on () hour() == 0"
    daily = [
        Rule(record=conventions.BASELINE_DAILY_COUNT, expr=f"count_over_time({day}){first_hour}"),
        Rule(record=conventions.BASELINE_DAILY_SUM, expr=f"sum_over_time({day}){first_hour}"),
        # The live rule's count * (variance + mean ^ 2) is the sum of squares; over a subquery it can be summed
        # directly, one copy of the hourly query instead of three (three pass VictoriaMetrics' 16 KiB
        # -search.maxQueryLen with the bundled catalog).
        Rule(record=conventions.BASELINE_DAILY_SUMSQ,
             expr=f"sum_over_time((\n({hourly}\n) ^ 2\n)[{DAY_OF_HOURS}:1h]){first_hour}"),
    ]
    return [
        RuleFile(path="backfill-hourly.yaml", description="rulesgen backfill: hourly baseline points from raw samples.",
                 groups=(RuleGroup("rulesgen-backfill-hourly", (Rule(record=conventions.BASELINE_HOURLY, expr=hourly),), HOUR),)),
        RuleFile(path=DAILY_FILE, description="rulesgen backfill: daily sums of the hourly points, at midnight UTC.",
                 groups=(RuleGroup("rulesgen-backfill-daily", tuple(daily), HOUR),)),
    ]


def _slo_files(rules: RuleSet, step_seconds: int) -> list[RuleFile]:
    """The SLOs' hourly sums, each over the hour's evaluations of its count with the SLO records inlined, and
    only for the hours that hold no sum yet (live or backfilled: none within the hour after either)."""
    slo_file = next((f for f in rules.files if f.path == slo_rules.RULE_FILE), None)
    if slo_file is None:
        return []
    definitions = {r.record: r.backfill_expr or r.expr for g in slo_file.groups if g.interval_seconds != HOUR
                   for r in g.rules if r.record}
    for name, expr in definitions.items():
        if name in recorded_names(expr):
            raise BackfillError(f"cannot backfill {name}: it reads its own past and has no backfill form")
    step = format_duration(step_seconds)
    hourly = tuple(
        Rule(record=r.record, expr=f"{promql_print.inline(r.expr, definitions, step)}\n"
                                   f"unless on () count_over_time({r.record}[2h] offset -1h)")
        for g in slo_file.groups if g.interval_seconds == HOUR for r in g.rules if r.record)
    if not hourly:
        return []
    return [RuleFile(path=SLO_FILE, description="rulesgen backfill: the SLOs' hourly sums from the stored series.",
                     groups=(RuleGroup("rulesgen-backfill-slo-hourly", hourly, HOUR),))]


def write_files(files: list[RuleFile], directory: Path) -> list[Path]:
    paths = []
    for f in files:
        path = directory / f.path
        path.write_text(render_rule_file(f))
        paths.append(path)
    return paths


def _run(cmd: list[str]) -> None:
    result = processes.run(cmd)
    if result.returncode != 0:
        raise BackfillError(processes.failure(result))


Progress = Callable[[int, int, str], None]  # (step done, steps, what): one call per finished step


def days_of(span: Span) -> list[int]:
    """The midnights from span.start through span.end: one backfill step each."""
    return list(range(span.start, span.end + 1, DAY))


def prometheus(files: list[RuleFile], url: str, span: Span, out_dir: Path, promtool: str,
               progress: Progress | None = None) -> None:
    """Blocks into out_dir, one promtool run per day (each writes that day's blocks; the runs' ranges
    do not overlap). The span's end is a whole hour; evaluations run to the end of that hour so that a
    span ending at midnight includes that midnight's daily sums. promtool offsets a group's evaluations
    within its interval by a hash of the group and its file (a temp path here, so any offset up to
    0.999... of an hour): each run's `--end` (inclusive, whole seconds) is the next run's start, or a
    point evaluated in the last second of a day would fall between two runs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    days = days_of(span)
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_files(files, Path(tmp))
        for n, day in enumerate(days, 1):
            last = min(day + DAY, span.end + HOUR)
            _run([promtool, "tsdb", "create-blocks-from", "rules", "--url", url,
                  "--start", rfc3339(day), "--end", rfc3339(last),
                  "--eval-interval", f"{HOUR}s", "--output-dir", str(out_dir), *map(str, paths)])
            if progress:
                progress(n, len(days), f"{rfc3339(day)} .. {rfc3339(last)}")


def victoriametrics(files: list[RuleFile], url: str, span: Span, vmalert: str, write_url: str | None = None,
                    progress: Progress | None = None) -> None:
    """vmalert replay: evaluates each group at its interval from span.start and writes the results
    to the server with remote write. One vmalert run per day of the span: one range query over 14
    days of an 800-GPU fleet ran past VictoriaMetrics' default -search.maxQueryDuration (30 s), and
    vmalert's own chunking (-replay.maxDatapointsPerQuery) writes each chunk's last point twice."""
    days = days_of(span)
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_files(files, Path(tmp))
        for n, day in enumerate(days, 1):
            for path in paths:
                hours = 1 if path.name == DAILY_FILE else 24  # the daily sums are written at midnight only
                last = min(day + (hours - 1) * HOUR, span.end)
                try:
                    # vmalert wants timeTo > timeFrom; the extra second adds no evaluation
                    run_vmalert(url, path, day, last + 1, HOUR, vmalert, write_url=write_url, timeout=None)
                except VictoriaMetricsError as exc:
                    raise BackfillError(str(exc)) from None
            if progress:
                progress(n, len(days), f"{rfc3339(day)} .. {rfc3339(min(day + DAY, span.end + HOUR))}")
