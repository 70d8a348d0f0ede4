"""Replay one scenario as another dcgm-exporter / Prometheus set-up would have recorded it.

A scenario is written once, in the dialect of dcgm-exporter <= 4.8.2 (host label `Hostname`, DCGM's
own field names and units, the sticky XID gauge, the clock-event bitmask) at its own scrape interval.
A dialect rewrites its input series, never its expectations: the rules must reach the same verdict
from every exporter from 3.3 to 4.9 and every scrape interval from 15 to 60 s with the default
config. Dialects are named by axes joined with `+` (e.g. `hostname+names-4.9+scrape-60s`) or by a
preset (`exporter-4.9`); `rulesgen replay --dialect` runs any of them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..errors import Diagnostic, RulesgenError
from ..model.catalog import Catalog
from ..model.roles import ROLES
from ..promql.text import escape, series_labels
from .mapping import did_you_mean
from .scenarios import STALE, Scenario, expand

HOST_LABELS = ("Hostname", "hostname")
NEW_NAMES_SINCE = "4.9.0"   # aliases of catalog/metrics.yaml exported from this dcgm-exporter version
EVENT_WINDOW = 300  # s: dcgm-exporter's default xid-count-window-size / clock-events-count-window-size
DCGM_UPDATE = 30    # s: dcgm-exporter's default collect interval (-c 30000), the rate DCGM samples its watched fields at
SCRAPES = (15, 30, 60)

AXES = {
    "hostname": "host label `hostname` (dcgm-exporter >= 4.8.3) instead of `Hostname`",
    "names-4.9": "dcgm-exporter 4.9 field names and units (Hz, J, bytes, 0-1 ratios)",
    "xid-sparse": "no XID gauge series until the first XID (4.5.3-4.8.2)",
    "xid-count": "DCGM_EXP_XID_ERRORS_COUNT (windowed count per xid) instead of the XID gauge",
    "xid-total": "DCGM_EXP_XID_ERRORS_TOTAL (counter per xid, from the first event; >= 4.8.3) instead of the XID gauge",
    "nvlink-entity": "NVLink fields sent per link as NVLink entities (labels gpu_uuid, model_name, nvlink)",
    "clock-count": "DCGM_EXP_CLOCK_EVENTS_COUNT (per clock_event, the samples its bit was set in within the window) instead of the bitmask",
    "clock-total": "DCGM_EXP_CLOCK_EVENTS_TOTAL (counter per clock_event) instead of the bitmask",
    **{f"scrape-{s}s": f"samples every {s} s" + (" (each 30 s collection seen twice)" if s == 15 else "") for s in SCRAPES},
}
PRESETS = {
    "as-written": "",
    "exporter-3.3": "xid-sparse",
    "exporter-4.8.2": "xid-sparse+scrape-15s",
    "exporter-4.8.3": "hostname+xid-total+clock-total+scrape-30s",
    "exporter-4.9": "hostname+names-4.9+xid-total+clock-total",
    "prometheus-default": "scrape-60s",
}


@dataclass(frozen=True)
class Dialect:
    host: str = ""          # output host label name, "" = as written
    names: str = ""         # "4.9" = renamed fields and their units
    xid: str = ""           # sparse | count | total
    clock: str = ""         # count | total
    nvlink_entity: bool = False
    scrape: int = 0         # seconds, 0 = as written
    name: str = "as-written"


def parse_dialect(text: str) -> Dialect:
    """`exporter-4.9`, `hostname+scrape-60s` ... -> Dialect; RulesgenError naming the bad part."""
    name = text.strip()
    spec = PRESETS.get(name, name)
    d = Dialect(name=name)
    for part in filter(None, spec.split("+")):
        if part not in AXES:
            known = sorted(AXES) + sorted(PRESETS)
            raise RulesgenError([Diagnostic("<dialect>", 1, 1, "unknown-dialect",
                                            f"unknown dialect {part!r}{did_you_mean(part, known)}; "
                                            f"known: {', '.join(known)}")])
        if part == "hostname":
            d = replace(d, host="hostname")
        elif part == "names-4.9":
            d = replace(d, names="4.9")
        elif part == "nvlink-entity":
            d = replace(d, nvlink_entity=True)
        elif part.startswith("xid-"):
            d = replace(d, xid=part[4:])
        elif part.startswith("clock-"):
            d = replace(d, clock=part[6:])
        else:
            d = replace(d, scrape=int(part[len("scrape-"):-1]))
    return d


def apply(scenario: Scenario, dialect: Dialect, catalog: Catalog) -> Scenario:
    """The scenario's input series as `dialect` exports them; expectations unchanged."""
    if dialect.name == "as-written":
        return scenario
    series = [(s, expand(v)) for s, v in scenario.series]
    if dialect.xid:
        series = _xid_series(series, dialect.xid, scenario.interval, catalog)
    if dialect.clock:
        series = _clock_series(series, dialect.clock, scenario.interval, catalog)
    if dialect.nvlink_entity:
        series = [(_nvlink_entity(s), v) for s, v in series]
    if dialect.names:
        series = _renamed(series, catalog)
    if dialect.host:
        series = [(_relabel_host(s, dialect.host), v) for s, v in series]
    interval = scenario.interval
    if dialect.scrape and dialect.scrape != interval:
        series = [(s, _resample(v, interval, dialect.scrape)) for s, v in series]
        interval = dialect.scrape
    return replace(scenario, name=f"{scenario.name}@{dialect.name}", interval=interval,
                   series=tuple((s, encode(v)) for s, v in series if any(x is not None for x in v)))


