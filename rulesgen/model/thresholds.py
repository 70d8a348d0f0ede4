"""A failure mode's threshold as the catalog templates see it, and the expressions rendered with them.

A template renders a threshold ([[ t.NAME ]], [[ thresholds.MODE.NAME ]]) as a placeholder that PromQL
parses as a series name, so the rendering keeps which number is which threshold; the rule's text is that
rendering with each placeholder replaced by the threshold's value (`Marked.filled`)."""
from __future__ import annotations

from dataclasses import dataclass

from ..promql import text as promql
from ..promql import tree as promql_tree

PLACEHOLDER_PREFIX = "__threshold__"


@dataclass(frozen=True)
class ThresholdValue:
    """A threshold in a template's context (with the user's override): prints as its placeholder; the
    template filters that need the number (a range, a duration) read `.value` through `numeric`."""
    mode: str  # the failure mode's id
    name: str
    value: float

    @property
    def placeholder(self) -> str:
        return f"{PLACEHOLDER_PREFIX}{self.mode}__{self.name}__"

    def __str__(self) -> str:
        return self.placeholder


def numeric(x) -> float:
    """A template argument as a number: a threshold's value, a named window's seconds, a number or its text."""
    return x.value if isinstance(x, ThresholdValue) else float(x)


@dataclass(frozen=True)
class Marked:
    """A rendered expression with its thresholds still at their places (placeholders)."""
    text: str
    thresholds: tuple[ThresholdValue, ...] = ()

    @classmethod
    def of(cls, text: str, known) -> "Marked":
        """`text` with the thresholds of `known` whose placeholder it holds."""
        return cls(text, tuple(t for t in known if t.placeholder in text))

    def filled(self) -> str:
        """The text with each placeholder replaced by its threshold's value, as the rule is written."""
        out = self.text
        for t in sorted(self.thresholds, key=lambda t: -len(t.placeholder)):  # a longer one may contain a shorter
            out = out.replace(t.placeholder, promql.format_number(t.value))
        return out

    @property
    def tree(self) -> promql_tree.Expr:
        """The syntax tree, each threshold a bare series selector named by its placeholder (`threshold_at`)."""
        return promql_tree.parse(self.text)

    def threshold_at(self, selector: promql_tree.Selector) -> ThresholdValue | None:
        """The threshold a selector of `tree` stands for, or None for a series."""
        if selector.matchers or selector.range is not None:
            return None
        return next((t for t in self.thresholds if t.placeholder == selector.name), None)

    def value_text(self, selector: promql_tree.Selector) -> str | None:
        """The value to print in a threshold's place (promql.printer's Replace), None for a series."""
        threshold = self.threshold_at(selector)
        return promql.format_number(threshold.value) if threshold else None

    def unplaced(self) -> str | None:
        """Why a threshold has no place of its own in the tree, or None. `[[ t.celsius ]]1e400` writes one
        number into the rule (901e400) but one series name into the tree, so the dashboards and covers,
        which read the thresholds from the tree, would lose it."""
        try:
            names = promql_tree.names_read(self.text)
        except promql_tree.PromQLSyntaxError:
            return "a threshold ([[ t.NAME ]]) is written against a number or a name: put a space or an operator beside it"
        placeholders = {t.placeholder: t for t in self.thresholds}
        for name in names:
            if name.startswith(PLACEHOLDER_PREFIX) and name not in placeholders:
                t = next((t for p, t in placeholders.items() if p in name), None)
                what = f"threshold {t.name}" if t else "a threshold"
                return f"{what} is written against other characters ({name}): put a space or an operator beside it"
        return None
