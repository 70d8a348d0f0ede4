"""Replay scenarios through VictoriaMetrics single-node and vmalert, and read back which alerts fired.

The promtool replay (replay.py) proves the rules on Prometheus' engine; this module proves the same
rule files on MetricsQL and vmalert:

1. expand each scenario's promtool notation into samples (`expand`);
2. import them into one victoria-metrics process (`VictoriaMetrics`), each scenario in its own time
   window (whole days, in the past, with days of empty time between scenarios, so no lookback window
   of the rules reaches another scenario's data and no scenario label is needed);
3. run `vmalert -replay.*` once per dependency level of the rules (`rule_levels`): level 0 reads only
   raw series, level n reads rules of levels < n (the fleet alert reads ALERTS, so it runs after every
   other alert). Between levels the written samples are made searchable with /internal/force_flush, so
   no `-replay.rulesDelay` sleeps are needed and every rule sees its inputs at the same timestamp;
4. read ALERTS{alertstate="firing"} back with /api/v1/export (raw samples, exact timestamps) and
   return replay.Fired lists (first firing in seconds from the scenario start), ready for
   replay.judge().

docs/victoriametrics.md lists the flags that matter and every difference found between the engines.

Staleness: promtool's `stale` writes a Prometheus staleness marker. The JSON import API cannot carry
one, so the markers are sent through the Prometheus remote-write API (protobuf + snappy, encoded here
with the standard library) and everything else through /api/v1/import.
"""
from __future__ import annotations

import atexit
import json
import math
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import processes
from .replay import Fired, Outcome, judge
from . import scenarios
from .scenarios import STALE, Scenario
from .tools import find_tool

DAY = 86400
STALE_NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]  # Prometheus' staleness marker

_NAME = re.compile(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*(\{.*\})?\s*$", re.S)
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')
_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_RANGE = re.compile(r"\[\s*((?:[0-9]+(?:ms|[smhdwy]))+)\s*(?::[^\]]*)?\]")
_OFFSET = re.compile(r"\boffset\s+((?:[0-9]+(?:ms|[smhdwy]))+)")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": DAY, "w": 7 * DAY, "y": 365 * DAY}


class VMReplayError(RuntimeError):
    pass


def expand(values: str) -> list:
    """promtool notation -> one entry per slot (float, None for missing, STALE); see scenarios.expand."""
    try:
        return scenarios.expand(values)
    except ValueError as exc:
        raise VMReplayError(str(exc)) from None


def _seconds(duration: str) -> float:
    return sum(int(n) * _UNIT[u] for n, u in re.findall(r"([0-9]+)(ms|[smhdwy])", duration))


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), value)


def parse_series(series: str) -> dict[str, str]:
    """'name{a="b", ...}' -> {'__name__': 'name', 'a': 'b', ...}"""
    m = _NAME.match(series)
    if not m:
        raise VMReplayError(f"not a series in promtool notation: {series!r}")
    labels = {k: _unescape(v) for k, v in _PAIR.findall(m.group(2) or "")}
    if m.group(1):
        labels["__name__"] = m.group(1)
    if "__name__" not in labels:
        raise VMReplayError(f"series without a metric name: {series!r}")
    return labels


def scenario_samples(scenario: Scenario, base: int):
    """Yield (labels, [(ms, value | STALE)]) for every input series, shifted to start at `base` (s)."""
    step_ms = scenario.interval * 1000
    base_ms = base * 1000
    for series, values in scenario.series:
        labels = parse_series(series)
        points = [(base_ms + i * step_ms, v) for i, v in enumerate(expand(values)) if v is not None]
        yield labels, points


# --------------------------------------------------------------------------------------------------
# Prometheus remote write (for staleness markers): protobuf by hand + literal-only snappy
# --------------------------------------------------------------------------------------------------

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def remote_write_body(series: list[tuple[dict[str, str], list[tuple[int, float]]]]) -> bytes:
    """prometheus.WriteRequest{timeseries: [{labels, samples}]}, serialized."""
    out = bytearray()
    for labels, samples in series:
        ts = bytearray()
        for k in sorted(labels):
            ts += _field(1, _field(1, k.encode()) + _field(2, labels[k].encode()))
        for ms, value in samples:
            ts += _field(2, b"\x09" + struct.pack("<d", value) + b"\x10" + _varint(ms & 0xFFFFFFFFFFFFFFFF))
        out += _field(1, bytes(ts))
    return bytes(out)


