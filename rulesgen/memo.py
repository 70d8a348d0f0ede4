"""Results kept once per process for the same inputs.

A loader whose result is immutable (frozen dataclasses of tuples: the catalog, a scenario) can hand the
same object to every caller that asks with the same bytes and arguments: one `rulesgen` command loads
each file once anyway, but a process that plans several times (`rulesgen init` then render, a test
suite running the command in-process, the benchmarks) parsed the same YAML again each time. The key is
the files' bytes (a digest), never their modification time, which can stay the same across two writes
in one clock tick. The same holds for a pure step keyed by exactly what it reads (a rule set's tiers by
the rules' texts, a scenario's series as YAML by the series). Errors are not kept: a bad input is
loaded, and reported, every time.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


def digest(paths: Iterable[Path]) -> tuple[tuple[str, str | None], ...]:
    """(path, digest of its bytes, or None when it cannot be read) for each path, in order."""
    out = []
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:
            out.append((str(path), None))
            continue
        out.append((str(path), hashlib.blake2b(data, digest_size=16).hexdigest()))
    return tuple(out)


class Memo(Generic[T]):
    """The last `size` results by key (least recently used dropped first)."""

    def __init__(self, size: int):
        self.size = size
        self._results: OrderedDict[Hashable, T] = OrderedDict()

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        if key in self._results:
            self._results.move_to_end(key)
            return self._results[key]
        result = load()  # an exception propagates and nothing is kept
        self._results[key] = result
        if len(self._results) > self.size:
            self._results.popitem(last=False)
        return result
