"""Two shards and a global tier against one server, on promtool (real binaries, no server needed).

A scenario's series are split by node across two shards (hashmod sharding on the node name: an
exporter's series, its `up` too, go with the node they name; the training jobs' own targets are split
by target). Each shard replays its half through the shard rule files (a listing at every evaluation
time: promtool prints what it got). Both shards replay in one promtool run, told apart by a per-shard
suffix on the cluster label that every shard rule keeps (`shard_runs`: promtool's cost is rules x steps,
so one run of both halves costs what one half does); a series of no single shard stops that.
What a shard's remote write would carry to the global store is then rebuilt: the series its relabelling
keeps (its raw inputs as the scenario writes them, its records and ALERTS as the rules wrote them, with
the staleness marker Prometheus writes when a rule's series ends), each with the shard's external label.
The global tier replays both shards' forwarded series through the global files; one server replays
every series through the single-topology files. The alerts (name and labels, the shard label ignored,
pending and firing) must be the same at every evaluation step: the shards' own alerts plus the global
tier's, against the one server's.

The interface is explicit (`Topology`: rule files per tier, the write relabelling that picks what the
shards forward, the shard label), so the harness judges any split of a rule set, not only rulesgen's own.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from math import gcd
from pathlib import Path

import yaml

import batches
import live_rules
from rulesgen.builders.rules import RULE_FILES
from rulesgen.promql.text import label_set
from rulesgen.load.scenarios import STALE, Scenario, expand

HOST_LABELS = ("Hostname", "hostname")
_GOT = re.compile(r"^\s*got:\s*(.*)$")
# possessive runs (Python 3.11): a listing of a batch's shards is about 60 MB of text, read 4 times faster
_GOT_SAMPLE = re.compile(r'(\{(?:[^{}"]++|"(?:[^"\\]++|\\.)*+")*+\})\s+(\S+?)(?:,\s|$)')


@dataclass(frozen=True)
class Relabel:
    """One write_relabel_configs rule that picks series, as Prometheus applies it: the values of
    source_labels (absent: "") joined by separator, matched by the whole regex; keep forwards the series
    that match, drop those that do not."""
    action: str
    source_labels: tuple[str, ...] = ()
    regex: str = "(.*)"
    separator: str = ";"

    def passes(self, labels: dict[str, str]) -> bool:
        value = self.separator.join(labels.get(name, "") for name in self.source_labels)
        return (re.fullmatch(self.regex, value) is not None) == (self.action == "keep")


def relabelling(configs: list[dict]) -> tuple[Relabel, ...]:
    """write_relabel_configs as Relabel rules. An action that rewrites series instead of picking them
    (replace, labeldrop ...) is refused: the harness would forward them unchanged."""
    out = []
    for c in configs:
        action = c.get("action", "replace")
        if action not in ("keep", "drop"):
            raise ValueError(f"write_relabel_configs: action {action!r}: the harness applies keep and drop only")
        out.append(Relabel(action, tuple(c.get("source_labels") or ()), str(c.get("regex", "(.*)")),
                           str(c.get("separator", ";"))))
    return tuple(out)


@dataclass(frozen=True)
class Topology:
    """What a sharded deployment loads: the rule files of one server (the reference), of every shard and
    of the global evaluator, each in evaluation order (promtool evaluates their groups in that order at
    every step); the write relabelling that picks the series the shards forward (every rule, in order);
    the external label each shard adds."""
    single: tuple[Path, ...]
    shard: tuple[Path, ...]
    global_: tuple[Path, ...]
    relabel: tuple[Relabel, ...]
    shard_label: str = "shard"
    tag_label: str = "cluster"  # a label every shard rule keeps: the shards replay as one (shard_runs)

    def forwards(self, name: str, labels: dict[str, str]) -> bool:
        """Whether a shard's remote write carries the series: it passes every rule (the shard's external label
        is on it already, as Prometheus adds external labels before relabelling)."""
        series = {**labels, "__name__": name}
        return all(r.passes(series) for r in self.relabel)

    @property
    def listed(self) -> str:
        """A regex of every name a shard may forward (for the listings): a keep rule's on __name__ alone, which
        all of them pass, else any name."""
        return next((r.regex for r in self.relabel if r.action == "keep" and r.source_labels == ("__name__",)
                     and r.separator == ";"), ".+")


def _in_order(folder: Path, skip: tuple[str, ...] = ()) -> tuple[Path, ...]:
    """A folder's rule files in rulesgen's evaluation order (recording first, fleet last: the order of
    its promtool tests' group_eval_order)."""
    kinds = [kind for kind, _ in RULE_FILES]
    files = [p for p in folder.glob("*.yaml") if p.stem not in skip]
    return tuple(sorted(files, key=lambda p: (kinds.index(p.stem) if p.stem in kinds else len(kinds), p.name)))


def rendered_topology(root: Path) -> Topology:
    """rulesgen's own: alerts/prometheus (less the dashboard-only aggregates) for one server,
    alerts/sharded/{shard,global} and the whole write_relabel_configs of alerts/sharded/remote-write-shard-0.yaml
    (the keep-regex on __name__, then the keep rule on the ALERTS the global rules read)."""
    rw = yaml.safe_load((root / "alerts" / "sharded" / "remote-write-shard-0.yaml").read_text())
    (remote_write,) = rw["remote_write"]
    label = next(iter(rw["global"]["external_labels"]))
    return Topology(
        single=_in_order(root / "alerts" / "prometheus", skip=("aggregates",)),
        shard=_in_order(root / "alerts" / "sharded" / "shard"),
        global_=_in_order(root / "alerts" / "sharded" / "global"),
        relabel=relabelling(remote_write.get("write_relabel_configs") or []), shard_label=label)


def single_topology(root: Path) -> Topology:
    """The harness checked against itself: the single files on every tier, forwarding nothing (each shard
    then alerts on its own nodes only, the global tier on nothing): equal exactly when no rule needs
    another node's series. Used to show the comparison can fail."""
    single = rendered_topology(root).single
    return Topology(single=single, shard=single, global_=(),
                    relabel=(Relabel("keep", ("__name__",), "rulesgen_nothing_forwarded"),))


# --- series -------------------------------------------------------------------------------------------

def parse_series(text: str) -> tuple[str, dict[str, str]]:
    name, _, rest = text.partition("{")
    return name.strip(), (label_set("{" + rest) if rest else {})


def series_text(name: str, labels: dict[str, str]) -> str:
    body = ", ".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
    return f"{name}{{{body}}}"


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def host(labels: dict[str, str]) -> str | None:
    """The node a series names (either exporter spelling of the host label), if any."""
    return next((labels[h] for h in HOST_LABELS if h in labels), None)


def target(labels: dict[str, str]) -> str:
    return labels.get("instance") or host(labels) or ""


def split(scenario: Scenario, shards: int = 2) -> list[list[tuple[str, str]]]:
    """The scenario's series by node, the nodes dealt round-robin in name order, then the other targets
    (training jobs') the same way. A node is its host label: an exporter target's series (its `up` too)
    go with the node they name, so an exporter that restarts under a new `instance` stays on its shard,
    as it does when the shards hash the node name (README "Sharded topology"); a target whose series
    name no host is its own unit."""
    parsed = [(s, values, parse_series(s)[1]) for s, values in scenario.series]
    node_of: dict[str, str] = {}
    for _, _, labels in parsed:
        if host(labels) is not None and labels.get("instance"):
            node_of.setdefault(labels["instance"], host(labels))
    by_unit: dict[tuple[int, str], list[tuple[str, str]]] = {}
    for s, values, labels in parsed:
        node = host(labels) or node_of.get(labels.get("instance", ""))
        exporter = node is not None or labels.get("job", "").endswith("dcgm-exporter")
        unit = (0, node) if node is not None else (0 if exporter else 1, target(labels))
        by_unit.setdefault(unit, []).append((s, values))
    out: list[list[tuple[str, str]]] = [[] for _ in range(shards)]
    for i, unit in enumerate(sorted(by_unit)):
        out[i % shards] += by_unit[unit]
    return out


def is_multi_node(scenario: Scenario) -> bool:
    hosts = set()
    for s, _ in scenario.series:
        _, labels = parse_series(s)
        hosts.update(labels[h] for h in HOST_LABELS if h in labels)
    return len(hosts) >= 2


# --- promtool -----------------------------------------------------------------------------------------

def _groups(files) -> list[str]:
    return [g["name"] for f in files for g in (yaml.safe_load(Path(f).read_text()) or {}).get("groups", [])]


@dataclass
class Run:
    """Every sample the rules (and inputs) hold after a replay: {(name, labels)}: {t_seconds: value}."""
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], dict[int, float]] = field(default_factory=dict)

    @staticmethod
    def key(labels: dict[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
        """A series' key in samples: (its name, its other labels sorted)."""
        return labels.get("__name__", ""), tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))

    def add(self, labels: dict[str, str], t: int, value: float) -> None:
        self.samples.setdefault(self.key(labels), {})[t] = value


