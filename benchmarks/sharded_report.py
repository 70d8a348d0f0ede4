"""Report of benchmarks/sharded.py (pure: tested in tests/test_bench_sharded.py): what one run measured
(Measured) and the Markdown with the ratios, their targets and the extrapolation."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from sharded_plan import extrapolate, share_of_interval, worst_per_gpu

Times = dict[str, tuple[float, int]]  # group -> (seconds per evaluation: Prometheus median, vmalert mean; evaluations)

TARGET_SHARD = 0.55  # a shard's rule time / the single server's, at the same fleet (issue 23)
TARGET_GLOBAL = 0.10  # the global tier's rule time / the single server's
TARGET_SERIES_PER_GPU = 10.0  # series the global tier receives per GPU
TARGET_GROUP_SHARE = 0.50  # no group above this share of its interval at the target size


@dataclass
class Measured:
    gpus: int
    nodes: int
    step: int
    fine_hours: float
    shard_nodes: list[int]
    shard_gpus: list[int]
    intervals: dict[str, dict[str, int]]  # tier (single, shard, global) -> group -> real interval, s
    commit: str = "?"
    digest: str = "?"
    argv: str = ""
    target_gpus: int = 100_000
    target_shards: int = 8
    allowlist_names: int = 0
    fault: str = ""
    engines: str = ""
    reference: Times = field(default_factory=dict)
    shards: list[Times] = field(default_factory=list)
    global_: Times = field(default_factory=dict)
    vm_shard: Times | None = None  # shard 0 on vmalert
    received_by_name: dict[str, float] = field(default_factory=dict)
    memory: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # RSS, peak RSS, head series
    alerts: tuple[int, set, set, int] = (0, set(), set(), 0)  # reference firing, extra, missing, attempt
    failures: dict[str, dict[str, float]] = field(default_factory=dict)
    alerts_by_name: dict[str, dict[str, int]] = field(default_factory=dict)  # server -> alertname -> firing
    scrapes: dict[str, tuple[float, float]] = field(default_factory=dict)  # failed scrapes, longest scrape (s)
    scrape_offsets: dict[str, tuple[int, int, float]] = field(default_factory=dict)  # intervals, late, worst s
    cores: dict[str, float] = field(default_factory=dict)  # Prometheus server -> CPU s per s in the measurement
    rule_times: dict[str, dict[tuple[str, str], float]] = field(default_factory=dict)  # server -> (group, rule) -> s
    phases: dict[str, float] = field(default_factory=dict)
    evaluation_delay: int = 60  # s: sharding.evaluation_delay of the render, the global vmalert's -rule.evalDelay
    latency: list = field(default_factory=list)  # sharded_plan.Latency per (alert, server)


def seconds(times: Times) -> dict[str, float]:
    return {g: t for g, (t, _) in times.items()}


def ratios(m: Measured) -> dict[str, float]:
    """Shares of interval per tier and the ratios the targets are about."""
    ref = share_of_interval(seconds(m.reference), m.intervals["single"])
    out = {"reference": ref, "global": share_of_interval(seconds(m.global_), m.intervals["global"])}
    for i, s in enumerate(m.shards):
        out[f"shard-{i}"] = share_of_interval(seconds(s), m.intervals["shard"])
        out[f"shard-{i} / reference"] = out[f"shard-{i}"] / ref if ref else math.nan
        gpus = m.shard_gpus[i] if i < len(m.shard_gpus) else 0
        out[f"shard-{i} / reference, per GPU"] = (out[f"shard-{i} / reference"] * m.gpus / gpus) if gpus else math.nan
    out["global / reference"] = out["global"] / ref if ref else math.nan
    out["series per GPU"] = sum(m.received_by_name.values()) / m.gpus
    return out


def verdict(ok: bool) -> str:
    return "yes" if ok else "**no**"


def fmt_ms(t: float) -> str:
    return "-" if t is None or math.isnan(t) else f"{t * 1000:.1f}"


def _key(alert) -> str:
    d = dict(alert)
    return d.get("alertname", "?") + "{" + ", ".join(f"{k}={v}" for k, v in alert if k != "alertname") + "}"


def projections(m: Measured) -> tuple[int, list, list, list]:
    """(GPUs per shard at the target, Prometheus shard, vmalert shard, vmalert global) projections."""
    per_shard = m.target_gpus // m.target_shards
    times, base = worst_per_gpu([(seconds(s), n) for s, n in zip(m.shards, m.shard_gpus)])
    prom = extrapolate(times, m.intervals["shard"], base, per_shard)
    vm = extrapolate(seconds(m.vm_shard), m.intervals["shard"], m.shard_gpus[0], per_shard) if m.vm_shard else []
    glob = extrapolate(seconds(m.global_), m.intervals["global"], m.gpus, m.target_gpus)
    return per_shard, prom, vm, glob


def excess_by_rule(m: Measured) -> list[tuple[float, str, str, list[float]]]:
    """Per rule (group, name): what each shard spends on it beyond the reference's time per GPU times the
    shard's GPUs, as a share of the rule's interval (a share of one core); rules the reference does not
    run (the shard records) count whole, rules only the reference runs (moved to the global tier) count
    as a saving. (sum over the shards, group, rule, per shard) largest first."""
    ref = m.rule_times.get("prometheus-reference", {})
    out: dict[tuple[str, str], list[float]] = {}
    for i, gpus in enumerate(m.shard_gpus):
        mine = m.rule_times.get(f"prometheus-shard-{i}", {})
        for g, name in {**ref, **mine}:
            interval = m.intervals["shard"].get(g) or m.intervals["single"].get(g) or 60
            base = ref.get((g, name), 0.0) * gpus / m.gpus
            out.setdefault((g, name), [0.0] * len(m.shard_gpus))[i] = (mine.get((g, name), 0.0) - base) / interval
    return sorted(((sum(v), g, n, v) for (g, n), v in out.items()), reverse=True)


def shard_overhead(m: Measured) -> list[str]:
    """Where a shard's rule time beyond its share of the reference's goes: per rule, and CPU per server."""
    if not m.rule_times:
        return []
    r = ratios(m)
    lines = ["", "## Where a shard's extra cost goes", ""]
    if m.cores:
        lines += ["CPU of each Prometheus during the measurement (everything: scrapes, rules, TSDB, remote write), "
                  "cores and per 1000 GPUs: " + "; ".join(
                      f"{k}: {c:.3f}, {c / g * 1000:.3f}" for k, c, g in
                      ((k, c, m.gpus if k == "prometheus-reference" else m.shard_gpus[int(k.rsplit('-', 1)[1])])
                       for k, c in m.cores.items())) + ".", ""]
    rows = excess_by_rule(m)
    shares = [r[f"shard-{i}"] - r["reference"] * g / m.gpus for i, g in enumerate(m.shard_gpus)]
    lines += ["Per rule (per-rule `evaluationTime` of /api/v1/rules, mean over the measurement): a shard's time "
              "minus the reference's time x the shard's share of the GPUs, as a share of the rule's interval; "
              "the shard's whole excess over its share of the reference (group times) is "
              + " and ".join(f"{x:+.3%}" for x in shares) + " of a core. Largest ten:", "",
              "| group | rule | " + " | ".join(f"shard-{i}" for i in range(len(m.shard_gpus))) + " |",
              "|---|---|" + "---|" * len(m.shard_gpus)]
    lines += [f"| {g} | {n} | " + " | ".join(f"{x:+.3%}" for x in v) + " |" for _, g, n, v in rows[:10]]
    ref = m.rule_times.get("prometheus-reference", {})
    n = range(len(m.shard_gpus))
    lines += ["", "Sum over every rule: " + " and ".join(f"{sum(v[i] for *_, v in rows):+.3%}" for i in n)
              + "; of that, rules the reference does not run (shard records): " + " and ".join(
                  f"{sum(v[i] for _, g, r, v in rows if (g, r) not in ref):+.3%}" for i in n)
              + "; rules moved to the global tier (a saving): " + " and ".join(
                  f"{sum(v[i] for _, g, r, v in rows if (g, r) in ref and (g, r) not in m.rule_times.get(f'prometheus-shard-{i}', {})):+.3%}"
                  for i in n) + "."]
    return lines


def latency_lines(m: Measured) -> list[str]:
    """What sharding adds to each alert's activation: the tiers' activeAt minus the reference's."""
    if not m.latency:
        return []
    lines = ["What sharding adds to each alert's latency: when it was first seen active (pending or firing) on "
             "the shard or the global tier minus on the reference server, wall clock, every server's "
             "/api/v1/alerts polled every 5 s from the live phase's start, per alert identity seen on both (the "
             "same scrapes, each server on its own scrape and evaluation schedule; activeAt is no common clock: "
             "vmalert sets it to its query time, the evaluation less -rule.evalDelay, aligned to the interval). "
             f"The global tier evaluates {m.evaluation_delay} s in the past and reads what the shards' remote write "
             "delivered:", "",
             "| alert | raised by | alerts | added: median s | max s |", "|---|---|---|---|---|"]
    lines += [f"| {x.alert} | {x.tier} | {x.matched} | {x.median_s:+.1f} | {x.max_s:+.1f} |" for x in m.latency]
    return lines + [""]


