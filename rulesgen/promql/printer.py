"""PromQL syntax trees printed back as text on one line, in the style the builders write
(`name{a="b", c=~"d"}`, `sum by (a, b) (x)`, `x * on (a) group_left () y`), with selectors replaced on
the way: dashboard queries with their variables' matchers, a threshold's value in place of its placeholder,
recording rules inlined for backfill."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import promql_parser as pp

from ..durations import format_duration
from .text import escape, format_number
from .tree import Expr, Selector, as_tree, children, recorded_names, seconds, selector_from

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


def bin_modifier(e) -> str:
    """A binary operation's modifier as written between its operator and its right side:
    ` bool on (a) group_left (b)`."""
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


def to_text(expr: Expr | str, replace: Replace | None = None,
            node: Callable[[Expr, Callable[[Expr], str]], str | None] | None = None) -> str:
    """The expression on one line, in the builders' style; `replace` may print some selectors
    differently (add matchers, put a value or an expression in their place); `node(e, fmt)` may print
    any node differently (fmt prints its children as usual), or return None."""
    def fmt(e: Expr) -> str:
        if node is not None:
            text = node(e, fmt)
            if text is not None:
                return text
        if isinstance(e, (pp.VectorSelector, pp.MatrixSelector)):
            matrix = isinstance(e, pp.MatrixSelector)
            vs = e.vector_selector if matrix else e
            s = selector_from(vs, e.range if matrix else None)
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
            return f"{fmt(e.lhs)} {e.op}{bin_modifier(e)} {fmt(e.rhs)}"
        if isinstance(e, pp.SubqueryExpr):
            step = f":{_duration(seconds(e.step))}" if e.step is not None else ":"
            offset = f" offset {_duration(seconds(e.offset))}" if e.offset is not None else ""
            return f"{fmt(e.expr)}[{_duration(seconds(e.range))}{step}]{offset}{_at(e)}"
        raise TypeError(f"cannot print {type(e).__name__}")  # pragma: no cover - every node type is above
    return fmt(as_tree(expr))


def with_matchers(expr: Expr | str, extra: Callable[[Selector], Sequence[str]]) -> str:
    """The expression with the matcher texts extra(selector) appended to each selector's own."""
    def add(s: Selector) -> str | None:
        more = [x for x in extra(s) if x]
        return selector_text(s, more) if more else None
    return to_text(expr, add)


def inline(expr: str, definitions: dict[str, str], step: str) -> str:
    """Replace recording-rule names by their expressions until none is left: `name[w]` becomes the
    subquery `(expr)[w:step]`, a bare `name` becomes `(expr)`, `name offset d` the value of `expr` at the
    evaluation step d ago (`last_over_time((expr)[step:step] offset d)`), and an equality matcher on a
    label `name{l="v"}` (or `!=`) keeps (drops) the series whose `l` is `v`. For evaluators that cannot
    read the output of other rules (backfill). Regex matchers on a recording rule are not supported."""
    def put(s: Selector) -> str | None:
        if s.name not in definitions:
            return None
        body = to_text(definitions[s.name])
        for label, op, value in s.matchers:
            if op not in ("=", "!="):
                raise ValueError(f"cannot inline {s.name}{{{label}{op}...}}: regex matchers on a recording rule")
            keep = "and" if op == "=" else "unless"
            body = f'({body}) {keep} on ({label}) label_replace(vector(1), "{label}", "{escape(value)}", "", "")'
        offset = f" offset {_duration(s.offset)}" if s.offset else ""
        if s.range is not None:
            return f"({body})[{_duration(s.range)}:{step}]{offset}"
        return f"last_over_time(({body})[{step}:{step}]{offset})" if offset else f"({body})"
    for _ in range(20):
        if not set(recorded_names(expr)) & set(definitions):
            return expr
        expr = to_text(expr, put)
    raise ValueError("recording rules refer to each other in a cycle")


