"""Which labels the result of an expression can carry, read from its syntax tree (rulesgen lint's
alert-identity check: a hardware alert must not carry a label that changes while its fault persists).

A raw series passed through unaggregated can carry any label its exporter or the scrape adds (`open`);
an aggregation `by (...)` keeps those labels only; a one-to-one match `on (...)` keeps the matching
labels (Prometheus' resultMetric), `ignoring (...)` drops them; `group_left (...)`/`group_right (...)`
keep the many side's labels and copy the listed ones the one side can carry; `and`/`unless` keep the left side's, `or` either
side's; label_replace/label_join add their target label; absent() carries those its selector's equality
matchers fix. One alert's own ALERTS series (an exact `alertname` matcher: an alert held while it is
silenced reads itself back) carry only that alert's labels. A recording rule's labels are those of the expressions that write it (`records`); a name
written by no rule it was given (another file, or an input series such as `up`) is read as a raw series.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import promql_parser as pp

from .tree import Expr, as_tree, selector_from

SCALAR_FUNCTIONS = ("time", "scalar", "pi", "vector_scalar", "minute", "hour", "day_of_month", "day_of_week",
                    "day_of_year", "days_in_month", "month", "year")
LABEL_KEEPING_AGGREGATIONS = ("topk", "bottomk", "limitk", "limit_ratio")


@dataclass(frozen=True)
class LabelSet:
    known: frozenset[str] = frozenset()
    open: bool = False  # any other label may be there too (a raw series, unaggregated)

    def __or__(self, other: LabelSet) -> LabelSet:
        return LabelSet(self.known | other.known, self.open or other.open)

    def plus(self, *labels: str) -> LabelSet:
        return LabelSet(self.known | frozenset(labels), self.open)

    def minus(self, labels) -> LabelSet:
        return LabelSet(self.known - frozenset(labels), self.open)

    def keep(self, labels) -> LabelSet:
        return LabelSet(frozenset(labels) if self.open else self.known & frozenset(labels), False)

    def can_carry(self, label: str) -> bool:
        return self.open or label in self.known


EMPTY = LabelSet()
# ALERTS{alertname="X"}: the labels X carries anyway, plus the engines' own (vmalert adds alertgroup).
ALERT_STATE = LabelSet(frozenset({"alertname", "alertstate", "alertgroup"}))


def output_labels(expr: Expr | str, records: Callable[[str], LabelSet | None] | Mapping[str, LabelSet]) -> LabelSet:
    """The labels the expression's series can carry. records(name): a recording rule's labels, or None
    for a name no rule writes (read as a raw series)."""
    lookup = records.get if isinstance(records, Mapping) else records

    def selector(vs) -> LabelSet:
        s = selector_from(vs)
        found = lookup(s.name) if s.name else None
        if found is not None:
            return found
        if s.name == "ALERTS" and any(label == "alertname" and op == "=" for label, op, _ in s.matchers):
            return ALERT_STATE  # one named alert's own series: reading it back adds no label the alert lacks
        return LabelSet(_equalities(vs).known, open=True)

    def walk(e: Expr) -> LabelSet:
        if isinstance(e, pp.VectorSelector):
            return selector(e)
        if isinstance(e, pp.MatrixSelector):
            return selector(e.vector_selector)
        if isinstance(e, (pp.NumberLiteral, pp.StringLiteral)):
            return EMPTY
        if isinstance(e, (pp.ParenExpr, pp.UnaryExpr, pp.SubqueryExpr)):
            return walk(e.expr)
        if isinstance(e, pp.Call):
            return call(e)
        if isinstance(e, pp.AggregateExpr):
            return aggregate(e)
        if isinstance(e, pp.BinaryExpr):
            return binary(e)
        return LabelSet(open=True)  # pragma: no cover - every node type is above

    def call(e) -> LabelSet:
        name, args = e.func.name, list(e.args)
        if name in SCALAR_FUNCTIONS or name == "vector":
            return EMPTY
        if name.startswith("absent"):  # absent(x{a="1"}) is {a="1"}: its selector's equality matchers
            inner = args[0] if args else None
            vs = inner.vector_selector if isinstance(inner, pp.MatrixSelector) else inner
            return _equalities(vs) if isinstance(vs, pp.VectorSelector) else EMPTY
        if name in ("label_replace", "label_join") and len(args) >= 2 and isinstance(args[1], pp.StringLiteral):
            return walk(args[0]).plus(args[1].val)
        vectors = [a for a in args if not is_scalar(a) and not isinstance(a, pp.StringLiteral)]
        out = EMPTY
        for a in vectors:
            out = out | walk(a)
        return out.minus(("le",)) if name == "histogram_quantile" else out

    def aggregate(e) -> LabelSet:
        inner = walk(e.expr)
        op = str(e.op)
        if op in LABEL_KEEPING_AGGREGATIONS:
            return inner
        extra = (e.param.val,) if op == "count_values" and isinstance(e.param, pp.StringLiteral) else ()
        if e.modifier is None:
            return EMPTY.plus(*extra)
        if e.modifier.type == pp.AggModifierType.By:
            return inner.keep(e.modifier.labels).plus(*extra)
        return inner.minus(e.modifier.labels).plus(*extra)

    def binary(e) -> LabelSet:
        op = str(e.op)
        lhs, rhs = walk(e.lhs), walk(e.rhs)
        if op in ("and", "unless"):
            return lhs
        if op == "or":
            return lhs | rhs
        if is_scalar(e.lhs):
            return rhs
        if is_scalar(e.rhs):
            return lhs
        m = e.modifier
        if m is not None and m.card == pp.VectorMatchCardinality.ManyToOne:
            return copied(lhs, rhs, m.group_labels or ())
        if m is not None and m.card == pp.VectorMatchCardinality.OneToMany:
            return copied(rhs, lhs, m.group_labels or ())
        if m is not None and m.matching is not None:
            if m.matching.type == pp.LabelModifierType.Include:
                return lhs.keep(m.matching.labels)
            return lhs.minus(m.matching.labels)
        return lhs

    return walk(as_tree(expr))


def copied(many: LabelSet, one: LabelSet, labels) -> LabelSet:
    """group_left/group_right (labels): the many side's labels, each listed one taken from the one side (set
    empty, so dropped, where the one side lacks it)."""
    return many.minus(labels).plus(*(label for label in labels if one.can_carry(label)))


def _equalities(vs) -> LabelSet:
    """The labels a selector's equality matchers fix (a non-empty value)."""
    s = selector_from(vs)
    return LabelSet(frozenset(label for label, op, value in s.matchers if op == "=" and value and label != "__name__"))


def is_scalar(e: Expr) -> bool:
    if isinstance(e, pp.NumberLiteral):
        return True
    if isinstance(e, (pp.ParenExpr, pp.UnaryExpr)):
        return is_scalar(e.expr)
    if isinstance(e, pp.Call):
        return e.func.name in SCALAR_FUNCTIONS
    if isinstance(e, pp.BinaryExpr):
        return is_scalar(e.lhs) and is_scalar(e.rhs)
    return False


def record_labels(rules: list[tuple[str, Expr | str]]) -> Callable[[str], LabelSet | None]:
    """records(name) for output_labels over (record name, expression) pairs: the union over the rules
    writing a name, each computed once (a cycle reads as a raw series)."""
    writers: dict[str, list[Expr | str]] = {}
    for name, expr in rules:
        writers.setdefault(name, []).append(expr)
    done: dict[str, LabelSet] = {}
    busy: set[str] = set()

    def lookup(name: str) -> LabelSet | None:
        if name not in writers:
            return None
        if name in done:
            return done[name]
        if name in busy:
            return LabelSet(open=True)
        busy.add(name)
        out = EMPTY
        for expr in writers[name]:
            out = out | output_labels(expr, lookup)
        busy.discard(name)
        done[name] = out
        return out
    return lookup
