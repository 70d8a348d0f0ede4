"""Baseline rules (catalog/baselines.yaml): each GPU against its own downsampled history and its peers.

Cost is the design: long windows never read raw samples. Every `interval` (<= 5m) the signal's last
30 minutes are recorded once per GPU (value_30m: a median, or a rate for counters); once an hour that
value is copied into value_30m_hourly, the downsampled history; once a day at midnight UTC its count,
sum and sum of squares are written. The 14-day mean and stddev add up 14 of those daily points per
GPU and signal, not the 40,320 raw samples a 30 s scrape leaves in 14 days. All signals share the
same recording rules (label `signal`), so the evaluation cost grows with GPUs, not with signals.
"""
from __future__ import annotations

from ..durations import format_duration
from ..load.settings import Settings
from ..model import conventions
from ..model.catalog import BASELINE_MODE, BaselineSignal, BaselineStatistics, Catalog
from ..model.output import Rule, RuleGroup
from ..promql import text as promql

# The weekly comparison reads the hourly point within 30 minutes of now minus one week.
WEEK_AGO = "6d23h30m"
# One day of hourly points. Prometheus 2.x range selectors include both ends (3.x and VictoriaMetrics
# exclude the start); a minute short of a day holds exactly 24 hourly points in every engine.
DAY_OF_POINTS = "23h59m"
# The hourly copy and the daily sums run hourly (a daily sum is written in the hour after midnight).
HISTORY_INTERVAL = 3600
# The history mean and stddev change only when a daily sum is written or leaves the window, once a day
# computed every 6 hours, each at most 6 hours after midnight's sums.
STATISTICS_INTERVAL = 6 * 3600
# Baseline records written by the slow groups, and the interval of the group that writes each.
SLOW_RECORDS = {**dict.fromkeys((conventions.BASELINE_HOURLY, conventions.BASELINE_DAILY_COUNT, conventions.BASELINE_DAILY_SUM,
                                 conventions.BASELINE_DAILY_SUMSQ), HISTORY_INTERVAL),
                **dict.fromkeys((conventions.BASELINE_HISTORY_MEAN, conventions.BASELINE_HISTORY_STDDEV), STATISTICS_INTERVAL)}


