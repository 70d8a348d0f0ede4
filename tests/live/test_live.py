"""An alert's whole trip, live (`make test-live`; not part of `make test`): a synthetic dcgm-exporter
(tests/live/synthetic_exporter.py, one endpoint per node) scraped by a real Prometheus 3.5, and again by
a real victoria-metrics with vmalert 1.145, evaluating the files `rulesgen render` writes for a
rulesgen.yaml with a 5 s scrape and evaluation interval, notifying a real Alertmanager whose config
merges the rendered alertmanager/rulesgen.yaml (route and inhibit_rules, as the README says) with
receivers pointing at a local webhook (tests/live/webhook.py). The script flips faults on the exporter
and asserts on what the webhook got, and on what it must not get:

1. healthy load: no notification;
2. a double-bit ECC error on one GPU: one critical notification naming the GPU, node and job;
3. the job's pods deleted: no RESOLVED, no second alert;
4. Prometheus (vmalert) restarted: no second notification, the alert still firing, its activeAt kept;
5. the same GPU lost while the exporter answers: gpu_lost, and nothing about its other alerts;
6. the single-GPU inference node's only GPU stops reporting (its exporter answers): gpu_lost;
7. the training node's exporter stopped: exporter_down, nothing about that node's other alerts
   (started with 6, on another node: exporter_down's `for` covers both);
8. recovery: RESOLVED for what recovered, nothing else; and every page or ticket of the trip
   RESOLVED by the end (an alert that resolves while inhibited is never sent as RESOLVED by
   Alertmanager, prometheus/alertmanager#2754: its page would stay open).

Alertmanager runs with group_wait 5s and group_interval 10s instead of the rendered 30s and 5m (test
only): with 5m no RESOLVED could be told apart from its absence in a short test. The test's rulesgen.yaml
also sets (user settings, defaults in brackets) `keep_firing_for: 90s` (5m), exporter_down's `for: 1m`
(5m) and gpu_lost's `stale_seconds: 20` (120, four of dcgm-exporter's default 30 s collections; here the
exporter answers every 5 s): the recovery chain (exporter_down resolves, then the lost GPU's alerts one
hold later, then its ECC alert) and the dark node would otherwise take 20 of the test's minutes. Every
other timing (the rules' other `for`, vmalert's -rule.evalDelay 30s and victoria-metrics'
-search.latencyOffset 30s, Prometheus' resend delay and for-outage tolerance) is the default, except Prometheus' --rules.alert.for-grace-period (30s: README
"Deploying" says why). The two engines run at the same time. Each step's seconds from the fault to the
webhook go to benchmarks/results/live-latency.md, with the same latencies recounted for the rendered
Alertmanager timings (`make bench` prints that file)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from servers import Alertmanager, Prometheus, Server, VictoriaMetrics, VMAlert
from synthetic_exporter import Node, fleet
from webhook import Notification, Receiver


pytestmark = [pytest.mark.live, pytest.mark.engines]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "live-latency.md"
INTERVAL = 5                     # scrape and evaluation interval of the test's rulesgen.yaml (seconds)
# The test's rulesgen.yaml also shortens (module doc): keep_firing_for (default 5m), exporter_down's `for`
# (5m) and gpu_lost's stale_seconds (120: 4 of the exporter's default 30 s collections; 4 of this exporter's 5 s)
HOLD, DOWN_FOR, STALE = 90, 60, 20
AM_TEST_TIMINGS = {"group_wait": "5s", "group_interval": "10s"}   # test only, see the module doc
GROUP_WAIT, GROUP_INTERVAL = 5, 10
VM_EVAL_DELAY = 30               # vmalert's -rule.evalDelay default (= victoria-metrics' -search.latencyOffset)
TRAINING, INFERENCE, IDLE = "gpu-h100-a01", "inf-l40s-03", "gpu-h100-b07"
BAD_GPU = 3                      # the training node's GPU that gets the DBE, then falls off the bus
ABORT = threading.Event()       # set when the session is interrupted: every script stops at its next poll
ENGINES = tuple(os.environ.get("RULESGEN_LIVE_ENGINES", "prometheus,victoriametrics").split(","))

TOOLS: dict[str, str] = {}  # tool name -> path, from conftest's fixtures (a missing one fails the test)


@pytest.fixture(scope="module", autouse=True)
def _tools(prometheus_bin, victoria_metrics, vmalert, alertmanager_bin, amtool):
    TOOLS.update({"prometheus": prometheus_bin, "victoria-metrics": victoria_metrics, "vmalert": vmalert,
                  "alertmanager": alertmanager_bin, "amtool": amtool})


def log(engine: str, msg: str) -> None:
    print(f"[live {time.strftime('%H:%M:%S')} {engine}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------
# Set-up: render, configs
# ------------------------------------------------------------------------------------------------

def render(work: Path) -> Path:
    """`rulesgen render` of a rulesgen.yaml with the test's intervals into work/rendered."""
    config = work / "rulesgen.yaml"
    config.write_text(f"evaluation_interval: {INTERVAL}s\nscrape_interval: {INTERVAL}s\nkeep_firing_for: {HOLD}s\n"
                      f"failure_modes:\n  exporter_down:\n    for: {DOWN_FOR}s\n"
                      f"  gpu_lost:\n    thresholds:\n      stale_seconds: {STALE}\n")
    out = work / "rendered"
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "rulesgen"), "render", "--config", str(config), "--out", str(out)],
                          capture_output=True, text=True, cwd=work)
    assert proc.returncode == 0, f"rulesgen render failed:\n{proc.stderr}"
    return out


