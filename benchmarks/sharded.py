"""Sharded topology, live: the rendered shard and global rule files on real engines over the synthetic
dcgm-exporter fleet of benchmarks/fleet.py, against one reference server, measured in one run.

- N GPUs on N/8 nodes, one exporter target per node, each on a port of its own on 127.0.0.1 (so
  __address__ differs per node, as in a real fleet); the last --fine-hours of every field ingested into
  each Prometheus as blocks (promtool), then live scrapes.
- The rule files and the shards' configuration are rendered for the run: the repository's rulesgen.yaml with
  a `sharding:` section naming the bench's victoria-metrics as the global store and static shards shard-0,
  shard-1 (sharded_plan.bench_config), rendered into the work folder.
- Two Prometheus shards, each scraping its `hashmod` half of the node targets (modulus 2 on __address__),
  with alerts/sharded/shard/*.yaml and its rendered alerts/sharded/remote-write-shard-N.yaml as it is,
  remote-writing to that victoria-metrics; vmalert evaluating alerts/sharded/global/*.yaml against it (the
  global tier, -rule.evalDelay = sharding.evaluation_delay); a reference Prometheus scraping every node with
  alerts/prometheus/*.yaml. Optionally (--vmalert-shard)
  shard 0 once more as vmalert over a victoria-metrics of its own, for the shard groups' cost on vmalert.
- Faults at the start of the live phase: a DBE on one GPU and (--capacity-fault) on one GPU of each of
  enough nodes of both shards to degrade the fleet's capacity (a global alert over both shards' parts): at
  the end the reference's firing alerts must equal the shards' plus the global tier's, and each alert's
  activeAt on the shards and the global tier minus the reference's is what sharding adds to its latency. Each group's cost per GPU is then extrapolated to
  --target-gpus on --target-shards shards.

Run: .venv/bin/python benchmarks/sharded.py [--gpus 800]   (see --help; writes benchmarks/results/sharded-<N>.md)
"""
from __future__ import annotations

import argparse
import hashlib
import math
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import ThreadingHTTPServer
from pathlib import Path

import requests
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from fleet_data import GPUS_PER_NODE, Exporter, exposition, exporter_fields, make_fleet, node_instance, write_openmetrics  # noqa: E402
from fleet_measure import RuleTimes, cpu_seconds, wait_iterations  # noqa: E402
from fleet_plan import GLOBAL_INTERVAL, TOOLS, RuleSet, engine_versions, self_reported, shortened_copies  # noqa: E402
from fleet_prom import measure_prometheus, prom_failures, prom_iterations, promtool_ingest  # noqa: E402
from fleet_servers import Server, log, metric_value, vm_hwm, write_report  # noqa: E402
from fleet_vm import measure_vmalert, vmalert_failures, vmalert_iterations  # noqa: E402
from rulesgen.processes import free_port  # noqa: E402
from sharded_plan import (added_latency, allowlist, bench_config, compare_alerts, firing, note_active,  # noqa: E402
                          only_targets, shard_config, split_targets)
from sharded_report import Measured, report  # noqa: E402

FAULT_METRIC = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
TIERS = {"single": "alerts/prometheus", "shard": "alerts/sharded/shard", "global": "alerts/sharded/global"}
SHARDS = 2


class NodeExporter(Exporter):
    """The fleet bench's exporter with one listening port per node (127.0.0.1:<port>/node/<n>), so that
    hashmod over __address__ splits by node; `fault` (gpu index) reads FAULT_METRIC 1 from fault_since."""

    def __init__(self, fleet, metrics, origin, step, faults: list[int]):
        super().__init__(fleet, metrics, origin, step)  # its own port takes vmalert's notifications
        self.faults, self.fault_since = list(faults), math.inf
        self.node_servers = []
        for _ in range(fleet.nodes):
            srv = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
            srv.daemon_threads = True
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            self.node_servers.append(srv)
        self.addresses = [f"127.0.0.1:{s.server_address[1]}" for s in self.node_servers]

    def snapshot(self, now: float):
        snap = super().snapshot(now)
        if self.faults and now >= self.fault_since and FAULT_METRIC in snap:
            column = list(snap[FAULT_METRIC])
            for gpu in self.faults:
                column[gpu] = ["1"]
            snap = {**snap, FAULT_METRIC: column}
        return snap

    def scrape_config(self, interval: str) -> dict:
        groups = [{"targets": [self.addresses[n]],
                   "labels": {"__metrics_path__": f"/node/{n}", "instance": node_instance(n), "cluster": "bench"}}
                  for n in range(self.fleet.nodes)]
        return {"job_name": "dcgm-exporter", "honor_labels": True, "scrape_interval": interval,
                "scrape_timeout": "10s", "static_configs": groups}

    def close(self) -> None:
        for srv in self.node_servers:
            srv.shutdown()
            srv.server_close()
        super().close()


