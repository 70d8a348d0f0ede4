"""`rulesgen replay SCENARIO --plot OUT.png`: the scenario's input series for the GPUs its
expectations name, with the time each alert was pending and firing shaded.

Alert states come from the real promtool: one promql_expr_test per evaluation time asks for ALERTS
with the time carried in a label (promtool prints values with two significant digits, labels
exactly), and replay's parser reads promtool's "got:" lines. matplotlib is optional (`pip install
'dcgm-rulesgen[plot]'`); only draw() needs it, with the non-interactive Agg backend.
"""
from __future__ import annotations

import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ..builders.promtool_tests import listing_test
from ..durations import format_duration
from ..load.scenarios import STALE, Scenario, expand
from ..model.catalog import Catalog
from ..promql.text import series_labels
from .replay import got_series, group_order, run_test

MAX_PANELS = 5


class PlotUnavailable(Exception):
    """matplotlib is not installed."""


def expand_values(notation: str) -> list[float | None]:
    """promtool's expanding notation, one value per interval; None for `_` (missing) and `stale`."""
    return [None if v is STALE else v for v in expand(notation)]


@dataclass(frozen=True)
class PlottedSeries:
    metric: str
    labels: tuple[tuple[str, str], ...]
    times: tuple[int, ...]  # seconds from the start
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class Span:
    alertname: str
    labels: tuple[tuple[str, str], ...]
    state: str  # pending | firing
    start: int
    end: int  # exclusive: the evaluation after the last one in this state


@dataclass(frozen=True)
class PlotData:
    scenario: Scenario
    series: tuple[PlottedSeries, ...]
    spans: tuple[Span, ...]
    gpus: tuple[tuple[tuple[str, str], ...], ...]  # label sets of the plotted GPUs

    @property
    def metrics(self) -> list[str]:
        return list(dict.fromkeys(s.metric for s in self.series))


def _metric(series: str) -> str:
    return series.split("{", 1)[0].strip()


def plotted_gpus(scenario: Scenario, host_label: str) -> list[dict[str, str]]:
    """The GPUs the expectations name (host and gpu); for a normal scenario, its first GPU."""
    gpus = [{k: v for k, v in e.labels if k in (host_label, "gpu")} for e in scenario.expect]
    if not any(gpus):
        first = next((series_labels(s) for s, _ in scenario.series if "gpu" in series_labels(s)), {})
        gpus = [{k: v for k, v in first.items() if k in (host_label, "gpu")}]
    return [g for i, g in enumerate(gpus) if g and g not in gpus[:i]]


def plotted_series(scenario: Scenario, gpus: list[dict[str, str]], preferred: list[str]) -> list[PlottedSeries]:
    """Input series of the GPUs, the failure modes' own metrics first, at most MAX_PANELS metrics."""
    chosen = [(s, v) for s, v in scenario.series if any(g.items() <= series_labels(s).items() for g in gpus)]
    metrics = sorted({_metric(s) for s, _ in chosen}, key=lambda m: (m not in preferred, preferred.index(m) if m in preferred else 0, m))
    keep = set(metrics[:MAX_PANELS])
    out = []
    for series, values in chosen:
        if _metric(series) in keep:
            expanded = expand_values(values)
            out.append(PlottedSeries(_metric(series), tuple(sorted(series_labels(series).items())),
                                     tuple(i * scenario.interval for i in range(len(expanded))), tuple(expanded)))
    return sorted(out, key=lambda s: (metrics.index(s.metric), s.labels))


def alert_states_test(scenario: Scenario, rule_files: list[str], order: list[str]) -> dict:
    """A promtool test that lists ALERTS at every evaluation time, the time carried in label `at`."""
    doc = listing_test(scenario, rule_files, order)
    step = scenario.evaluation_interval
    doc["tests"][0]["promql_expr_test"] = [
        {"expr": f'label_replace(ALERTS, "at", "{t}", "", "")', "eval_time": format_duration(t), "exp_samples": []}
        for t in range(0, scenario.duration + 1, step)]
    return doc


def spans_from_states(states: list[dict[str, str]], step: int) -> list[Span]:
    """Join consecutive evaluations of one alert series in one state into spans."""
    by_series: dict[tuple, dict[int, str]] = {}
    for labels in states:
        key = tuple(sorted((k, v) for k, v in labels.items() if k not in ("alertstate", "at")))
        by_series.setdefault(key, {})[int(labels["at"])] = labels["alertstate"]
    spans = []
    for key, timeline in sorted(by_series.items()):
        name = dict(key).get("alertname", "?")
        times = sorted(timeline)
        start = times[0]
        for previous, t in zip(times, times[1:] + [None]):
            if t is None or timeline[t] != timeline[previous] or t != previous + step:
                spans.append(Span(name, key, timeline[previous], start, previous + step))
                start = t
    return sorted(spans, key=lambda s: (s.start, s.alertname, s.labels, s.state))