def recording_rules(catalog: Catalog, settings: Settings, render, t) -> tuple[list[Rule], tuple[RuleGroup, ...]]:
    """The baseline recording rules: (the fast group's, the slow groups: history, statistics). `render(template, where)`
    fills catalog templates, `t` holds the baseline_deviation thresholds (busy_util, node_peers_min,
    fleet_peers_min)."""
    s = settings
    gpu_id = promql.by(s.gpu_identity)
    value, hourly = conventions.BASELINE_VALUE, conventions.BASELINE_HOURLY
    busy, always, relative = [], [], []
    for b in catalog.baselines:
        expr = f'label_replace(\n{_indent(render(b.value, b.where).strip(), 2)},\n  "signal", "{b.signal}", "", ""\n)'
        (relative if b.reads_peers else busy if b.busy_only else always).append(expr)
    terms = always
    if busy:
        # One utilisation window for all busy-only signals, not one per signal. A median: a checkpoint
        # or validation pause shorter than half the window does not make a busy GPU idle.
        either = "\nor\n".join(busy)
        terms = [f"(\n{_indent(either, 2)}\n)\n  and on ({gpu_id}) "
                 f"quantile_over_time(0.5, {catalog.named('util_per_gpu')}[{conventions.BASELINE_SHORT}]) >= {t['busy_util']}"] + always
    fast = [Rule(record=value, expr="\nor\n".join(terms), source=catalog.baselines[0].where if catalog.baselines else None)]
    own = recent(value, s)
    floors = _param({b.signal: b.floor.value for b in catalog.baselines})
    for level, labels, minimum in (("node", (*s.node_labels, "modelName", "signal"), t["node_peers_min"]),
                                   ("fleet", (s.cluster_label, "modelName", "signal"), t["fleet_peers_min"])):
        by = promql.by(labels)
        median, mad = conventions.baseline_peers(level, "median"), conventions.baseline_peers(level, "mad")
        kept = _peers_kept(own, by, floors, catalog.baseline_statistics)
        fast.append(Rule(record=median, expr=(
            f"quantile by ({by}) (0.5,\n{_indent(kept, 2)}\n)\n"
            f"  and on ({by}) count by ({by}) ({own}) >= {minimum}")))
        fast.append(Rule(record=mad, expr=(
            f"quantile by ({by}) (0.5,\n"
            f"  abs(\n{_indent(kept, 4)}\n    - on ({by}) group_left () {recent(median, s)}\n  )\n)")))
    now = recent(value, s)
    if relative:
        # Signals that read the peers' medians: recorded after them, under their own name.
        fast.append(Rule(record=conventions.BASELINE_VALUE_VS_NODE, expr="\nor\n".join(relative)))
        now = f"{now}\nor\n{recent(conventions.BASELINE_VALUE_VS_NODE, s)}"
    fast.append(Rule(record=conventions.BASELINE_DEVIATION_Z, expr=deviation_z_expr(catalog, settings, t)))
    history = [Rule(record=hourly, expr=_once_per(now, hourly, "hour"))]
    # Daily sums of the hourly points: the long-window mean and stddev add up 14 of these per GPU and
    # signal instead of reading 336 hourly points (exact: population variance).
    day = f"{hourly}[{DAY_OF_POINTS}]"
    for record, expr in ((conventions.BASELINE_DAILY_COUNT, f"count_over_time({day})"),
                         (conventions.BASELINE_DAILY_SUM, f"sum_over_time({day})"),
                         (conventions.BASELINE_DAILY_SUMSQ,
                          f"count_over_time({day}) * (stdvar_over_time({day}) + avg_over_time({day}) ^ 2)")):
        history.append(Rule(record=record, expr=_once_per(expr, record, "day")))
    # The history itself, every 6 hours from 14 daily points; the alert and the dashboards read it
    # with last_over_time.
    statistics = (Rule(record=conventions.BASELINE_HISTORY_MEAN, expr=history_mean_expr("", s, catalog.baseline_statistics)),
                  Rule(record=conventions.BASELINE_HISTORY_STDDEV, expr=_stddev_record_expr(s)))
    return fast, (RuleGroup(conventions.BASELINE_HISTORY_GROUP, tuple(history), HISTORY_INTERVAL),
                  RuleGroup(conventions.BASELINE_STATISTICS_GROUP, statistics, STATISTICS_INTERVAL))


def _peers_kept(own: str, by: str, floors: str, stats: BaselineStatistics) -> str:
    """The peers within peer_outlier_z robust z of the median of all peers (its spread: mad_to_sigma x their
    MAD, raised to the signal's floor): the set whose median and MAD the GPUs are compared with. A GPU or a
    node far off is left out of the statistics it is judged by (one-step reweighting), so a hot node that is
    a quarter of the fleet cannot widen the spread that would show it. Computed inline from the values, not
    from records of the first pass: on vmalert, which sees a record written earlier in the same evaluation
    only at the next one, the statistics stay one evaluation behind the values, as before."""
    first = f"quantile by ({by}) (0.5, {own})"
    distance = f"abs({own} - on ({by}) group_left () {first})"
    spread = _at_least(f"{_sigma(stats)} * quantile by ({by}) (0.5, {distance})", floors)
    cut = promql.format_number(stats.peer_outlier_z.value)
    return f"(\n  {own}\n    and {distance}\n      <= on ({by}) group_left () {cut} * {spread}\n)"


def recent(record: str, settings: Settings, matchers: str = "") -> str:
    """The newest point of a baseline record, read with last_over_time over two intervals of the group
    that writes it: an instant selector misses it when the writer runs less often than the lookback
    (the hourly history), and vmalert, whose writes reach the datasource later, would miss a record
    written earlier in the same evaluation."""
    if record in SLOW_RECORDS:
        return history_read(record, matchers)
    return f"last_over_time({_selector(record, matchers)}[{format_duration(2 * settings.baselines.interval)}])"


def _once_per(expr: str, record: str, period: str) -> str:
    """expr, written once an hour (or once a day, in the hour after midnight UTC) by the hourly history
    group; `unless` the last point is recent, so an evaluator that runs every group more often
    (promtool and vmalert-tool at their test interval) still writes one point per period."""
    recent_point = "55m" if period == "hour" else "23h"
    gate = "\n  and on () hour() == 0" if period == "day" else ""
    return f"(\n{_indent(expr, 2)}\n){gate}\n  unless last_over_time({record}[{recent_point}])"


