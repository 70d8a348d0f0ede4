"""Rule groups the engines take as they are: at most N rules a group (Grafana Mimir's ruler rejects a
group above `-ruler.max-rules-per-rule-group`, 20 by default), and the rules that read ALERTS /
ALERTS_FOR_STATE in groups of their own, so that every other group is eligible for Prometheus 3's
concurrent rule evaluation.

Prometheus 3.5 (`rules/group.go` buildDependencyMap, `rules/manager.go` AnalyseRules and
SplitGroupIntoBatches) analyses each group on load: a rule depends on another rule of its group when
one of its vector selectors' metric-name matcher matches that rule's name. A selector with no metric
name matcher at all, or whose name matcher matches ALERTS or ALERTS_FOR_STATE, makes the whole group
"indeterminate": no rule's dependencies are then known, and a rule runs concurrently only when it is
known to have no dependencies, so every rule of that group runs one after the other. (In a determinate
group, with `--enable-feature=concurrent-rule-eval`, the rules without dependencies run concurrently
first, then one by one those with dependencies and dependants, then concurrently those without
dependants; at most `--rules.max-concurrent-evals` at a time.)

A group is split in place, deterministically, without changing what any rule reads, and so that no
chain of reads crosses more than one group boundary: a rule reading a record of another group reads its
latest value, up to one group interval old (a real engine runs groups independently), so a chain cut
three times would be three evaluations behind its inputs. Prometheus 3 orders a group's rules by their
dependencies and vmalert runs them in order, so a chain inside one group costs nothing. The split
(`_staged`):
- keeps every dependency-connected set of rules (rules linked by reads within the group: a record and its
  reader; an alert and a rule whose ALERTS selector can select it) in one group when it fits, packing
  such sets into groups of at most N rules, rules reading ALERTS with the rules connected to them, every
  set with none of them in groups without one (those stay eligible for Prometheus 3's concurrent
  evaluation);
- cuts a set larger than N in two stages: first the inputs of the rules reading ALERTS and, one at a
  time, the rule whose inputs taken along leave the largest remaining set smallest (a hub such as the
  GPU's reporting timestamp or its workload join), each with everything it reads; then the rest. A stage
  reads only itself and the stage before, and each of its connected sets stays whole, so any chain
  crosses at most one boundary.
When no such split fits (a very small N), the group is laid out in an order that keeps every related
pair in order, runs of one kind are cut into the fewest groups at the cuts that separate the fewest
related pairs (`_by_cuts`), and `chain_lag` says how far behind a chain can be. Evaluated in the new
group order (promtool's `group_eval_order`, vmalert-tool's levels), every rule sees exactly what it saw
before: the same values at the same evaluation step (`cross_group_reads` counts the pairs of groups).

Works on any rule set (rulesgen's own files or any other): rules are objects with `expr`, and `record`
or `alert` and `labels` (output.Rule, or lint's view of a YAML rule).
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import replace

from ..memo import Memo
from ..model.output import RuleFile, RuleGroup
from ..promql import tree as promql_tree

ALERT_SERIES = ("ALERTS", "ALERTS_FOR_STATE")
# Grafana Mimir's default limits (pkg/util/validation/limits.go): -ruler.max-rules-per-rule-group and
# -ruler.max-rule-groups-per-tenant.
MIMIR_MAX_RULES_PER_GROUP = 20
MIMIR_MAX_GROUPS_PER_TENANT = 70
READS_ALERTS_SUFFIX = "reads-alerts"
# vmalert asks its datasource with step = -datasource.queryStep (5m by default), which is also the
# lookback of an instant selector: a record written every 5 minutes or less often is missed by an
# instant selector whenever its newest point is one interval old (always, for the hourly history).
SLOW_INTERVAL = 300


def _matches(op: str, value: str, name: str) -> bool:
    if op == "=":
        return name == value
    if op == "!=":
        return name != value
    try:
        hit = re.fullmatch(value, name) is not None
    except re.error:
        return True
    return hit if op == "=~" else not hit


def _name_matchers(selector: promql_tree.Selector) -> list[tuple[str, str]]:
    """The metric-name matchers of a selector: its name, or its __name__ matchers ([] when none)."""
    if selector.name:
        return [("=", selector.name)]
    return [(op, value) for label, op, value in selector.matchers if label == "__name__"]


def _selects_name(selector: promql_tree.Selector, name: str) -> bool:
    matchers = _name_matchers(selector)
    return not matchers or all(_matches(op, value, name) for op, value in matchers)


def serial_reason(expr: str) -> str | None:
    """Why Prometheus 3.5 would find the dependencies of a group holding this expression indeterminate
    (and evaluate that whole group serially), or None."""
    try:
        selectors = promql_tree.selectors(expr)
    except promql_tree.PromQLSyntaxError:
        return None
    for s in selectors:
        if not _name_matchers(s):
            return "a selector without a metric name"
        for series in ALERT_SERIES:
            if _selects_name(s, series):
                return f"reads {series}"
    return None


def _output(rule) -> tuple[str, dict[str, str]]:
    if getattr(rule, "record", None):
        return rule.record, {}
    return "ALERTS", {**dict(getattr(rule, "labels", ()) or ()), "alertname": rule.alert}


@functools.lru_cache(maxsize=4096)
def _selectors(expr: str):
    """An expression's selectors (None: it does not parse); related_pairs asks for each rule once per other rule."""
    try:
        return promql_tree.selectors(expr)
    except promql_tree.PromQLSyntaxError:
        return None


