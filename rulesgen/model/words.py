"""What the words on a dashboard may not look like: a panel or row title is human words from the catalog,
never PromQL (issue 37: a title was 513 characters of a mangled query). The catalog loader holds the
catalog's titles to it (signals.yaml, baselines.yaml, failure_modes.yaml thresholds) and `rulesgen lint`
every rendered title (rulesgen/checks/dashboard_title.py).

Data and one pure function: no builder, no I/O.
"""
from __future__ import annotations

import re

TITLE_MAX = 80  # a panel or row title, as drawn (a failure mode's title and its first panel's, joined)
CATALOG_TITLE_MAX = 60  # a catalog title: room for the failure mode's prefix and a "(median over 15m)"

# The shapes of PromQL in a text, each with what it is: a selector's braces, a matcher, a range, a call
# (a name touching its parenthesis: "rate(", "max_over_time("), a grouping clause, a metric name.
PROMQL_SHAPES = (
    (re.compile(r"[{}]"), "a selector's braces"),
    (re.compile(r"=~|!~|!=|=="), "a label matcher or comparison"),
    (re.compile(r"\[\s*\$?\w+\s*(:\s*\w*\s*)?\]"), "a range or subquery"),
    (re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\("), "a function call"),
    (re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\("), "a grouping clause"),
    (re.compile(r"__name__|\b[a-z]+:[a-z0-9_]+:[a-z0-9_]+\b|\bDCGM_(FI|EXP)_\w+"), "a series name"),
)


def promql_shape(text: str) -> str | None:
    """What in text looks like PromQL ("a function call: 'rate('"), or None for human words."""
    for pattern, what in PROMQL_SHAPES:
        m = pattern.search(text)
        if m:
            return f"{what}: {m.group(0)!r}"
    return None


def title_problem(text: str, limit: int = TITLE_MAX) -> str | None:
    """Why text cannot be a title (empty, longer than limit, PromQL-shaped), or None."""
    if not text.strip():
        return "empty"
    if len(text) > limit:
        return f"{len(text)} characters, more than {limit}"
    shape = promql_shape(text)
    return f"reads like PromQL ({shape})" if shape else None
