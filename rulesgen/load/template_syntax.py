"""The catalog's template language: Jinja with [[ ]] placeholders and [% %] blocks (sandboxed, StrictUndefined:
a typo is an error, never an empty string), its filters and named windows, rendering with errors at the
catalog line, and what a template reads (the catalog loader checks those names at load)."""
from __future__ import annotations

from functools import lru_cache

import jinja2
import jinja2.meta
from jinja2 import nodes
from jinja2.sandbox import SandboxedEnvironment

from ..durations import format_duration
from ..errors import Collector, Where
from ..model.thresholds import numeric

_ENV = SandboxedEnvironment(
    variable_start_string="[[", variable_end_string="]]",
    block_start_string="[%", block_end_string="%]",
    comment_start_string="[#", comment_end_string="#]",
    undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False,
)


def _window(seconds) -> str:
    """A threshold in seconds as a PromQL range, `[[ t.window | window ]]` -> [1d] (a bare `[[[` would read
    as a template list)."""
    value = numeric(seconds)
    if value <= 0 or value != int(value):
        raise KeyError(f"window of {value:g} s: a range needs a positive whole number of seconds")
    return f"[{format_duration(int(value))}]"


_ENV.filters["window"] = _window
_ENV.filters["duration"] = lambda seconds: format_duration(int(numeric(seconds)))  # 86400 -> 1d, for annotations


class WindowRange:
    """A named window in a template ([[ w.NAME ]]): reads as its PromQL range, [10m]; `| duration` gives its
    length, 10m (for `offset`); the counter macros (rate, increase, born) take it as their window."""

    def __init__(self, seconds: int):
        self.seconds = int(seconds)

    def __str__(self) -> str:
        return _window(self.seconds)

    def __float__(self) -> float:
        return float(self.seconds)


# A catalog's templates are compiled (and parsed, for what they read) once per process, however many
# configurations or failure modes render them: compiling is most of a render's template cost.
_compiled = lru_cache(maxsize=4096)(_ENV.from_string)


def render(template: str, context: dict, where: Where, errors: Collector, what: str) -> str:
    try:
        return _compiled(template).render(**context).strip()
    except jinja2.TemplateSyntaxError as exc:
        errors.add(Where(where.path, where.line + max(exc.lineno - 1, 0), where.col), "template-syntax", f"{what}: {exc.message}")
    except (jinja2.UndefinedError, KeyError, AttributeError) as exc:
        message = exc.args[0] if exc.args else str(exc)
        errors.add(where, "unknown-reference", f"{what}: {message}")
    except jinja2.TemplateError as exc:  # pragma: no cover - defensive
        errors.add(where, "template-error", f"{what}: {exc}")
    return ""


@lru_cache(maxsize=4096)
def _syntax_tree(template: str) -> nodes.Template | None:
    """The template's syntax tree (shared: callers only read it)."""
    try:
        return _ENV.parse(template)
    except jinja2.TemplateSyntaxError:
        return None  # render() reports it, with its line


@lru_cache(maxsize=8192)
def attributes_used(template: str, name: str) -> frozenset[str]:
    """Keys a template reads from the context entry `name` ([[ limit.x ]] or [[ limit["x"] ]]); kept by text,
    as every walk of a template's tree below is (the catalog's loads and builds ask for the same texts)."""
    tree = _syntax_tree(template)
    out: set[str] = set()
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)) if tree else ():
        if isinstance(node.node, nodes.Name) and node.node.name == name:
            if isinstance(node, nodes.Getattr):
                out.add(node.attr)
            elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
                out.add(node.arg.value)
    return frozenset(out)


def bits_used(template: str) -> list[tuple[str, str, bool]]:
    """(metric, bit name, in a matcher) for each bit a template reads: [[ bit.METRIC.NAME ]] (False) and
    bit_matcher("METRIC", "NAME", ...) (True), in the order they stand."""
    return list(_bits_used(template))


@lru_cache(maxsize=4096)
def _bits_used(template: str) -> tuple[tuple[str, str, bool], ...]:
    tree = _syntax_tree(template)
    out = []
    for node in tree.find_all((nodes.Getattr, nodes.Call)) if tree else ():
        if (isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Getattr)
                and isinstance(node.node.node, nodes.Name) and node.node.node.name == "bit"):
            out.append((node.node.attr, node.attr, False))
        elif isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and node.node.name == "bit_matcher":
            args = [a.value for a in node.args if isinstance(a, nodes.Const) and isinstance(a.value, str)]
            out += [(args[0], b, True) for b in args[1:]]
    return tuple(out)


@lru_cache(maxsize=4096)
def placeholders(template: str) -> frozenset[str] | None:
    """The context names a template reads ([[ x ]], [% if x %]); None when it does not parse. Kept by text,
    as the tree is: every load of a catalog checks the same texts."""
    tree = _syntax_tree(template)
    return None if tree is None else frozenset(jinja2.meta.find_undeclared_variables(tree))


@lru_cache(maxsize=4096)
def syntax_error(template: str) -> str | None:
    try:
        _ENV.parse(template)
    except jinja2.TemplateSyntaxError as exc:
        return exc.message
    return None


@lru_cache(maxsize=4096)
def names_used(template: str) -> frozenset[str]:
    """Identifiers a template names inside its placeholders: attributes ([[ m.DCGM_FI_X ]]) and
    string arguments that are names ([[ rate("DCGM_FI_X", "5m") ]]); the PromQL around them is
    checked once rendered (rules.py)."""
    tree = _syntax_tree(template)
    out = {n.attr for n in tree.find_all(nodes.Getattr)} if tree else set()
    for const in tree.find_all(nodes.Const) if tree else ():
        if isinstance(const.value, str) and const.value and all(ch.isalnum() or ch == "_" for ch in const.value):
            out.add(const.value)
    return frozenset(out)