def alert_expr(catalog: Catalog, settings: Settings, t) -> str:
    """The baseline_deviation alert, labelled `signal` and valued with its largest z over the baselines
    (history, history_vs_node, node_peers, fleet_peers), with hysteresis: it enters where a z recorded in
    gpu:dcgm_baseline_deviation:z passes its entry threshold (z, peer_z) and holds, once pending or firing,
    while any z of the GPU and signal stays in the record (above z_release, peer_z_release). Whole-degree
    sensors make the z jump by a sensor step: without the hold each step under the entry threshold would
    restart the alert's `for`. One alert per GPU and signal whichever baselines see the deviation (a GPU far
    from its history and its peers at once, or judged by its peers first and its history later, is one
    fault): the kind of baseline is not part of the alert's identity."""
    z = conventions.BASELINE_DEVIATION_Z
    history, peers = 'baseline=~"history|history_vs_node"', 'baseline=~"node_peers|fleet_peers"'
    on = promql.by((*settings.gpu_identity, "signal"))
    active = f'ALERTS{{alertstate=~"pending|firing", failure_mode="{BASELINE_MODE}"}}'
    by = promql.by((*settings.gpu_labels, "signal"))
    return (f"max by ({by}) (\n"
            f"  {recent(z, settings, history)} > {t['z']}\n"
            f"  or {recent(z, settings, peers)} > {t['peer_z']}\n"
            f"  or {recent(z, settings)}\n    and on ({on}) {active}\n)")


def deviation_z_expr(catalog: Catalog, settings: Settings, t) -> str:
    """Each GPU's z against each baseline (label `baseline`) where it passes the release threshold, the
    signal's minimum deviation and its same-load guard. Signals are compared all at once, with their floors,
    minimum deviations and directions as small constant vectors keyed by `signal`: every series selector
    costs an index lookup at each evaluation, so one term per group of signals sharing a "same load"
    guard, not one per signal. Recorded once, so the alert reads it for entry and hold without computing
    every term twice."""
    by_name = {b.signal: b for b in catalog.baselines}
    groups: dict[tuple[str | None, bool], list[BaselineSignal]] = {}
    for b in catalog.baselines:
        if b.alert:
            groups.setdefault((b.same_load, b.reads_peers), []).append(b)
    terms = []
    for kind in ("history", "node", "fleet"):
        for (guard_name, reads_peers), signals in groups.items():
            if kind != "history":
                signals = [b for b in signals if b.peers]
            if not signals:
                continue
            guard = by_name.get(guard_name) if guard_name else None
            if kind != "history":
                terms.append(_labelled(_peer_term(signals, guard, kind, settings, t, catalog.baseline_statistics),
                                       f"{kind}_peers"))
                continue
            term = _history_term(signals, guard, settings, t)
            for b in signals:
                if b.alert_signal:
                    term = f'label_replace(\n  (\n{_indent(term, 4)}\n  ),\n  "signal", "{b.alert_signal}", "signal", "{b.signal}"\n)'
            terms.append(_labelled(term, "history_vs_node" if reads_peers else "history"))
    by = ", ".join((*settings.gpu_labels, "signal", "baseline"))
    body = "\nor\n".join(terms)
    return f"max by ({by}) (\n{_indent(body, 2)}\n)"


def _param(values: dict[str, float]) -> str:
    """A constant per signal: label_replace(vector(x), "signal", ...) or ... (no storage access)."""
    return "(" + " or ".join(f'label_replace(vector({promql.format_number(v)}), "signal", "{k}", "", "")'
                             for k, v in values.items()) + ")"


def _matching(signals: list[BaselineSignal]) -> str:
    return 'signal=~"' + "|".join(b.signal for b in signals) + '"'


def _at_least(expr: str, floor: str) -> str:
    """max(expr, floor) per signal, keeping expr's labels."""
    return f"({expr} >= on (signal) group_left () {floor}\n  or {expr} * 0 + on (signal) group_left () {floor})"


def history_deviation(signals: list[BaselineSignal], settings: Settings) -> tuple[str, str]:
    """(delta, spread) against the GPU's own history: the value now minus the history mean, positive in
    the harmful direction, and the history stddev raised to each signal's floor."""
    m = _matching(signals)
    value, mean = value_record(signals[0]), conventions.BASELINE_HISTORY_MEAN
    delta = f"(({recent(value, settings, m)} - {recent(mean, settings, m)}) * on (signal) group_left () {_direction(signals)})"
    floor = _param({b.signal: b.floor.value for b in signals})
    return delta, f"{_at_least(recent(conventions.BASELINE_HISTORY_STDDEV, settings, m), floor)}"


