"""Chapters (issue 37 item 1): every row of every dashboard says in one line whom it serves, "<title> · for
<audience>". A hand-made dashboard is a list of chapters (its rows above the failure-mode rows, each open);
a failure-mode row is for the audience of its group."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grafanalib.core import Panel

SEPARATOR = " · for "
# Whom a failure-mode row serves, by catalog group (model.catalog.GROUPS); a group not named here: DEBUG.
# Short: a row's title stays within 80 characters (words.py) after the longest failure mode's title.
GROUP_AUDIENCE = {"health": "on-call and the hardware team", "efficiency": "job owners", "baselines": "the hardware team",
                  "fleet": "on-call and leads", "jobs": "job owners"}
DEBUG = "whoever debugs this failure mode"


@dataclass(frozen=True)
class Chapter:
    """A row of a hand-made dashboard: its title, whom it serves (one line), its panels, how many per line."""
    title: str
    audience: str
    panels: Callable[..., list[Panel]]
    per_line: int = 2


def chapter_title(title: str, audience: str) -> str:
    return f"{title}{SEPARATOR}{audience}"


def group_audience(group: str) -> str:
    return GROUP_AUDIENCE.get(group, DEBUG)