def reads(reader, writer) -> bool:
    """Whether `reader`'s expression can read what `writer` writes: its record (by name), or for an
    alert its ALERTS / ALERTS_FOR_STATE series (by name and the alert's name and labels)."""
    selectors = _selectors(reader.expr)
    if selectors is None:
        return True
    name, labels = _output(writer)
    names = (name,) if name != "ALERTS" else ALERT_SERIES
    for s in selectors:
        if any(_selects_name(s, n) for n in names) and (not labels or s.may_select(labels)):
            return True
    return False


def related_pairs(rules: Sequence) -> set[tuple[int, int]]:
    """(i, j), i < j, for every two rules of which one reads the other: their order decides whether the
    reader sees this evaluation's value or the previous one, so it must not change. (`reads` over every
    pair, with the writers looked up by the name a selector names: a group of n rules costs n, not n².)"""
    writers_named: dict[str, list[int]] = {}
    for i, rule in enumerate(rules):
        name, _ = _output(rule)
        for n in ((name,) if name != "ALERTS" else ALERT_SERIES):
            writers_named.setdefault(n, []).append(i)
    pairs = set()
    for j, reader in enumerate(rules):
        selectors = _selectors(reader.expr)
        matchers = [_name_matchers(s) for s in selectors or ()]
        if selectors is None or any(len(m) != 1 or m[0][0] != "=" for m in matchers):
            candidates = range(len(rules))  # no plain name to look up: ask every writer
        else:
            candidates = sorted({i for m in matchers for i in writers_named.get(m[0][1], ())})
        pairs.update((min(i, j), max(i, j)) for i in candidates if i != j and reads(reader, rules[i]))
    return pairs


def neighbours(pairs: set[tuple[int, int]], n: int) -> dict[int, set[int]]:
    """Each of n rules' related rules (related_pairs, either side)."""
    near: dict[int, set[int]] = {k: set() for k in range(n)}
    for i, j in pairs:
        near[i].add(j)
        near[j].add(i)
    return near


def _layout(rules: Sequence, serial: list[bool], pairs: set[tuple[int, int]]) -> list[int]:
    """A new order of the rules that keeps every related pair in its order, taking rules of the current
    kind (serial or not) as long as one is free to go, then switching (fewest runs, deterministic).
    Among the free rules of a kind the first in the original order goes (a layout that clustered each
    rule with its inputs instead separated more of them at the cuts, on the bundled rules)."""
    before: dict[int, set[int]] = {j: set() for j in range(len(rules))}
    for i, j in pairs:
        before[j].add(i)
    done: set[int] = set()
    order: list[int] = []
    kind = serial[0] if rules else False
    while len(order) < len(rules):
        free = [k for k in range(len(rules)) if k not in done and before[k] <= done]
        same = [k for k in free if serial[k] == kind]
        pick = same[0] if same else free[0]
        kind = serial[pick]
        order.append(pick)
        done.add(pick)
    return order