# --- values ------------------------------------------------------------------------------------

def encode(values: list) -> str:
    """Slots (float, None = missing, STALE) -> promtool notation, runs collapsed (`vxN` = N+1 samples)."""
    out, i = [], 0
    while i < len(values):
        v, j = values[i], i
        while j + 1 < len(values) and values[j + 1] is not STALE and _same(values[j + 1], v):
            j += 1
        run = j - i + 1
        if v is STALE:
            out.append("stale")
        elif v is None:
            out.append("_" if run == 1 else f"_x{run}")
        elif v != v or v in (float("inf"), float("-inf")):
            out += [_number(v)] * run  # promtool reads `Infx3` as one unknown word: no runs of Inf or NaN
        else:
            text = _number(v)
            out.append(text if run == 1 else f"{text}x{run - 1}")
        i = j + 1
    return " ".join(out)


def _same(a, b) -> bool:
    if a is None or b is None or a is STALE or b is STALE:
        return a is b
    return a == b


def _number(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Inf" if v > 0 else "-Inf"
    v = float(f"{v:.12g}")
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)


def _resample(values: list, src: int, dst: int) -> list:
    """Finer: each sample repeated (a 15 s scrape of a 30 s collection returns each sample twice).
    Coarser: the first sample of each slot; a series that ends within a slot is marked stale at the next
    scrape (Prometheus marks a series stale at the first scrape that misses it)."""
    if dst < src:
        k = src // dst
        out = []
        for v in values:
            out.extend([v] + [None if v is STALE else v] * (k - 1))
        return out
    k = dst // src
    out, pending_stale = [], False
    for start in range(0, len(values), k):
        group = values[start:start + k]
        present = [v for v in group if v is not None and v is not STALE]
        if present and group[0] is not STALE:
            out.append(present[0])
            # the series left within this slot: the next scrape finds it gone and marks it stale
            pending_stale = STALE in group[group.index(present[0]):]
        else:
            out.append(STALE if STALE in group or pending_stale else None)
            pending_stale = False
    return out


# --- labels and names --------------------------------------------------------------------------

def _relabel_host(series: str, host: str) -> str:
    other = [h for h in HOST_LABELS if h != host]
    for h in other:
        series = re.sub(rf'([{{,]\s*){h}(\s*=)', rf"\g<1>{host}\g<2>", series)
    return series


