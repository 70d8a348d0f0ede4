"""The words on a panel: titles from recording-rule names, units, and the description every panel
carries (what it shows, what normal looks like, what to do)."""
from __future__ import annotations

from ...durations import format_duration
from ...errors import Collector
from ...load import template_syntax
from ...model import conventions
from ...model.catalog import FailureMode
from ...model.panels import TEXT_KEYS
from ...promql import text as promql
from ...promql import tree as promql_tree
from .context import Context
from .reading import Comparison

WORDS = {"ecc": "ECC", "sbe": "SBE", "dbe": "DBE", "xid": "XID", "pcie": "PCIe", "nvlink": "NVLink", "gpu": "GPU",
         "gpus": "GPUs", "fb": "FB", "sm": "SM", "dram": "DRAM", "rx": "RX", "mad": "MAD", "crc": "CRC"}
# Catalog threshold units that name a Grafana unit; others are plain numbers.
THRESHOLD_UNITS = {"s": "s", "ratio": "percentunit", "C": "celsius", "W": "watt"}
NORMAL_SIDE = {">": "at or below", ">=": "below", "<": "at or above", "<=": "above", "==": "not equal to",
               "!=": "equal to"}
# Functions that keep the unit of the series they summarise.
UNIT_KEEPING = ("avg_over_time", "min_over_time", "max_over_time", "last_over_time", "quantile_over_time")


def one_line(text: str) -> str:
    return " ".join(text.split())


def humanize(name: str) -> str:
    words = name.replace("dcgm_", "").replace(":", "_").split("_")
    text = " ".join(WORDS.get(w, w) for w in words if w)
    return text[:1].upper() + text[1:]


def record_title(record: str) -> str:
    """gpu:dcgm_ecc_sbe:rate_per_minute -> "ECC SBE rate per minute" (plain operations dropped)."""
    _, metric, operation = record.split(":")
    return humanize(metric if operation in ("max", "min", "avg", "ratio", "value") else f"{metric}_{operation}")


def wrapped_record(lhs: str) -> tuple[str, str | None, str | None] | None:
    """(record, function, window) when lhs is one recording rule, alone or inside one function."""
    w = promql_tree.wrapped_series(lhs)
    if not w or not w.selector.name or not promql_tree.is_record(w.selector.name):
        return None
    window = format_duration(w.selector.range) if w.selector.range is not None else None
    return w.selector.name, w.function, window


def comparison_title(c: Comparison) -> str:
    wrapped = wrapped_record(c.lhs)
    if wrapped:
        record, fn, window = wrapped
        if fn is None:
            return record_title(record)
        how = "median" if fn == "quantile_over_time" else fn.replace("_over_time", "")
        return f"{record_title(record)} ({how} over {window})" if fn in UNIT_KEEPING else f"{record_title(record)}: {fn} in {window}"
    if c.threshold:
        return f"{humanize(c.threshold.name)} ({c.threshold.unit})"
    alone = promql_tree.wrapped_series(c.lhs)
    return humanize(alone.selector.name if alone and alone.function is None and alone.selector.name else c.lhs)


def comparison_unit(ctx: Context, c: Comparison) -> str:
    wrapped = wrapped_record(c.lhs)
    if wrapped and (wrapped[1] is None or wrapped[1] in UNIT_KEEPING):
        unit = ctx.unit(wrapped[0])
        # The average of a 0/1 signal is the share of time it was 1.
        return "percentunit" if unit == "bool" and wrapped[1] == "avg_over_time" else unit
    return THRESHOLD_UNITS.get(c.threshold.unit, "short") if c.threshold else "short"


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


def signal_text(ctx: Context, record: str, fallback: str) -> str:
    """The catalog's description of the recording rule, on one line."""
    signal = ctx.signal(record)
    return one_line(signal.description) if signal else fallback


def fm_text(ctx: Context, fm: FailureMode) -> tuple[str, str]:
    return "; ".join(fm.runbook.act), conventions.runbook_url(ctx.settings.runbook_base_url, fm.id)


def _format_value(value: float, unit: str) -> str:
    return f"{promql.format_number(value)} {unit}".strip()


def comparison_description(ctx: Context, fm: FailureMode, c: Comparison) -> str:
    wrapped = wrapped_record(c.lhs)
    signal = ctx.signal(wrapped[0]) if wrapped else None
    if signal:
        shows = one_line(signal.description)
        if wrapped[1]:
            shows += f" Read as {wrapped[1]}(...[{wrapped[2]}]), as alert {c.alert} reads it."
    else:
        what = one_line(c.threshold.description) if c.threshold and c.threshold.description else fm.summary
        shows = f"{what} The value alert {c.alert} compares: `{one_line(c.lhs)}`."
    side = NORMAL_SIDE[c.op]
    if c.threshold:
        normal = (f"{side} {_format_value(c.value, c.threshold.unit)} (dashed line); {c.alert} ({c.severity}) fires "
                  f"past it. Source: {one_line(c.threshold.source)}")
    elif c.value is not None:
        normal = f"{side} {promql.format_number(c.value)}; {c.alert} ({c.severity}) fires past it."
    else:
        normal = f"{side} the dashed series (`{one_line(c.rhs)}`); {c.alert} ({c.severity}) fires past it."
    return describe(shows, normal, *fm_text(ctx, fm))


def record_description(ctx: Context, fm: FailureMode, record: str) -> str:
    normal = f"quiet; {fm.title} alerts when: {fm.summary}"
    return describe(signal_text(ctx, record, record), normal, *fm_text(ctx, fm))
