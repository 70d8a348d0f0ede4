"""YAML loading that remembers where every key and value came from.

Mappings load as `Node` dicts and sequences as `NodeList`; both know their own position
and the position of each key/item, so validation errors can name file:line:col.
Duplicate keys are errors (PyYAML silently keeps the last one).
"""
from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path

import yaml

from ..errors import Diagnostic, RulesgenError, Where
from ..memo import Memo

# libyaml's parser when PyYAML has it (about 20x faster on large scenario files); node marks and
# our position-recording constructors work the same with either.
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Node(dict):
    where: Where
    key_where: dict
    body_where: dict  # key -> position of the first content line of its literal block value (`key: |`)


class NodeList(list):
    where: Where
    item_where: list


def _where(path: str, mark) -> Where:
    return Where(path, mark.line + 1, mark.column + 1)


def _make_loader(path: str, problems: list[Diagnostic], lines: list[str]):
    class Loader(_BASE_LOADER):
        pass

    def construct_mapping(loader, node, deep=False):
        loader.flatten_mapping(node)
        result = Node()
        result.where = _where(path, node.start_mark)
        result.key_where, result.body_where = {}, {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            value = loader.construct_object(value_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                w = _where(path, key_node.start_mark)
                problems.append(Diagnostic(w.path, w.line, w.col, "bad-key", f"mapping key must be a string, got {key!r}"))
                continue
            # A key is a name, as written: YAML 1.1 reads `on`, `off`, `yes`, `no` as booleans and `1e3`, `0x10`
            # as numbers, which str() would turn into "True" or "1000.0".
            key = key if isinstance(key, str) else key_node.value
            if key in result:
                w = _where(path, key_node.start_mark)
                first = result.key_where[key]
                problems.append(Diagnostic(w.path, w.line, w.col, "duplicate-key",
                                           f"duplicate key {key!r} (first defined on line {first.line})"))
                continue
            result[key] = value
            result.key_where[key] = _where(path, key_node.start_mark)
            first = value_node.start_mark.line + 1  # a literal block's content starts below its `|`
            if getattr(value_node, "style", None) == "|" and first < len(lines):
                result.body_where[key] = Where(path, first + 1, len(lines[first]) - len(lines[first].lstrip(" ")) + 1)
        return result

    def construct_sequence(loader, node, deep=False):
        result = NodeList(loader.construct_object(child, deep=True) for child in node.value)
        result.where = _where(path, node.start_mark)
        result.item_where = [_where(path, child.start_mark) for child in node.value]
        return result

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_sequence)
    return Loader


def load_text(text: str, path: str, collect: list[Diagnostic] | None = None):
    """Parse YAML with positions. Syntax errors raise; key-level problems (duplicates) raise too,
    unless `collect` is given, in which case they are appended there and the data is returned."""
    problems: list[Diagnostic] = []
    try:
        data = yaml.load(text, Loader=_make_loader(path, problems, text.splitlines()))  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise RulesgenError([Diagnostic(path, line, col, "yaml-syntax", f"{exc.problem or exc}".strip())]) from None
    except yaml.YAMLError as exc:
        raise RulesgenError([Diagnostic(path, 1, 1, "yaml-syntax", str(exc))]) from None
    if problems and collect is None:
        raise RulesgenError(problems)
    if collect is not None:
        collect.extend(problems)
    return data


def _read(path: Path, shown: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RulesgenError([Diagnostic(shown, 1, 1, "missing-file", "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesgenError([Diagnostic(shown, 1, 1, "unreadable-file", str(exc))]) from None


def load_file(path: Path, display: str | None = None, collect: list[Diagnostic] | None = None):
    shown = display or str(path)
    return load_text(_read(path, shown), shown, collect)


_PARSED: Memo[tuple] = Memo(size=64)  # by the file's text


def load_file_kept(path: Path, display: str | None = None, collect: list[Diagnostic] | None = None):
    """load_file() for a file read again and again, whole or in copies (a catalog's: each folder it is copied
    to, each variant with one file edited): parsed once per text; each caller gets its own copy of the tree,
    with its own path in every position, and the same key-level problems (a syntax error raises every time)."""
    shown = display or str(path)
    text = _read(path, shown)

    def parse():
        problems: list[Diagnostic] = []
        return load_text(text, shown, problems), tuple(problems)
    data, problems = _PARSED.get(text, parse)
    problems = [replace(d, path=shown) for d in problems]
    if problems and collect is None:
        raise RulesgenError(problems)
    if collect is not None:
        collect.extend(problems)
    return _copy(data, shown)


def _copy(value, path: str):
    """A parsed tree's copy whose positions name `path`: new Nodes and NodeLists, the same scalars."""
    if isinstance(value, Node):
        out = Node((k, _copy(v, path)) for k, v in value.items())
        out.where = Where(path, value.where.line, value.where.col)
        out.key_where = {k: Where(path, w.line, w.col) for k, w in value.key_where.items()}
        out.body_where = {k: Where(path, w.line, w.col) for k, w in value.body_where.items()}
        return out
    if isinstance(value, NodeList):
        out = NodeList(_copy(v, path) for v in value)
        out.where = Where(path, value.where.line, value.where.col)
        out.item_where = [Where(path, w.line, w.col) for w in value.item_where]
        return out
    if value is None or isinstance(value, (str, int, float)):  # bool is an int
        return value
    return copy.deepcopy(value)  # a date, a set (!!set) ...: nothing shares a mutable value


def where_in(where: Where, body: Where | None, text: str, word: str) -> Where:
    """Where `word` first stands in `text`, a literal block whose first content line is at `body` (None:
    not a literal block, or unknown); else `where`, the position of its key."""
    whole = re.compile(r"(?<![\w:])" + re.escape(word) + r"(?![\w:])")
    for i, line in enumerate(text.splitlines() if body is not None else ()):
        found = whole.search(line)
        if found:
            return Where(body.path, body.line + i, body.col + found.start())
    return where


def where_of(container, key=None) -> Where:
    """Best-known position of `container[key]` (or of the container itself)."""
    if key is not None:
        if isinstance(container, Node) and key in container.key_where:
            return container.key_where[key]
        if isinstance(container, NodeList) and isinstance(key, int) and key < len(container.item_where):
            return container.item_where[key]
    return getattr(container, "where", Where("<unknown>"))