def _nvlink_entity(series: str) -> str:
    """dcgm-exporter labels NVLink-entity series with gpu_uuid and model_name (render_metrics.go)."""
    name = _metric_name(series)
    if "_NVLINK_" not in name:
        return series
    labels = series_labels(series)
    renamed = {("gpu_uuid" if k == "UUID" else "model_name" if k == "modelName" else k): v for k, v in labels.items()}
    renamed["nvlink"] = "0"
    return _with_name(series, name, drop=tuple(labels), add=renamed)


def _metric_name(series: str) -> str:
    return series.split("{", 1)[0].strip()


def _with_name(series: str, name: str, drop: tuple[str, ...] = (), add: dict[str, str] | None = None) -> str:
    labels = {k: v for k, v in series_labels(series).items() if k not in drop}
    labels.update(add or {})
    inside = ", ".join(f'{k}="{escape(v)}"' for k, v in labels.items())
    return f"{name}{{{inside}}}"


def new_names(catalog: Catalog) -> dict[str, tuple[str, float]]:
    """Field name as written -> (its dcgm-exporter 4.9 name, factor from the old unit to the new)."""
    out = {}
    for m in catalog.metrics:
        for a in m.aliases:
            if a.since == NEW_NAMES_SINCE:
                out[m.name] = (a.name, 1.0 / a.scale)
    return out


def _renamed(series: list, catalog: Catalog) -> list:
    names = new_names(catalog)
    # a blank / not-supported sentinel is DCGM's int64 marker, not a reading: it keeps its value in any unit
    blank = {m.name: m.valid_max for m in catalog.metrics}
    out = []
    for s, values in series:
        name = _metric_name(s)
        if name in names:
            new, factor = names[name]
            s = new + s[len(name):] if "{" in s else new
            values = [v * factor if isinstance(v, float) and v < blank[name] else v for v in values]
        out.append((s, values))
    return out


# --- event inputs ------------------------------------------------------------------------------

def _carriers(series: list, names: tuple[str, ...], drop: tuple[str, ...]):
    """Series of the event gauge grouped per GPU (UUID): (others, {uuid: [(labels-without-drop, values)]})."""
    others, groups = [], {}
    for s, values in series:
        if _metric_name(s) in names:
            labels = series_labels(s)
            groups.setdefault(labels.get("UUID", labels.get("gpu", "")), []).append((s, values))
        else:
            others.append((s, values))
    return others, groups


def _events(members: list, slots: int, codes_of) -> tuple[list[list[int]], list[set[str]], list[set[int]]]:
    """Per slot: the codes that newly appeared (events), the label sets present (carriers) and the codes set."""
    events: list[list[int]] = [[] for _ in range(slots)]
    present: list[set[str]] = [set() for _ in range(slots)]
    held: list[set[int]] = [set() for _ in range(slots)]
    last: set[int] | None = None
    for i in range(slots):
        codes: set[int] = set()
        seen = False
        for s, values in members:
            v = values[i] if i < len(values) else None
            if v is None or v is STALE:
                continue
            seen = True
            present[i].add(s)
            codes |= codes_of(v)
        if not seen:
            continue
        held[i] = codes
        if last is not None:
            events[i] = sorted(codes - last)
        last = codes
    return events, present, held