def history_z(signals: list[BaselineSignal], settings: Settings) -> str:
    """The z the alert compares with `z`, one series per GPU and signal (the dashboards draw it)."""
    delta, spread = history_deviation(signals, settings)
    return _z(delta, spread)


def _history_term(signals: list[BaselineSignal], guard: BaselineSignal | None, settings: Settings, t) -> str:
    delta, spread = history_deviation(signals, settings)
    usual = None
    if guard:
        g = _of(guard.signal)
        usual = f"{recent(value_record(guard), settings, g)} / {recent(conventions.BASELINE_HISTORY_MEAN, settings, g)}"
    return _deviation_term(signals, delta, spread, t["z_release"], usual, settings, t)


def _peer_deviation(signals: list[BaselineSignal], level: str, settings: Settings, stats: BaselineStatistics) -> tuple[str, str]:
    """(delta, spread) against the busy same-model peers of the node or fleet: the value now minus their
    median, positive in the harmful direction, and mad_to_sigma x their MAD raised to each signal's floor."""
    on = promql.by((*_peer_labels(level, settings), "signal"))
    m = _matching(signals)
    median, mad = conventions.baseline_peers(level, "median"), conventions.baseline_peers(level, "mad")
    delta = (f"(({recent(conventions.BASELINE_VALUE, settings, m)} - on ({on}) group_left () {recent(median, settings, m)})"
             f" * on (signal) group_left () {_direction(signals)})")
    spread = _at_least(f"{_sigma(stats)} * {recent(mad, settings, m)}", _param({b.signal: b.floor.value for b in signals}))
    return delta, f"on ({on}) group_left () {spread}"


def peer_z(signals: list[BaselineSignal], level: str, settings: Settings, stats: BaselineStatistics) -> str:
    """The robust z the alert compares with `peer_z`, one series per GPU and signal (the dashboards draw it)."""
    delta, spread = _peer_deviation(signals, level, settings, stats)
    return _z(delta, spread)


def _peer_term(signals: list[BaselineSignal], guard: BaselineSignal | None, level: str, settings: Settings, t,
               stats: BaselineStatistics) -> str:
    delta, spread = _peer_deviation(signals, level, settings, stats)
    usual = None
    if guard:
        g = _of(guard.signal)
        labels = promql.by(_peer_labels(level, settings))
        usual = (f"{recent(conventions.BASELINE_VALUE, settings, g)} / on ({labels}) group_left () "
                 f"{recent(conventions.baseline_peers(level, 'median'), settings, g)}")
    return _deviation_term(signals, delta, spread, t["peer_z_release"], usual, settings, t)


def _direction(signals: list[BaselineSignal]) -> str:
    return _param({b.signal: 1 if b.direction == "up" else -1 for b in signals})


def _deviation_term(signals, delta: str, spread: str, z: float, usual: str | None, settings: Settings, t) -> str:
    """delta / spread above z, delta above each signal's minimum, and (with a "same load" guard) the
    guard signal's ratio `usual` at most same_load_ratio above 1: a heavier load explains a hotter or slower
    GPU, a lighter one never does."""
    lines = [
        f"{_z(delta, spread)}\n  > {z}",
        f"and {delta} > on (signal) group_left () {_param({b.signal: b.min_delta.value for b in signals})}",
    ]
    if usual:
        lines.append(f"and on ({promql.by(settings.gpu_identity)}) {usual} - 1 < {t['same_load_ratio']}")
    return "\n".join(lines)


def _z(delta: str, spread: str) -> str:
    return f"{delta}\n  / {spread}"


def _window_sum(record: str, matchers: str, settings: Settings) -> str:
    return f"sum_over_time({_selector(record, matchers)}[{_days(settings.baselines.window)}])"


def _selector(record: str, matchers: str) -> str:
    return f"{record}{{{matchers}}}" if matchers else record


def _of(signal: str) -> str:
    return f'signal="{signal}"'


