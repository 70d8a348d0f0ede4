"""The PromQL syntax tree of every generated expression, and every walk over it.

Rules are built as text (catalog templates and string assembly, so the rendered files keep their
layout); everything that reads an expression reads its tree, parsed once per text by promql-parser
(promtool stays the final judge): the series it reads, the recording rules it names, the range
functions and their windows, the aggregation labels, the comparisons it makes. Expressions derived
from others (dashboard queries with their variables' matchers, a threshold's value in place of its
marker, recording rules inlined for backfill) are printed back from the tree on one line, in the
style the builders write: `name{a="b", c=~"d"}`, `sum by (a, b) (x)`, `x * on (a) group_left () y`.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

import promql_parser as pp

from .durations import format_duration
from .promql import escape, format_number

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


def _tree(expr: Expr | str) -> Expr:
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
    todo = [_tree(expr)]
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


def _selector(vs, range_: timedelta | None = None, function: str | None = None) -> Selector:
    matchers = tuple((m.name, _match_op(m.op), m.value) for m in vs.matchers.matchers)
    return Selector(vs.name, matchers, seconds(range_), function, seconds(vs.offset))


def selectors(expr: Expr | str) -> tuple[Selector, ...]:
    """Every series selector, in the order written."""
    return _selectors(_tree(expr))


def _selectors(expr: Expr) -> tuple[Selector, ...]:
    out: list[Selector] = []

    def visit(e: Expr, function: str | None) -> None:
        if isinstance(e, pp.VectorSelector):
            out.append(_selector(e, None, function))
        elif isinstance(e, pp.MatrixSelector):
            out.append(_selector(e.vector_selector, e.range, function))
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
                    out.append(RangeCall(e.func.name, seconds(a.range), _selector(a.vector_selector, a.range, e.func.name)))
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
    visit(_tree(expr))
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


@dataclass(frozen=True)
class Wrapped:
    """A series read alone (`name{...}`) or as the last argument of one function
    (`fn(name{...}[range])`, `fn(0.5, name{...}[range])`)."""
    selector: Selector
    function: str | None


def wrapped_series(expr: Expr | str) -> Wrapped | None:
    e = unwrap(_tree(expr))
    if isinstance(e, pp.VectorSelector) and e.offset is None and e.at is None:
        return Wrapped(_selector(e), None)
    if isinstance(e, pp.Call) and e.args and isinstance(e.args[-1], pp.MatrixSelector) \
            and all(isinstance(a, pp.NumberLiteral) for a in e.args[:-1]):
        m = e.args[-1]
        if m.vector_selector.offset is None and m.vector_selector.at is None:
            return Wrapped(_selector(m.vector_selector, m.range, e.func.name), e.func.name)
    return None


# ------------------------------------------------------------------------------------------------
# printing
# ------------------------------------------------------------------------------------------------

# Called with each series selector; returns the text to print in its place (its range and offset
# included), or None to print it as it is.
Replace = Callable[[Selector], "str | None"]


def matcher_text(label: str, op: str, value: str) -> str:
    return f'{label}{op}"{escape(value)}"'


def _duration(secs: int) -> str:
    return f"-{format_duration(-secs)}" if secs < 0 else format_duration(secs)


def selector_text(s: Selector, extra: Iterable[str] = ()) -> str:
    """The selector as written, `name{matchers}[range] offset d`, with extra matcher texts appended."""
    inner = ", ".join([matcher_text(*m) for m in s.matchers] + [x for x in extra if x])
    out = f"{s.name or ''}{{{inner}}}" if inner or not s.name else s.name
    if s.range is not None:
        out += f"[{_duration(s.range)}]"
    if s.offset is not None:
        out += f" offset {_duration(s.offset)}"
    return out


def _at(e) -> str:
    at = e.at
    if at is None:
        return ""
    if at.type == pp.AtModifierType.Start:
        return " @ start()"
    if at.type == pp.AtModifierType.End:
        return " @ end()"
    return f" @ {format_number(at.at.timestamp())}"


def _labels(labels: Sequence[str]) -> str:
    return f"({', '.join(labels)})"


def _bin_modifier(e) -> str:
    m = e.modifier
    if m is None:
        return ""
    out = " bool" if m.return_bool else ""
    if m.matching is not None:
        kind = "on" if m.matching.type == pp.LabelModifierType.Include else "ignoring"
        out += f" {kind} {_labels(m.matching.labels)}"
    if m.card == pp.VectorMatchCardinality.ManyToOne:
        out += f" group_left {_labels(m.group_labels or [])}"
    elif m.card == pp.VectorMatchCardinality.OneToMany:
        out += f" group_right {_labels(m.group_labels or [])}"
    return out


def to_text(expr: Expr | str, replace: Replace | None = None) -> str:
    """The expression on one line, in the builders' style; `replace` may print some selectors
    differently (add matchers, put a value or an expression in their place)."""
    def fmt(e: Expr) -> str:
        if isinstance(e, (pp.VectorSelector, pp.MatrixSelector)):
            matrix = isinstance(e, pp.MatrixSelector)
            vs = e.vector_selector if matrix else e
            s = _selector(vs, e.range if matrix else None)
            return ((replace and replace(s)) or selector_text(s)) + _at(vs)
        if isinstance(e, pp.NumberLiteral):
            return format_number(e.val)
        if isinstance(e, pp.StringLiteral):
            return f'"{escape(e.val)}"'
        if isinstance(e, pp.ParenExpr):
            return f"({fmt(e.expr)})"
        if isinstance(e, pp.UnaryExpr):
            return f"-{fmt(e.expr)}"
        if isinstance(e, pp.Call):
            return f"{e.func.name}({', '.join(fmt(a) for a in e.args)})"
        if isinstance(e, pp.AggregateExpr):
            args = ", ".join(fmt(a) for a in children(e))
            if e.modifier is None:
                return f"{e.op}({args})"
            kind = "by" if e.modifier.type == pp.AggModifierType.By else "without"
            return f"{e.op} {kind} {_labels(e.modifier.labels)} ({args})"
        if isinstance(e, pp.BinaryExpr):
            return f"{fmt(e.lhs)} {e.op}{_bin_modifier(e)} {fmt(e.rhs)}"
        if isinstance(e, pp.SubqueryExpr):
            step = f":{_duration(seconds(e.step))}" if e.step is not None else ":"
            offset = f" offset {_duration(seconds(e.offset))}" if e.offset is not None else ""
            return f"{fmt(e.expr)}[{_duration(seconds(e.range))}{step}]{offset}{_at(e)}"
        raise TypeError(f"cannot print {type(e).__name__}")  # pragma: no cover - every node type is above
    return fmt(_tree(expr))


def with_matchers(expr: Expr | str, extra: Callable[[Selector], Sequence[str]]) -> str:
    """The expression with the matcher texts extra(selector) appended to each selector's own."""
    def add(s: Selector) -> str | None:
        more = [x for x in extra(s) if x]
        return selector_text(s, more) if more else None
    return to_text(expr, add)


