"""Where each rule can run when the fleet is sharded by node: its tier, read from its syntax tree and
the tiers of what it reads (README "Sharded topology").

- `local`: every series it writes keeps the partition key (the host label, or the scrape target's
  `instance`): per GPU, per node. A shard that scrapes a node holds everything such a rule needs about
  it, so the rule is correct on any shard.
- `partial`: a decomposable aggregate over the partition key (sum, count, min, max, group; avg as sum
  and count) of local input. Each shard computes it over its own nodes; the global tier combines the
  shards' parts (sums and counts summed, min/max re-minned/maxed).
- `global`: needs the whole fleet or a whole job at once (quantiles, medians, MAD, stddev, topk, shares,
  job spans, joins across nodes), or reads the value of a partial or global result: everything
  downstream of one.

One exception keeps the model limits on the shards: a partial aggregate whose value is discarded
(`count(...) * 0 + 87`, a constant per model) is read for its label set only. Each shard holds the
group of every node it scrapes, so a per-GPU rule joining it finds its GPU's group on its own shard:
the result is local (it says so in its reason). Not so over time: a rule that reads such a record
through a range or an offset is global, since a group that moved between shards (a rescheduled job)
has part of its history on each.

The classification walks the tree bottom up; `why` names the node that decided the tier. Rules that
read ALERTS take the highest tier of the alerts their selectors can select (a fixed point over the set).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import promql_parser as pp

from ..memo import Memo
from . import labels as label_flow
from . import printer as promql_print
from .graph import ALERT_SERIES
from .tree import Expr, as_tree, names_read, nodes, number, selector_from, unwrap

LOCAL, PARTIAL, GLOBAL = "local", "partial", "global"
TIERS = (LOCAL, PARTIAL, GLOBAL)
_RANK = {t: i for i, t in enumerate(TIERS)}
DECOMPOSABLE = ("sum", "count", "min", "max", "group", "avg")
# How the global tier combines the shards' parts of each decomposable aggregate (avg: sum / count).
COMBINE = {"sum": "sum", "count": "sum", "min": "min", "max": "max", "group": "group"}
DEFAULT_SHARD_LABEL = "shard"
MAX_SHOWN = 120  # characters of a sub-expression quoted in a reason


@dataclass(frozen=True)
class Tier:
    """A tier and why: the sub-expression that decided it (printed, shortened) and a sentence."""
    tier: str
    why: str = ""
    node: str = ""

    @property
    def reason(self) -> str:
        """why, with the deciding sub-expression."""
        return self.why + (f" [{self.node}]" if self.node else "")

    def __str__(self) -> str:
        return f"{self.tier}: {self.reason}"


def partition_labels(settings) -> tuple[str, ...]:
    """The labels that name a shard's unit of data: the node (host label and its exporter spellings)
    and the scrape target (`instance`): hashmod sharding splits targets, one dcgm-exporter per node."""
    return tuple(dict.fromkeys((settings.host_label, *settings.host_sources, "instance")))


@lru_cache(maxsize=16384)
def _shown(e: Expr) -> str:
    """A node as a reason quotes it (kept by node, which the cache keeps alive: each rule's tree is parsed
    once, and walked on every pass and by every classification of its rule set)."""
    try:
        text = promql_print.to_text(e)
    except TypeError:  # pragma: no cover - every node type prints
        text = type(e).__name__
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 3] + "..."


def _max(*tiers: Tier) -> Tier:
    best = tiers[0]
    for t in tiers[1:]:
        if _RANK[t.tier] > _RANK[best.tier]:
            best = t
    return best


def _is_zero(e: Expr) -> bool:
    return number(e) == 0


class Classifier:
    """Tiers of a rule set (objects with expr, record | alert, labels), in evaluation order."""

    def __init__(self, rules: Sequence, partition: Sequence[str]):
        self.rules = tuple(rules)
        self.partition = frozenset(partition)
        records = label_flow.record_labels([(r.record, r.expr) for r in self.rules if r.record])
        # ALERTS carry the labels of the alerts they select (label_flow reads an alert's own ALERTS as adding
        # nothing to it; here what counts is that they carry its subject, e.g. the host)
        self.labels = lambda name: label_flow.LabelSet(open=True) if name in ALERT_SERIES else records(name)
        self.writers: dict[str, list[int]] = {}
        # each alert's labels as its ALERTS series carry them, for alert_tier's selector matching
        self.alert_series = tuple((i, {**dict(r.labels), "alertname": r.alert}) for i, r in enumerate(self.rules) if r.alert)
        self.carries: dict[tuple[int, frozenset], tuple[Expr, bool]] = {}  # _can_carry's answers
        for i, r in enumerate(self.rules):
            if r.record:
                self.writers.setdefault(r.record, []).append(i)
        self.own: str | None = None  # the record being classified
        self.tiers: list[Tier] = [Tier(LOCAL, "not yet classified")] * len(self.rules)
        # alerts whose top-level `or` branches are of both tiers: (local branches, the others)
        self.halves: dict[int, tuple[tuple[Expr, ...], tuple[Expr, ...]]] = {}
        self.decomposition: dict[int, tuple[str, str, tuple[str, ...]]] = {}
        self.answers: dict[int, tuple[Expr, Tier]] | None = None  # walk()'s once classified (id of the node: node, tier)
        inputs = [self._inputs(r) for r in self.rules]
        walked, changed = [-1] * len(self.rules), [-1] * len(self.rules)  # the step of each rule's last walk, change
        step = 0
        for _ in range(len(self.rules) + 2):  # monotone: each pass can only raise tiers
            before = list(self.tiers)
            for i, r in enumerate(self.rules):
                # a walk reads only the tiers (and halves) of its inputs: none changed since it read them, the
                # walk would give the same answer (its own change counts: a record may read itself)
                if walked[i] >= 0 and all(changed[j] < walked[i] for j in inputs[i]):
                    continue
                step += 1
                old = (self.tiers[i], self.halves.get(i))
                self.tiers[i] = self._rule(i, r)
                walked[i] = step
                if (self.tiers[i], self.halves.get(i)) != old:
                    changed[i] = step
            if before == self.tiers:
                break
        self.answers = {}  # walk()'s, from now on: the tiers are final

    def _inputs(self, rule) -> frozenset[int]:
        """The rules whose tier the walk of `rule` reads: the writers of each record it names, every alert
        when it reads ALERTS (the walk reads a selector's name only, as record_tier and alert_tier do)."""
        out: set[int] = set()
        for e in nodes(rule.expr):
            if isinstance(e, pp.VectorSelector) and e.name in ALERT_SERIES:
                out.update(i for i, _ in self.alert_series)
            elif isinstance(e, pp.VectorSelector) and e.name:
                out.update(self.writers.get(e.name, ()))
        return frozenset(out)

    # -- records and ALERTS -------------------------------------------------------------------------

    def record_tier(self, name: str) -> Tier | None:
        idx = self.writers.get(name)
        if not idx:
            return None
        return _max(*(self.tiers[i] for i in idx))

    def alert_tier(self, vs, required: frozenset = frozenset()) -> Tier:
        """The tier of an ALERTS read: the highest of the alerts it can select. `required`: partition labels the
        read is matched on (`and on (cluster, Hostname) ALERTS{...}`): an alert (or the global half of a split
        one) whose series cannot carry them cannot match, so it does not count."""
        s = selector_from(vs)
        found = Tier(LOCAL, "reads ALERTS of local alerts only", _shown(vs))
        for i, series in self.alert_series:
            t = self.tiers[i]
            if _RANK[t.tier] <= _RANK[found.tier] or not s.may_select(series):
                continue
            exprs = self.halves[i][1] if i in self.halves else (as_tree(self.rules[i].expr),)
            if required and not any(self._can_carry(e, required) for e in exprs):
                continue
            found = Tier(GLOBAL, f"reads ALERTS of {self.rules[i].alert}, a {t.tier} alert", _shown(vs))
        return found

    def _can_carry(self, e: Expr, labels: frozenset) -> bool:
        key = (id(e), labels)
        if key not in self.carries:  # the node is kept with its answer, so that its id is never reused
            carried = label_flow.output_labels(e, self.labels)
            self.carries[key] = (e, carried.open or bool(carried.known & labels))
        return self.carries[key][1]

    # -- the walk -------------------------------------------------------------------------------------

    def _rule(self, i: int, rule) -> Tier:
        self.own = rule.record  # a record reading its own earlier value adds no input (sharded's end marker)
        tree = as_tree(rule.expr)
        branches = or_branches(tree) if rule.alert else [tree]
        if len(branches) > 1:
            tiers = [self.walk(b) for b in branches]
            local = tuple(b for b, t in zip(branches, tiers) if t.tier == LOCAL)
            rest = tuple(b for b, t in zip(branches, tiers) if t.tier != LOCAL)
            if local and rest:
                self.halves[i] = (local, rest)
                worst = _max(*tiers)
                return Tier(GLOBAL, f"split: {len(local)} of its {len(branches)} `or` branches are local and run on "
                                    f"the shards, the others on the global tier ({worst.why})", worst.node)
            self.halves.pop(i, None)
        t = self.walk(tree)
        if t.tier == LOCAL and not t.why:
            return Tier(LOCAL, "every aggregation and match keeps the partition key")
        return t

    def keeps_partition(self, e: Expr) -> bool:
        carried = label_flow.output_labels(e, self.labels)
        return carried.open or bool(carried.known & self.partition)

    def groups_by_partition(self, e) -> bool:
        """Whether an aggregation's groups split along the partition key (its grouping, not its output: topk
        by (cluster) keeps every label of the series it picks, yet picks among all nodes)."""
        if e.modifier is None:
            return False
        if e.modifier.type == pp.AggModifierType.By:
            return bool(frozenset(e.modifier.labels) & self.partition)
        inner = label_flow.output_labels(e.expr, self.labels).minus(e.modifier.labels)
        return inner.open and not self.partition <= frozenset(e.modifier.labels) or bool(inner.known & self.partition)

    def walk(self, e: Expr) -> Tier:
        """The tier of a node. Once the rule set is classified, kept by node (kept alive with its answer, so
        that its id is never reused): the sharded builder asks again for each node of a global rule."""
        if self.answers is None:
            return self._walk(e)
        if id(e) not in self.answers:
            self.answers[id(e)] = (e, self._walk(e))
        return self.answers[id(e)][1]

    def _walk(self, e: Expr) -> Tier:
        if isinstance(e, pp.VectorSelector):
            return self.history(self.selector(e), e) if e.offset or e.at else self.selector(e)
        if isinstance(e, pp.MatrixSelector):
            return self.history(self.selector(e.vector_selector), e)
        if isinstance(e, (pp.NumberLiteral, pp.StringLiteral)):
            return Tier(LOCAL)
        if isinstance(e, (pp.ParenExpr, pp.UnaryExpr)):
            return self.walk(e.expr)
        if isinstance(e, pp.SubqueryExpr):
            return self.over_value(self.walk(e.expr), e, "a subquery over it")
        if isinstance(e, pp.Call):
            inner = [self.walk(a) for a in e.args]
            return self.over_value(_max(Tier(LOCAL), *inner), e, f"{e.func.name}() of it")
        if isinstance(e, pp.AggregateExpr):
            return self.aggregate(e)
        if isinstance(e, pp.BinaryExpr):
            return self.binary(e)
        return Tier(GLOBAL, f"unknown node {type(e).__name__}", _shown(e))  # pragma: no cover

    def selector(self, vs) -> Tier:
        name = vs.name
        if name in ALERT_SERIES:
            return self.alert_tier(vs)
        found = self.record_tier(name) if name else None
        if found is None:
            return Tier(LOCAL, "")  # an input series: each shard holds its own targets' series whole
        if found.tier == LOCAL:
            return Tier(LOCAL, found.why if "set-only" in found.why else "", found.node)
        return Tier(found.tier, f"reads {name}, a {found.tier} record", _shown(vs))

    @staticmethod
    def history(inner: Tier, e: Expr) -> Tier:
        """A set-only record read over time (a range, an offset): each shard holds the history of the groups it
        held, so a group that moved between shards (a job rescheduled onto another node) has part of its history
        on each shard and the whole on none."""
        if inner.tier == LOCAL and "set-only" in inner.why:
            return Tier(GLOBAL, "reads a set-only record over time: a group that moved between shards has part of its "
                                "history on each", _shown(e))
        return inner

    @staticmethod
    def over_value(inner: Tier, e: Expr, what: str) -> Tier:
        """Any operation on a partial value other than combining it makes it global."""
        if inner.tier == PARTIAL:
            return Tier(GLOBAL, f"{what}: needs the combined value of a partial aggregate ({inner.why})", _shown(e))
        return inner

    def aggregate(self, e) -> Tier:
        op = str(e.op)
        inner = self.walk(e.expr)
        if e.param is not None:
            inner = _max(inner, self.walk(e.param))
        if inner.tier != LOCAL:
            return self.over_value(inner, e, f"{op} over it")
        if self.groups_by_partition(e):
            return inner
        kind = "by" if e.modifier is not None and e.modifier.type == pp.AggModifierType.By else "without"
        labels = ", ".join(e.modifier.labels) if e.modifier is not None else ""
        grouping = f"{op} {kind} ({labels})" if e.modifier is not None else f"{op}()"
        if op in DECOMPOSABLE:
            how = "sum and count summed" if op == "avg" else f"parts combined with {COMBINE[op]}"
            return Tier(PARTIAL, f"{grouping} aggregates the partition key away, decomposably ({how})", _shown(e))
        return Tier(GLOBAL, f"{grouping} aggregates the partition key away and is not decomposable "
                            f"(needs every series of the group at once)", _shown(e))

    def binary(self, e) -> Tier:
        op = str(e.op)
        if op == "or" and self.own and names_read(e.rhs) == (self.own,):
            return self.walk(e.lhs)  # `x or <the record's own earlier value>`: no input beyond x
        lhs, rhs = self.walk(e.lhs), self.walk(e.rhs)
        m = e.modifier
        if m is not None and m.matching is not None and m.matching.type == pp.LabelModifierType.Include:
            required = frozenset(m.matching.labels) & self.partition
            side = unwrap(e.rhs)
            if required and isinstance(side, pp.VectorSelector) and side.name in ALERT_SERIES:
                rhs = self.alert_tier(side, required)
        # A partial aggregate multiplied by 0: only its label set is read (the model limits' `count * 0 + c`)
        if op == "*" and _is_zero(e.rhs) and lhs.tier == PARTIAL:
            return Tier(LOCAL, f"set-only: the value of a partial aggregate is discarded (* 0); each shard holds the "
                               f"groups of the nodes it scrapes ({lhs.node})", _shown(e))
        if label_flow.is_scalar(e.lhs) or label_flow.is_scalar(e.rhs):
            vec = rhs if label_flow.is_scalar(e.lhs) else lhs
            return self.over_value(vec, e, f"`{op}` with a number")
        both = _max(lhs, rhs)
        if both.tier != LOCAL:
            return self.over_value(both, e, f"`{op}` on it")
        # both local: a match that ignores the partition key pairs series of different nodes
        if m is not None and m.matching is not None and m.matching.type == pp.LabelModifierType.Include:
            on = frozenset(m.matching.labels)
            if not on & self.partition:
                for side in ((e.rhs,) if m.card == pp.VectorMatchCardinality.ManyToOne else
                             (e.lhs,) if m.card == pp.VectorMatchCardinality.OneToMany else (e.lhs, e.rhs)):
                    if self.keeps_partition(side):
                        return Tier(GLOBAL, f"`{op} on ({', '.join(m.matching.labels)})` joins series of different "
                                            f"nodes (the matched side keeps the partition key, the match ignores it)",
                                    _shown(e))
        return both

    def tier_of(self, name: str) -> Tier | None:
        for i, r in enumerate(self.rules):
            if (r.record or r.alert) == name:
                return self.tiers[i]
        return None


def or_branches(e: Expr) -> list[Expr]:
    """The operands of a top-level `or` chain (`a or b or c`, parentheses around it allowed), else [e]."""
    e = unwrap(e)
    if isinstance(e, pp.BinaryExpr) and str(e.op) == "or" and (e.modifier is None or e.modifier.matching is None):
        return or_branches(e.lhs) + or_branches(e.rhs)
    return [e]


_CLASSIFIED: Memo[Classifier] = Memo(size=8)


def classify(rules: Sequence, settings) -> Classifier:
    """The rule set's Classifier, once per process for the same rules (rulesgen/memo.py): it reads only each
    rule's expr, record, alert and labels, and the partition labels."""
    rules, partition = tuple(rules), tuple(partition_labels(settings))
    key = (tuple((r.expr, r.record, r.alert, tuple(r.labels)) for r in rules), partition)
    return _CLASSIFIED.get(key, lambda: Classifier(rules, partition))
