"""Typed access to one YAML mapping, reporting every problem with its position.

Each loader reads the keys it knows through a `Fields` object and calls `done()`, which
reports the keys nobody asked for as unknown (with a did-you-mean).
"""
from __future__ import annotations

import difflib
import re

from ..durations import duration_seconds
from ..errors import Collector, Where
from ..promql.text import grouping_problem
from .yamlsource import Node, NodeList, where_of


class Fields:
    def __init__(self, node, errors: Collector, what: str, fallback: Where | None = None):
        self.errors = errors
        self.what = what
        self.seen: set[str] = set()
        if isinstance(node, Node):
            self.node = node
            self.ok = True
        else:
            self.node = Node()
            self.node.where = getattr(node, "where", fallback or Where("<unknown>"))
            self.node.key_where = {}
            self.ok = node is None
            if node is not None:
                errors.add(self.node.where if fallback is None else fallback, "bad-type",
                           f"{what} must be a mapping, got {type(node).__name__}")

    @property
    def where(self) -> Where:
        return self.node.where

    def at(self, key: str) -> Where:
        return where_of(self.node, key)

    def body_at(self, key: str) -> Where | None:
        """The first content line of key's literal block value (`key: |`), else None."""
        return getattr(self.node, "body_where", {}).get(key)

    def has(self, key: str) -> bool:
        return key in self.node

    def _get(self, key, required, default):
        self.seen.add(key)
        if key not in self.node:
            if required:
                self.errors.add(self.where, "missing-key", f"{self.what}: missing required key {key!r}")
            return default, False
        return self.node[key], True

    def str(self, key, required=False, default=None, choices=None, pattern=None):
        value, present = self._get(key, required, default)
        if not present:
            return value
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.errors.add(self.at(key), "bad-type", f"{self.what}.{key} must be a string, got {type(value).__name__}")
            return default
        value = str(value)
        if choices is not None and value not in choices:
            hint = _did_you_mean(value, choices)
            self.errors.add(self.at(key), "bad-value",
                            f"{self.what}.{key} must be one of {', '.join(sorted(choices))}, got {value!r}{hint}")
            return default
        if pattern is not None and not re.fullmatch(pattern, value):
            self.errors.add(self.at(key), "bad-value", f"{self.what}.{key}: {value!r} does not match {pattern}")
            return default
        return value

    def label_list_problems(self, key, pattern) -> list[str]:
        """The labels of the list at `key`, and a problem at its line for each that is no label name or one PromQL
        cannot spell in by (...)."""
        names = self.str_list(key)
        for i, name in enumerate(names):
            problem = f"{name!r} is not a label name" if not re.fullmatch(pattern, name) else grouping_problem(name)
            if problem:
                self.errors.add(self.at(key), "bad-value", f"{self.what}.{key}[{i}]: {problem}")
        return names

    def label(self, key, pattern):
        """A label name the rules will group by: matching `pattern`, and one PromQL can spell in by (...)."""
        value = self.str(key, pattern=pattern)
        problem = value is not None and grouping_problem(value)
        if problem:
            self.errors.add(self.at(key), "bad-value", f"{self.what}.{key}: {problem}")
            return None
        return value

    def num(self, key, required=False, default=None, minimum=None, maximum=None, integer=False):
        value, present = self._get(key, required, default)
        if not present:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
            kind = "an integer" if integer else "a number"
            self.errors.add(self.at(key), "bad-type", f"{self.what}.{key} must be {kind}, got {value!r}")
            return default
        if value != value or value in (float("inf"), float("-inf")):
            self.errors.add(self.at(key), "bad-value", f"{self.what}.{key} must be finite, got {value!r}")
            return default
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            bounds = (f"within [{minimum}, {maximum}]" if minimum is not None and maximum is not None
                      else f"at least {minimum}" if minimum is not None else f"at most {maximum}")
            self.errors.add(self.at(key), "bad-value", f"{self.what}.{key} must be {bounds}, got {value!r}")
            return default
        return value

    def bool(self, key, required=False, default=None):
        value, present = self._get(key, required, default)
        if present and not isinstance(value, bool):
            self.errors.add(self.at(key), "bad-type", f"{self.what}.{key} must be true or false, got {value!r}")
            return default
        return value

    def duration(self, key, required=False, default=None):
        """Duration in seconds."""
        value, present = self._get(key, required, default)
        if not present:
            return value
        try:
            return duration_seconds(value)
        except ValueError as exc:
            self.errors.add(self.at(key), "bad-duration", f"{self.what}.{key}: {exc}")
            return default

    def list(self, key, required=False):
        """Returns (items, positions); an empty list when absent or malformed."""
        value, present = self._get(key, required, None)
        if not present or value is None:
            return [], []
        if not isinstance(value, NodeList):
            self.errors.add(self.at(key), "bad-type", f"{self.what}.{key} must be a list, got {type(value).__name__}")
            return [], []
        return list(value), list(value.item_where)

    def str_list(self, key, required=False):
        items, wheres = self.list(key, required)
        out = []
        for item, w in zip(items, wheres):
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                self.errors.add(w, "bad-type", f"{self.what}.{key} items must be strings, got {item!r}")
            else:
                out.append(str(item))
        return out

    def mapping(self, key, required=False):
        value, present = self._get(key, required, None)
        if not present or value is None:
            empty = Node()
            empty.where = self.at(key) if present else self.where
            empty.key_where = {}
            return empty
        if not isinstance(value, Node):
            self.errors.add(self.at(key), "bad-type", f"{self.what}.{key} must be a mapping, got {type(value).__name__}")
            empty = Node()
            empty.where = self.at(key)
            empty.key_where = {}
            return empty
        return value

    def str_map(self, key: str, what: str | None = None) -> tuple[tuple[str, str], ...]:
        """A mapping of strings (labels, selectors), sorted by key."""
        return self._map(key, what, Fields.str)

    def num_map(self, key: str, what: str | None = None) -> tuple[tuple[str, float], ...]:
        """A mapping of numbers (threshold overrides), sorted by key."""
        return self._map(key, what, Fields.num)

    def _map(self, key, what, read):
        node = self.mapping(key)
        inner = Fields(node, self.errors, what or f"{self.what}.{key}")
        pairs = []
        for k in node:
            value = read(inner, k)
            if value is not None:
                pairs.append((k, value))
        inner.done()
        return tuple(sorted(pairs))

    def done(self) -> None:
        known = sorted(self.seen)
        for key in self.node:
            if key not in self.seen:
                self.errors.add(self.at(key), "unknown-key",
                                f"{self.what}: unknown key {key!r}{_did_you_mean(key, known)}")


def _did_you_mean(word: str, options) -> str:
    close = difflib.get_close_matches(str(word), list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def did_you_mean(word: str, options) -> str:
    return _did_you_mean(word, options)