def alert_spans(scenario: Scenario, rule_paths: list[Path]) -> list[Span]:
    rule_files = [str(p.resolve()) for p in rule_paths]
    with tempfile.TemporaryDirectory(prefix="rulesgen-plot-") as tmp:
        output = run_test(alert_states_test(scenario, rule_files, group_order(rule_paths)), Path(tmp), "states")
    return spans_from_states(got_series(output), scenario.evaluation_interval)


def plot_data(scenario: Scenario, rule_paths: list[Path], catalog: Catalog, host_label: str) -> PlotData:
    gpus = plotted_gpus(scenario, host_label)
    modes = {e.failure_mode for e in scenario.expect}
    preferred = list(dict.fromkeys([m for fm in catalog.failure_modes if fm.id in modes for m in fm.metrics]
                                   + list(catalog.named_all("plot_context"))))  # the physics of a busy GPU
    on_gpus = [s for s in alert_spans(scenario, rule_paths)
               if "gpu" not in dict(s.labels) or any(g.items() <= dict(s.labels).items() for g in gpus)]
    return PlotData(scenario, tuple(plotted_series(scenario, gpus, preferred)), tuple(on_gpus),
                    tuple(tuple(sorted(g.items())) for g in gpus))


def pyplot():
    """matplotlib's pyplot on the non-interactive Agg backend; PlotUnavailable without matplotlib (`replay
    --plot` asks first, before a replay that would be wasted)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable("--plot needs matplotlib, which is not installed: pip install 'dcgm-rulesgen[plot]' "
                              "(or replay without --plot)") from exc
    return plt


def draw(data: PlotData, out: Path, host_label: str = "Hostname") -> None:
    """An alert timeline (one bar per alert series: pending light, firing dark), then one panel per
    metric (hours on x) with the expected failure modes' alerts shaded the same way."""
    plt = pyplot()
    metrics = data.metrics
    fig, axes = plt.subplots(len(metrics) + 1, 1, figsize=(11, 2.2 + 1.9 * len(metrics)), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [1.2] + [2] * len(metrics)})
    colors = plt.get_cmap("tab10").colors
    names = sorted({s.alertname for s in data.spans})
    color = {name: colors[(i + 3) % len(colors)] for i, name in enumerate(names)}
    _alert_timeline(axes[0, 0], data, color, host_label)
    expected = {e.failure_mode for e in data.scenario.expect}
    for ax, metric in zip(axes[1:, 0], metrics):
        for s in (s for s in data.series if s.metric == metric):
            labels = dict(s.labels)
            ax.plot([t / 3600 for t in s.times], [float("nan") if v is None else v for v in s.values], linewidth=1,
                    label=f"{labels.get(host_label, '')} gpu {labels.get('gpu', '?')}")
        for span in data.spans:
            if dict(span.labels).get("failure_mode") in expected:
                ax.axvspan(span.start / 3600, span.end / 3600, color=color[span.alertname],
                           alpha=PENDING_ALPHA if span.state == "pending" else FIRING_ALPHA / 3, linewidth=0)
        ax.set_ylabel(metric.replace("DCGM_FI_", "").replace("DCGM_EXP_", ""), fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
    for ax in axes[:, 0]:
        for e in data.scenario.expect:
            ax.axvline(e.after / 3600, color="black", linestyle="--", linewidth=0.8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("hours since the start of the replay (dashed line: the fault, `expect.after`)", fontsize=8)
    first_sentence = data.scenario.description.split(". ")[0].rstrip(".")
    fig.suptitle(textwrap.fill(f"{data.scenario.name}: {first_sentence}", 110), fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


PENDING_ALPHA, FIRING_ALPHA = 0.25, 0.85


def _alert_timeline(ax, data: PlotData, color: dict, host_label: str) -> None:
    rows = list(dict.fromkeys((s.alertname, s.labels) for s in data.spans))
    for y, (name, labels) in enumerate(rows):
        for span in (s for s in data.spans if (s.alertname, s.labels) == (name, labels)):
            ax.broken_barh([(span.start / 3600, (span.end - span.start) / 3600)], (y - 0.35, 0.7), color=color[name],
                           alpha=PENDING_ALPHA if span.state == "pending" else FIRING_ALPHA, linewidth=0)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{name} ({dict(labels).get(host_label, '')} gpu {dict(labels).get('gpu', '-')})"
                        for name, labels in rows], fontsize=7)
    ax.set_ylim(-0.6, max(len(rows), 1) - 0.4)
    ax.invert_yaxis()
    ax.set_title("alerts: pending (light), firing (dark)" if rows else "alerts: none pending or firing", fontsize=8)