def history_mean_expr(matchers: str, settings: Settings, stats: BaselineStatistics) -> str:
    """Mean of the GPU's hourly points over the window (or, with weekly seasonality, of the points
    around the same time one week earlier when there are any), only for a warm history."""
    total = _window_sum(conventions.BASELINE_DAILY_SUM, matchers, settings)
    points = _window_sum(conventions.BASELINE_DAILY_COUNT, matchers, settings)
    if settings.baselines.seasonality == "weekly":
        mean = (f"avg_over_time({_selector(conventions.BASELINE_HOURLY, matchers)}[59m] offset {WEEK_AGO})\n"
                f"  or {total}\n  / {points}")
        return f"(\n{_indent(mean, 2)}\n)\nand {history_warm(matchers, settings, stats)}"
    # history_warm inlined: the point count is the divisor, so it is summed once (window sums are
    # the cost of this rule).
    return (f"{total}\n  / ({points} >= {_min_points(stats)})\n"
            f"and {_days_present(matchers, settings)} >= {settings.baselines.min_days}")


def history_stddev_expr(matchers: str, settings: Settings, mean: str | None = None) -> str:
    """Population stddev of the window's hourly points: sqrt(E[x^2] - E[x]^2) from the daily sums.
    `mean`: an expression for the window mean, if one is at hand (else it is summed here)."""
    n = _window_sum(conventions.BASELINE_DAILY_COUNT, matchers, settings)
    mean = mean or f"({_window_sum(conventions.BASELINE_DAILY_SUM, matchers, settings)} / {n})"
    return f"sqrt(clamp_min({_window_sum(conventions.BASELINE_DAILY_SUMSQ, matchers, settings)} / {n} - {mean} ^ 2, 0))"


def _stddev_record_expr(settings: Settings) -> str:
    """The stddev record: the window's own mean, not the mean record's value (vmalert does not see a record
    written earlier in the same evaluation, and a mean a day old would skew E[x^2] - E[x]^2 by 2 x mean x
    its change). The mean record only gates it to warm histories. Its window sums cost a few hundred ms
    at 800 GPUs, once every 6 hours."""
    return f"{history_stddev_expr('', settings)}\n  and {recent(conventions.BASELINE_HISTORY_MEAN, settings)}"


def history_warm(matchers: str, settings: Settings, stats: BaselineStatistics) -> str:
    """The cold-start rule: min_history days of daily points (days with busy hours) in the window, and
    at least a day's worth of hourly points, before the GPU's own history speaks."""
    return (f"{_days_present(matchers, settings)} >= {settings.baselines.min_days}\n"
            f"and {_window_sum(conventions.BASELINE_DAILY_COUNT, matchers, settings)} >= {_min_points(stats)}")


def _days_present(matchers: str, settings: Settings) -> str:
    """Days with a daily point (days with busy hours) in the window."""
    return f"count_over_time({_selector(conventions.BASELINE_DAILY_COUNT, matchers)}[{_days(settings.baselines.window)}])"


def value_record(b: BaselineSignal) -> str:
    """The record of a signal's value now: signals that read the peers' medians have their own."""
    return conventions.BASELINE_VALUE_VS_NODE if b.reads_peers else conventions.BASELINE_VALUE


def history_read(record: str, matchers: str = "") -> str:
    """A record of the slow groups (written hourly or every 6 hours) for an instant or range query: its newest point."""
    return f"last_over_time({_selector(record, matchers)}[{format_duration(2 * SLOW_RECORDS[record])}])"


def _peer_labels(level: str, settings: Settings) -> tuple[str, ...]:
    return (*settings.node_labels, "modelName") if level == "node" else (settings.cluster_label, "modelName")


def _sigma(stats: BaselineStatistics) -> str:
    """Robust spread: the MAD times the normal consistency constant (one outlier cannot widen it)."""
    return promql.format_number(stats.mad_to_sigma.value)


def _min_points(stats: BaselineStatistics) -> str:
    """The fewest hourly points a history may have, whatever its age: a mean and stddev need some data."""
    return promql.format_number(stats.min_history_points.value)


def _labelled(expr: str, baseline: str) -> str:
    return f'label_replace(\n  (\n{_indent(expr, 4)}\n  ),\n  "baseline", "{baseline}", "", ""\n)'


def _days(seconds: int) -> str:
    return f"{seconds // 86400}d"


def _indent(text: str, n: int) -> str:
    return "\n".join((" " * n + line) if line else line for line in text.splitlines())