def inline(expr: str, definitions: dict[str, str], step: str) -> str:
    """Replace recording-rule names by their expressions until none is left: `name[w]` becomes the
    subquery `(expr)[w:step]`, a bare `name` becomes `(expr)`. For evaluators that cannot read the
    output of other rules (backfill). Names with label matchers are not supported."""
    def put(s: Selector) -> str | None:
        if s.name not in definitions:
            return None
        if s.matchers or s.offset is not None:
            raise ValueError(f"cannot inline {s.name}{{...}}: label matchers or offset on a recording rule")
        body = to_text(definitions[s.name])
        return f"({body})[{_duration(s.range)}:{step}]" if s.range is not None else f"({body})"
    for _ in range(20):
        if not set(recorded_names(expr)) & set(definitions):
            return expr
        expr = to_text(expr, put)
    raise ValueError("recording rules refer to each other in a cycle")


# ------------------------------------------------------------------------------------------------
# the dependency graph of a rule set
# ------------------------------------------------------------------------------------------------

ALERT_SERIES = ("ALERTS", "ALERTS_FOR_STATE")


class Graph:
    """What each rule reads and who reads it, over rules given in evaluation order (objects with
    `expr` and `record` or `alert`, e.g. output.Rule). Rules are referred to by index."""

    def __init__(self, rules: Sequence):
        self.rules = tuple(rules)
        self.reads: tuple[tuple[str, ...], ...] = tuple(names_read(r.expr) for r in self.rules)
        self.writers: dict[str, tuple[int, ...]] = {}
        for i, r in enumerate(self.rules):
            for name in written_names(r):
                self.writers[name] = self.writers.get(name, ()) + (i,)

    def read_rules(self, i: int) -> set[int]:
        """Indices of the rules whose output rule i reads (ALERTS: every alert)."""
        return {j for name in self.reads[i] for j in self.writers.get(name, ())}

    def readers(self, name: str) -> tuple[int, ...]:
        return tuple(i for i, names in enumerate(self.reads) if name in names)

    def records_read(self, exprs: Iterable[str], transitive: bool = True) -> tuple[str, ...]:
        """Recording rules of this set that the expressions read, directly or (transitive) through
        other recording rules; in order of discovery."""
        todo = [n for e in exprs for n in recorded_names(e)]
        found: dict[str, None] = {}
        while todo:
            name = todo.pop(0)
            if name in found or name not in self.writers:
                continue
            found[name] = None
            if transitive:
                for j in self.writers[name]:
                    todo.extend(recorded_names(self.rules[j].expr))
        return tuple(found)

    def metrics_read(self, exprs: Iterable[str]) -> set[str]:
        """Exporter series the expressions read, directly or through recording rules of this set."""
        exprs = list(exprs)
        out = {n for e in exprs for n in metric_names(e)}
        for name in self.records_read(exprs):
            for j in self.writers[name]:
                out.update(metric_names(self.rules[j].expr))
        return out


def written_names(rule) -> tuple[str, ...]:
    """What a rule writes: its record, or for an alert the ALERTS series."""
    return (rule.record,) if getattr(rule, "record", None) else ALERT_SERIES