AT = "rulesgen_at"
_LISTING = re.compile(r'^\s*expr: "label_replace\(.*' + AT)
_AT_PAIR = re.compile(AT + r'="([0-9]+)"')
_ERROR_START = re.compile(r"^(?= {4}\S)", re.M)  # promtool prints each failure of a test group from column 4


def listings(listed: str, duration: int, evaluation_interval: int) -> list[dict]:
    """One promql_expr_test per evaluation time, expecting nothing: promtool prints what it got, values in
    full precision, the time in a label. A rule's series that ended has its staleness marker, so a listing
    shows exactly what the rules wrote at that time."""
    return [{"expr": f'label_replace({{__name__=~"{listed}"}}, "{AT}", "{t}", "", "")', "eval_time": f"{t}s",
             "exp_samples": []} for t in range(0, duration + 1, evaluation_interval)]


def replay(promtool: str, files, series: list[tuple[str, str]], interval: int, evaluation_interval: int, duration: int,
           listed: str, workdir: Path, name: str) -> Run:
    """promtool over `series` (promtool notation at `interval`) and `files`, every group in file order;
    returns the samples of the names matching `listed` at every evaluation time."""
    doc = {
        "rule_files": [str(Path(f).resolve()) for f in files],
        "evaluation_interval": f"{evaluation_interval}s",
        "group_eval_order": _groups(files),
        "tests": [{
            "name": name, "interval": f"{interval}s",
            "input_series": [{"series": s, "values": v} for s, v in series] or [{"series": "rulesgen_empty", "values": "0"}],
            "promql_expr_test": listings(listed, duration, evaluation_interval),
        }],
    }
    run, failures = _run(promtool, doc, workdir, name)
    if failures:
        raise RuntimeError(f"promtool reported more than the listings of {name}:\n" + "\n\n".join(failures)[-3000:])
    return run