def snappy_literal(data: bytes) -> bytes:
    """Snappy block format made only of literals: valid for any decoder, no compression needed."""
    out = bytearray(_varint(len(data)))
    for i in range(0, len(data), 65536):
        chunk = data[i:i + 65536]
        n = len(chunk) - 1
        if n < 60:
            out.append(n << 2)
        elif n < 256:
            out += bytes([60 << 2, n])
        else:
            out += bytes([61 << 2]) + struct.pack("<H", n)
        out += chunk
    return bytes(out)


# --------------------------------------------------------------------------------------------------
# victoria-metrics single-node
# --------------------------------------------------------------------------------------------------

class VictoriaMetrics:
    """victoria-metrics on 127.0.0.1, a free port and a temporary storage dir; a context manager that
    always stops the process and removes the dir."""

    def __init__(self, binary: str | None = None, extra_flags: tuple[str, ...] = ()):
        self.binary = binary or find_tool("victoria-metrics")
        self.extra_flags = extra_flags
        self.proc: subprocess.Popen | None = None
        self.dir: str | None = None
        self.url = ""

    def __enter__(self) -> "VictoriaMetrics":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout: float = 30) -> None:
        self.dir = tempfile.mkdtemp(prefix="rulesgen-vm-")
        for attempt in range(3):
            port = processes.free_port()
            self.url = f"http://127.0.0.1:{port}"
            self._log = open(os.path.join(self.dir, "victoria-metrics.log"), "wb")
            self.proc = subprocess.Popen(
                [self.binary, f"-storageDataPath={self.dir}/data", f"-httpListenAddr=127.0.0.1:{port}",
                 "-retentionPeriod=100y",       # scenario windows lie days to weeks in the past
                 "-search.disableCache",         # rules write into the past: never serve cached answers
                 "-search.latencyOffset=0s",
                 "-search.maxPointsPerTimeseries=100000",
                 "-maxInsertRequestSize=1GB",      # vmalert sends what is left in its queue in one request
                 "-loggerLevel=ERROR", *self.extra_flags],
                stdout=self._log, stderr=subprocess.STDOUT)
            atexit.register(self._kill)  # even if the caller never reaches stop()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    if self._get("/health", timeout=1).strip() == b"OK":
                        return
                except OSError:
                    pass
                time.sleep(0.05)
            self._kill()
        raise VMReplayError(f"victoria-metrics did not start; log:\n{self.log()}")

    def log(self) -> str:
        try:
            return Path(self.dir, "victoria-metrics.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def errors(self) -> list[str]:
        """Error lines victoria-metrics logged so far (it answers 204 to an import even when it skipped
        lines it could not parse, and only logs them)."""
        try:
            text = Path(self.dir, "victoria-metrics.log").read_text(errors="replace")
        except (OSError, TypeError):
            return []
        return [line for line in text.splitlines() if "\terror\t" in line or "\tfatal\t" in line or "\tpanic\t" in line]

    def _kill(self) -> None:
        if self.proc is not None:
            processes.stop(self.proc, timeout=15)
        self.proc = None
        atexit.unregister(self._kill)
        if getattr(self, "_log", None):
            self._log.close()

    def stop(self) -> None:
        self._kill()
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def _get(self, path: str, params: dict | None = None, timeout: float = 120) -> bytes:
        url = self.url + path + ("?" + urllib.parse.urlencode(params, doseq=True) if params else "")
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read()

    def _post(self, path: str, body: bytes, headers: dict | None = None, timeout: float = 300) -> None:
        req = urllib.request.Request(self.url + path, data=body, headers=headers or {}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                r.read()
        except urllib.error.HTTPError as exc:
            raise VMReplayError(f"POST {path}: {exc.code} {exc.read()[:500]!r}") from None

    def import_samples(self, series) -> int:
        """Import (labels, [(ms, value | STALE)]) pairs: values through /api/v1/import (JSON lines),
        staleness markers through remote write. Returns the number of samples sent."""
        lines, stale, n = [], [], 0
        for labels, points in series:
            values = [(ms, v) for ms, v in points if v is not STALE]
            markers = [(ms, STALE_NAN) for ms, v in points if v is STALE]
            if values:
                if any(math.isnan(v) or math.isinf(v) for _, v in values):
                    raise VMReplayError(f"NaN/Inf sample in {labels}: not expressible in JSON import")
                lines.append(json.dumps({"metric": labels, "values": [v for _, v in values],
                                         "timestamps": [ms for ms, _ in values]}, separators=(",", ":")))
            if markers:
                stale.append((labels, markers))
            n += len(values) + len(markers)
        for i in range(0, len(lines), 2000):
            self._post("/api/v1/import", "\n".join(lines[i:i + 2000]).encode())
        if stale:
            self._post("/api/v1/write", snappy_literal(remote_write_body(stale)),
                       {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
                        "X-Prometheus-Remote-Write-Version": "0.1.0"})
        return n

    def flush(self) -> None:
        """Make everything ingested so far searchable."""
        self._get("/internal/force_flush")

    def export(self, match: str, start: int, end: int) -> list[tuple[dict[str, str], list[int], list]]:
        """Raw samples of the series matching `match` in [start, end] (seconds)."""
        body = self._get("/api/v1/export", {"match[]": match, "start": str(start), "end": str(end)})
        out = []
        for line in body.splitlines():
            if line.strip():
                d = json.loads(line)
                out.append((d["metric"], d["timestamps"], d["values"]))
        return out

    def query(self, expr: str, at: int) -> list[dict]:
        body = json.loads(self._get("/api/v1/query", {"query": expr, "time": str(at)}))
        return body["data"]["result"]


# --------------------------------------------------------------------------------------------------
# rules -> dependency levels -> vmalert replay runs
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RuleRef:
    file: str
    group: str
    rule: dict

    @property
    def name(self) -> str:
        return self.rule.get("record") or self.rule.get("alert")


def rule_levels(rule_paths: list[Path]) -> list[list[RuleRef]]:
    """Group the rules so that every rule reads only rules of earlier levels.

    A rule depends on each recording rule whose name occurs in its expression, and on every alerting
    rule when it reads ALERTS / ALERTS_FOR_STATE."""
    refs: list[RuleRef] = []
    for path in rule_paths:
        doc = yaml.safe_load(Path(path).read_text()) or {}
        for group in doc.get("groups", []):
            for rule in group.get("rules", []):
                refs.append(RuleRef(str(path), group["name"], rule))
    recorded = {r.rule["record"] for r in refs if "record" in r.rule}
    alerts = [r for r in refs if "alert" in r.rule]
    deps: dict[int, set[int]] = {}
    index_of_record = {r.rule["record"]: i for i, r in enumerate(refs) if "record" in r.rule}
    for i, r in enumerate(refs):
        names = set(_IDENT.findall(r.rule["expr"]))
        d = {index_of_record[n] for n in names & recorded}
        if names & {"ALERTS", "ALERTS_FOR_STATE"}:
            d |= {refs.index(a) for a in alerts}
        d.discard(i)
        deps[i] = d
    level: dict[int, int] = {}

    def visit(i: int, stack: tuple[int, ...]) -> int:
        if i in level:
            return level[i]
        if i in stack:
            raise VMReplayError("rules depend on each other in a cycle: " + " -> ".join(refs[j].name for j in stack + (i,)))
        level[i] = 1 + max((visit(j, stack + (i,)) for j in deps[i]), default=-1)
        return level[i]

    for i in range(len(refs)):
        visit(i, ())
    out: list[list[RuleRef]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for i, r in enumerate(refs):
        out[level[i]].append(r)
    return out


def level_rule_file(rules: list[RuleRef], interval: int) -> str:
    """One rule file for a level: the original groups (names kept), restricted to the level's rules,
    with the scenario's evaluation interval."""
    groups: dict[str, list[dict]] = {}
    for r in rules:
        groups.setdefault(r.group, []).append(r.rule)
    doc = {"groups": [{"name": name, "interval": f"{interval}s", "rules": rs} for name, rs in groups.items()]}
    return yaml.safe_dump(doc, sort_keys=False, width=1 << 20)


def _rfc3339(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def run_vmalert(url: str, rule_file: Path, start: int, end: int, interval: int,
                vmalert: str | None = None, timeout: int | None = 600, write_url: str | None = None) -> str:
    """vmalert -replay.* of rule_file over [start, end] at `interval`, reading from url and writing
    the results to write_url (default url)."""
    cmd = [vmalert or find_tool("vmalert"),
           f"-rule={rule_file}",
           f"-datasource.url={url}",
           f"-remoteWrite.url={write_url or url}",
           f"-replay.timeFrom={_rfc3339(start)}",
           f"-replay.timeTo={_rfc3339(end)}",
           f"-evaluationInterval={interval}s",
           f"-datasource.queryStep={interval}s",  # default 5m: `for` would never be satisfied
           "-replay.rulesDelay=0s",                 # levels are flushed by us between runs
           "-replay.maxDatapointsPerQuery=100000",  # one range query per rule: `for` state spans the run
           "-replay.disableProgressBar",
           "-remoteWrite.flushInterval=100ms",
           "-remoteWrite.maxBatchSize=200",
           "-remoteWrite.maxQueueSize=10000000",
           "-remoteWrite.concurrency=2",
           "-httpListenAddr=127.0.0.1:0",
           "-loggerLevel=WARN"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    # vmalert drops a remote-write batch after 5 failed attempts with only an error line and exit code 0
    # (single failed attempts that are retried are warnings): any error means results may be missing.
    problems = [line for line in output.splitlines()
                if "\terror\t" in line or "\tfatal\t" in line or "\tpanic\t" in line]
    if proc.returncode != 0 or problems:
        raise VMReplayError(f"vmalert replay of {rule_file.name} failed (exit {proc.returncode}):\n"
                            + "\n".join(problems[:20] or output.splitlines()[-40:]))
    return output


# --------------------------------------------------------------------------------------------------
# scenarios
# --------------------------------------------------------------------------------------------------

def max_lookback(levels: list[list[RuleRef]]) -> int:
    """How far back any rule reads, in seconds: its longest range (or subquery) window plus its longest
    offset, plus Prometheus' 5m lookback for instant selectors. vmalert writes rule results only inside a
    scenario's own window, so derived series never reach further than this into the next window."""
    longest = 0.0
    for rules in levels:
        for r in rules:
            expr = r.rule["expr"]
            ranges = [_seconds(d) for d in _RANGE.findall(expr)]
            offsets = [_seconds(d) for d in _OFFSET.findall(expr)]
            longest = max(longest, max(ranges, default=0) + max(offsets, default=0))
    return int(math.ceil(longest)) + 300


def window_days(scenario: Scenario, guard: int = DAY) -> int:
    """Whole days for a scenario: its duration plus `guard` seconds of empty time before the next one."""
    return math.ceil((scenario.duration + max(guard, 1)) / DAY)


def assign_bases(scenarios: list[Scenario], guard: int = DAY, now: int | None = None) -> dict[str, int]:
    """Each scenario gets its own window of whole days, all in the past (before the current day, so
    -search.latencyOffset never hides data), day-aligned and so aligned to every evaluation interval."""
    now = int(time.time()) if now is None else now
    total = sum(window_days(s, guard) for s in scenarios)
    t = (now // DAY - total - 1) * DAY
    bases = {}
    for s in scenarios:
        bases[s.name] = t
        t += window_days(s, guard) * DAY
    return bases


@dataclass
class VMResult:
    outcome: Outcome
    seconds: float
    levels: int


def replay_scenario(vm: VictoriaMetrics, scenario: Scenario, levels: list[list[RuleRef]], base: int,
                    workdir: Path, vmalert: str | None = None) -> VMResult:
    """Import one scenario at `base`, replay every level, read back ALERTS."""
    t0 = time.monotonic()
    vm.import_samples(scenario_samples(scenario, base))
    vm.flush()
    start, end = base, base + scenario.duration
    for i, rules in enumerate(levels):
        path = workdir / f"{scenario.name}-level{i}.yaml"
        path.write_text(level_rule_file(rules, scenario.evaluation_interval))
        run_vmalert(vm.url, path, start, end, scenario.evaluation_interval, vmalert)
        vm.flush()
    fired = read_fired(vm, start, end)
    return VMResult(judge(scenario, fired), time.monotonic() - t0, len(levels))


def read_fired(vm: VictoriaMetrics, start: int, end: int) -> list[Fired]:
    out = []
    for metric, timestamps, _ in vm.export('ALERTS{alertstate="firing"}', start, end):
        ts = [t for t in timestamps if start * 1000 <= t <= end * 1000]
        if not ts:
            continue
        # vmalert adds `alertgroup` to ALERTS; promtool does not: drop it so the labels compare 1:1
        labels = tuple(sorted((k, v) for k, v in metric.items() if k not in ("__name__", "alertstate", "alertgroup")))
        out.append(Fired(labels, (min(ts) - start * 1000) // 1000))
    return out


def replay_all(scenarios: list[Scenario], rule_paths: list[Path], jobs: int = 2,
               vmalert: str | None = None, victoria_metrics: str | None = None) -> list[VMResult]:
    """Replay every scenario through one victoria-metrics process (stopped at the end, also on errors)."""
    levels = rule_levels(rule_paths)
    bases = assign_bases(scenarios, guard=max(DAY, max_lookback(levels)))
    with VictoriaMetrics(victoria_metrics) as vm, tempfile.TemporaryDirectory(prefix="rulesgen-vmalert-") as tmp:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(replay_scenario, vm, s, levels, bases[s.name], Path(tmp), vmalert)
                       for s in scenarios]
            try:
                results = [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()  # scenarios not started yet; running ones finish their current step
                raise
        if vm.errors():
            raise VMReplayError("victoria-metrics logged errors (data may be missing):\n" + "\n".join(vm.errors()[:20]))
        return results