def render_inputs(dest: Path, write_url: str, delay: int) -> tuple[dict[str, list[Path]], list[Path], Path, str, str]:
    """The repository's catalog rendered with its rulesgen.yaml, the `sharding:` section naming the bench's
    global store (write_url) and shards (sharded_plan.bench_config), into dest: (files per tier, each shard's
    remote-write-shard-N.yaml, the counters file, commit, sha256 of them all, 12 hex)."""
    from rulesgen.artifacts import plan, write_all
    from rulesgen.catalog import bundled_catalog_dir
    config = dest / "rulesgen.yaml"
    dest.mkdir(parents=True, exist_ok=True)
    config.write_text(bench_config((ROOT / "rulesgen.yaml").read_text(), write_url, SHARDS, delay))
    out = dest / "render"
    write_all(out, plan(bundled_catalog_dir(), config, None, scenario_tests=False).artifacts)
    files = {tier: sorted((out / folder).glob("*.yaml")) for tier, folder in TIERS.items()}
    fragments = [out / "alerts" / "sharded" / f"remote-write-shard-{i}.yaml" for i in range(SHARDS)]
    counters = out / "exporter" / "dcgm-counters.csv"
    h = hashlib.sha256()
    for path in [p for fs in files.values() for p in fs] + fragments + [counters]:
        h.update(path.relative_to(out).as_posix().encode() + b"\0" + path.read_bytes())
    import subprocess
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    return files, fragments, counters, commit, h.hexdigest()[:12]


def capacity_faults(fleet, split: list[list[int]], gpus: int, single: int | None) -> list[int]:
    """GPU 0 of enough nodes, dealt alternately from each shard's nodes, for more than a tenth of the fleet to
    want draining (fleet_capacity_degraded's default fraction 0.1, at least 3 GPUs), besides `single`."""
    want = max(3, gpus // 10 + 1)
    nodes = [n for pair in zip(*split) for n in pair] + [n for s in split for n in s[min(map(len, split)):]]
    chosen = [g for g in (n * GPUS_PER_NODE for n in nodes) if g != single]
    return chosen[:want]


def start_prometheus(name: str, work: Path, config: dict, flags: list[str]) -> Server:
    path = work / f"{name}.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, width=1 << 20))
    port = free_port()
    return Server(name, [str(TOOLS / "prometheus"), f"--config.file={path}", f"--storage.tsdb.path={work / name}",
                         f"--web.listen-address=127.0.0.1:{port}", *flags], port, work, "/-/ready")


def start_vm(name: str, work: Path, scrape: dict | None) -> Server:
    port, cmd = free_port(), [str(TOOLS / "victoria-metrics"), f"-storageDataPath={work / name}",
                              "-retentionPeriod=30d", "-loggerLevel=WARN", "-search.maxUniqueTimeseries=100000000",
                              "-search.maxSeries=100000000"]
    if scrape:
        (work / f"{name}-scrape.yml").write_text(yaml.safe_dump({"scrape_configs": [scrape]}, width=1 << 20))
        cmd.append(f"-promscrape.config={work / f'{name}-scrape.yml'}")
    return Server(name, cmd + [f"-httpListenAddr=127.0.0.1:{port}"], port, work, "/health")


def start_vmalert(name: str, work: Path, vm: Server, rules: list[Path], notifier: str,
                  eval_delay: int | None = None) -> Server:
    """eval_delay: -rule.evalDelay in s (the global tier: sharding.evaluation_delay); None: vmalert's default."""
    port = free_port()
    delay = [f"-rule.evalDelay={eval_delay}s"] if eval_delay is not None else []
    return Server(name, [str(TOOLS / "vmalert"), *[f"-rule={f}" for f in rules], f"-datasource.url={vm.url}",
                         f"-remoteWrite.url={vm.url}", f"-notifier.url={notifier}",
                         f"-evaluationInterval={GLOBAL_INTERVAL}s", f"-httpListenAddr=127.0.0.1:{port}",
                         "-loggerLevel=WARN", *delay], port, work, "/health")


def ingest(fleet, metrics, t0: int, t1: int, step: int, origin: float, jobs: list[tuple[Path, set[int] | None]],
           work: Path) -> None:
    """[t0, t1) of every field into each (Prometheus data dir, nodes): one OpenMetrics file and one
    promtool run each, two at a time."""
    def one(job):
        data_dir, nodes = job
        path = work / f"{data_dir.name}-{t0}.om"
        write_openmetrics(path, fleet, metrics, t0, t1, step, origin, nodes)
        promtool_ingest(path, data_dir)
        path.unlink()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(one, jobs))