def replay_test(promtool: str, test, scenario: Scenario, files, workdir: Path,
                listed: str = "ALERTS") -> tuple[Run, tuple[str, ...]]:
    """A scenario's generated promtool test (a file, or its document with rule files resolved: its input
    series, rule files and expectations) with the ALERTS listings added: the alerts at every evaluation time,
    and what promtool reports against the scenario's own expectations (nothing when they hold: the verdict
    `promtool test rules` gives the file alone). The test must replay the scenario's series through `files`,
    as the shards are given them."""
    doc = batches.load(test) if isinstance(test, Path) else test
    (case,) = doc["tests"]
    given = sorted((s["series"], s["values"]) for s in case["input_series"])
    if given != sorted(scenario.series) or sorted(doc["rule_files"]) != sorted(str(Path(f).resolve()) for f in files):
        raise RuntimeError(f"{test} does not replay scenario {scenario.name}'s series through {list(map(str, files))}")
    case["promql_expr_test"] = case.get("promql_expr_test", []) + listings(
        listed, scenario.duration, scenario.evaluation_interval)
    return _run(promtool, doc, workdir, "single")


def _run(promtool: str, doc: dict, workdir: Path, name: str, prune: bool = True) -> tuple[Run, tuple[str, ...]]:
    """promtool on one test document: the samples its listings got, and every other failure it reported
    (each failure in promtool's FAILED section that is not a listing), over the rules live on its input
    (tests/live_rules.py: the others write nothing; prune=False: every rule). JSON is YAML to promtool, and
    Python writes it a hundred times faster."""
    folder = workdir / f"{name}-live-rules"
    folder.mkdir(exist_ok=True)
    path = workdir / f"{name}.yaml"
    if prune:
        live_rules.write_pruned(doc, path, folder)
    else:
        path.write_text(json.dumps(doc))
    proc = subprocess.run([promtool, "test", "rules", str(path)], cwd=workdir,
                          capture_output=True, text=True, timeout=3600, env={"GOGC": "800", "GOMAXPROCS": "1", "PATH": "/usr/bin:/bin"})
    out = proc.stdout + proc.stderr
    if (proc.returncode != 0 and "FAILED" not in out) or re.search(r"^\s*(expr: .*)?err(or)?:", out, re.M):
        raise RuntimeError(f"promtool could not replay {name}:\n{out[-3000:]}")
    run = Run()
    failures = []
    series: dict[str, tuple] = {}  # a series' labels as printed, the time label cut out: its key in run.samples
    _, _, failed = out.partition("  FAILED:\n")
    for block in filter(str.strip, _ERROR_START.split(failed)):
        if not _LISTING.match(block):
            failures.append(block.strip("\n"))
            continue
        for line in block.splitlines():
            got = _GOT.match(line)
            if got:
                for text, value in _GOT_SAMPLE.findall(got.group(1) + ", "):
                    # every series is listed at every evaluation: its labels are parsed once (a shard run of a
                    # batch lists about 230,000 samples of 800 series)
                    at = _AT_PAIR.search(text)
                    rest = text[:at.start()] + text[at.end():]
                    if (key := series.get(rest)) is None:
                        key = series[rest] = Run.key(label_set(rest))
                    run.samples.setdefault(key, {})[int(at.group(1))] = float(value)
    return run, tuple(failures)


