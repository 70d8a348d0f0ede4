"""Output models: what builders produce and renderers turn into text."""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import Where


@dataclass(frozen=True)
class Rule:
    expr: str
    record: str | None = None
    alert: str | None = None
    for_seconds: int = 0
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    failure_mode: str | None = None
    source: Where | None = field(default=None, compare=False)  # catalog position it was built from


@dataclass(frozen=True)
class RuleGroup:
    name: str
    rules: tuple[Rule, ...]
    interval_seconds: int | None = None


@dataclass(frozen=True)
class RuleFile:
    path: str
    groups: tuple[RuleGroup, ...]
    description: str = ""


@dataclass(frozen=True)
class Artifact:
    path: str
    text: str


@dataclass(frozen=True)
class RuleSet:
    """Everything the rule builders produce, in evaluation order."""
    files: tuple[RuleFile, ...]
    inactive: tuple[tuple[str, str], ...] = field(default=())  # (failure mode id, reason)

    @property
    def rules(self):
        for f in self.files:
            for g in f.groups:
                yield from g.rules
