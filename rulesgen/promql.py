"""Small PromQL helpers: selectors that include metric aliases and drop DCGM sentinels, label sets
of series, and a structural syntax check (the parse is promql_tree's; promtool stays the judge)."""
from __future__ import annotations

import re

from .model import Metric


def by(labels) -> str:
    return ", ".join(labels)


def selector(metric: Metric, matchers: str, names: tuple[str, ...] | None = None) -> str:
    """The raw series of `metric` under every name it is exported as (old and new names)."""
    names = names or metric.names
    if len(names) == 1:
        return f"{names[0]}{{{matchers}}}"
    return f'{{__name__=~"{"|".join(names)}", {matchers}}}'


def valid(metric: Metric, matchers: str) -> str:
    """Instant values in the metric's unit (aliases scaled), without DCGM's not-supported/blank
    sentinels (about 9.2e18 for int64 fields) and without impossible readings (max_plausible:
    dcgm-exporter passes e.g. a GPU utilisation of 808334905 straight through)."""
    terms = []
    for scale, names in metric.names_by_scale():
        term = f"({selector(metric, matchers, names)} < {format_number(metric.valid_max)})"
        if scale != 1:
            term = f"({term} * {format_number(scale)})"
        if metric.max_plausible is not None:
            term = f"({term} <= {format_number(metric.max_plausible)})"
        terms.append(term)
    return terms[0] if len(terms) == 1 else "(" + " or ".join(terms) + ")"


def with_host(expr: str, host: str, sources: tuple[str, ...]) -> str:
    """Copy whichever input label a series carries (e.g. the host label: Hostname up to dcgm-exporter
    4.8.2, hostname from 4.8.3) into the output label `host`; series with none keep theirs."""
    for src in sources:
        expr = f'label_replace({expr}, "{host}", "$1", "{src}", "(.+)")'
    return expr


_LABEL_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def escape(value: str) -> str:
    """A label value or regex as the inside of a double-quoted PromQL string."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _unescape(value: str) -> str:
    """The inverse of escape, and of Go's strconv.Quote that promtool prints label values with."""
    def one(m: re.Match) -> str:
        code = m.group(1)
        return chr(int(code[1:], 16)) if len(code) > 1 else _ESCAPED.get(code, code)
    return _ESCAPE.sub(one, value)


def label_set(text: str) -> dict[str, str]:
    """`a="b", c="d"` (the inside of a series' braces, as PromQL, promtool and the exposition format
    write it) -> {"a": "b", "c": "d"}, values unescaped."""
    return {k: _unescape(v) for k, v in _LABEL_PAIR.findall(text)}


def series_labels(series: str) -> dict[str, str]:
    """The labels of `name{a="b", ...}` (promtool's input_series notation), without the name."""
    return label_set(series[series.index("{") + 1: series.rindex("}")] if "{" in series else "")


def format_number(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    text = repr(float(value))
    return text.replace("e+", "e")


_PAIRS = {")": "(", "]": "[", "}": "{"}


def syntax_problems(expr: str) -> list[str]:
    """Unbalanced brackets or quotes: the mistakes a template edit makes most often."""
    stack: list[str] = []
    quote = None
    escaped = False
    for ch in expr:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'`":
            quote = ch
        elif ch in "([{":
            stack.append(ch)
        elif ch in ")]}":
            if not stack or stack[-1] != _PAIRS[ch]:
                return [f"unexpected {ch!r}"]
            stack.pop()
    if quote:
        return [f"unterminated string ({quote})"]
    if stack:
        return [f"unclosed {stack[-1]!r}"]
    if not expr.strip():
        return ["empty expression"]
    return []
