"""tier-local: every rule of a file declared for the shards (`# Tier shard (` in its header) must be
local or partial, as its tree and the rules it reads say (tiers.Classifier). Rules of files declared
global are not the shards' to read: a shard rule that reads a name only they write is global too."""
from __future__ import annotations

import re
from pathlib import Path

from ..promql import tree as promql_tree
from ..promql.tiers import GLOBAL, Classifier
from .base import FILES, Check, Files

_TIER_DECLARATION = re.compile(r"^# Tier (shard|global) \(", re.M)


def declared_tier(path: Path) -> str | None:
    """The tier a rule file's header declares (`# Tier shard (` / `# Tier global (`), else None."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:600]
    except OSError:
        return None
    m = _TIER_DECLARATION.search(head)
    return m.group(1) if m else None


def run(files: Files):
    declared = {str(path): declared_tier(path) for path, _ in files.per_file}
    if "shard" not in declared.values():
        return
    rules, where, global_only = [], [], set()
    for path, rule in files.plain_rules:
        if declared[path] == "global":
            global_only.add(rule.record or "ALERTS")
            continue
        rules.append(rule)
        where.append(path)
    global_only -= {r.record for r in rules if r.record} | {"ALERTS"}
    c = Classifier(rules, files.options.partition)
    for rule, path, t in zip(rules, where, c.tiers):
        if declared[path] != "shard":
            continue
        unseen = [n for n in promql_tree.names_read(rule.expr) if n in global_only]
        if t.tier == GLOBAL:
            why = t.reason
        elif unseen:
            why = f"reads {', '.join(unseen)}, written by the global tier only"
        else:
            continue
        yield rule.hit(path, f"declared for the shards but global: {why}; move it to the global tier")


CHECK = Check("tier-local", "error", False, "a rule declared for the shards (a `# Tier shard` file) needs the whole "
              "fleet: it aggregates the partition key away non-decomposably or reads a global result (README "
              "\"Sharded topology\")", FILES, run)