# --- what a shard forwards ----------------------------------------------------------------------------

def _fmt(v) -> str:
    if v is None:
        return "_"
    if v is STALE:
        return "stale"
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return repr(float(v))


def forwarded(run: Run, inputs: list[tuple[str, str]], topology: Topology, shard: str, scenario: Scenario,
              step: int) -> list[tuple[str, str]]:
    """The series a shard's remote write carries (Topology.forwards), with its external label, in promtool
    notation at `step`: raw inputs as written (their own staleness markers), rule outputs as written at each
    evaluation, a staleness marker at the first evaluation a rule's series is gone."""
    slots = scenario.duration // step + 1
    out = []
    for s, values in inputs:
        name, labels = parse_series(s)
        if not topology.forwards(name, {**labels, topology.shard_label: shard}):
            continue
        grid: list = [None] * slots
        for i, v in enumerate(expand(values)):
            t = i * scenario.interval
            if t % step == 0 and t // step < slots:
                grid[t // step] = v
        out.append((series_text(name, {**labels, topology.shard_label: shard}), " ".join(map(_fmt, grid))))
    raw = {parse_series(s)[0] for s, _ in inputs}
    ev = scenario.evaluation_interval
    for (name, labels), points in sorted(run.samples.items()):
        if name in raw or not topology.forwards(name, {**dict(labels), topology.shard_label: shard}):
            continue
        grid = [None] * slots
        for t in range(0, scenario.duration + 1, ev):
            if t in points:
                grid[t // step] = points[t]
            elif t - ev in points:
                grid[t // step] = STALE
        out.append((series_text(name, {**dict(labels), topology.shard_label: shard}), " ".join(map(_fmt, grid))))
    return out


# --- the shards in one replay -------------------------------------------------------------------------

TAG = "~rulesgen-shard-"


class Mixed(Exception):
    """A shard rule wrote a series whose tag label names no single shard: it mixed the shards' data."""


def tagged(halves: list[list[tuple[str, str]]], label: str) -> list[tuple[str, str]]:
    """Every shard's series in one list, shard i's `label` (absent: "") suffixed with TAG + i."""
    out = []
    for i, half in enumerate(halves):
        for s, values in half:
            name, labels = parse_series(s)
            out.append((series_text(name, {**labels, label: labels.get(label, "") + f"{TAG}{i}"}), values))
    return out


def untagged(run: Run, shards: int, label: str) -> list[Run]:
    """The replay of tagged() series as one Run per shard, `label` restored (dropped where it was absent)."""
    runs = [Run() for _ in range(shards)]
    for (name, labels), points in run.samples.items():
        value, _, shard = dict(labels).get(label, "").rpartition(TAG)
        if not shard.isdigit() or int(shard) >= shards:
            raise Mixed(f"{name}{dict(labels)}")
        restored = {k: v for k, v in labels if k != label} | ({label: value} if value else {})
        runs[int(shard)].samples[(name, tuple(sorted(restored.items())))] = points
    return runs


def runs_together(promtool: str, topology: Topology, halves: list[list[tuple[str, str]]], scenario: Scenario,
                  listed: str, workdir: Path) -> list[Run]:
    """What each shard's rules write over its half, from one promtool run holding every shard, told apart by
    topology.tag_label (cluster: every aggregation of rulesgen's keeps it, `labels.cluster` in the config)
    suffixed per shard on every input: the shard rules are per node or per cluster, so no series of one
    shard meets another's, and the run costs what one shard's does (promtool's cost is rules x steps,
    nearly whatever the data). Mixed when a series the rules wrote carries no single shard's tag."""
    run = replay(promtool, topology.shard, tagged(halves, topology.tag_label), scenario.interval,
                 scenario.evaluation_interval, scenario.duration, listed, workdir, "shards")
    return untagged(run, len(halves), topology.tag_label)


def runs_apart(promtool: str, topology: Topology, halves: list[list[tuple[str, str]]], scenario: Scenario,
               listed: str, workdir: Path) -> list[Run]:
    """What each shard's rules write over its half, one promtool run per shard."""
    return [replay(promtool, topology.shard, half, scenario.interval, scenario.evaluation_interval, scenario.duration,
                   listed, workdir, f"shard-{i}") for i, half in enumerate(halves)]


def shard_runs(*args) -> tuple[list[Run], bool]:
    """(runs_together, True), or (runs_apart, False) when a shard rule joined or aggregated across the tag label
    (Mixed)."""
    try:
        return runs_together(*args), True
    except Mixed:
        return runs_apart(*args), False


# --- the comparison -----------------------------------------------------------------------------------

def alerts(run: Run, ignore: str, own_only: bool = False) -> dict[int, set[tuple[tuple[str, str], ...]]]:
    """Alert label sets (alertname, alertstate and the rest, `ignore` dropped) at each evaluation time.
    own_only: only the ALERTS this tier wrote (not those it received, which carry `ignore`)."""
    out: dict[int, set] = {}
    for (name, labels), points in run.samples.items():
        if name != "ALERTS" or (own_only and ignore in dict(labels)):
            continue
        key = tuple((k, v) for k, v in labels if k != ignore)
        for t in points:
            out.setdefault(t, set()).add(key)
    return out


@dataclass(frozen=True)
class Verdict:
    scenario: str
    steps: int
    extra: tuple[tuple[int, tuple], ...]  # (time, alert) the sharded topology has and one server has not
    missing: tuple[tuple[int, tuple], ...]
    forwarded_series: int
    reference_alerts: int
    expectations: tuple[str, ...] = ()  # what promtool reported against the scenario's own test (reference_test)
    # (time, record, one server's value, global tier's value) of the records compared (compare's `records`)
    records: tuple[tuple[int, tuple, float | None, float | None], ...] = ()
    records_compared: int = 0  # the (time, series) points of those records one server wrote
    # what each shard wrote (ALERTS, records, the listed inputs) in the proof's one run of both shards (and of the
    # batch's other scenarios), where compare was asked to keep it (keep_shards); None when the shards ran apart
    shards: tuple[Run, ...] | None = None

    @property
    def equal(self) -> bool:
        return not self.extra and not self.missing and not self.records

    def describe(self, limit: int = 8) -> str:
        def fmt(items):
            return "; ".join(f"{t}s {dict(a).get('alertname')}{{{', '.join(f'{k}={v}' for k, v in a if k != 'alertname')}}}"
                             for t, a in items[:limit])
        return (f"{self.scenario}: {len(self.extra)} extra, {len(self.missing)} missing over {self.steps} steps"
                + (f"\n  extra: {fmt(self.extra)}" if self.extra else "")
                + (f"\n  missing: {fmt(self.missing)}" if self.missing else "")
                + (f"\n  records: {len(self.records)} differ, first "
                   + "; ".join(f"{t}s {k}: {a} != {b}" for t, k, a, b in self.records[:limit]) if self.records else ""))


def compare(promtool: str, scenario: Scenario, topology: Topology, workdir: Path,
            reference_test: Path | dict | None = None, halves: list[list[tuple[str, str]]] | None = None,
            records: str = "", keep_shards: bool = False) -> Verdict:
    """reference_test: the scenario's generated promtool test over topology.single (or its document). The one
    server's replay is then that test with the listings added, so the same promtool run also judges the
    scenario's own expectations (Verdict.expectations), and CI need not replay the scenario a second time.
    halves: the shards' series (default: split(scenario)). records: a regex of record names the global tier
    must write as the one server does, value for value at every evaluation (Verdict.records)."""
    step = gcd(scenario.interval, scenario.evaluation_interval)
    listed = f"ALERTS|{topology.listed}"
    halves = halves if halves is not None else split(scenario)
    # the one server and the shards are independent replays: run them at once (the shards in one promtool run)
    judged = "ALERTS" + (f"|{records}" if records else "")

    def one_server() -> tuple[Run, tuple[str, ...]]:
        if reference_test is not None:
            return replay_test(promtool, reference_test, scenario, topology.single, workdir, judged)
        return replay(promtool, topology.single, list(scenario.series), scenario.interval, scenario.evaluation_interval,
                      scenario.duration, judged, workdir, "single"), ()

    with ThreadPoolExecutor(max_workers=2) as pool:
        single = pool.submit(one_server)
        parts = pool.submit(shard_runs, promtool, topology, halves, scenario, listed, workdir)
        (reference, expectations), (shards, together) = single.result(), parts.result()
    sent = [s for i, (run, half) in enumerate(zip(shards, halves))
            for s in forwarded(run, half, topology, f"shard-{i}", scenario, step)]
    sharded: dict[int, set] = {}
    for run in shards:
        for t, a in alerts(run, topology.shard_label).items():
            sharded.setdefault(t, set()).update(a)
    top = Run()
    if topology.global_:
        top = replay(promtool, topology.global_, sent, step, scenario.evaluation_interval, scenario.duration, judged,
                     workdir, "global")
        for t, a in alerts(top, topology.shard_label, own_only=True).items():
            sharded.setdefault(t, set()).update(a)
    ref = alerts(reference, topology.shard_label)
    times = range(0, scenario.duration + 1, scenario.evaluation_interval)
    extra = tuple((t, a) for t in times for a in sorted(sharded.get(t, set()) - ref.get(t, set())))
    missing = tuple((t, a) for t in times for a in sorted(ref.get(t, set()) - sharded.get(t, set())))
    differ, compared = _records_differ(reference, top, records, topology) if records else ((), 0)
    return Verdict(scenario.name, len(times), extra, missing, len(sent), sum(len(v) for v in ref.values()), expectations,
                   differ, compared, tuple(shards) if keep_shards and together else None)


def _records_differ(reference: Run, top: Run, records: str, topology: Topology) -> tuple[tuple, int]:
    """(time, series, one server's value, global tier's value) wherever the records matching `records` that the
    global tier writes differ (the shards' own records reach it only as inputs), and how many points one server
    wrote of them."""
    written = {r["record"] for f in topology.global_ for g in (yaml.safe_load(Path(f).read_text()) or {}).get("groups", [])
               for r in g["rules"] if "record" in r and re.fullmatch(records, r["record"])}

    def own(run: Run) -> dict:
        return {key: points for key, points in run.samples.items()
                if key[0] in written and topology.shard_label not in dict(key[1])}
    ref, got = own(reference), own(top)
    out = []
    for key in sorted(set(ref) | set(got)):
        a, b = ref.get(key, {}), got.get(key, {})
        for t in sorted(set(a) | set(b)):
            x, y = a.get(t), b.get(t)
            same = x is not None and y is not None and (math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) or x != x and y != y)
            if not same:
                out.append((t, key, x, y))
    return tuple(out), sum(len(points) for points in ref.values())


# --- several scenarios in one proof -------------------------------------------------------------------

def tagged_together(scenarios: list[Scenario], label: str) -> tuple[Scenario, list[Scenario]]:
    """The scenarios as one (their series side by side, member k's tagged batches.tag(k) on `label`, the
    longest duration) and each member tagged."""
    members = [replace(s, series=tuple((batches.tagged_series(x, label, batches.tag(k)), v) for x, v in s.series))
               for k, s in enumerate(scenarios)]
    together = replace(scenarios[0], name="batch: " + ", ".join(s.name for s in scenarios),
                       series=tuple(x for m in members for x in m.series), duration=max(s.duration for s in scenarios),
                       expect=())
    return together, members


def _member_run(run: Run, k: int, duration: int, label: str) -> Run:
    """What a batch's run wrote for member k, as the scenario alone gives it: its tag taken off `label`, the times
    after its own duration left out."""
    out = Run()
    for (name, labels), points in run.samples.items():
        member, restored = batches.untag(dict(labels), label)
        mine = {t: v for t, v in points.items() if t <= duration}
        if member == k and mine:
            out.samples[Run.key({"__name__": name, **restored})] = mine
    return out


def _members(verdict: Verdict, scenarios: list[Scenario], label: str, keep: frozenset[str]) -> dict[str, Verdict]:
    """The batch's verdict as each member's: its steps, its alerts, the failures whose query names its tag (a
    failure naming no member's, the batch's guard, goes to every member), its shards' runs where kept."""
    out = {}
    for k, s in enumerate(scenarios):
        mine = lambda items: tuple((t, a) for t, a in items  # noqa: E731
                                   if t <= s.duration and batches.untag(dict(a), label)[0] == k)
        named = []
        for f in verdict.expectations:
            tags = {int(n) for n in re.findall(re.escape(batches.TAG) + r"(\d+)", f)}
            if k in tags or not tags:
                named.append(f)
        shards = (tuple(_member_run(run, k, s.duration, label) for run in verdict.shards)
                  if s.name in keep and verdict.shards is not None else None)
        out[s.name] = Verdict(s.name, s.duration // s.evaluation_interval + 1, mine(verdict.extra), mine(verdict.missing),
                              verdict.forwarded_series, verdict.reference_alerts, tuple(named), shards=shards)
    return out


def compare_batch(promtool: str, scenarios: list[Scenario], topology: Topology, workdir: Path,
                  reference_tests: list[Path], keep: frozenset[str] = frozenset()) -> dict[str, Verdict]:
    """compare() of scenarios sharing their intervals, in one run of each tier (tests/batches.py: their
    series side by side, told apart by a suffix on topology.tag_label, each shard split as the scenario alone
    is). A member the batch finds unequal or failing, or a batch the engine refuses, is compared alone, so a
    failure reads as the scenario's own proof reports it. keep: the scenarios whose verdicts carry their shards'
    runs (Verdict.shards; memory: each a run's listings of the scenario's series)."""
    verdicts: dict[str, Verdict] = {}
    if len(scenarios) > 1:
        label = topology.tag_label
        together, members = tagged_together(scenarios, label)
        halves = [[x for m in members for x in split(m)[i]] for i in range(2)]
        try:
            verdicts = _members(compare(promtool, together, topology, workdir,
                                        batches.merged([batches.load(p) for p in reference_tests], label), halves,
                                        keep_shards=any(s.name in keep for s in scenarios)),
                                scenarios, label, keep)
        except (Mixed, RuntimeError):
            verdicts = {}
    for s, path in zip(scenarios, reference_tests):
        v = verdicts.get(s.name)
        if v is None or not v.equal or v.expectations:
            verdicts[s.name] = compare(promtool, s, topology, workdir, reference_test=path, keep_shards=s.name in keep)
    return verdicts