def _event_series(others, groups, slots, interval, kind, metric, label, codes_of, names_of, drop, count_held=False):
    """The event counters of dcgm-exporter's collectors: `total` counts onsets (a code newly set), `count` the
    onsets within its window, or with count_held the samples a code was set in within it (the clock-events
    count collector counts every value DCGM sampled in the window with the bit set: a reason that stays set
    keeps counting)."""
    window = max(1, EVENT_WINDOW // interval)
    weight = interval / DCGM_UPDATE if count_held else 1  # each sample stands for this many DCGM samples
    out = list(others)
    for members in groups.values():
        events, present, held = _events(members, slots, codes_of)
        counted = held if count_held else events
        made: dict[str, list] = {}

        def put(series, i, value):
            made.setdefault(series, [None] * slots)[i] = value
        totals: dict[int, int] = {}
        first_slot = next((i for i in range(slots) if present[i]), None)
        for i in range(slots):
            if not present[i]:
                totals = {}   # exporter restart: its counters start again, absent until the next event
                continue
            if i == first_slot:  # codes already set when the replay starts happened before it
                for s in present[i]:
                    for c in codes_of(_value_at(members, s, i)):
                        totals[c] = 1
            for c in events[i]:
                totals[c] = totals.get(c, 0) + 1
            for carrier in sorted(present[i]):
                if kind == "total":
                    for c, n in totals.items():
                        put(_with_name(carrier, metric, drop, {label: names_of(c)}), i, float(n))
                else:
                    recent = {}
                    for j in range(max(0, i - window + 1), i + 1):
                        for c in counted[j]:
                            recent[c] = recent.get(c, 0) + weight
                    recent = {c: float(max(1, round(n))) for c, n in recent.items()}
                    if not recent:
                        put(_with_name(carrier, metric, drop), i, 0.0)
                    for c, n in recent.items():
                        put(_with_name(carrier, metric, drop, {label: names_of(c)}), i, float(n))
        for s, values in made.items():
            out.append((s, _end_with_stale(values)))
    return out


def _value_at(members, series, i):
    for s, values in members:
        if s == series:
            return values[i]
    return 0.0


def _end_with_stale(values: list) -> list:
    """A series the exporter stops sending is marked stale by Prometheus at the next scrape."""
    out = list(values)
    for i in range(1, len(out)):
        if out[i] is None and out[i - 1] is not None and out[i - 1] is not STALE:
            out[i] = STALE
    return out


def _gauge_names(catalog: Catalog, role: str) -> tuple[str, ...]:
    """Every name of the metric of a role (catalog/metrics.yaml roles:): the gauge a dialect rewrites."""
    name = catalog.named(role)
    return catalog.metric(name).names if name else ()


def _written(catalog: Catalog, role: str) -> str:
    """The series a dialect writes: the metric of the role, or its default name where the catalog has none
    (the rules then read no such series, as with an exporter the catalog does not know)."""
    return catalog.named(role) or ROLES[role].default[0]


def _xid_series(series, kind, interval, catalog):
    drop = ("err_code", "err_msg")
    others, groups = _carriers(series, _gauge_names(catalog, "xid_gauge"), drop)
    if kind == "sparse":
        out = list(others)
        for members in groups.values():
            for s, values in members:
                out.append((s, [None if (isinstance(v, float) and v == 0) else v for v in values]))
        return out
    slots = max((len(v) for _, v in series), default=0)
    metric = _written(catalog, "xid_total" if kind == "total" else "xid_count")
    return _event_series(others, groups, slots, interval, kind, metric, "xid",
                         lambda v: {int(v)} if isinstance(v, float) and v > 0 else set(), str, drop)


def _clock_series(series, kind, interval, catalog):
    others, groups = _carriers(series, _gauge_names(catalog, "clock_gauge"), ())
    slots = max((len(v) for _, v in series), default=0)
    metric = _written(catalog, "clock_total" if kind == "total" else "clock_count")
    labels = _clock_event_bits(catalog) if groups else {}
    return _event_series(others, groups, slots, interval, kind, metric, "clock_event",
                         lambda v: {b for b in labels if isinstance(v, float) and int(v) & b},
                         lambda b: labels[b], (), count_held=True)


def _clock_event_bits(catalog: Catalog) -> dict[int, str]:
    """Bit value -> clock_event label: the `bits:` of the clock gauge's metric (catalog/metrics.yaml)."""
    m = catalog.metric(catalog.named("clock_gauge"))
    if not m.bits:
        raise RulesgenError([Diagnostic(m.where.path, m.where.line, m.where.col, "missing-bits",
                                        f"metric {m.name} (role clock_gauge) declares no `bits:`: the clock-count and "
                                        "clock-total dialects name each bit by its clock_event label")])
    return {b.value: b.name for b in m.bits}


def describe() -> list[str]:
    """One line per axis and preset, for `rulesgen replay --help` and the README."""
    return ([f"{k}: {v}" for k, v in AXES.items()]
            + [f"{k} = {v or '(the scenario as written)'}" for k, v in PRESETS.items()])

