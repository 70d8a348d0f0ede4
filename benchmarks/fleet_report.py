"""Report of benchmarks/fleet.py: what each backend measured (Result), series counts, and the
Markdown report."""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field

import requests

from rulesgen.model import conventions
from fleet_data import MODEL_NAME
from fleet_plan import (BACKFILLED, ENGINES, MEASURE_INTERVAL, NAIVE_COUNTERS, NAIVE_GAUGES, RAW_SERIES,
                        RECORDED_SERIES, Inputs, Phases, Plan, RuleSet, engine_label, engine_versions,
                        self_reported)
from fleet_servers import PEAK_RSS, Server, log

@dataclass
class Result:
    """What one backend measured."""
    groups: dict[str, tuple[float, int]] = field(default_factory=dict)
    naive: tuple[float, int] | None = None
    raw_series: float = 0
    recorded_series: float = 0
    raw_series_24h: float = 0  # series with a sample in the last 24 h (the series API)
    recorded_series_24h: float = 0
    recorded_by_name: dict[str, float] = field(default_factory=dict)
    history_points: dict[str, float] = field(default_factory=dict)  # samples of BACKFILLED over the history
    top_rules: list[tuple[float, str, str, int]] = field(default_factory=list)  # see RuleTimes.top
    load: list[float] = field(default_factory=list)  # 1-minute load average at the measurement's start, end
    warm: float = 0.0  # seconds the rules had been evaluated before the measurement
    cores: float = math.nan  # process_cpu_seconds_total per second of the server during the measurement
    failures: dict[str, float] = field(default_factory=dict)  # failed evaluations per group, whole run
    rule_times_note: str = ""  # whether the per-rule times add up (see rule_times_usable)
    load_during: list[float] = field(default_factory=list)  # 1-min load average min, mean, max (LoadSampler)




def series_since(server: Server, match: str, seconds: int) -> float:
    """Series with a sample in the last `seconds` (/api/v1/series): counts the hourly and daily baseline
    records too, which an instant query sees only in the minutes after they are written."""
    try:
        r = requests.get(server.url + "/api/v1/series", params={"match[]": match, "start": time.time() - seconds,
                                                               "end": time.time()}, timeout=600)
        r.raise_for_status()
    except requests.RequestException as exc:  # a count missing from the report, not a lost run
        log(f"{server.name} /api/v1/series failed: {str(exc)[:300]}")
        return math.nan
    return len(r.json()["data"])


def count_series(server: Server, res: Result) -> None:
    res.raw_series, res.recorded_series = server.scalar(f"count({RAW_SERIES})"), server.scalar(f"count({RECORDED_SERIES})")
    res.raw_series_24h = series_since(server, RAW_SERIES, 86400)
    res.recorded_series_24h = series_since(server, RECORDED_SERIES, 86400)
    by_name = server.query('sort_desc(count by (__name__) ({__name__=~".+:.+"}))')
    res.recorded_by_name = {r["metric"]["__name__"]: float(r["value"][1]) for r in by_name}


def count_history(server: Server, plan: Plan, res: Result) -> None:
    """Samples of the backfilled series over the whole history: proof the backfill wrote something."""
    days = (int(time.time()) - plan.t_start) // 86400 + 1
    for name in BACKFILLED:
        res.history_points[name] = server.scalar(f"sum(count_over_time({name}[{days}d]))")


def fmt_ms(seconds: float) -> str:
    return "-" if seconds is None or math.isnan(seconds) else f"{seconds * 1000:.1f}"


def share(res: Result, intervals: dict[str, int]) -> float:
    return sum(d / intervals[g] for g, (d, _) in res.groups.items() if not math.isnan(d))


def baseline_time(res: Result, intervals: dict[str, int]) -> float:
    """The baseline groups' evaluation time per evaluation of the fast group (the one the naive z-scores
    replace): the fast group's time plus the slow groups' (hourly history, 6-hourly statistics), pro rata."""
    fast = intervals.get(conventions.BASELINE_GROUP, 300)
    return sum(d * min(1.0, fast / intervals.get(g, fast)) for g, (d, _) in res.groups.items() if "baseline" in g)


