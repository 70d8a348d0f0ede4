"""The PromQL syntax tree of every generated expression, and every walk over it (printing a tree back
is promql_print.py; the dependency graph of a rule set is rule_graph.py).

Rules are built as text (catalog templates and string assembly, so the rendered files keep their
layout); everything that reads an expression reads its tree, parsed once per text by promql-parser
(promtool stays the final judge): the series it reads, the recording rules it names, the range
functions and their windows, the aggregation labels, the comparisons it makes.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

import promql_parser as pp

Expr = pp.Expr
COMPARISON_OPS = ("==", "!=", ">", "<", ">=", "<=")
_MATCH_OPS = ((pp.MatchOp.Equal, "="), (pp.MatchOp.NotEqual, "!="), (pp.MatchOp.Re, "=~"), (pp.MatchOp.NotRe, "!~"))


class PromQLSyntaxError(ValueError):
    """The parser's message for a text that is not PromQL."""


@lru_cache(maxsize=4096)
def parse(text: str) -> Expr:
    """The tree of `text` (cached by text: every rule is parsed once however many walks read it)."""
    try:
        return pp.parse(text)
    except (ValueError, RuntimeError) as exc:  # promql-parser raises ValueError with the parser's message
        raise PromQLSyntaxError(str(exc)) from None


def problems(text: str) -> list[str]:
    """[] when `text` parses, else what is wrong. promql-parser's Python binding says only "invalid promql
    query", so the message quotes the rendered expression (on one line) for the reader to see where."""
    try:
        parse(text)
    except PromQLSyntaxError as exc:
        return [f"does not parse as PromQL ({exc}): {' '.join(text.split())}"]
    return []


def as_tree(expr: Expr | str) -> Expr:
    return parse(expr) if isinstance(expr, str) else expr


def seconds(delta: timedelta | None) -> int | None:
    return None if delta is None else int(delta.total_seconds())


# ------------------------------------------------------------------------------------------------
# walking
# ------------------------------------------------------------------------------------------------

def children(e: Expr) -> list[Expr]:
    """The sub-expressions of e, in the order they are written."""
    if isinstance(e, pp.BinaryExpr):
        return [e.lhs, e.rhs]
    if isinstance(e, pp.AggregateExpr):
        return [e.param, e.expr] if e.param is not None else [e.expr]
    if isinstance(e, pp.Call):
        return list(e.args)
    if isinstance(e, (pp.ParenExpr, pp.UnaryExpr, pp.SubqueryExpr)):
        return [e.expr]
    if isinstance(e, pp.MatrixSelector):
        return [e.vector_selector]
    return []


def nodes(expr: Expr | str) -> Iterator[Expr]:
    """Every node, depth first, in the order they are written."""
    todo = [as_tree(expr)]
    while todo:
        e = todo.pop()
        yield e
        todo.extend(reversed(children(e)))


@dataclass(frozen=True)
class Selector:
    """A series selector and how it is read: instant (`range` None) or over a range `name[range]`,
    and the function it is an argument of (with its range), if any."""
    name: str | None
    matchers: tuple[tuple[str, str, str], ...]  # (label, op, value), op one of = != =~ !~
    range: int | None = None  # seconds
    function: str | None = None
    offset: int | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The metric names it selects: its name, or those a __name__ matcher lists (`a|b`)."""
        if self.name:
            return (self.name,)
        out: list[str] = []
        for label, op, value in self.matchers:
            if label == "__name__" and op in ("=", "=~"):
                parts = value.split("|") if op == "=~" else [value]
                if all(part and all(ch.isalnum() or ch in "_:" for ch in part) for part in parts):
                    out += parts
        return tuple(out)

    def may_select(self, labels: dict[str, str]) -> bool:
        """Whether a series with these labels (others unknown) can match every matcher."""
        for label, op, value in self.matchers:
            if label not in labels:
                continue
            have = labels[label]
            if op in ("=", "!="):
                hit = have == value
            else:
                try:
                    hit = re.fullmatch(value, have) is not None  # a label value against the matcher's regex
                except re.error:
                    return True
            if hit != (op in ("=", "=~")):
                return False
        return True


def _match_op(op) -> str:
    return next(text for value, text in _MATCH_OPS if op == value)  # the enum is not hashable


def selector_from(vs, range_: timedelta | None = None, function: str | None = None) -> Selector:
    matchers = tuple((m.name, _match_op(m.op), m.value) for m in vs.matchers.matchers)
    return Selector(vs.name, matchers, seconds(range_), function, seconds(vs.offset))


def selectors(expr: Expr | str) -> tuple[Selector, ...]:
    """Every series selector, in the order written."""
    return _text_selectors(expr) if isinstance(expr, str) else _selectors(expr)


@lru_cache(maxsize=8192)
def _text_selectors(text: str) -> tuple[Selector, ...]:
    """selectors() of a text, kept like its tree: the builders, checks and dashboards ask for the same rule's
    selectors many times (the answer is a tuple of frozen Selectors)."""
    return _selectors(parse(text))


def _selectors(expr: Expr) -> tuple[Selector, ...]:
    out: list[Selector] = []

    def visit(e: Expr, function: str | None) -> None:
        if isinstance(e, pp.VectorSelector):
            out.append(selector_from(e, None, function))
        elif isinstance(e, pp.MatrixSelector):
            out.append(selector_from(e.vector_selector, e.range, function))
        else:
            fn = e.func.name if isinstance(e, pp.Call) else None
            for c in children(e):
                visit(c, fn)
    visit(expr, None)
    return tuple(out)


def names_read(expr: Expr | str) -> tuple[str, ...]:
    """The series names an expression reads (metric names, recording rules, ALERTS), in order of
    first use."""
    return tuple(dict.fromkeys(n for s in selectors(expr) for n in s.names))


def is_record(name: str) -> bool:
    """A recording rule's name (level:metric:operations): exporter metrics have no colon."""
    return ":" in name


