"""Small PromQL helpers: selectors that include metric aliases and drop DCGM sentinels,
and a structural syntax check (the full parse is promtool's, in the tests and `rulesgen render`
when promtool is available)."""
from __future__ import annotations

import re

from .model import Metric


def by(labels) -> str:
    return ", ".join(labels)


def selector(metric: Metric, matchers: str) -> str:
    """The raw series of `metric` under every name it is exported as (old and new names)."""
    if len(metric.names) == 1:
        return f"{metric.name}{{{matchers}}}"
    names = "|".join(metric.names)
    return f'{{__name__=~"{names}", {matchers}}}'


def valid(metric: Metric, matchers: str) -> str:
    """Instant values below the not-supported/blank sentinel (about 9.2e18 for int64 fields)."""
    return f"({selector(metric, matchers)} < {format_number(metric.valid_max)})"


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


RECORD_TOKEN = re.compile(r"(?<![\w:\"'])([a-z_][a-z0-9_]*:[a-z0-9_:]*[a-z0-9_])(?![\w\"'])")


def recorded_names(expr: str) -> set[str]:
    """Names that look like recording rules (level:metric:operations) outside of strings."""
    without_strings = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    without_ranges = re.sub(r"\[[^\]]*\]", "[]", without_strings)
    return set(RECORD_TOKEN.findall(without_ranges))
