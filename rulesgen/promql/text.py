"""Small PromQL helpers: selectors that include metric aliases and drop DCGM sentinels, label sets
of series, and a structural syntax check (the parse is promql_tree's; promtool stays the judge)."""
from __future__ import annotations

import re

from . import tree


def by(labels) -> str:
    return ", ".join(labels)


# Names Prometheus' lexer reads, in any case, as a number or a keyword: `max by (inf) (up)`, `by (NaN)` and
# `by (without)` do not parse (promtool 2.42 and 3.5), although promql-parser takes them.
_NOT_GROUPABLE = frozenset({"inf", "nan", "without"})


def grouping_problem(label: str) -> str | None:
    """Why `label` cannot stand in `by (...)` or `on (...)`, a rule's grouping; None when it can."""
    if label.lower() in _NOT_GROUPABLE:
        return (f"{label!r} cannot be a label of a rule's grouping: Prometheus reads it as "
                f"{'a keyword' if label.lower() == 'without' else 'a number'} in by (...)")
    return None


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


def selector_problems(sel: str) -> list[str]:
    """[] when sel is a list of label matchers (the inside of a selector's braces), as PromQL parses it."""
    text = "x{" + sel + "}"
    problems = syntax_problems(text) or tree.problems(text)
    if problems:
        return problems
    alone = tree.wrapped_series(text)
    if not alone or alone.function or alone.selector.name != "x" or not alone.selector.matchers:
        return ["not a list of label matchers"]
    return []
