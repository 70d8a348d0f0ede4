"""The words on a panel, all from the catalog: titles (signals.yaml and failure_modes.yaml titles, never the
text of a query), units (the signals' Grafana unit ids) and the description every panel carries (what it
shows, what normal looks like, what to do)."""
from __future__ import annotations

from dataclasses import dataclass

from ...durations import format_duration
from ...errors import Collector
from ...load import template_syntax
from ...model import conventions
from ...model.catalog import FailureMode, humanized
from ...model.panels import TEXT_KEYS
from ...promql import text as promql
from ...promql import tree as promql_tree
from .context import Context
from .reading import Comparison

# Catalog threshold units that name a Grafana unit; others are plain numbers.
THRESHOLD_UNITS = {"s": "s", "ratio": "percentunit", "C": "celsius", "W": "watt"}
NORMAL_SIDE = {">": "at or below", ">=": "below", "<": "at or above", "<=": "above", "==": "not equal to",
               "!=": "equal to"}
# Functions that keep the unit of the series they summarise, and how a title says them.
UNIT_KEEPING = {"avg_over_time": "avg", "min_over_time": "min", "max_over_time": "max", "last_over_time": "last",
                "quantile_over_time": "median"}
# Other range functions an alert reads one series with, and how a title says them ("Power draw: changes in 10m").
RANGE_WORDS = {"changes": "changes", "increase": "increase", "resets": "resets", "count_over_time": "samples"}
# Series Prometheus writes itself: not in the catalog, so their words are here (title, unit, description).
ENGINE_WORDS = {"up": ("dcgm-exporter target up", "none",
                       "1 while Prometheus scrapes the dcgm-exporter target, 0 while its scrapes fail.")}


def one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Words:
    """What the catalog says about one series: its title, its unit, its description."""
    title: str
    unit: str
    description: str


def series_words(ctx: Context, name: str) -> Words | None:
    """The catalog's words for a recording rule (signals.yaml title, unit, description) or Prometheus's own
    series (ENGINE_WORDS); None for anything else: a panel is never titled from a name or an expression."""
    signal = ctx.signal(name)
    if signal is not None:
        return Words(signal.panel_title, signal.unit, one_line(signal.description))
    if name in ENGINE_WORDS:
        return Words(*ENGINE_WORDS[name])
    return None


@dataclass(frozen=True)
class Read:
    """A comparison's left side when it is one series, alone or inside one range function."""
    words: Words
    function: str | None
    window: str | None


def one_series(ctx: Context, expr: str) -> Read | None:
    """(the series' words, function, window) when expr reads one series the catalog names, alone or inside
    one range function a title can say; None otherwise."""
    w = promql_tree.wrapped_series(expr)
    if not w or not w.selector.name:
        return None
    words = series_words(ctx, w.selector.name)
    if words is None or (w.function is not None and w.function not in UNIT_KEEPING and w.function not in RANGE_WORDS):
        return None
    window = format_duration(w.selector.range) if w.selector.range is not None else None
    return Read(words, w.function, window)


def comparison_title(ctx: Context, c: Comparison) -> str | None:
    """The title of the panel of a comparison an alert makes, in the catalog's words: the series it reads
    ("GPU temperature (median over 4m)"), else the threshold it is compared with (failure_modes.yaml title),
    else None: the comparison is not drawn, the records it reads are (panels.alert_panels)."""
    read = one_series(ctx, c.lhs)
    if read:
        if read.function is None:
            return read.words.title
        if read.function in UNIT_KEEPING:
            return f"{read.words.title} ({UNIT_KEEPING[read.function]} over {read.window})"
        return f"{read.words.title}: {RANGE_WORDS[read.function]} in {read.window}"
    if c.threshold:
        return c.threshold.panel_title
    return None


def comparison_unit(ctx: Context, c: Comparison) -> str:
    read = one_series(ctx, c.lhs)
    if read and (read.function is None or read.function in UNIT_KEEPING):
        # The average of a 0/1 signal is the share of time it was 1.
        return "percentunit" if read.words.unit == "bool" and read.function == "avg_over_time" else read.words.unit
    if read is None and c.threshold:
        return THRESHOLD_UNITS.get(c.threshold.unit, "short")
    return "short"