def import_vm(vm: Server, fleet, metrics, t0: int, t1: int, step: int, origin: float, nodes: set[int]) -> None:
    def body():
        buf = []
        for chunk in exposition(fleet, metrics, t0, t1, step, origin, ts_unit=1000, nodes=nodes):
            buf.append(chunk)
            if len(buf) >= 64:
                yield "".join(buf).encode()
                buf = []
        yield "".join(buf).encode()
    requests.post(vm.url + "/api/v1/import/prometheus", data=body(), timeout=3600).raise_for_status()
    requests.get(vm.url + "/internal/force_flush", timeout=600)


def memory(server: Server) -> tuple[float, float, float]:
    """(RSS now, peak RSS, head series; bytes, bytes, count) of a Prometheus."""
    try:
        rss = int(Path(f"/proc/{server.proc.pid}/status").read_text().split("VmRSS:")[1].split()[0]) * 1024
    except (OSError, IndexError, ValueError):
        rss = 0
    return rss, vm_hwm(server.proc.pid), metric_value(server.metrics(), "prometheus_tsdb_head_series") or math.nan


def scraped_addresses(prom: Server) -> set[str]:
    """The __address__ of every target the server kept after relabelling."""
    data = requests.get(prom.url + "/api/v1/targets", params={"state": "active"}, timeout=60).json()["data"]
    return {t["discoveredLabels"]["__address__"] for t in data["activeTargets"]}


def check_split(proms: list[Server], addresses: list[str], split: list[list[int]]) -> None:
    """The engine's hashmod must deal the targets as sharded_plan.hashmod predicts (the history blocks
    were cut by it)."""
    for i, p in enumerate(proms):
        got, want = scraped_addresses(p), {addresses[n] for n in split[i]}
        if got != want:
            raise RuntimeError(f"{p.name} scrapes {sorted(got)}, hashmod predicted {sorted(want)}")
    log("hashmod split as predicted: " + "; ".join(f"shard-{i}: " + ", ".join(addresses[n] for n in s[:3])
                                                    for i, s in enumerate(split)))


def scrape_offsets(prom: Server, step: int, since: float) -> tuple[int, int, float]:
    """(scrape intervals, those longer than `step`, the largest excess in s) of every target's `up`
    since `since` (the live phase): Prometheus writes a scrape's samples at its start time, put on the
    target's schedule only when within --scrape.timestamp-tolerance (2 ms by default), so a scrape that
    starts late shows here (timestamps are in ms)."""
    minutes = max(1, math.ceil((time.time() - since) / 60))
    n = late = 0
    worst = 0.0
    for r in prom.query(f"up[{minutes}m]"):
        ts = [float(v[0]) for v in r["values"] if float(v[0]) >= since]
        for a, b in zip(ts, ts[1:]):
            n += 1
            if b - a - step > 0.0005:
                late += 1
                worst = max(worst, b - a - step)
    return n, late, worst


def cores_used(start: tuple[float, float], end: tuple[float, float]) -> float:
    """CPU seconds per wall second of a server between two cpu_seconds() readings: everything it did
    (scrapes, rules, TSDB, remote write)."""
    return (end[1] - start[1]) / (end[0] - start[0]) if end[0] > start[0] else math.nan


