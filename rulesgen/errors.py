"""Diagnostics that carry file:line:col, a severity and a stable code (in the manner of cloudflare/pint):
the one type of every rulesgen problem, from loading the catalog to `rulesgen lint` (rulesgen/checks/)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Diagnostic:
    path: str
    line: int
    col: int
    code: str
    message: str
    severity: str = "error"  # error | warning (lint's checks declare theirs)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.severity}[{self.code}]: {self.message}"


class RulesgenError(Exception):
    """Raised with every problem found, sorted by file:line; never with a partial set."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = sorted(set(diagnostics))
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class Collector:
    """Collects diagnostics during validation so that all of them are reported at once."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def add(self, where: "Where", code: str, message: str) -> None:
        self.items.append(Diagnostic(where.path, where.line, where.col, code, message))

    def extend(self, diagnostics) -> None:
        """Diagnostics another step already made (e.g. a template's rendering problems)."""
        self.items.extend(diagnostics)

    def raise_if_any(self) -> None:
        if self.items:
            raise RulesgenError(self.items)


@dataclass(frozen=True)
class Where:
    path: str
    line: int = 1
    col: int = 1