def describe(shows: str, normal: str, do: str, runbook: str = "") -> str:
    parts = [f"**Shows:** {shows}", f"**Normal:** {normal}", f"**Do:** {do}"]
    return "\n\n".join(parts + ([f"Runbook: {runbook}"] if runbook else []))


def panel_text(ctx: Context, text_id: str, runbook: str = "", **values) -> str:
    """A panel's description from its catalog text (dashboards.yaml texts:), the placeholders filled with
    values (panel_specs.TEXTS names them, checked at load); empty when the catalog gives none."""
    text = next((t for t in ctx.catalog.panel_texts if t.id == text_id), None)
    if text is None:
        return ""
    errors = Collector()
    parts = [template_syntax.render(getattr(text, key), values, text.where, errors, f"dashboards.yaml text {text_id} {key}")
             for key in TEXT_KEYS]
    errors.raise_if_any()
    return describe(*parts, runbook)


def panel_title(ctx: Context, text_id: str, fallback: str, **values) -> str:
    """A hand-made panel's title: its catalog text's `title` (dashboards.yaml texts:), the placeholders filled
    with values; fallback (the builder's words) for a catalog written before titles were read from it."""
    text = next((t for t in ctx.catalog.panel_texts if t.id == text_id), None)
    if text is None or not text.title:
        return fallback
    errors = Collector()
    title = template_syntax.render(text.title, values, text.where, errors, f"dashboards.yaml text {text_id} title")
    errors.raise_if_any()
    return one_line(title)


def signal_text(ctx: Context, record: str, fallback: str) -> str:
    """The catalog's description of the recording rule, on one line."""
    signal = ctx.signal(record)
    return one_line(signal.description) if signal else fallback


def fm_text(ctx: Context, fm: FailureMode) -> tuple[str, str]:
    return "; ".join(fm.runbook.act), conventions.runbook_url(ctx.settings.runbook_base_url, fm.id)


def _format_value(value: float, unit: str) -> str:
    return f"{promql.format_number(value)} {unit}".strip()


def reference_words(ctx: Context, expr: str) -> str:
    """What a reference series (the right side of a comparison) is, in the catalog's words."""
    titles = [w.title for n in promql_tree.names_read(expr) if (w := series_words(ctx, n))]
    return ", ".join(dict.fromkeys(titles)) or "the alert's reference"


def comparison_description(ctx: Context, fm: FailureMode, c: Comparison) -> str:
    """What the panel shows, what normal looks like, what to do: the catalog's words (the series' description,
    the threshold's, its source, the runbook), never the expression."""
    read = one_series(ctx, c.lhs)
    if read:
        shows = read.words.description
        if read.function:
            shows += f" Read over {read.window} ({read.function}), as alert {c.alert} reads it."
    else:
        what = one_line(c.threshold.description) if c.threshold and c.threshold.description else one_line(fm.summary)
        shows = f"{what} The value alert {c.alert} compares with its threshold."
    side = NORMAL_SIDE[c.op]
    if c.threshold:
        normal = (f"{side} {_format_value(c.value, c.threshold.unit)} (dashed line); {c.alert} ({c.severity}) fires "
                  f"past it. Source: {one_line(c.threshold.source)}")
    elif c.value is not None:
        normal = f"{side} {promql.format_number(c.value)}; {c.alert} ({c.severity}) fires past it."
    else:
        normal = f"{side} the dashed line ({reference_words(ctx, c.rhs)}); {c.alert} ({c.severity}) fires past it."
    return describe(shows, normal, *fm_text(ctx, fm))


def record_title(ctx: Context, record: str) -> str:
    """A recording rule's panel title: its signals.yaml title."""
    words = series_words(ctx, record)
    return words.title if words else humanized(record.split(":")[1])  # a record rulesgen writes itself


def record_description(ctx: Context, fm: FailureMode, record: str) -> str:
    normal = f"quiet; {fm.title} alerts when: {one_line(fm.summary)}"
    return describe(signal_text(ctx, record, record), normal, *fm_text(ctx, fm))