def report(m: Measured) -> str:
    r = ratios(m)
    ref_firing, extra, missing, attempt = m.alerts
    per_shard, prom_p, vm_p, glob_p = projections(m)
    lines = [f"# Sharded topology, live: {m.gpus} GPUs on 2 Prometheus shards + a global vmalert", "",
             f"Reproduce: `.venv/bin/python benchmarks/sharded.py{' ' * bool(m.argv)}{m.argv}`  ",
             f"Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; rule files of commit {m.commit} (sha256 of "
             f"the tiers' files, the shards' remote-write-shard-N.yaml and the counters file: {m.digest}); engines: "
             f"{m.engines}. "
             "Numbers are from this one run.", "",
             "## Method", "",
             f"- Fleet: the synthetic fleet of benchmarks/fleet.py, {m.gpus} GPUs on {m.nodes} nodes, one exporter "
             "target per node on a port of its own (so `__address__` differs per node). History: the last "
             f"{m.fine_hours:g} h of every field, every {m.step} s, ingested as blocks (promtool) into each "
             "Prometheus (a shard gets its nodes only), then live scrapes every "
             f"{m.step} s. No multi-day history: the baselines need 30 minutes for a GPU's value now and its peers'"
             " statistics, but 7 days for its own history, so the history-based branch of the baseline alert and "
             "the hourly/daily history groups ran on no history (cheaper than in steady state).",
             f"- Shards: 2 Prometheus, each scraping the targets whose `hashmod` of `__address__` (modulus 2) is its "
             f"number (nodes {' + '.join(map(str, m.shard_nodes))}, GPUs {' + '.join(map(str, m.shard_gpus))}), "
             "with alerts/sharded/shard/*.yaml and its own alerts/sharded/remote-write-shard-N.yaml merged in as "
             "rendered (rulesgen.yaml's `sharding:` naming this victoria-metrics and the shards shard-0, shard-1: "
             f"external label `shard`, the write_relabel_configs allowlist of {m.allowlist_names} names), "
             "remote-writing to one victoria-metrics. Global tier: vmalert with alerts/sharded/global/*.yaml over "
             f"that victoria-metrics (`-rule.evalDelay={m.evaluation_delay}s`, sharding.evaluation_delay), writing "
             "back into it. Reference: one Prometheus scraping every node with alerts/prometheus/*.yaml."
             + (" Shard 0 also ran as vmalert over a victoria-metrics of its own (scraping shard 0's targets, listed; "
                "same history)"
                ", for the shard groups' cost on vmalert." if m.vm_shard else ""),
             "- Each shard loads its own copy of the shard files: Prometheus places a group's evaluations at an "
             "offset hashed from its name and file path, so shards loading the same paths evaluate every group at "
             "the same instant and, here on shared cores (separate hosts in a deployment), wait for each other.",
             "- All servers ran at once on the same 2 cores; groups with an interval above 60 s ran from copies at "
             "60 s (cost per evaluation does not depend on the interval); shares use the real intervals. "
             "Prometheus: median `prometheus_rule_group_last_duration_seconds` over distinct evaluations; vmalert: "
             "delta sum / delta count of `vmalert_iteration_duration_seconds`. Share of interval = sum over "
             "groups of time / real interval (a share of one core).", "",
             "## Results", "",
             "| what | measured | target | met |", "|---|---|---|---|"]
    for i in range(len(m.shards)):
        lines.append(f"| shard-{i} rule time / reference's (shares of interval: {r[f'shard-{i}']:.3%} / "
                     f"{r['reference']:.3%}; the shard holds {m.shard_gpus[i]} of {m.gpus} GPUs; per GPU: "
                     f"{r[f'shard-{i} / reference, per GPU']:.0%}) | {r[f'shard-{i} / reference']:.0%} | <= {TARGET_SHARD:.0%} | "
                     f"{verdict(r[f'shard-{i} / reference'] <= TARGET_SHARD)} |")
    lines += [f"| global tier (vmalert) rule time / reference's ({r['global']:.3%} / {r['reference']:.3%}) | "
              f"{r['global / reference']:.0%} | <= {TARGET_GLOBAL:.0%} | {verdict(r['global / reference'] <= TARGET_GLOBAL)} |",
              f"| series the global tier receives (victoria-metrics, `count({{shard=~\".+\"}})`), per GPU | "
              f"{r['series per GPU']:.2f} ({sum(m.received_by_name.values()):.0f} series) | <= "
              f"{TARGET_SERIES_PER_GPU:g} | {verdict(r['series per GPU'] <= TARGET_SERIES_PER_GPU)} |"]
    for name, (rss, peak, head) in m.memory.items():
        lines.append(f"| {name}: RSS at the end / peak, head series | {rss / 2**30:.2f} / {peak / 2**30:.2f} GiB, "
                     f"{head:.0f} | | |")
    lines += [f"| firing alerts at the end: reference vs shards + global (fault: {m.fault or 'none'}) | "
              f"{ref_firing} on the reference; {len(extra)} extra, {len(missing)} missing "
              f"(comparison {attempt} of at most 3, a minute apart) | 0 extra, 0 missing | "
              f"{verdict(not extra and not missing)} |", ""]
    for title, keys in (("Extra (shards + global only)", extra), ("Missing (reference only)", missing)):
        if keys:
            lines += [f"{title}: " + "; ".join(sorted(_key(k) for k in keys)[:10]), ""]
    if m.alerts_by_name:
        servers = list(m.alerts_by_name)
        names = sorted({n for d in m.alerts_by_name.values() for n in d})
        lines += ["Firing alerts by name at the last comparison:", "", "| alert | " + " | ".join(servers) + " |",
                  "|---|" + "---|" * len(servers)]
        lines += [f"| {n} | " + " | ".join(str(m.alerts_by_name[s].get(n, 0)) for s in servers) + " |" for n in names]
        lines.append("")
    lines += latency_lines(m)
    if m.scrapes:
        lines += ["Scrapes in the last hour (live part): " + "; ".join(
            f"{k}: {failed:.0f} failed, longest {longest:.2f} s" for k, (failed, longest) in m.scrapes.items()), ""]
    if m.scrape_offsets:
        lines += ["Scrape timestamps in the live phase (intervals between a target's consecutive `up` samples longer "
                  "than the scrape interval; the largest excess): " + "; ".join(
                      f"{k}: {late} of {n}, {worst * 1000:.0f} ms" for k, (n, late, worst) in m.scrape_offsets.items())
                  + ". GPULost's exporter branch compares a node's newest GPU sample, as gpu:dcgm_reporting:timestamp "
                  "recorded it at its group's last evaluation, with the node's newest `up` at the alert's evaluation, "
                  "with 60 s to spare: a scrape between the two evaluations that starts even 1 ms late crosses it.", ""]
    lines += ["## Rule groups (wall time per evaluation, ms (n): Prometheus median, vmalert mean)", "",
              "| group | interval | reference | " + " | ".join(f"shard-{i}" for i in range(len(m.shards)))
              + " | global (vmalert) |" + (" shard-0 on vmalert |" if m.vm_shard else ""),
              "|---|---|---|" + "---|" * len(m.shards) + "---|" + ("---|" if m.vm_shard else "")]
    groups = list(dict.fromkeys([*m.intervals["single"], *m.intervals["shard"], *m.intervals["global"]]))
    for g in groups:
        iv = m.intervals["single"].get(g) or m.intervals["shard"].get(g) or m.intervals["global"].get(g)
        cells = [m.reference.get(g), *[s.get(g) for s in m.shards], m.global_.get(g)]
        cells += [m.vm_shard.get(g)] if m.vm_shard else []
        lines.append(f"| {g} | {iv}s | " + " | ".join(f"{fmt_ms(c[0])} ({c[1]})" if c else "-" for c in cells) + " |")
    lines += shard_overhead(m)
    lines += ["", f"## Extrapolation: {m.target_gpus:,} GPUs on {m.target_shards} shards of {per_shard:,}", "",
              f"Assumption: a group's time is linear in the series it reads, so in GPUs: per shard, time at {per_shard:,} "
              f"GPUs = measured time / the shard's GPUs x {per_shard:,} (of the two shards, the larger time per GPU); "
              f"the global tier reads every shard's forwarded series: time at {m.target_gpus:,} = measured / "
              f"{m.gpus} x {m.target_gpus:,}. Fixed costs scale too, so this overestimates. One core per server, "
              "groups of a server running one at a time (the worst case: Prometheus 3 runs independent groups "
              "concurrently).", "",
              "| group | interval | shard on Prometheus: s | share | shard on vmalert: s | share |",
              "|---|---|---|---|---|---|"]
    vm_by = {p.group: p for p in vm_p}
    for p in prom_p:
        v = vm_by.get(p.group)
        lines.append(f"| {p.group} | {p.interval}s | {p.projected_s:.2f} | {p.share:.1%} | "
                     f"{f'{v.projected_s:.2f}' if v else '-'} | {f'{v.share:.1%}' if v else '-'} |")
    lines += ["", f"| global group (vmalert, {m.target_gpus:,} GPUs) | interval | s | share |", "|---|---|---|---|"]
    lines += [f"| {p.group} | {p.interval}s | {p.projected_s:.2f} | {p.share:.1%} |" for p in glob_p]
    worst = max(prom_p + vm_p + glob_p, key=lambda p: p.share, default=None)
    if worst:
        lines += ["", f"Largest share: {worst.group} at {worst.share:.1%} of its {worst.interval}s interval; target "
                  f"no group above {TARGET_GROUP_SHARE:.0%}: {verdict(worst.share <= TARGET_GROUP_SHARE)}. Sum over a shard's "
                  f"groups on Prometheus: {sum(p.share for p in prom_p):.1%} of a core"
                  + (f", on vmalert {sum(p.share for p in vm_p):.1%}" if vm_p else "")
                  + f"; global tier on vmalert: {sum(p.share for p in glob_p):.1%}. Not measured: the global tier "
                  "on a Prometheus-engine ruler (Thanos, Mimir)."]
    lines += ["", "## Series the global tier receives, by name", "",
              ", ".join(f"{n} {v:.0f}" for n, v in sorted(m.received_by_name.items(), key=lambda x: (-x[1], x[0]))), "",
              "## Phases and failures", "", "| what | value |", "|---|---|"]
    lines += [f"| {k} | {v:.0f} s |" for k, v in m.phases.items()]
    lines += [f"| failed rule evaluations, {k} | {', '.join(f'{g}: {v:.0f}' for g, v in f.items()) or 'none'} |"
              for k, f in m.failures.items()]
    lines += ["", "## Caveats", "",
              "- All servers and the synthetic exporter (this Python process) share 2 cores, so times include "
              "waiting for a core; the ratios compare servers that waited alike.",
              "- The live phase is minutes long: windows longer than it over recorded series, and the global tier's "
              "windows over forwarded series (which start with the live phase), held fewer samples than in steady "
              "state."]
    return "\n".join(lines) + "\n"