def rule_files(rendered: Path) -> list[Path]:
    return sorted((rendered / "alerts" / "prometheus").glob("*.yaml"))


def seconds(duration: str | None) -> int:
    units = {"s": 1, "m": 60, "h": 3600}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([smh])", duration or ""))


def alert_timings(rendered: Path) -> dict[str, tuple[int, int]]:
    """{failure_mode: (for, keep_firing_for)} in seconds, the longest of its alerts, as rendered."""
    out: dict[str, tuple[int, int]] = {}
    for f in rule_files(rendered):
        for group in yaml.safe_load(f.read_text())["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    mode = rule["labels"]["failure_mode"]
                    held, kept = out.get(mode, (0, 0))
                    out[mode] = (max(held, seconds(rule.get("for"))), max(kept, seconds(rule.get("keep_firing_for"))))
    return out


def alertmanager_config(rendered: Path, webhook: str) -> str:
    """A user's Alertmanager config with the rendered route merged in as the README says (its
    `route.routes[0]` under the user's root, its `inhibit_rules`), every receiver a webhook to the
    test's receiver (`fallback` catches anything the rulesgen route does not take)."""
    doc = yaml.safe_load((rendered / "alertmanager" / "rulesgen.yaml").read_text())
    root = {"receiver": "fallback", "group_by": ["alertname"], **AM_TEST_TIMINGS, "repeat_interval": "4h",
            "routes": [doc["route"]["routes"][0]]}

    def strip_timings(route: dict) -> None:  # the test's timings everywhere (the rendered routes[0] sets its own)
        for key in AM_TEST_TIMINGS:
            route.pop(key, None)
        for sub in route.get("routes", []):
            strip_timings(sub)
    for sub in root["routes"]:
        strip_timings(sub)
    names = ["fallback"] + [r["name"] for r in doc["receivers"]]
    receivers = [{"name": n, "webhook_configs": [{"url": f"{webhook}/{n}", "send_resolved": True}]} for n in names]
    return yaml.safe_dump({"route": root, "inhibit_rules": doc["inhibit_rules"], "receivers": receivers}, sort_keys=False)


def scrape_config(targets: list[str], rules: list[Path] = (), alertmanager: str | None = None) -> str:
    """Prometheus' config (with rules and Alertmanager), or victoria-metrics' -promscrape.config (without)."""
    doc = {"global": {"scrape_interval": f"{INTERVAL}s"}}
    if rules:
        doc["global"]["evaluation_interval"] = f"{INTERVAL}s"
        doc["rule_files"] = [str(r) for r in rules]
    if alertmanager:
        doc["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]}
    # honor_labels: namespace/pod stay as the exporter sends them (README "Deploying")
    doc["scrape_configs"] = [{"job_name": "dcgm-exporter", "honor_labels": True, "static_configs": [{"targets": targets}]}]
    return yaml.safe_dump(doc, sort_keys=False)


# ------------------------------------------------------------------------------------------------
# The engines
# ------------------------------------------------------------------------------------------------

class PrometheusEngine:
    label = "Prometheus 3.5"
    delay = 0          # seconds its evaluations lag the data
    lookback = 0       # seconds a vanished series is still seen (Prometheus honours staleness markers)

    def __init__(self, stack: ExitStack, work: Path, rendered: Path, targets: list[str], am: Server):
        (work / "prom").mkdir()
        self.server = stack.enter_context(Prometheus(
            TOOLS["prometheus"], work / "prom" / "data",
            scrape_config(targets, rule_files(rendered), f"127.0.0.1:{am.port}"),
            # README "Deploying": `for` state restored after a restart within 1h (the default), and for every
            # alert: Prometheus skips restoring alerts whose `for` is shorter than the grace period (default 10m)
            args=("--rules.alert.for-outage-tolerance=1h", "--rules.alert.for-grace-period=30s")))
        self.tsdb, self.evaluator = self.server, self.server

    def restart(self) -> None:
        self.server.restart()

    def servers(self) -> list[Server]:
        return [self.server]


class VictoriaMetricsEngine:
    label = "vmalert 1.145"
    delay = VM_EVAL_DELAY
    # vmalert's instant queries look back -datasource.queryStep (default 5m): a recording rule keeps
    # writing a vanished GPU's last reporting timestamp that long, so `unless` sees its loss 5 min late
    lookback = 300

    def __init__(self, stack: ExitStack, work: Path, rendered: Path, targets: list[str], am: Server):
        (work / "vm").mkdir()
        config = work / "vm" / "scrape.yml"
        config.write_text(scrape_config(targets))
        self.tsdb = stack.enter_context(VictoriaMetrics(
            TOOLS["victoria-metrics"], workdir=work / "vm",
            args=(f"-promscrape.config={config}", "-retentionPeriod=1d", "-loggerLevel=INFO")))
        self.evaluator = stack.enter_context(VMAlert(
            TOOLS["vmalert"], work / "vm", rule_files(rendered), self.tsdb.url, am.url,
            args=(f"-evaluationInterval={INTERVAL}s", "-loggerLevel=INFO")))

    def restart(self) -> None:
        self.evaluator.restart()

    def servers(self) -> list[Server]:
        return [self.tsdb, self.evaluator]


def engine_alerts(engine) -> list[dict]:
    """The evaluator's active alerts (pending and firing): [{labels, state, activeAt, ...}]."""
    return engine.evaluator.get_json("/api/v1/alerts")["data"]["alerts"]


def am_alerts(am: Server) -> list[dict]:
    with urllib.request.urlopen(am.url + "/api/v2/alerts", timeout=30) as r:
        return json.loads(r.read())


# ------------------------------------------------------------------------------------------------
# The trip
# ------------------------------------------------------------------------------------------------

@dataclass
class Step:
    number: int
    fault: str
    expect: str
    latency: float | None = None      # seconds from the fault to the notification (None: none expected)
    firing: float | None = None       # seconds from the fault to the engine's firing (activeAt + for)
    resolved: bool = False
    failed: list[str] = field(default_factory=list)   # the expectations it broke


@dataclass
class Trip:
    engine: str
    steps: list[Step] = field(default_factory=list)
    error: str | None = None
    duration: float = 0.0


def matches(alert: dict, **labels: str) -> bool:
    return all(alert["labels"].get(k) == v for k, v in labels.items())


class Script:
    """The eight steps against one engine. A broken expectation is recorded and the script goes on (so one
    run shows every step that fails); only a missing prerequisite (a server, the first alert) stops it."""

    def __init__(self, name: str, engine, am: Server, receiver: Receiver, nodes: dict[str, Node], trip: Trip,
                 timings: dict[str, tuple[int, int]]):
        self.name, self.engine, self.am, self.receiver, self.nodes, self.trip = name, engine, am, receiver, nodes, trip
        self.held = {mode: t[0] for mode, t in timings.items()}   # `for`
        self.kept = {mode: t[1] for mode, t in timings.items()}   # keep_firing_for
        self.failures: list[str] = []
        self.step = 0

    # -- observation ---------------------------------------------------------------------------

    def context(self, logs: bool = False) -> str:
        lines = ["  webhook got:"] + [f"    +{n.at - self.t0:6.1f}s {n.describe()}" for n in self.receiver.since(0)]
        try:
            lines += [f"  {self.name} alerts now:"] + [
                f"    {a['state']} {a['labels'].get('alertname')} {a['labels']} activeAt={a.get('activeAt')}"
                for a in engine_alerts(self.engine)]
        except OSError as exc:
            lines.append(f"  {self.name} alerts: unreadable ({exc})")
        if logs:
            for s in self.engine.servers() + [self.am]:
                lines.append(f"  {s.name} log ends:\n{s.tail(1500)}")
        return "\n".join(lines)

    def bodies(self) -> None:
        assert not self.receiver.errors, f"{self.name}: the webhook got a body it cannot read:\n" + "\n".join(self.receiver.errors)

    def check(self, ok: bool, message: str) -> bool:
        """A broken expectation: recorded with what the webhook and the engine saw; the script goes on."""
        self.bodies()
        if not ok:
            log(self.name, f"step {self.step} FAILED: {message}")
            self.failures.append(f"step {self.step}: {message}\n{self.context()}")
        return ok

    def require(self, ok: bool, message: str) -> None:
        """A prerequisite of the rest of the script: stops it, with the servers' logs."""
        self.bodies()
        if not ok:
            raise AssertionError("\n\n".join(self.failures + [f"step {self.step}: {message}\n{self.context(logs=True)}"]))

    def wait(self, what: str, probe, timeout: float, required: bool = False):
        """probe() until it returns something true; after `timeout` seconds a failure saying what was
        awaited (None returned, or the script stopped when `required`)."""
        end = time.monotonic() + timeout
        while True:
            self.bodies()
            self.interrupted()
            try:
                value = probe()
            except OSError:  # a server being restarted
                value = None
            if value:
                return value
            if time.monotonic() > end:
                (self.require if required else self.check)(False, f"{what}: not within {timeout:.0f} s")
                return None
            time.sleep(0.5)

    @staticmethod
    def interrupted() -> None:
        if ABORT.is_set():
            raise KeyboardInterrupt("the test session was interrupted")

    def hold(self, seconds: float) -> None:
        """Let `seconds` pass (a window in which something must NOT arrive), still failing on bad bodies."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.bodies()
            self.interrupted()
            time.sleep(0.5)

    def notified(self, since: float, status: str = "firing", **labels: str) -> list[tuple[Notification, dict]]:
        return [(n, a) for n in self.receiver.since(since) for a in n.alerts if a["status"] == status and matches(a, **labels)]

    def first(self, since: float, status: str = "firing", **labels: str):
        return next(iter(self.notified(since, status, **labels)), None)

    def engine_alert(self, state: str = "firing", **labels: str) -> dict | None:
        return next((a for a in engine_alerts(self.engine) if a["state"] == state and matches(a, **labels)), None)

    def query(self, expr: str) -> list[dict]:
        return self.engine.tsdb.query(expr)

    @property
    def quiet(self) -> float:
        """How long to watch for something that must not come: the engine's view lags the data by its
        delay; two evaluations, then Alertmanager's group_interval and a margin."""
        return self.engine.delay + 2 * INTERVAL + GROUP_INTERVAL + 10

    def fired_after(self, alert: dict | None, fault_wall: float, for_seconds: float) -> float | None:
        return None if alert is None else parse_time(alert["activeAt"]) + for_seconds - fault_wall

    def begin(self, number: int) -> int:
        self.step = number
        return len(self.failures)

    def record(self, step: Step, failures_before: int, start: float, note: Notification | None = None,
               firing: float | None = None) -> None:
        if note is not None:
            step.latency = round(note.at - start, 1)
        step.firing = None if firing is None else round(firing, 1)
        step.failed = [f.splitlines()[0] for f in self.failures[failures_before:]]
        self.trip.steps.append(step)
        log(self.name, f"step {step.number} ({step.fault}): " + (
            f"notified after {step.latency} s" if step.latency is not None else "nothing notified")
            + ("" if not step.failed else f"; {len(step.failed)} failed"))

    # -- the script ----------------------------------------------------------------------------

    def run(self) -> None:
        training, inference = self.nodes["training"], self.nodes["inference"]
        bad = training.gpu(BAD_GPU)
        host_gpu = {"Hostname": TRAINING, "gpu": str(BAD_GPU), "UUID": bad.uuid}
        self.t0 = time.monotonic()

        # 1. healthy load -> no notification
        before, start = self.begin(1), time.monotonic()
        self.wait("every GPU recorded with its workload", lambda: len(self.query("gpu:dcgm_workload:info")) == 17
                  and len(self.query('gpu:dcgm_workload:info{pod!=""}')) == 9, 180, required=True)
        self.wait(f"{self.name} evaluating the alert groups", lambda: any(
            g.get("name", "").startswith("rulesgen-health-alerts") for g in self.engine.evaluator.get_json("/api/v1/rules")["data"]["groups"]),
            60, required=True)
        self.hold(self.quiet + 10)
        self.check(not self.receiver.since(0), "healthy load: no notification expected")
        self.check(not [a for a in engine_alerts(self.engine) if a["state"] == "firing"], "healthy load: nothing may fire")
        self.record(Step(1, "healthy load", "no notification"), before, start)

        # 2. an uncorrectable ECC error -> exactly one critical notification naming GPU, node and job
        before, start, wall = self.begin(2), time.monotonic(), time.time()
        with training.lock:
            bad.dbe = 2
        note, alert = self.wait("the ECC notification", lambda: self.first(start, failure_mode="ecc_uncorrectable"),
                                self.held["ecc_uncorrectable"] + 120 + self.engine.delay, required=True)
        self.check(note.receiver == "gpu-pager" and alert["labels"].get("severity") == "critical",
                   "the DBE must page (severity critical, receiver gpu-pager)")
        self.check(matches(alert, **host_gpu), f"the page must name the GPU and node {host_gpu}: {alert['labels']}")
        text = json.dumps(alert["labels"]) + json.dumps(alert["annotations"])
        self.check("llm-training" in text and f"llm-pretrain-worker-{BAD_GPU}" in text,
                   f"the page must name the job (namespace/pod): {alert}")
        ecc = self.engine_alert(failure_mode="ecc_uncorrectable", **host_gpu)
        self.require(ecc is not None, "the engine must show the ECC alert firing")
        active = ecc["activeAt"]
        self.hold(GROUP_INTERVAL + 5)
        self.check(len(self.receiver.since(start)) == 1, "exactly one notification for the DBE")
        self.record(Step(2, "DBE on one GPU", "critical page"), before, start, note, self.fired_after(ecc, wall, self.held["ecc_uncorrectable"]))

        # 3. the job's pods deleted -> no RESOLVED, no second alert
        before, start = self.begin(3), time.monotonic()
        training.delete_pods()
        self.wait("the workload record without the job's pods",
                  lambda: not self.query(f'gpu:dcgm_workload:info{{Hostname="{TRAINING}",pod!=""}}'), 60)
        self.hold(self.quiet)
        self.check(not self.receiver.since(start), "deleting the job's pods must not resolve or re-send the DBE alert")
        ecc = self.engine_alert(failure_mode="ecc_uncorrectable", **host_gpu)
        self.check(ecc is not None and ecc["activeAt"] == active,
                   f"the ECC alert must stay the same alert (firing, activeAt {active}) after the pods left: {ecc}")
        self.record(Step(3, "the job's pods deleted", "no RESOLVED"), before, start)

        # 4. the evaluator restarted -> no second notification, the alert still firing, activeAt kept
        before, start = self.begin(4), time.monotonic()
        seen = len(self.receiver.since(0))
        ecc = self.engine_alert(failure_mode="ecc_uncorrectable", **host_gpu)
        active = ecc["activeAt"] if ecc else None
        log(self.name, f"restarting {self.engine.evaluator.name}")
        self.engine.restart()
        self.wait("the ECC alert firing again in the restarted engine",
                  lambda: self.engine_alert(failure_mode="ecc_uncorrectable", **host_gpu), 120 + self.engine.delay)
        self.hold(self.quiet)
        self.check(len(self.receiver.since(0)) == seen, f"restarting {self.engine.evaluator.name} must not notify: "
                   f"{[n.describe() for n in self.receiver.since(start)]}")
        ecc = self.engine_alert(failure_mode="ecc_uncorrectable", **host_gpu)
        self.check(ecc is not None and active is not None and abs(parse_time(ecc["activeAt"]) - parse_time(active)) <= 1,
                   f"the restored alert must keep its activeAt {active}: {ecc}")   # restored in whole seconds
        self.record(Step(4, "Prometheus (vmalert) restarted", "no second notification"), before, start)

        # 5. the same GPU lost (its series disappear, the exporter answers) -> gpu_lost, its other alerts quiet
        before, start5, wall = self.begin(5), time.monotonic(), time.time()
        with training.lock:
            bad.lost = True
        got = self.wait("the gpu_lost notification", lambda: self.first(start5, failure_mode="gpu_lost", Hostname=TRAINING),
                        self.held["gpu_lost"] + 180 + self.engine.delay + self.engine.lookback)
        if got:
            note, alert = got
            self.check(matches(alert, **host_gpu) and note.receiver == "gpu-pager", f"gpu_lost must page for {host_gpu}: {alert}")
        lost = self.engine_alert(failure_mode="gpu_lost", Hostname=TRAINING)
        self.check_inhibited(lambda a: matches(a, **host_gpu) and a["labels"].get("failure_mode") != "gpu_lost", "gpu_lost", start5)
        self.record(Step(5, "that GPU lost", "gpu_lost page; its ECC alert inhibited"), before, start5,
                    got and got[0], self.fired_after(lost, wall, self.held["gpu_lost"]))

        # 6. every GPU of the single-GPU node stops reporting, its exporter answers -> gpu_lost
        # 7. (at the same time) the training node's exporter stopped -> exporter_down, its other alerts quiet
        before, start6, wall6 = self.begin(6), time.monotonic(), time.time()
        with inference.lock:
            inference.gpu(0).lost = True
        start7, wall7 = time.monotonic(), time.time()
        training.stop()
        got = self.wait("gpu_lost of the inference node", lambda: self.first(start6, failure_mode="gpu_lost", Hostname=INFERENCE),
                        self.held["gpu_lost"] + 180 + self.engine.delay + self.engine.lookback)
        if got:
            self.check(got[1]["labels"].get("gpu") == "0" and got[0].receiver == "gpu-pager", f"gpu_lost must page for GPU 0: {got[1]}")
        lost = self.engine_alert(failure_mode="gpu_lost", Hostname=INFERENCE)
        self.record(Step(6, "every GPU of the 1-GPU node silent", "gpu_lost page"), before, start6,
                    got and got[0], self.fired_after(lost, wall6, self.held["gpu_lost"]))
        before = self.begin(7)
        got = self.wait("exporter_down of the training node", lambda: self.first(start7, failure_mode="exporter_down", Hostname=TRAINING),
                        self.held["exporter_down"] + 180 + self.engine.delay)
        if got:
            self.check(got[0].receiver == "gpu-tickets" and got[1]["labels"].get("instance") in (None, training.target),
                       f"exporter_down must go to the ticket queue, naming the node (and no other target): {got[1]}")
        down = self.engine_alert(failure_mode="exporter_down", Hostname=TRAINING)
        self.check_inhibited(lambda a: a["labels"].get("Hostname") == TRAINING and a["labels"].get("failure_mode") != "exporter_down",
                             "exporter_down", start7)
        self.record(Step(7, "the training node's exporter stopped", "exporter_down ticket; node's alerts inhibited"),
                    before, start7, got and got[0], self.fired_after(down, wall7, self.held["exporter_down"]))

        # 8. recovery -> RESOLVED for what recovered, nothing else
        before, start8 = self.begin(8), time.monotonic()
        with training.lock:
            bad.lost, bad.dbe = False, 0        # reset (or replaced): the volatile DBE count starts at 0
        training.start()
        with inference.lock:
            inference.gpu(0).lost = False
        # one deadline for all: keep_firing_for holds each alert that long after recovery
        # the lost GPU's alerts hold while exporter_down does, its ECC alert while gpu_lost does: each resolves
        # keep_firing_for after what silenced it, so that its RESOLVED is not muted (Alertmanager drops it)
        expected = (("exporter_down", TRAINING), ("gpu_lost", TRAINING), ("gpu_lost", INFERENCE), ("ecc_uncorrectable", TRAINING))
        deadline = sum(self.kept[mode] for mode in ("exporter_down", "gpu_lost", "ecc_uncorrectable")) + 120 + self.engine.delay
        self.wait("RESOLVED for exporter_down, both gpu_lost and the ECC alert", lambda: all(
            self.first(start8, "resolved", failure_mode=m, Hostname=h) for m, h in expected), deadline)
        missing = [f"{m} on {h}" for m, h in expected if not self.first(start8, "resolved", failure_mode=m, Hostname=h)]
        self.check(not missing, f"no RESOLVED for {missing}")
        notes = [got[0] for m, h in expected if (got := self.first(start8, "resolved", failure_mode=m, Hostname=h))]
        self.hold(self.quiet)
        late = [n.describe() for n in self.receiver.since(start8) for a in n.alerts if a["status"] != "resolved"]
        self.check(not late, f"after recovery only RESOLVED may come: {late}")
        allowed = {("exporter_down", TRAINING), ("gpu_lost", TRAINING), ("gpu_lost", INFERENCE), ("ecc_uncorrectable", TRAINING)}
        other = [n.describe() for n in self.receiver.since(start8) for a in n.alerts
                 if (a["labels"].get("failure_mode"), a["labels"].get("Hostname")) not in allowed]
        self.check(not other, f"RESOLVED only for what recovered: {other}")
        firing = [a["labels"] for a in engine_alerts(self.engine) if a["state"] == "firing"]
        self.check(not firing, f"after recovery nothing may still fire: {firing}")
        # every page and ticket sent on the trip got its RESOLVED (else it stays open in the pager)
        key = lambda a: tuple(sorted(a["labels"].items()))  # noqa: E731
        sent = {key(a): a for n in self.receiver.since(0) for a in n.alerts if a["status"] == "firing"}
        closed = {key(a) for n in self.receiver.since(0) for a in n.alerts if a["status"] == "resolved"}
        orphans = [f"{a['labels'].get('alertname')}{{Hostname={a['labels'].get('Hostname')},gpu={a['labels'].get('gpu')}}}"
                   for k, a in sent.items() if k not in closed]
        self.check(not orphans, f"notified, never RESOLVED (left open in the pager): {orphans}")
        step = Step(8, "recovery", "RESOLVED exporter_down, both gpu_lost, the ECC page")
        step.resolved = True
        self.record(step, before, start8, max(notes, key=lambda n: n.at) if len(notes) == len(expected) else None)
        if self.failures:
            raise AssertionError("\n\n".join(self.failures))

    def check_inhibited(self, target, source: str, since: float) -> None:
        """Nothing matching `target` notified since `since`, and whatever Alertmanager holds of it now is
        suppressed by an inhibition (while `source` fires)."""
        sent = [n.describe() for n in self.receiver.since(since) for a in n.alerts if target(a)]
        self.check(not sent, f"inhibited by {source}, yet notified: {sent}")
        held = [a for a in am_alerts(self.am) if a["status"]["state"] == "active" and target(a)]
        self.check(not held, f"Alertmanager holds them active, not suppressed by {source}: {[a['labels'] for a in held]}")


def parse_time(text: str) -> float:
    """RFC 3339 (Prometheus: nanoseconds, vmalert: Go's time format) to epoch seconds."""
    from datetime import datetime
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", text)
    base = datetime.fromisoformat(m[1] + ("+00:00" if m[3] == "Z" else m[3])).timestamp()
    return base + (float("0." + m[2]) if m[2] else 0.0)


def run_trip(name: str, work: Path) -> Trip:
    trip = Trip(name)
    began = time.monotonic()
    with ExitStack() as stack:
        try:
            rendered = render(work)
            receiver = stack.enter_context(Receiver())
            nodes = fleet()
            for node in nodes.values():
                node.start()
                stack.callback(node.stop)
            am_config = alertmanager_config(rendered, receiver.url)
            (work / "am").mkdir()
            check = subprocess.run([TOOLS["amtool"], "check-config", "/dev/stdin"], input=am_config,
                                   capture_output=True, text=True)
            assert check.returncode == 0, f"amtool check-config rejects the merged config:\n{check.stdout}{check.stderr}\n{am_config}"
            am = stack.enter_context(Alertmanager(TOOLS["alertmanager"], work / "am", am_config))
            targets = [n.target for n in nodes.values()]
            kind = PrometheusEngine if name == "prometheus" else VictoriaMetricsEngine
            engine = kind(stack, work, rendered, targets, am)
            log(name, f"up: {', '.join(f'{s.name} {s.url}' for s in engine.servers())}, alertmanager {am.url}, "
                      f"webhook {receiver.url}, exporters {targets}")
            Script(name, engine, am, receiver, nodes, trip, alert_timings(rendered)).run()
        except BaseException as exc:  # noqa: BLE001 - reported by the test, after the servers stopped
            trip.error = "".join(traceback.format_exception_only(exc)) if isinstance(exc, AssertionError) \
                else traceback.format_exc()
            log(name, "FAILED: " + trip.error.strip().splitlines()[0][:300])
        finally:
            trip.duration = time.monotonic() - began
    return trip


# ------------------------------------------------------------------------------------------------
# The report
# ------------------------------------------------------------------------------------------------

LABELS = {"prometheus": PrometheusEngine.label, "victoriametrics": VictoriaMetricsEngine.label}
RENDERED_WAIT, RENDERED_INTERVAL = 30, 300   # catalog/alertmanager.yaml: group_wait 30s, group_interval 5m


def write_results(trips: dict[str, Trip]) -> None:
    """benchmarks/results/live-latency.md: per step and engine, seconds from the fault to the webhook
    (test timings), when the engine fired, and the same recounted for the rendered Alertmanager timings."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    versions = (ROOT / ".tools" / "versions").read_text().splitlines() if (ROOT / ".tools" / "versions").exists() else []
    used = [v for v in versions if v.split()[0] in ("prometheus", "victoria-metrics", "vmalert", "alertmanager")]
    by_step: dict[int, dict[str, Step]] = {}
    for name, trip in trips.items():
        for s in trip.steps:
            by_step.setdefault(s.number, {})[name] = s
    lines = [
        "# Live latency: fault to notification",
        "",
        "Generated by `make test-live` (tests/live/test_live.py); `make bench` prints it. Do not edit.",
        "",
        f"Commit {git('rev-parse', '--short', 'HEAD')}{' (with uncommitted changes)' if git('status', '--porcelain', '--untracked-files=no') else ''}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Engines: " + "; ".join(used) + ".",
        "",
        f"Set-up: a synthetic dcgm-exporter scraped every {INTERVAL} s, rules rendered with `evaluation_interval: "
        f"{INTERVAL}s` and `keep_firing_for: {HOLD}s`, the catalog's `for` (ecc_uncorrectable 1m, gpu_lost 1m), "
        f"exporter_down's `for` {DOWN_FOR} s and gpu_lost's stale_seconds {STALE} (defaults 5m, 120), vmalert's and "
        f"victoria-metrics' default 30 s delay; Alertmanager with the test's group_wait {GROUP_WAIT} s and "
        f"group_interval {GROUP_INTERVAL} s. vmalert also sees a vanished series for up to its -datasource.queryStep "
        "(5 min): its gpu_lost comes later than Prometheus'.",
        "",
        "Seconds from the fault to the webhook; in brackets, from the fault to the engine's firing (activeAt + for).",
        "",
        "| step | fault | expected | " + " | ".join(LABELS[n] for n in trips) + " |",
        "|---|---|---|" + "---|" * len(trips),
    ]
    for number in sorted(by_step):
        cells = by_step[number]
        any_step = next(iter(cells.values()))
        row = f"| {number} | {any_step.fault} | {any_step.expect} |"
        for name in trips:
            s = cells.get(name)
            if s is None:
                row += " not reached |"
            else:
                cell = "nothing" if s.latency is None else f"{s.latency:.0f}" + (f" ({s.firing:.0f})" if s.firing is not None else "")
                row += f" {cell}{', FAILED' if s.failed else ''} |"
        lines.append(row)
    failed = [(name, s) for name, trip in trips.items() for s in trip.steps if s.failed]
    if failed:
        lines += ["", "Broken expectations:", ""]
        lines += [f"- {name}, {f}" for name, s in failed for f in s.failed]
    for name, trip in trips.items():
        if trip.error and not any(s.failed for s in trip.steps):
            lines += ["", f"{name} stopped after step {trip.steps[-1].number if trip.steps else 0}: "
                          f"{trip.error.strip().splitlines()[0][:300]}"]
    lines += [
        "",
        "Recounted for the rendered Alertmanager timings (catalog/alertmanager.yaml: group_wait 30 s, group_interval "
        "5 m): a firing alert that opens its group (cluster, Hostname, failure_mode) is sent group_wait after the "
        "engine hands it over; one joining a group that has notified before, and every RESOLVED, waits for the "
        "group's next flush, up to group_interval.",
        "",
        "| step | " + " | ".join(f"{LABELS[n]}: first of its group, joining a group (worst)" for n in trips) + " |",
        "|---|" + "---|" * len(trips),
    ]
    for number in sorted(by_step):
        cells = by_step[number]
        row = f"| {number} |"
        for name in trips:
            s = cells.get(name)
            if s is None or s.latency is None:
                row += " |"
                continue
            if s.resolved:
                row += f" up to {s.latency - GROUP_INTERVAL + RENDERED_INTERVAL:.0f} (RESOLVED) |"
            else:
                base = s.latency - GROUP_WAIT
                row += f" {base + RENDERED_WAIT:.0f}, up to {base + RENDERED_INTERVAL:.0f} |"
        lines.append(row)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------------
# The tests
# ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trips(tmp_path_factory) -> dict[str, Trip]:
    """Both engines' trips, run at the same time (each with its own exporters, Alertmanager, webhook)."""
    with ThreadPoolExecutor(len(ENGINES)) as pool:
        futures = {name: pool.submit(run_trip, name, tmp_path_factory.mktemp(name)) for name in ENGINES}
        try:
            result = {name: f.result() for name, f in futures.items()}
        except BaseException:  # Ctrl-C: the scripts stop at their next poll and stop their servers
            ABORT.set()
            raise
    write_results(result)
    return result


@pytest.mark.parametrize("engine", ENGINES)
def test_an_alert_trip_from_exporter_to_receiver(trips, engine):
    trip = trips[engine]
    assert trip.error is None, f"{engine} ({trip.duration:.0f} s):\n{trip.error}"


def test_a_server_on_a_port_in_use_names_its_binary_and_shows_its_log(tmp_path):
    """Every server class fails clearly on a taken port, and leaves nothing running."""
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        makers = {
            "prometheus": lambda d: Prometheus(TOOLS["prometheus"], d / "data"),
            "alertmanager": lambda d: Alertmanager(TOOLS["alertmanager"], d, "route: {receiver: x}\nreceivers: [{name: x}]\n"),
            "victoria-metrics": lambda d: VictoriaMetrics(TOOLS["victoria-metrics"], args=(), workdir=d),
            "vmalert": lambda d: VMAlert(TOOLS["vmalert"], d, [], "http://127.0.0.1:1", "http://127.0.0.1:1"),
        }
        for name, make in makers.items():
            d = tmp_path / name
            d.mkdir()
            server = make(d)
            server.port, server.url = port, f"http://127.0.0.1:{port}"
            server.cmd = [re.sub(r"(?i)(listen[a-z.-]*=127\.0\.0\.1):\d+$", rf"\g<1>:{port}", c) for c in server.cmd]
            with pytest.raises(RuntimeError) as info:
                with server:
                    pass
            message = str(info.value)
            assert message.startswith(f"{name} (") and f"port {port} is already in use" in message, message
            assert "address already in use" in message, message  # the binary's own words, from its log
            assert server.proc.poll() is not None


def test_a_server_that_exits_at_once_shows_its_log(tmp_path):
    server = Alertmanager(TOOLS["alertmanager"], tmp_path, "route: {receiver: nowhere}\nreceivers: []\n")
    with pytest.raises(RuntimeError) as info:
        with server:
            pass
    assert str(info.value).startswith("alertmanager (") and "exited" in str(info.value)
    assert "nowhere" in str(info.value), str(info.value)   # Alertmanager's complaint about the undefined receiver
