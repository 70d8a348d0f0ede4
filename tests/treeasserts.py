"""What tests assert about PromQL, read from the parsed tree rather than the printed text: a rule's
subexpressions in one canonical form (rulesgen's printer, one line), its joins, its numbers, its
functions. Whitespace, line breaks and redundant parentheses of the written rule never matter."""
from __future__ import annotations

from dataclasses import dataclass

import promql_parser as pp

from rulesgen.promql import printer, tree


def canonical(expr) -> str:
    """One text per tree: written parentheses dropped, every binary operation bracketed."""
    def node(e, fmt):
        if isinstance(e, pp.ParenExpr):
            return fmt(e.expr)
        if isinstance(e, pp.BinaryExpr):
            return f"({fmt(e.lhs)} {e.op}{printer.bin_modifier(e)} {fmt(e.rhs)})"
        return None
    return printer.to_text(tree.as_tree(expr), node=node)


def subexpressions(expr) -> set[str]:
    """Every node of the tree, printed canonically."""
    return {canonical(e) for e in tree.nodes(expr)}


def has(expr, sub: str) -> bool:
    """`sub` (PromQL) is a subexpression of `expr`, wherever and however it is written."""
    return canonical(sub) in subexpressions(expr)


def reads(expr, name: str) -> bool:
    """The expression selects the series `name` (a metric or a record)."""
    return name in tree.names_read(expr)


def functions(expr) -> set[str]:
    return {e.func.name for e in tree.nodes(expr) if isinstance(e, pp.Call)}


def numbers(expr) -> set[float]:
    return {e.val for e in tree.nodes(expr) if isinstance(e, pp.NumberLiteral)}


@dataclass(frozen=True)
class Join:
    """A binary operation with its matching, `lhs op on (labels) group_left (extra) rhs`; sides printed canonically."""
    op: str
    on: tuple[str, ...] | None  # None: ignoring / no matching clause
    group_left: tuple[str, ...] | None  # None: not many-to-one
    lhs: str
    rhs: str


def joins(expr) -> list[Join]:
    """Every binary operation, outermost first."""
    out = []
    for e in tree.nodes(expr):
        if isinstance(e, pp.BinaryExpr):
            m = e.modifier
            matching = m.matching if m is not None else None
            include = matching is not None and matching.type == pp.LabelModifierType.Include
            on = tuple(matching.labels) if include else None
            many_to_one = m is not None and m.card == pp.VectorMatchCardinality.ManyToOne
            left = tuple(m.group_labels or ()) if many_to_one else None
            out.append(Join(str(e.op), on, left, canonical(e.lhs), canonical(e.rhs)))
    return out


def subqueries(expr) -> list[tuple[int | None, int | None]]:
    """(range, step) in seconds of every subquery."""
    return [(tree.seconds(e.range), tree.seconds(e.step)) for e in tree.nodes(expr) if isinstance(e, pp.SubqueryExpr)]


def aggregations(expr) -> set[str]:
    return {str(e.op) for e in tree.nodes(expr) if isinstance(e, pp.AggregateExpr)}


def offsets(expr) -> list[int]:
    """The offset of every selector that has one, in seconds."""
    return [s.offset for s in tree.selectors(expr) if s.offset]