def _cut(run: list[int], limit: int, pairs: set[tuple[int, int]]) -> list[list[int]]:
    """The run cut into the fewest pieces of at most `limit` rules, keeping as many related pairs inside
    one piece as possible (then the most even sizes; then the earliest cuts)."""
    n = len(run)
    if limit <= 0 or n <= limit:
        return [run]
    pieces = math.ceil(n / limit)
    related = {(a, b) for a in range(n) for b in range(a + 1, n)
               if (min(run[a], run[b]), max(run[a], run[b])) in pairs}

    def inside(q: int, p: int) -> int:
        return sum(1 for a, b in related if q <= a and b < p)

    best: dict[tuple[int, int], tuple[tuple[int, int], int]] = {(0, 0): ((0, 0), -1)}
    for c in range(1, pieces + 1):
        for p in range(1, n + 1):
            options = []
            for q in range(max(0, p - limit), p):
                if (q, c - 1) in best:
                    cost = best[(q, c - 1)][0]
                    options.append(((cost[0] - inside(q, p), cost[1] + (p - q) ** 2), q))
            if options:
                best[(p, c)] = min(options)
    cuts, p = [], n
    for c in range(pieces, 0, -1):
        q = best[(p, c)][1]
        cuts.append(run[q:p])
        p = q
    return cuts[::-1]


_SPLITS: Memo[tuple[tuple[str, tuple[int, ...]], ...]] = Memo(size=512)


def split_group(group: RuleGroup, limit: int) -> tuple[RuleGroup, ...]:
    """The group as groups of at most `limit` rules (0: no limit), the rules reading ALERTS (or
    anything else that makes Prometheus' dependency analysis give up) in groups of their own. The
    pieces are worked out once per process for the same group (rulesgen/memo.py): they depend on its
    name, its rules' expr, record, alert and labels, and the limit."""
    key = (group.name, tuple((r.expr, r.record, r.alert, tuple(r.labels)) for r in group.rules), limit)
    pieces = _SPLITS.get(key, lambda: _pieces(group, limit))
    if pieces == ((group.name, tuple(range(len(group.rules)))),):  # the group as it is
        return (group,)
    return tuple(replace(group, name=name, rules=tuple(group.rules[k] for k in piece)) for name, piece in pieces)


