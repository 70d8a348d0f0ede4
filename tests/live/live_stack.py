"""The live trip's stack: the render and its configs, and the two engines (Prometheus 3.5; victoria-metrics
with vmalert) with what they and Alertmanager say is firing."""
from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import yaml

from live_settings import AM_TEST_TIMINGS, DOWN_FOR, HOLD, INTERVAL, ROOT, STALE, TARGETS, TOOLS
from servers import Prometheus, Server, VictoriaMetrics, VMAlert


def render(work: Path) -> Path:
    """`rulesgen render` of a rulesgen.yaml with the test's intervals into work/rendered."""
    config = work / "rulesgen.yaml"
    config.write_text(f"evaluation_interval: {INTERVAL}s\nscrape_interval: {INTERVAL}s\nkeep_firing_for: {HOLD}s\n"
                      f"failure_modes:\n  exporter_down:\n    for: {DOWN_FOR}s\n"
                      f"  gpu_lost:\n    thresholds:\n      stale_seconds: {STALE}\n"
                      "outputs:\n  vmrule:\n    enabled: true\n")   # vmalert evaluates the VMRule groups
    out = work / "rendered"
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "rulesgen"), "render", "--config", str(config), "--out", str(out)],
                          capture_output=True, text=True, cwd=work)
    assert proc.returncode == 0, f"rulesgen render failed:\n{proc.stderr}"
    return out


def rule_files(rendered: Path) -> list[Path]:
    return sorted((rendered / "alerts" / "prometheus").glob("*.yaml"))


def vmrule_files(rendered: Path, into: Path) -> list[Path]:
    """The rendered VMRule objects' groups (deploy/victoriametrics-operator/), written out as vmalert rule files:
    vmalert evaluates what the operator would hand it, with the groups' eval_delay and params."""
    into.mkdir()
    out = []
    for f in sorted((rendered / "deploy" / "victoriametrics-operator").glob("rulesgen-*.yaml")):
        doc = yaml.safe_load(f.read_text())
        assert doc["kind"] == "VMRule", f
        out.append(into / f.name)
        out[-1].write_text(yaml.safe_dump(doc["spec"], sort_keys=False))
    assert out, "no VMRule rendered"
    return out


def vm_eval_delay(files: list[Path]) -> int:
    """Seconds vmalert evaluates in the past: the groups' eval_delay (all alike), as rendered."""
    delays = {seconds(g.get("eval_delay")) for f in files for g in yaml.safe_load(f.read_text())["groups"]}
    assert len(delays) == 1 and 0 not in delays, f"the VMRule groups' eval_delay: {delays}"
    return delays.pop()


def class_targets() -> dict[str, tuple[str, int]]:
    """{failure_mode: (class name, target seconds)} from benchmarks/latency_targets.yaml."""
    out = {}
    for c in yaml.safe_load(TARGETS.read_text())["classes"]:
        for mode in c.get("failure_modes", ()):
            out[mode] = (c["name"], seconds(c["target"]))
    return out


def route_waits(rendered: Path) -> dict[str, int]:
    """{receiver: group_wait seconds} of the rendered rulesgen route (a severity's own, else routes[0]'s)."""
    top = yaml.safe_load((rendered / "alertmanager" / "rulesgen.yaml").read_text())["route"]["routes"][0]
    return {r["receiver"]: seconds(r.get("group_wait", top["group_wait"])) for r in top["routes"]}


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

    def strip_timings(route: dict) -> None:  # the test's group_interval everywhere (the rendered routes set their own)
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
        # victoria-metrics and vmalert run with their defaults (-search.latencyOffset and -rule.evalDelay 30 s): the
        # VMRule groups' eval_delay and latency_offset param (outputs.vmrule.eval_delay) set the delay
        files = vmrule_files(rendered, work / "vm" / "rules")
        self.delay = vm_eval_delay(files)
        self.evaluator = stack.enter_context(VMAlert(
            TOOLS["vmalert"], work / "vm", files, self.tsdb.url, am.url,
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