def recorded_names(expr: Expr | str) -> tuple[str, ...]:
    """Recording rules an expression reads, in order of first use."""
    return tuple(n for n in names_read(expr) if is_record(n))


def metric_names(expr: Expr | str) -> tuple[str, ...]:
    """Exporter series (no recording rules, not ALERTS) an expression reads, in order of first use."""
    return tuple(n for n in names_read(expr) if not is_record(n) and n not in ("ALERTS", "ALERTS_FOR_STATE"))


@dataclass(frozen=True)
class RangeCall:
    """A function over a range: `fn(x[range])` (selector set) or `fn((...)[range:step])`."""
    function: str
    range: int  # seconds
    selector: Selector | None  # None for a subquery


def range_calls(expr: Expr | str) -> tuple[RangeCall, ...]:
    out = []
    for e in nodes(expr):
        if isinstance(e, pp.Call):
            for a in e.args:
                if isinstance(a, pp.MatrixSelector):
                    out.append(RangeCall(e.func.name, seconds(a.range), selector_from(a.vector_selector, a.range, e.func.name)))
                elif isinstance(a, pp.SubqueryExpr):
                    out.append(RangeCall(e.func.name, seconds(a.range), None))
    return tuple(out)


def windows(expr: Expr | str) -> tuple[int, ...]:
    """Every range window (`x[w]`, `(...)[w:step]`), in seconds."""
    return tuple(seconds(e.range) for e in nodes(expr) if isinstance(e, (pp.MatrixSelector, pp.SubqueryExpr)))


def grouping(expr: Expr | str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """("by" | "without", labels) of every aggregation that has a modifier."""
    out = []
    for e in nodes(expr):
        if isinstance(e, pp.AggregateExpr) and e.modifier is not None:
            kind = "by" if e.modifier.type == pp.AggModifierType.By else "without"
            out.append((kind, tuple(e.modifier.labels)))
    return tuple(out)


@dataclass(frozen=True)
class Comparison:
    """`lhs op rhs` (op one of == != > < >= <=), anywhere in an expression."""
    lhs: Expr
    op: str
    rhs: Expr
    bool: bool = False


def comparisons(expr: Expr | str) -> tuple[Comparison, ...]:
    """Every comparison, in the order its operator is written."""
    out: list[Comparison] = []

    def visit(e: Expr) -> None:
        if isinstance(e, pp.BinaryExpr):
            visit(e.lhs)
            if str(e.op) in COMPARISON_OPS:
                out.append(Comparison(e.lhs, str(e.op), e.rhs, bool(e.modifier and e.modifier.return_bool)))
            visit(e.rhs)
        else:
            for c in children(e):
                visit(c)
    visit(as_tree(expr))
    return tuple(out)


def number(e: Expr) -> float | None:
    """The value of a number literal (signed, in parentheses or not), else None."""
    e = unwrap(e)
    if isinstance(e, pp.NumberLiteral):
        return e.val
    if isinstance(e, pp.UnaryExpr):
        inner = number(e.expr)
        return None if inner is None else -inner
    return None


def unwrap(e: Expr) -> Expr:
    """e without the parentheses around it."""
    while isinstance(e, pp.ParenExpr):
        e = e.expr
    return e


def timestamp_valued(expr: Expr | str) -> bool:
    """expr's value is a sample timestamp: timestamp(...) under max/min, label_replace and set operators."""
    e = unwrap(as_tree(expr))
    if isinstance(e, pp.Call):
        name = e.func.name
        return name == "timestamp" or (name in ("label_replace", "label_join") and timestamp_valued(e.args[0]))
    if isinstance(e, pp.AggregateExpr):
        return str(e.op) in ("max", "min") and timestamp_valued(e.expr)
    if isinstance(e, pp.BinaryExpr) and str(e.op) in ("or", "and", "unless"):
        return timestamp_valued(e.lhs) and (str(e.op) != "or" or timestamp_valued(e.rhs))
    return False


@dataclass(frozen=True)
class Wrapped:
    """A series read alone (`name{...}`) or as the last argument of one function
    (`fn(name{...}[range])`, `fn(0.5, name{...}[range])`)."""
    selector: Selector
    function: str | None


def wrapped_series(expr: Expr | str) -> Wrapped | None:
    e = unwrap(as_tree(expr))
    if isinstance(e, pp.VectorSelector) and e.offset is None and e.at is None:
        return Wrapped(selector_from(e), None)
    if isinstance(e, pp.Call) and e.args and isinstance(e.args[-1], pp.MatrixSelector) \
            and all(isinstance(a, pp.NumberLiteral) for a in e.args[:-1]):
        m = e.args[-1]
        if m.vector_selector.offset is None and m.vector_selector.at is None:
            return Wrapped(selector_from(m.vector_selector, m.range, e.func.name), e.func.name)
    return None
