"""The live trip itself: one script per engine flips faults on the synthetic exporter and checks what the
webhook got (test_live.py's module doc lists the steps), timing each step."""
from __future__ import annotations

import json
import re
import subprocess
import time
import traceback
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from live_settings import ABORT, BAD_GPU, GROUP_INTERVAL, INFERENCE, INTERVAL, TOOLS, TRAINING, log
from live_stack import (PrometheusEngine, VictoriaMetricsEngine, alert_timings, alertmanager_config, am_alerts, class_targets,
                        engine_alerts, render, route_waits)
from servers import Alertmanager, Server
from synthetic_exporter import Node, fleet
from webhook import Notification, Receiver


@dataclass
class Step:
    number: int
    fault: str
    expect: str
    latency: float | None = None      # seconds from the fault to the notification (None: none expected)
    firing: float | None = None       # seconds from the fault to the engine's firing (activeAt + for)
    resolved: bool = False
    wait: int | None = None           # the group_wait of the route the notification took (rendered)
    target: int | None = None         # the failure mode's class target, fault to webhook (benchmarks/latency_targets.yaml)
    failed: list[str] = field(default_factory=list)   # the expectations it broke


@dataclass
class Trip:
    engine: str
    steps: list[Step] = field(default_factory=list)
    error: str | None = None
    duration: float = 0.0
    vm_delay: int | None = None       # vmalert: the rendered VMRule groups' eval_delay (seconds)


def matches(alert: dict, **labels: str) -> bool:
    return all(alert["labels"].get(k) == v for k, v in labels.items())


class Script:
    """The eight steps against one engine. A broken expectation is recorded and the script goes on (so one
    run shows every step that fails); only a missing prerequisite (a server, the first alert) stops it."""

    def __init__(self, name: str, engine, am: Server, receiver: Receiver, nodes: dict[str, Node], trip: Trip,
                 timings: dict[str, tuple[int, int]], waits: dict[str, int]):
        self.name, self.engine, self.am, self.receiver, self.nodes, self.trip = name, engine, am, receiver, nodes, trip
        self.waits = waits                # receiver -> the rendered group_wait of its route
        self.targets = class_targets()    # failure mode -> (class, seconds from the fault to the receiver)
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
        delay; two evaluations, then Alertmanager's longest group_wait (a new group) or its group_interval (a
        group that has notified), and a margin."""
        return self.engine.delay + 2 * INTERVAL + max(GROUP_INTERVAL, *self.waits.values()) + 10

    def fired_after(self, alert: dict | None, fault_wall: float, for_seconds: float) -> float | None:
        return None if alert is None else parse_time(alert["activeAt"]) + for_seconds - fault_wall

    def begin(self, number: int) -> int:
        self.step = number
        return len(self.failures)

    def record(self, step: Step, failures_before: int, start: float, note: Notification | None = None,
               firing: float | None = None, mode: str | None = None) -> None:
        """mode: the failure mode notified; its latency is held to its class target."""
        if note is not None:
            step.latency = round(note.at - start, 1)
            step.wait = self.waits.get(note.receiver)
        if mode is not None and step.latency is not None:
            klass, step.target = self.targets[mode]
            self.check(step.latency <= step.target, f"{mode} reached the webhook {step.latency:.0f} s after the fault: "
                       f"over the {klass} class target ({step.target} s, benchmarks/latency_targets.yaml)")
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
        self.record(Step(2, "DBE on one GPU", "critical page"), before, start, note,
                    self.fired_after(ecc, wall, self.held["ecc_uncorrectable"]), "ecc_uncorrectable")

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
                    got and got[0], self.fired_after(lost, wall, self.held["gpu_lost"]), "gpu_lost")

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
                    got and got[0], self.fired_after(lost, wall6, self.held["gpu_lost"]), "gpu_lost")
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
                    before, start7, got and got[0], self.fired_after(down, wall7, self.held["exporter_down"]), "exporter_down")

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
            if kind is VictoriaMetricsEngine:
                trip.vm_delay = engine.delay
            log(name, f"up: {', '.join(f'{s.name} {s.url}' for s in engine.servers())}, alertmanager {am.url}, "
                      f"webhook {receiver.url}, exporters {targets}")
            Script(name, engine, am, receiver, nodes, trip, alert_timings(rendered), route_waits(rendered)).run()
        except BaseException as exc:  # noqa: BLE001 - reported by the test, after the servers stopped
            trip.error = "".join(traceback.format_exception_only(exc)) if isinstance(exc, AssertionError) \
                else traceback.format_exc()
            log(name, "FAILED: " + trip.error.strip().splitlines()[0][:300])
        finally:
            trip.duration = time.monotonic() - began
    return trip
