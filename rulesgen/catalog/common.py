"""What the catalog loaders share: record-name rules and a top-level list with its lines."""
from __future__ import annotations

import re

from ..load.mapping import Fields

RECORD_NAME = re.compile(r"^(gpu|node|job|fleet|model|rank):[a-z0-9_]+:[a-z0-9_]+$")
LEVELS = ("gpu", "node", "job", "fleet", "model", "rank")  # rank: one series per rank of a training job
METRIC_PREFIXES = ("DCGM_FI_", "DCGM_EXP_")  # dcgm-exporter's series names


def unique(f: Fields, key: str, value, seen: dict, label: str) -> None:
    """An id defined twice is an error at its second place, naming the line of the first."""
    if value in seen:
        f.errors.add(f.at(key), "duplicate-id", f"{label} already defined on line {seen[value].line}")
    else:
        seen[value] = f.at(key)


def top_list(doc, key, errors, what, also=()):
    """The list under key; also: other top-level keys the file may have (read by another reader)."""
    top = Fields(doc, errors, what)
    top.seen.update(also)
    items, wheres = top.list(key, required=True)
    top.done()
    return items, wheres