def report(args, plan: Plan, rules: RuleSet, prom: Result, vm: Result | None, phases: Phases,
           samples: int, inputs: Inputs | None = None) -> str:
    both = [("Prometheus", prom), ("vmalert", vm)] if vm else [("Prometheus", prom)]
    ver = engine_versions()
    lines = [f"# Fleet rule-evaluation benchmark: {plan.gpus} GPUs, {plan.days} days", "",
             f"Reproduce: `.venv/bin/python benchmarks/fleet.py {' '.join(sys.argv[1:])}`  ",
             f"Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
             f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB; engines (Debian packages "
             "in .tools/bin, versions from .tools/versions): "
             + ", ".join(f"{n} {ver[n]}" for n in ENGINES) + f" (`prometheus --version`: {self_reported()})"
             ". Numbers are from this one run.", "",
             "## Method", "",
             f"- Data: {plan.gpus} x {MODEL_NAME} on {-(-plan.gpus // 8)} nodes, {len(plan.all_metrics) - 1} "
             f"dcgm-exporter fields per GPU + `up` per node. History: {plan.days}d every {plan.history_step}s of "
             f"the fields the baseline rules{' and the naive z-scores' if args.naive else ''} read "
             f"({', '.join(m[8:] for m in plan.history_metrics)}); the last {plan.fine_hours}h every field every "
             f"{plan.step}s; {samples / 1e6:.0f}M raw samples. Then a live synthetic exporter, scraped every "
             f"{plan.step}s, one target per node.",
             "- Prometheus: raw samples via `promtool tsdb create-blocks-from openmetrics`, one file per 54h block. "
             "VictoriaMetrics: the same samples via /api/v1/import/prometheus.",
             f"- Downsampled baseline history: `rulesgen backfill victoriametrics --days {plan.days}` (vmalert "
             + (f"replay) and `rulesgen backfill prometheus --days {plan.days}` (promtool create-blocks-from rules)."
                if args.prom_backfill_days >= plan.days else
                "replay); Prometheus got that same history, exported from VictoriaMetrics and ingested with promtool "
                "(`rulesgen backfill prometheus` is too slow at this size, see the notes"
                + (f"; it ran here over {args.prom_backfill_days} day(s) to time it" if args.prom_backfill_days else
                   "; it was not run here") + ")."),
             f"- Rules: {', '.join(f.name for f in rules.files)} from "
             + ("a render of rulesgen.yaml with the three SLOs added (fleet_plan.SLO_SECTION: slos.yaml is the SLO "
                "rules; the exporter also serves each busy node's rank step and checkpoint and its pod's and Job's "
                "kube-state-metrics series)" if getattr(args, "slos", False) else "alerts/prometheus/")
             + ", copied once at the start "
             + (f"(commit {inputs.commit}{' with uncommitted changes to these files' if inputs.dirty else ''}; "
                f"sha256 of the rule files and exporter/dcgm-counters.csv: {inputs.digest}) " if inputs else "")
             + "and used by both engines. Groups "
             f"with an interval above {MEASURE_INTERVAL}s ran from a copy at {MEASURE_INTERVAL}s (cost per "
             "evaluation does not depend on the interval, and it gives more readings); shares use the real "
             "intervals. Prometheus: mean of `prometheus_rule_group_last_duration_seconds` over distinct "
             "evaluations; vmalert: delta sum / delta count of `vmalert_iteration_duration_seconds`. The two "
             "backends ran one after the other, never together.",
             "- Share of interval = sum over groups of (evaluation time / real interval): the share of one core "
             "spent evaluating the rules.", "",
             "## Rule groups (mean wall time per evaluation)", "",
             "| group | real interval | Prometheus ms (n) | share of interval | vmalert ms (n) | share of interval |",
             "|---|---|---|---|---|---|"]
    for g in rules.intervals:
        p = prom.groups.get(g, (math.nan, 0))
        v = vm.groups.get(g, (math.nan, 0)) if vm else (math.nan, 0)
        iv = rules.intervals[g]
        lines.append(f"| {g} | {iv}s | {fmt_ms(p[0])} ({p[1]}) | {p[0] / iv:.3%} | {fmt_ms(v[0])} ({v[1]}) | "
                     f"{v[0] / iv:.3%} |")
    vm_share = f"{share(vm, rules.intervals):.3%}" if vm else "-"
    lines += [f"| **all rulesgen groups** | | | **{share(prom, rules.intervals):.3%}** | | **{vm_share}** |", "",
              "Target: all groups together <= 5% of their evaluation interval at 800 GPUs.", ""]
    for name, r in both:
        engine = f"{name} {engine_label(ver, 'prometheus' if name == 'Prometheus' else 'vmalert')}"
        if r.top_rules:
            lines += [f"Most expensive rules in {engine} (mean evaluationTime from /api/v1/rules, ms; "
                      f"rules run one after the other within a group; {r.rule_times_note}): " + "; ".join(
                          f"{rule} ({group}) {sec * 1000:.1f}" for sec, group, rule, _ in r.top_rules), ""]
        elif r.rule_times_note:
            lines += [f"No per-rule times for {engine}: {r.rule_times_note}, so its evaluationTime values "
                      "are not per-rule costs.", ""]
    lines += ["## Series", "", "| | Prometheus | VictoriaMetrics |", "|---|---|---|",
              f"| raw (DCGM_* and up) | {prom.raw_series:.0f} | {f'{vm.raw_series:.0f}' if vm else '-'} |",
              f"| recorded by all recording rules (name contains ':') | {prom.recorded_series:.0f} | "
              f"{f'{vm.recorded_series:.0f}' if vm else '-'} |",
              f"| recorded / raw | {prom.recorded_series / prom.raw_series:.2f} | "
              f"{f'{vm.recorded_series / vm.raw_series:.2f}' if vm and vm.raw_series else '-'} |",
              f"| raw, with a sample in the last 24 h | {prom.raw_series_24h:.0f} | "
              f"{f'{vm.raw_series_24h:.0f}' if vm else '-'} |",
              f"| recorded, with a sample in the last 24 h (adds the hourly and daily baseline records) | "
              f"{prom.recorded_series_24h:.0f} | {f'{vm.recorded_series_24h:.0f}' if vm else '-'} |",
              f"| recorded / raw, last 24 h | {prom.recorded_series_24h / max(prom.raw_series_24h, 1):.2f} | "
              f"{f'{vm.recorded_series_24h / max(vm.raw_series_24h, 1):.2f}' if vm else '-'} |",
              *[f"| samples of {n} over the history (backfill + live) | {prom.history_points.get(n, 0):.0f} | "
                f"{f'{vm.history_points.get(n, 0):.0f}' if vm else '-'} |" for n in BACKFILLED],
              "", "Target: recorded <= raw. Series counted at the end of the measurement (instant query, 5m "
              "lookback). Recorded series by name (Prometheus, largest first):", "",
              ", ".join(f"{n} {v:.0f}" for n, v in list(prom.recorded_by_name.items())[:12]), ""]
    if prom.naive:
        vn = vm.naive if vm and vm.naive else (math.nan, 0)
        iv = rules.intervals
        vm_ratio = vn[0] / baseline_time(vm, iv) if vm and baseline_time(vm, iv) else math.nan
        lines += ["## Naive z-scores on raw samples vs the rulesgen baseline group", "",
                  f"Naive group (run alone, after the rulesgen measurement): for {', '.join(NAIVE_GAUGES)}: "
                  f"`(avg_over_time(X[1h]) - avg_over_time(X[{plan.days}d])) / stddev_over_time(X[{plan.days}d])`; "
                  f"for {', '.join(NAIVE_COUNTERS)}: `(rate(X[1h]) - avg_over_time(rate(X[1h])[{plan.days}d:1h])) "
                  f"/ stddev_over_time(rate(X[1h])[{plan.days}d:1h])`. Raw history step {plan.history_step}s. It is "
                  "compared with the rulesgen baseline groups (peers and the alert every 5 minutes, the history statistics "
                  "hourly), per 5-minute evaluation: the fast group's time plus 1/12 of the hourly group's.", "",
                  "| | Prometheus | vmalert |", "|---|---|---|",
                  f"| naive group, ms per evaluation (n) | {fmt_ms(prom.naive[0])} ({prom.naive[1]}) | "
                  f"{fmt_ms(vn[0])} ({vn[1]}) |",
                  f"| rulesgen baseline groups, ms per 5-minute evaluation | {fmt_ms(baseline_time(prom, iv))} | "
                  f"{fmt_ms(baseline_time(vm, iv)) if vm else '-'} |",
                  f"| ratio naive / baseline | {prom.naive[0] / baseline_time(prom, iv):.1f}x | {vm_ratio:.1f}x |", "",
                  "Target: ratio >= 25x.", ""]
    lines += ["## Resources and phases", "", "| what | value |", "|---|---|"]
    lines += [f"| peak RSS {name} | {v / 2**30:.2f} GiB |" for name, v in PEAK_RSS.items()]
    lines += [f"| {name} | {s:.0f} s |" for name, s in phases.seconds.items()]
    lines += [f"| failed rule evaluations, {name} (whole run, by group) | "
              f"{', '.join(f'{g}: {v:.0f}' for g, v in r.failures.items() if v) or 'none'} |" for name, r in both]
    lines += [f"| {name}: rules running before the measurement / CPU cores used during it (server(s), scrapes "
              f"included) / 1-min load average at its start and end | {r.warm / 60:.0f} min / {r.cores:.3f} / "
              f"{' / '.join(f'{x:.1f}' for x in r.load)} |" for name, r in both]
    lines += [f"| {name}: machine's 1-min load average during the measurement, every 15 s (min / mean / max; "
              f"2 cores, other work included) | {' / '.join(f'{x:.1f}' for x in r.load_during)} |"
              for name, r in both if r.load_during]
    lines += ["", "## Caveats", "",
              "- Contention: evaluation times are wall times on a 2-core machine, so they include waiting for a "
              "core (scrapes of the synthetic exporter, which runs in this Python process, share it); the load "
              "averages above show how busy the machine was.",
              "- The live rules ran for only the minutes shown above before the measurement: windows over "
              "recorded series longer than that (`[30m]` of gpu:* in the baseline group, `[1h]`-`[6h]` in the "
              "health/fleet alerts) held fewer samples than in steady state. The backfilled baseline history "
              "(hourly points, daily sums) was complete."]
    lines += [f"- {n}" for n in phases.notes]
    return "\n".join(lines) + "\n"


