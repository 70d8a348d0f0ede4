"""Fleet-scale rule evaluation cost: the rendered rules (alerts/prometheus/*.yaml, read at run time) in a
real Prometheus and in vmalert + victoria-metrics (the binaries in .tools/bin: Prometheus 3.5 and
VictoriaMetrics 1.145 since commit 1ede561; the report names the versions that ran), over a synthetic
dcgm-exporter fleet.

Method (what the numbers mean):
- Data: N H100 GPUs (8 per node, 4-node training jobs on 85% of the nodes: ~95% util, 600-700 W,
  60-75 C; the rest idle) with dcgm-exporter 4.x labels. History: D days of the fields the baseline
  recording rules (and the naive comparison) read, every --history-step; the last --fine-hours: every
  field at the scrape interval. Then a live synthetic exporter (one scrape target per node) scraped
  at the scrape interval, so the rules read fresh samples. (Raw blocks that run past "now" would make
  Prometheus refuse the rule results: its head takes no samples older than the newest block.)
- Prometheus: raw data ingested with `promtool tsdb create-blocks-from openmetrics`, one input file per
  54h block (the largest block Prometheus keeps at 30d retention: each file is parsed once and the
  blocks are never re-compacted). VictoriaMetrics: the same samples POSTed to /api/v1/import/prometheus.
- Downsampled history: `rulesgen backfill victoriametrics` (vmalert replay); `rulesgen backfill
  prometheus` (promtool create-blocks-from rules) for --prom-backfill-days. When that is less than
  --days (promtool's rule backfill takes hours at fleet size), Prometheus gets the history vmalert
  computed: exported from VictoriaMetrics, ingested with promtool. Prometheus is measured only once it
  has loaded every block and compacted the overlapping ones away.
- Groups with an interval above 1m run from a copy shortened to 1m (cost per evaluation does not
  depend on the interval); shares use the real intervals. The servers run one at a time.
- Naive comparison: one generated group of z-scores on raw samples over the whole history, run alone.

Run: .venv/bin/python benchmarks/fleet.py [--gpus 800] [--days 14]   (see --help; writes
benchmarks/results/fleet-<N>.md)

Modules, one per job: fleet_plan (rule files, inputs snapshot, history windows, versions), fleet_data
(synthetic fleet, exposition, live exporter), fleet_prom (promtool blocks, Prometheus, its readings),
fleet_vm (victoria-metrics import, vmalert, its readings), fleet_measure (readings both share),
fleet_report (series counts, the report), fleet_servers (processes); this file runs them in order.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import requests
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from fleet_data import Exporter, make_fleet, write_openmetrics  # noqa: E402
from fleet_measure import RuleTimes, cores_since, cpu_seconds, rule_times_usable, wait_iterations  # noqa: E402
from fleet_plan import (RULES_DIR, LoadSampler, Inputs, Phases, Plan, RuleSet, make_plan, naive_rule_file,  # noqa: E402
                        render_with_slos, shortened_copies)
from fleet_prom import (ingest_prometheus, load_blocks, measure_prometheus, prom_failures, prom_iterations,  # noqa: E402
                        prometheus_config, promtool_ingest, run_backfill, span_days, start_prometheus)
from fleet_report import Result, count_history, count_series, report  # noqa: E402
from fleet_servers import PEAK_RSS, Server, log, write_report  # noqa: E402
from fleet_vm import (import_vm, measure_vmalert, start_vm, start_vmalert, vmalert_failures,  # noqa: E402
                      vmalert_iterations)


# ------------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------------

def transplant_history(vm: Server, plan: Plan, data_dir: Path, work: Path) -> int:
    """Prometheus blocks of the downsampled history that vmalert's replay wrote into VictoriaMetrics:
    every series whose name contains ':' (only the backfill has written any so far), exported per name
    (OpenMetrics wants each family in one piece) and ingested with promtool. Returns samples."""
    names = [n for n in requests.get(vm.url + "/api/v1/label/__name__/values", timeout=60).json()["data"] if ":" in n]
    path, samples = work / "history.om", 0
    with open(path, "w") as f:
        for name in names:
            f.write(f"# TYPE {name} gauge\n")
            r = requests.get(vm.url + "/api/v1/export", params={"match[]": name, "start": plan.t_start,
                                                                "end": plan.t_end}, stream=True, timeout=3600)
            for line in r.iter_lines():
                d = json.loads(line)
                labels = ",".join(f'{k}="{escape(v)}"' for k, v in sorted(d["metric"].items()) if k != "__name__")
                f.writelines(f"{name}{{{labels}}} {om_float(v)} {ts / 1000:.3f}\n"
                             for v, ts in zip(d["values"], d["timestamps"]))
                samples += len(d["values"])
        f.write("# EOF\n")
    promtool_ingest(path, data_dir)
    path.unlink()
    return samples


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def om_float(v: float) -> str:
    return "NaN" if v != v else "+Inf" if v == math.inf else "-Inf" if v == -math.inf else repr(float(v))


def run_prometheus(args, plan, rules, fleet, work, exporter, phases) -> Result:
    """Gap-fill the raw data up to now, start Prometheus on the blocks, optionally time `rulesgen
    backfill prometheus`, wait for compaction, then measure the rulesgen groups and the naive group."""
    data_dir = work / "prom-data"
    t = time.monotonic()
    gap_end = int(time.time()) // plan.step * plan.step
    write_openmetrics(work / "gap.om", fleet, plan.all_metrics, plan.t_end, gap_end, plan.step, plan.origin)
    promtool_ingest(work / "gap.om", data_dir)
    (work / "gap.om").unlink()
    phases.add("Prometheus: raw gap since t_end generated + ingested", time.monotonic() - t)
    copies = shortened_copies(rules.files, work / "rules")
    config = work / "prometheus.yml"
    prometheus_config(config, copies, exporter.scrape_config(f"{plan.step}s"))
    prom = start_prometheus(work, data_dir, config)
    try:
        phases.add("Prometheus startup (to /-/ready)", prom.wait_ready())
        rules_since = time.monotonic()
        if args.prom_backfill_days:
            seconds = run_backfill("prometheus", prom.url, args.prom_backfill_days, plan.t_end - 3600,
                                   work / "backfill", phases)
            if seconds is not None:
                per = seconds / (plan.gpus * span_days(args.prom_backfill_days, plan.t_end - 3600))
                phases.notes.append(f"`rulesgen backfill prometheus --days {args.prom_backfill_days}` took "
                                    f"{seconds:.0f} s: {per * 1000:.0f} ms per GPU-day "
                                    f"({per * plan.gpus * plan.days / 3600:.1f} h for {plan.days} days at this rate).")
            if args.prom_backfill_days < plan.days and (work / "backfill").exists():
                shutil.rmtree(work / "backfill")
        t = time.monotonic()
        load_blocks(prom, work / "backfill", data_dir)
        phases.add("Prometheus: blocks loaded + overlapping blocks compacted", time.monotonic() - t)
        groups = list(rules.intervals)
        wait_iterations(prom, groups, 3, prom_iterations, timeout=1800)
        t = time.monotonic()
        load, cpu = os.getloadavg()[0], cpu_seconds(prom)
        times, sampler = RuleTimes(), LoadSampler()
        res = Result(groups=measure_prometheus(prom, groups, args.evaluations, times),
                     load=[load, os.getloadavg()[0]], warm=t - rules_since)
        res.load_during = sampler.stop()
        res.cores = cores_since(prom, cpu)
        res.failures = prom_failures(prom.metrics())
        res.top_rules = times.top()
        res.rule_times_note = rule_times_usable(times, res.groups)[1]
        phases.add("Prometheus measurement", time.monotonic() - t)
        count_series(prom, res)
        count_history(prom, plan, res)
        if args.naive:
            try:
                prometheus_config(config, [naive_rule_file(plan.days, work)], exporter.scrape_config(f"{plan.step}s"))
                requests.post(prom.url + "/-/reload", timeout=60).raise_for_status()
                wait_iterations(prom, ["naive-zscore-raw"], 1, prom_iterations, timeout=1800)
                res.naive = measure_prometheus(prom, ["naive-zscore-raw"], 3)["naive-zscore-raw"]
            except (RuntimeError, requests.RequestException) as exc:
                phases.notes.append(f"The naive group did not complete on Prometheus: {str(exc)[:300]}")
        return res
    finally:
        prom.stop()


def run_vm(args, plan, rules, fleet, work, exporter, phases) -> Result:
    """Import the same raw data, backfill with vmalert replay (and hand that history to Prometheus when
    Prometheus does not backfill itself), then measure the rulesgen groups and the naive group."""
    scrape = work / "vm-scrape.yml"
    scrape.write_text(yaml.safe_dump({"scrape_configs": [exporter.scrape_config(f"{plan.step}s")]}))
    vm = start_vm(work, scrape)
    phases.notes.append("victoria-metrics ran with -search.maxQueryDuration=10m so the naive group's raw "
                        "14-day windows can finish, and higher -search.maxSeries/-search.maxUniqueTimeseries "
                        "for the series counts. `rulesgen backfill victoriametrics` needs none of them: it sends "
                        "one day per range query.")
    try:
        vm.wait_ready()
        import_vm(vm, plan, fleet, phases)
        seconds = run_backfill("victoriametrics", vm.url, plan.days, plan.t_end, None, phases)
        if seconds is not None:
            per = seconds / (plan.gpus * span_days(plan.days, plan.t_end))
            phases.notes.append(f"`rulesgen backfill victoriametrics`: {per * 1000:.1f} ms per GPU-day.")
        requests.get(vm.url + "/internal/force_flush", timeout=600)
        if args.prom_backfill_days < plan.days:
            t = time.monotonic()
            n = transplant_history(vm, plan, work / "prom-data", work)
            phases.add("VM backfill exported + ingested into Prometheus blocks", time.monotonic() - t)
            phases.notes.append(f"Prometheus' downsampled history ({n} samples) is the one vmalert's replay "
                                "computed, exported from VictoriaMetrics and ingested with promtool: promtool's "
                                "own rule backfill is too slow at this size (see its ms per GPU-day).")
        copies = shortened_copies(rules.files, work / "rules")
        notifier = f"http://127.0.0.1:{exporter.port}"
        vmalert = start_vmalert(work, vm, copies, notifier)
        try:
            phases.add("vmalert startup", vmalert.wait_ready())
            rules_since = time.monotonic()
            groups = list(rules.intervals)
            wait_iterations(vmalert, groups, 3, vmalert_iterations, timeout=1800)
            t = time.monotonic()
            load, cpu = os.getloadavg()[0], (cpu_seconds(vm), cpu_seconds(vmalert))
            times, sampler = RuleTimes(), LoadSampler()
            res = Result(groups=measure_vmalert(vmalert, groups, args.evaluations, times),
                         load=[load, os.getloadavg()[0]], warm=t - rules_since)
            res.load_during = sampler.stop()
            usable, why = rule_times_usable(times, res.groups)
            res.top_rules = times.top() if usable else []
            res.rule_times_note = why
            res.cores = cores_since(vm, cpu[0]) + cores_since(vmalert, cpu[1])
            res.failures = vmalert_failures(vmalert.metrics())
            phases.add("vmalert measurement", time.monotonic() - t)
        finally:
            vmalert.stop()
        count_series(vm, res)
        count_history(vm, plan, res)
        if args.naive:
            naive = start_vmalert(work, vm, [naive_rule_file(plan.days, work)], notifier, "vmalert-naive")
            try:
                naive.wait_ready()
                wait_iterations(naive, ["naive-zscore-raw"], 1, vmalert_iterations, timeout=1800)
                res.naive = measure_vmalert(naive, ["naive-zscore-raw"], 3)["naive-zscore-raw"]
            except (RuntimeError, requests.RequestException) as exc:
                phases.notes.append(f"The naive group did not complete on vmalert: {str(exc)[:300]}")
            finally:
                naive.stop()
        return res
    finally:
        vm.stop()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", type=int, default=800)
    p.add_argument("--days", type=int, default=14)
    p.add_argument("--scrape-interval", dest="step", type=int, default=60, help="seconds (live and fine window)")
    p.add_argument("--history-step", type=int, default=None, help="seconds between history samples "
                   "(default: the scrape interval)")
    p.add_argument("--fine-hours", type=int, default=3, help="last hours with every field at the scrape interval")
    p.add_argument("--evaluations", type=int, default=5, help="evaluations per group to average")
    p.add_argument("--naive", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--slos", action=argparse.BooleanOptionalAction, default=True,
                   help="measure the rules of rulesgen.yaml with the three SLOs added (render into the work "
                   "directory; the exporter serves their job-metrics and kube-state-metrics inputs), else the "
                   "committed alerts/prometheus/")
    p.add_argument("--prom-backfill-days", type=int, default=None, help="days `rulesgen backfill prometheus` "
                   "computes (default --days; 0: skip). Fewer than --days: timed only, and Prometheus gets the "
                   "history vmalert's replay computed")
    p.add_argument("--tmp", default=None, help="parent of the temporary directory")
    p.add_argument("--out", default=None, help="report path (default benchmarks/results/fleet-<N>.md)")
    args = p.parse_args(argv)
    args.history_step = args.history_step or args.step
    args.prom_backfill_days = args.days if args.prom_backfill_days is None else args.prom_backfill_days
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="fleet-bench-", dir=args.tmp))
    inputs = Inputs.snapshot(work / "inputs", render_with_slos(work / "render") if args.slos else RULES_DIR)
    rules = RuleSet.load(inputs.rule_files)
    plan = make_plan(args, rules, inputs.counters_csv)
    fleet = make_fleet(args.gpus)
    phases = Phases()
    exporter = Exporter(fleet, plan.all_metrics[:-1], plan.origin, plan.step)
    log(f"{args.gpus} GPUs, {args.days}d, work dir {work}; history metrics: {plan.history_metrics}")
    try:
        samples = ingest_prometheus(plan, fleet, work / "prom-data", work, phases)
        vm = run_vm(args, plan, rules, fleet, work, exporter, phases)
        prom = run_prometheus(args, plan, rules, fleet, work, exporter, phases)
    finally:
        Server.stop_all()
        exporter.close()
        shutil.rmtree(work, ignore_errors=True)
    PEAK_RSS["fleet.py itself (data generator, live exporter)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    text = report(args, plan, rules, prom, vm, phases, samples, inputs)
    write_report(text, Path(args.out) if args.out else HERE / "results" / f"fleet-{args.gpus}.md")


if __name__ == "__main__":
    main()
