"""What the catalog loaders share: record-name rules and a top-level list with its lines."""
from __future__ import annotations

import re

from ..load.mapping import Fields, did_you_mean
from ..model import grafana_units
from ..model.words import CATALOG_TITLE_MAX, title_problem

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


def read_title(f: Fields, label: str) -> str:
    """The optional `title:` (a panel's words, model/words.py): at most CATALOG_TITLE_MAX characters, no PromQL."""
    title = f.str("title", default="") or ""
    problem = title and title_problem(title, CATALOG_TITLE_MAX)
    if problem:
        f.errors.add(f.at("title"), "bad-title", f"{label}: title {title!r}: {problem}")
        return ""
    return title


def read_unit(f: Fields, label: str, default: str = "short") -> str:
    """`unit:` (required): a Grafana unit id, or a unit drawn through one (model/grafana_units.py)."""
    unit = f.str("unit", required=True) or default
    if not grafana_units.is_known(unit):
        f.errors.add(f.at("unit"), "unknown-unit",
                     f"{label}: unit {unit!r} is not a Grafana unit id{did_you_mean(unit, sorted(grafana_units.UNIT_IDS))} "
                     f"(Grafana's categories.ts; or one of {', '.join(grafana_units.CONVERTED)})")
        return default
    return unit