def _pieces(group: RuleGroup, limit: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """split_group's answer as (name, indices of the group's rules) per piece."""
    rules = group.rules
    serial = [serial_reason(r.expr) is not None for r in rules]
    if (limit <= 0 or len(rules) <= limit) and len(set(serial)) <= 1:
        return ((group.name, tuple(range(len(rules)))),)
    pairs = related_pairs(rules)
    pieces = _staged(serial, pairs, limit) or _by_cuts(rules, serial, pairs, limit)
    if len(pieces) == 1:
        return ((group.name, tuple(range(len(rules)))),)
    names = _names(group.name, [kind for kind, _ in pieces])
    return tuple((name, tuple(piece)) for name, (_, piece) in zip(names, pieces))


def _staged(serial: list[bool], pairs: set[tuple[int, int]], limit: int) -> list[tuple[bool, list[int]]] | None:
    """Pieces in which no chain of related rules crosses more than one boundary (module doc), as (reads
    ALERTS, indices in the group's order) in evaluation order; None when none fit within `limit`."""
    n = len(serial)
    cap = limit if limit > 0 else n
    near = neighbours(pairs, n)
    before: dict[int, set[int]] = {k: set() for k in range(n)}
    for i, j in pairs:
        before[j].add(i)

    @functools.lru_cache(maxsize=None)
    def upstream(k: int) -> frozenset[int]:
        """k and every rule that must be evaluated before it (what it reads, transitively)."""
        return frozenset({k}).union(*(upstream(i) for i in before[k]))

    def connected(members: set[int]) -> list[list[int]]:
        out, seen = [], set()
        for k in sorted(members):
            if k in seen:
                continue
            seen.add(k)
            todo, part = [k], []
            while todo:
                x = todo.pop()
                part.append(x)
                for y in near[x]:
                    if y in members and y not in seen:
                        seen.add(y)
                        todo.append(y)
            out.append(sorted(part))
        return out

    def largest(members: set[int]) -> int:
        return max(map(len, connected(members)), default=0)

    everything = set(range(n))
    first: set[int] = set()
    if largest(everything) > cap:
        # The plain inputs of the rules reading ALERTS go first: an ALERTS reader's piece then holds it
        # and what reads it, not the records it reads (those stay eligible for concurrent evaluation).
        seeded = set().union(*(upstream(i) for k in range(n) if serial[k] for i in before[k] if not serial[i]))
        first = seeded if largest(seeded) <= cap else set()
    while largest(everything - first) > cap:
        if largest(first) > cap:
            return None
        big = max(connected(everything - first), key=lambda part: (len(part), -part[0]))
        best: tuple[tuple[int, int, int], set[int]] | None = None
        for hub in big:
            taken = first | upstream(hub)
            if largest(taken) > cap:
                continue
            key = (largest(everything - taken), len(taken), hub)
            if best is None or key < best[0]:
                best = (key, taken)
        if best is None:
            return None
        first = best[1]
    if largest(first) > cap:
        return None
    pieces: list[tuple[int, bool, list[int]]] = []
    for stage, part in [(0, p) for p in connected(first)] + [(1, p) for p in connected(everything - first)]:
        kind = any(serial[k] for k in part)
        home = next((p for p in pieces if p[0] == stage and p[1] == kind and len(p[2]) + len(part) <= cap), None)
        if home is None:
            pieces.append((stage, kind, list(part)))
        else:
            home[2].extend(part)
    return [(kind, sorted(members)) for _, kind, members in pieces]


def _by_cuts(rules: Sequence, serial: list[bool], pairs: set[tuple[int, int]], limit: int) -> list[tuple[bool, list[int]]]:
    """The fallback split (module doc): runs of one kind, each cut into the fewest pieces of at most `limit`."""
    order = _layout(rules, serial, pairs)
    runs: list[tuple[bool, list[int]]] = []
    for k in order:
        if runs and runs[-1][0] == serial[k]:
            runs[-1][1].append(k)
        else:
            runs.append((serial[k], [k]))
    return [(kind, piece) for kind, run in runs for piece in _cut(run, limit, pairs)]


def chain_lag(pieces: Sequence[RuleGroup]) -> list[tuple[object, int]]:
    """(rule, lag) for every rule of the pieces one group was split into, in evaluation order: the most
    piece boundaries a chain of reads into the rule crosses (each one is up to one evaluation interval of
    delay in a real engine). A rule reading one evaluated after it reads its previous value anyway: such
    a read adds nothing."""
    placed = [(k, r) for k, p in enumerate(pieces) for r in p.rules]
    rules = [r for _, r in placed]
    lag = [0] * len(rules)
    for i, j in sorted(related_pairs(rules), key=lambda pair: pair[1]):
        if reads(rules[j], rules[i]):
            lag[j] = max(lag[j], lag[i] + (placed[i][0] != placed[j][0]))
    return list(zip(rules, lag))


def _names(base: str, kinds: list[bool]) -> list[str]:
    """The first plain piece keeps the group's name when it is the only one; plain pieces are
    otherwise numbered base-1, base-2 ...; pieces reading ALERTS are base-reads-alerts(-1, -2 ...)."""
    counts = {kind: kinds.count(kind) for kind in (False, True)}
    seen = {False: 0, True: 0}
    out = []
    for kind in kinds:
        seen[kind] += 1
        stem = f"{base}-{READS_ALERTS_SUFFIX}" if kind else base
        out.append(stem if counts[kind] == 1 else f"{stem}-{seen[kind]}")
    return out


def fit(files: Sequence[RuleFile], limit: int) -> tuple[RuleFile, ...]:
    """Every group of every file split in place (split_group); files and group order otherwise kept."""
    return tuple(replace(f, groups=tuple(g for group in f.groups for g in split_group(group, limit))) for f in files)


def base_group(name: str, bases: Sequence[str]) -> str | None:
    """The group (of `bases`) a split group's name comes from, or None."""
    for base in sorted(bases, key=len, reverse=True):
        if name == base or re.fullmatch(re.escape(base) + rf"(-{READS_ALERTS_SUFFIX}|-[0-9]+)*", name):
            return base
    return None


def cross_group_reads(files: Sequence[RuleFile]) -> list[tuple[str, str, str, str]]:
    """(reader, its group, writer, its group) for each rule reading a record of another group of the
    same interval: in a real engine it reads a value up to one interval old."""
    placed = [(g, r) for f in files for g in f.groups for r in g.rules]
    writers = {r.record: g for g, r in placed if r.record}
    out = []
    for g, r in placed:
        for name in promql_tree.recorded_names(r.expr):
            w = writers.get(name)
            if w is not None and w.name != g.name and w.interval_seconds == g.interval_seconds:
                out.append((r.record or r.alert, g.name, name, w.name))
    return out