def rule_means(times: RuleTimes) -> dict[tuple[str, str], float]:
    """Mean evaluationTime per (group, rule name), summed over rules of one name in a group."""
    out: dict[tuple[str, str], float] = {}
    for mean, group, name, _ in times.top(n=10**6):
        out[(group, name)] = out.get((group, name), 0.0) + mean
    return out


def by_name(alerts: list[dict]) -> dict[str, int]:
    """Firing alerts per alert name."""
    out: dict[str, int] = {}
    for a in alerts:
        if a.get("state") == "firing":
            out[a["labels"]["alertname"]] = out.get(a["labels"]["alertname"], 0) + 1
    return out


def alerts_of(server: Server) -> list[dict]:
    return requests.get(server.url + "/api/v1/alerts", timeout=60).json()["data"]["alerts"]


class Sightings(threading.Thread):
    """Polls every server's /api/v1/alerts every `every` s (bounded by `until`) and notes when each alert is
    first seen active on each (sharded_plan.note_active): the wall clock the latency comparison reads."""

    def __init__(self, servers: dict[str, Server], every: float, until: float):
        super().__init__(daemon=True)
        self.servers, self.every, self.until = servers, every, until
        self.seen: dict[str, dict] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set() and time.time() < self.until:
            for name, server in self.servers.items():
                try:
                    note_active(self.seen, name, alerts_of(server), time.time())
                except (requests.RequestException, ValueError, KeyError):
                    pass
            self.done.wait(self.every)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", type=int, default=800)
    p.add_argument("--scrape-interval", dest="step", type=int, default=60, help="seconds")
    p.add_argument("--fine-hours", type=float, default=1.0, help="hours of every field ingested before the live "
                   "phase (the baselines' 30-minute values need 30 minutes)")
    p.add_argument("--evaluations", type=int, default=9, help="evaluations per group measured (Prometheus: their "
                   "median, vmalert: their mean)")
    p.add_argument("--warm-minutes", type=float, default=10, help="live minutes before the measurement (at least "
                   "3 evaluations of every group): the global tier's windows fill only from the live phase")
    p.add_argument("--target-gpus", type=int, default=100_000)
    p.add_argument("--target-shards", type=int, default=8)
    p.add_argument("--fault-gpu", type=int, default=3, help="GPU index that reports a DBE live (-1: none)")
    p.add_argument("--capacity-fault", action=argparse.BooleanOptionalAction, default=True,
                   help="also a DBE on GPU 0 of enough nodes of both shards to degrade the fleet's capacity (a "
                        "global alert), for the latency sharding adds to it")
    p.add_argument("--evaluation-delay", type=int, default=60, help="sharding.evaluation_delay of the render, s "
                   "(the global vmalert's -rule.evalDelay)")
    p.add_argument("--vmalert-shard", action=argparse.BooleanOptionalAction, default=True,
                   help="also run shard 0 as vmalert over a victoria-metrics of its own")
    p.add_argument("--prometheus-flag", action="append", default=[], help="an extra flag for every Prometheus "
                   "(repeatable), e.g. --prometheus-flag=--no-scrape.adjust-timestamps")
    p.add_argument("--tmp", default=None)
    p.add_argument("--out", default=None, help="report path (default benchmarks/results/sharded-<N>.md)")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    shards = SHARDS
    work = Path(tempfile.mkdtemp(prefix="sharded-bench-", dir=args.tmp))
    # the global store first: the render names its URL in every shard's fragment
    vm = start_vm("victoria-metrics-global", work, None)
    vm.wait_ready()
    try:
        files, fragment_paths, counters, commit, digest = render_inputs(work / "inputs", vm.url + "/api/v1/write",
                                                                        args.evaluation_delay)
    except BaseException:
        Server.stop_all()
        raise
    fragments = [yaml.safe_load(p.read_text()) for p in fragment_paths]
    fragment = fragments[0]
    rules = {tier: RuleSet.load(fs) for tier, fs in files.items()}
    fleet = make_fleet(args.gpus)
    metrics = exporter_fields(counters)
    now = int(time.time()) // args.step * args.step
    origin = now - 30 * 86400
    fault = args.fault_gpu if 0 <= args.fault_gpu < args.gpus else None
    exporter = NodeExporter(fleet, metrics, origin, args.step, [])
    split = split_targets(exporter.addresses, shards)
    capacity = capacity_faults(fleet, split, args.gpus, fault) if args.capacity_fault else []
    exporter.faults = ([fault] if fault is not None else []) + capacity
    m = Measured(gpus=args.gpus, nodes=fleet.nodes, step=args.step, fine_hours=args.fine_hours,
                 shard_nodes=[len(s) for s in split],
                 shard_gpus=[sum(1 for i in range(args.gpus) if fleet.node_of[i] in set(s)) for s in split],
                 intervals={t: r.intervals for t, r in rules.items()}, commit=commit, digest=digest,
                 argv=" ".join(sys.argv[1:]), target_gpus=args.target_gpus, target_shards=args.target_shards,
                 allowlist_names=len(allowlist(fragment).split("|")))
    if fault is not None:
        n = int(fleet.node_of[fault])
        m.fault = (f"{FAULT_METRIC} = 1 on GPU {fault % GPUS_PER_NODE} of {node_instance(n)} "
                   f"(shard {next(i for i, s in enumerate(split) if n in s)})")
    if capacity:
        per = [sum(1 for g in capacity if int(fleet.node_of[g]) in set(s)) for s in split]
        m.fault = (m.fault + "; " if m.fault else "") + (
            f"and on GPU 0 of {len(capacity)} more nodes ({' + '.join(map(str, per))} on the shards): "
            "fleet_capacity_degraded over both shards")
    m.evaluation_delay = args.evaluation_delay
    log(f"{args.gpus} GPUs; nodes per shard {m.shard_nodes}, GPUs per shard {m.shard_gpus}; work dir {work}")
    sink = f"http://127.0.0.1:{exporter.port}"
    try:
        t = time.monotonic()
        t0 = now - int(args.fine_hours * 3600)
        dirs = [(work / "prometheus-reference", None)] + [(work / f"prometheus-shard-{i}", set(s))
                                                          for i, s in enumerate(split)]
        ingest(fleet, metrics + ["up"], t0, now, args.step, origin, dirs, work)
        gap = int(time.time()) // args.step * args.step
        ingest(fleet, metrics + ["up"], now, gap, args.step, origin, dirs, work)
        m.phases["history generated + ingested (promtool, 3 servers)"] = time.monotonic() - t
        scrape = exporter.scrape_config(f"{args.step}s")
        vm_shard = vmalert_shard = None
        if args.vmalert_shard:
            # shard 0's targets listed, not relabelled: VictoriaMetrics' hashmod deals them differently
            vm_shard = start_vm("victoria-metrics-shard-0", work,
                                only_targets(scrape, {exporter.addresses[n] for n in split[0]}))
            vm_shard.wait_ready()
            t = time.monotonic()
            import_vm(vm_shard, fleet, metrics + ["up"], t0, int(time.time()) // args.step * args.step, args.step,
                      origin, set(split[0]))
            m.phases["history imported into victoria-metrics-shard-0"] = time.monotonic() - t
        ref = start_prometheus("prometheus-reference", work, {
            "global": {"scrape_interval": f"{args.step}s", "evaluation_interval": f"{GLOBAL_INTERVAL}s"},
            "rule_files": [str(f) for f in shortened_copies(files["single"], work / "rules-single")],
            "scrape_configs": [scrape]}, args.prometheus_flag)
        # a copy per shard: Prometheus places a group's evaluations at an offset hashed from its name and
        # file path, so shards loading the same paths would evaluate each group at the same instant and
        # wait for each other's on these shared cores (separate hosts in a real deployment)
        shard_rules = [[str(f) for f in shortened_copies(files["shard"], work / f"rules-shard-{i}")] for i in range(shards)]
        # each shard's rendered fragment as it is: its external label and the remote write to `vm`
        proms = [start_prometheus(f"prometheus-shard-{i}", work, shard_config(
            fragments[i], i, shard_rules[i], scrape, shards, f"{GLOBAL_INTERVAL}s"), args.prometheus_flag)
            for i in range(shards)]
        glob = start_vmalert("vmalert-global", work, vm, shortened_copies(files["global"], work / "rules-global"), sink,
                             args.evaluation_delay)
        if vm_shard:
            vmalert_shard = start_vmalert("vmalert-shard-0", work, vm_shard, [Path(f) for f in shard_rules[0]], sink)
        exporter.fault_since = time.time()
        for s in [ref, *proms, glob] + ([vmalert_shard] if vmalert_shard else []):
            s.wait_ready()
        live_since, live_wall = time.monotonic(), time.time()
        sightings = Sightings({"reference": ref, **{p.name: p for p in proms}, glob.name: glob}, 5.0,
                              live_wall + 3 * 3600)
        sightings.start()
        wait_iterations(ref, list(rules["single"].intervals), 3, prom_iterations, timeout=1800)
        for p in proms:
            wait_iterations(p, list(rules["shard"].intervals), 3, prom_iterations, timeout=1800)
        wait_iterations(glob, list(rules["global"].intervals), 3, vmalert_iterations, timeout=1800)
        check_split(proms, exporter.addresses, split)  # targets are discovered by now
        time.sleep(max(0.0, args.warm_minutes * 60 - (time.monotonic() - live_since)))
        m.phases["live before the measurement"] = time.monotonic() - live_since
        t = time.monotonic()
        rule_times = {s.name: RuleTimes() for s in [ref, *proms]}
        cpu = {s.name: cpu_seconds(s) for s in [ref, *proms]}
        with ThreadPoolExecutor(5) as pool:
            jobs = [pool.submit(measure_prometheus, ref, list(rules["single"].intervals), args.evaluations,
                                rule_times[ref.name], summary=statistics.median)]
            jobs += [pool.submit(measure_prometheus, p, list(rules["shard"].intervals), args.evaluations,
                                 rule_times[p.name], summary=statistics.median) for p in proms]
            jobs.append(pool.submit(measure_vmalert, glob, list(rules["global"].intervals), args.evaluations))
            if vmalert_shard:
                jobs.append(pool.submit(measure_vmalert, vmalert_shard, list(rules["shard"].intervals),
                                        args.evaluations))
            results = [j.result() for j in jobs]
        m.phases["measurement (all servers at once)"] = time.monotonic() - t
        m.cores = {name: cores_used(cpu[name], cpu_seconds(s)) for name, s in zip(cpu, [ref, *proms])}
        m.rule_times = {name: rule_means(rt) for name, rt in rule_times.items()}
        m.reference, m.shards, m.global_ = results[0], results[1:1 + shards], results[1 + shards]
        m.vm_shard = results[2 + shards] if vmalert_shard else None
        m.failures = {s.name: {g: v for g, v in prom_failures(s.metrics()).items() if v} for s in [ref, *proms]}
        m.failures.update({s.name: {g: v for g, v in vmalert_failures(s.metrics()).items() if v}
                           for s in [glob] + ([vmalert_shard] if vmalert_shard else [])})
        m.memory = {s.name: memory(s) for s in [ref, *proms]}
        received = vm.query('count by (__name__) ({shard=~".+"})')
        m.received_by_name = {r["metric"].get("__name__", "?"): float(r["value"][1]) for r in received}
        for p in [ref, *proms]:
            m.scrapes[p.name] = (p.scalar("sum(count_over_time(up[1h])) - sum(sum_over_time(up[1h]))"),
                                 p.scalar("max(max_over_time(scrape_duration_seconds[1h]))"))
            m.scrape_offsets[p.name] = scrape_offsets(p, args.step, live_wall)
        for attempt in range(1, 4):
            tiers = [alerts_of(ref)] + [alerts_of(p) for p in proms] + [alerts_of(glob)]
            extra, missing = compare_alerts(tiers[0], tiers[1:])
            m.alerts = (len(firing(tiers[0])), extra, missing, attempt)
            m.alerts_by_name = {name: by_name(a) for name, a in zip(
                ["reference", *[p.name for p in proms], glob.name], tiers)}
            if not extra and not missing:
                break
            time.sleep(args.step)
        sightings.done.set()
        sightings.join(timeout=60)
        m.latency = added_latency(sightings.seen, "reference")
    finally:
        Server.stop_all()
        exporter.close()
        shutil.rmtree(work, ignore_errors=True)
    ver = engine_versions()
    m.engines = ", ".join(f"{n} {ver[n]}" for n in ver) + f" (`prometheus --version`: {self_reported()})"
    text = report(m)
    write_report(text, Path(args.out) if args.out else HERE / "results" / f"sharded-{args.gpus}.md")


if __name__ == "__main__":
    main()
