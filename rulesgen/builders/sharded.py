"""The rule set split for a fleet sharded by node (`topology: sharded`, README "Sharded topology").

Every shard loads the shard files: the local and partial rules, unchanged, plus a shard record for
each partial aggregate the global tier needs (a whole partial record, or a partial aggregate written
inside a global rule). The global evaluator loads the global files: every global rule, where

- a partial record it reads is rewritten as the combination of the shards' parts (its own name, so the
  readers stay as they are: `sum by (cluster) (shard:fleet_..:count)`, counts summed, min/max re-minned
  and maxed, avg as the sum of sums over the sum of counts);
- a partial aggregate written inline becomes the combination of its shard record;
- a series the shards forward (an input series, a local record, ALERTS of local alerts) is read through
  `max without (shard) (...)`: the shard's external label is dropped again, so matching against records
  the global tier writes (which carry no shard label) works as on one server.

`forwarded` is what the global tier reads from the shards, by name: the remote-write allowlist.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import promql_parser as pp

from ..durations import format_duration
from ..model.output import Rule, RuleFile, RuleGroup, RuleSet, ShardDeployment, ShardedRules
from ..promql import labels as label_flow
from ..promql import printer as promql_print
from ..promql.graph import ALERT_SERIES
from ..promql.tiers import COMBINE, DECOMPOSABLE, GLOBAL, LOCAL, PARTIAL, Classifier, classify
from ..promql.tree import Expr, as_tree, names_read, nodes, selector_from, unwrap
from .engine_fit import SLOW_INTERVAL

SHARD_DIR = "alerts/sharded/shard"
GLOBAL_DIR = "alerts/sharded/global"
SHARD_PREFIX = "shard:"
TIER_MARK = "Tier"  # a rule file's header declares its tier: `# Tier shard (...` / `# Tier global (...` (rulesgen lint)


class ShardingError(ValueError):
    """A rule the sharded topology cannot place (an expression shape the rewrite does not know)."""


def shard_record_name(owner: str, op: str) -> str:
    """`shard:<owner>:<op>`: the shard's part of a partial aggregate (owner: the record it is part of,
    or the global rule it is written in, with a number)."""
    return f"{SHARD_PREFIX}{owner.replace(':', '_')}:{op}"


def _modifier(e) -> tuple[str, tuple[str, ...]] | None:
    if e.modifier is None:
        return None
    return ("by" if e.modifier.type == pp.AggModifierType.By else "without", tuple(e.modifier.labels))


def _agg_text(op: str, modifier, body: str) -> str:
    if modifier is None:
        return f"{op}({body})"
    kind, labels = modifier
    return f"{op} {kind} ({', '.join(labels)}) ({body})"


def _shard_record(name: str, expr: str, interval: int) -> tuple[str, str]:
    """A shard record's expression and how the global tier reads it. Written every minute: read as is
    (the staleness marker the shard writes when a series ends reaches the global store by remote write).
    Written every 5m or less often: the global tier must read its last value over two intervals
    (vmalert's 5m query step, lint's instant-slow-record), which would outlive a series that ended by
    up to that window (a local alert condition that cleared, a model gone from a shard). So the record
    writes -Inf once, at the first evaluation after a series ends, and the reader drops -Inf: the
    global tier sees a series exactly as long as the shard's newest evaluation has it."""
    if interval < SLOW_INTERVAL:
        return expr, name
    last = f"last_over_time({name}[{format_duration(2 * interval)}])"
    return f"({expr}) or ({last} > -Inf) * 0 - Inf", f"({last} > -Inf)"


class _Builder:
    def __init__(self, rules: RuleSet, settings, shard_label: str, delay: int):
        self.files = rules.files
        self.flat = list(rules.rules)
        self.c: Classifier = classify(self.flat, settings)
        self.shard_label = shard_label
        self.delay = delay  # s: the global groups' query delay
        self.tier = {id(r): self.c.tiers[i] for i, r in enumerate(self.flat)}
        self.index = {id(r): i for i, r in enumerate(self.flat)}
        self.forwarded: dict[str, None] = {}
        self.alerts_read: dict[str, dict[str, None]] | None = {}  # label -> values of the ALERTS read (None: any)
        self.extra: dict[tuple[str, str], list[Rule]] = {}  # (file, group) -> shard records appended to it
        self.combined: dict[str, list[Rule]] = {}  # partial record -> its global combination (replaces it)
        self.numbers: dict[str, int] = {}  # global rule -> shard records named after it so far
        self.parts: dict[tuple, str] = {}  # (printed partial aggregate, slow read) -> the text combining its parts
        self.intervals = {(f.path, g.name): g.interval_seconds for f in rules.files for g in f.groups}

    # -- partial aggregates --------------------------------------------------------------------------

    def _parts(self, agg, owner: str, where: tuple[str, str], numbered: bool = False) -> str:
        """Shard records for the partial aggregate `agg` (an AggregateExpr over local input), appended to
        the shard group `where`; returns the text that combines them."""
        op = str(agg.op)
        if op not in DECOMPOSABLE:
            raise ShardingError(f"{owner}: {op} is not decomposable")
        interval = self.intervals.get(where) or 0
        key = (promql_print.to_text(agg), interval >= SLOW_INTERVAL and 2 * interval)
        if key not in self.parts:  # the same aggregate in several rules: one shard record
            if numbered:  # an aggregate inside a global rule: its parts are named <rule>_<n>
                self.numbers[owner] = self.numbers.get(owner, 0) + 1
                owner = f"{owner}_{self.numbers[owner]}"
            self.parts[key] = self._new_parts(agg, op, owner, where, interval)
        return self.parts[key]

    def _new_parts(self, agg, op: str, owner: str, where: tuple[str, str], interval: int) -> str:
        modifier = _modifier(agg)
        inner = promql_print.to_text(agg.expr)
        combine_mod = modifier if modifier is None or modifier[0] == "by" else ("without", modifier[1] + (self.shard_label,))
        ops = (("sum", "sum"), ("count", "count")) if op == "avg" else ((op, op),)
        names = []
        for part_op, suffix in ops:
            name = shard_record_name(owner, suffix)
            expr, read = _shard_record(name, _agg_text(part_op, modifier, inner), interval)
            self._add_extra(where, Rule(expr=expr, record=name))
            self.forwarded[name] = None
            names.append(read)
        if op == "avg":
            return f"({_agg_text('sum', combine_mod, names[0])} / {_agg_text('sum', combine_mod, names[1])})"
        return _agg_text(COMBINE[op], combine_mod, names[0])

    def _add_extra(self, where, rule: Rule) -> None:
        rules = self.extra.setdefault(where, [])
        if all(r.record != rule.record for r in rules):
            rules.append(rule)

    def _combine_record(self, rule: Rule, where) -> Rule:
        """The global rule writing a partial record from its shards' parts."""
        top = unwrap(as_tree(rule.expr))
        if not isinstance(top, pp.AggregateExpr):
            raise ShardingError(f"{rule.record}: a partial record that is not one aggregate: {rule.expr.strip()}")
        return Rule(expr=self._parts(top, rule.record, where), record=rule.record, source=rule.source)

    # -- global rules --------------------------------------------------------------------------------

    def _reads_forwarded(self, vs) -> bool:
        """Whether the global tier reads this selector from the shards (not a record it writes itself)."""
        name = vs.name
        if name in ALERT_SERIES:
            return True
        t = self.c.record_tier(name) if name else None
        return t is None or t.tier == LOCAL

    def _forward(self, vs) -> None:
        s = selector_from(vs)
        if "ALERTS" in s.names:
            self._alerts_read(s)
        if s.names:
            self.forwarded.update(dict.fromkeys(s.names))
            return
        regex = [v for label, op, v in s.matchers if label == "__name__" and op == "=~"]
        if not regex:
            raise ShardingError(f"a global rule reads series by labels only: {promql_print.selector_text(s)}")
        self.forwarded[regex[0]] = None

    def _alerts_read(self, s) -> None:
        """Note which alerts an ALERTS selector of a global rule reads: those its `alertname` or, failing
        that, its `failure_mode` names as a plain `=` or `=~` alternation; any alert, if neither."""
        if self.alerts_read is None:
            return
        for label in ("alertname", "failure_mode"):
            values = [v for name, op, v in s.matchers if name == label and op in ("=", "=~")]
            parts = values[0].split("|") if len(values) == 1 else []
            if parts and all(p and all(ch.isalnum() or ch == "_" for ch in p) for p in parts):
                self.alerts_read.setdefault(label, {}).update(dict.fromkeys(parts))
                return
        self.alerts_read = None

    def _wrap(self, text: str) -> str:
        return f"max without ({self.shard_label}) ({text})"

    def global_expr(self, rule: Rule, where) -> str:
        owner = rule.record or rule.alert

        def node(e: Expr, fmt: Callable[[Expr], str], extract: bool = True) -> str | None:
            if isinstance(e, pp.SubqueryExpr):  # evaluated at past steps: nothing inside becomes a shard record
                inner = promql_print.to_text(e.expr, node=lambda x, f: node(x, f, extract=False))
                return self._subquery(e, inner)
            if isinstance(e, pp.AggregateExpr):
                t = self.c.walk(e)
                if t.tier == PARTIAL:
                    return self._parts(e, owner, where, numbered=True)
            if extract and self._extractable(e):
                return self._local_part(e, owner, where)
            if isinstance(e, pp.AggregateExpr):
                return None
            if isinstance(e, pp.Call):
                matrices = [a for a in e.args if isinstance(a, pp.MatrixSelector)]
                if (matrices or e.func.name == "timestamp") and any(
                        self._reads_forwarded(a.vector_selector if isinstance(a, pp.MatrixSelector) else a)
                        for a in e.args if isinstance(a, (pp.MatrixSelector, pp.VectorSelector))):
                    for a in e.args:
                        if isinstance(a, (pp.MatrixSelector, pp.VectorSelector)):
                            self._forward(a.vector_selector if isinstance(a, pp.MatrixSelector) else a)
                    return self._wrap(promql_print.to_text(e))
                return None
            if isinstance(e, pp.VectorSelector) and self._reads_forwarded(e):
                self._forward(e)
                return self._wrap(promql_print.to_text(e))
            if isinstance(e, pp.MatrixSelector) and self._reads_forwarded(e.vector_selector):
                self._forward(e.vector_selector)  # a bare range (a subquery's inside): read as it is
                return None
            return None
        return promql_print.to_text(rule.expr, node=node)

    @staticmethod
    def _subquery(e, inner: str) -> str:
        step = f":{format_duration(int(e.step.total_seconds()))}" if e.step is not None else ":"
        offset = f" offset {format_duration(int(e.offset.total_seconds()))}" if e.offset is not None else ""
        if e.at is not None:
            raise ShardingError(f"a subquery with @ in a global rule: {promql_print.to_text(e)}")
        return f"{inner}[{format_duration(int(e.range.total_seconds()))}{step}]{offset}"

    def _extractable(self, e: Expr) -> bool:
        """A local part of a global rule worth computing on the shards: it reads series, is more than a
        selector read alone, keeps the partition key, and its series carry no metric name (so a record of
        it has one series per label set)."""
        if isinstance(e, (pp.VectorSelector, pp.MatrixSelector, pp.NumberLiteral, pp.StringLiteral, pp.ParenExpr)):
            return False
        if isinstance(e, pp.Call) and all(isinstance(a, (pp.VectorSelector, pp.MatrixSelector, pp.NumberLiteral,
                                                         pp.StringLiteral)) for a in e.args):
            return False  # fn(x[w]): forwarding x costs the same
        if not any(isinstance(x, pp.VectorSelector) for x in _nodes(e)):
            return False
        return (self.c.walk(e).tier == LOCAL and self.c.keeps_partition(e) and not may_have_name(e)
                and "set-only" not in self.c.walk(e).why)

    def _local_part(self, e: Expr, owner: str, where) -> str:
        """A local part of a global rule: a shard record, read back without the shard label."""
        interval = self.intervals.get(where) or 0
        key = ("local", promql_print.to_text(e), interval)
        if key not in self.parts:
            self.numbers[owner] = self.numbers.get(owner, 0) + 1
            name = shard_record_name(f"{owner}_{self.numbers[owner]}", "local")
            expr, read = _shard_record(name, promql_print.to_text(e), interval)
            self._add_extra(where, Rule(expr=expr, record=name))
            self.forwarded[name] = None
            self.parts[key] = self._wrap(read)
        return self.parts[key]

    # -- the split -----------------------------------------------------------------------------------

    def build(self) -> ShardedRules:
        partial_read_by_global = self._partials_read_by_global()
        shard_files, global_files = [], []
        for f in self.files:
            shard_groups, global_groups = [], []
            for g in f.groups:
                where = (f.path, g.name)
                shard_rules, global_rules = [], []
                for r in g.rules:
                    t = self.tier[id(r)].tier
                    halves = self.c.halves.get(self.index[id(r)])
                    if halves is not None:  # an alert of both tiers: its local branches on the shards, the rest global
                        local, rest = (" or ".join(f"({promql_print.to_text(b)})" for b in bs) for bs in halves)
                        shard_rules.append(replace(r, expr=local))
                        global_rules.append(replace(r, expr=self.global_expr(replace(r, expr=rest), where)))
                    elif t == GLOBAL:
                        global_rules.append(replace(r, expr=self.global_expr(r, where)))
                    else:
                        shard_rules.append(r)
                        if t == PARTIAL and r.record in partial_read_by_global:
                            global_rules.append(self._combine_record(r, where))
                shard_groups.append((g, shard_rules))
                global_groups.append((g, global_rules))
            shard_files.append((f, shard_groups))
            global_files.append((f, global_groups))
        return ShardedRules(
            shard_files=tuple(self._file(f, groups, SHARD_DIR, "shard", extra=True) for f, groups in shard_files
                              if any(rules or self.extra.get((f.path, g.name)) for g, rules in groups)),
            global_files=tuple(self._file(f, groups, GLOBAL_DIR, "global") for f, groups in global_files
                               if any(rules for _, rules in groups)),
            forwarded=tuple(sorted(self.forwarded)),
            shard_label=self.shard_label,
            tiers={(r.record or r.alert): self.tier[id(r)] for r in self.flat},
            alerts_read=(tuple((k, tuple(sorted(v))) for k, v in sorted(self.alerts_read.items()))
                         if self.alerts_read and "ALERTS" in self.forwarded else None),
        )

    def _partials_read_by_global(self) -> set[str]:
        out = set()
        for r in self.flat:
            if self.tier[id(r)].tier == GLOBAL:
                for name in names_read(r.expr):
                    t = self.c.record_tier(name)
                    if t is not None and t.tier == PARTIAL:
                        out.add(name)
        return out

    def _file(self, f: RuleFile, groups, folder: str, tier: str, extra: bool = False) -> RuleFile:
        out = []
        for g, rules in groups:
            rules = list(rules) + (self.extra.get((f.path, g.name), []) if extra else [])
            if rules:  # a global group evaluates in the past, after the shards' samples of its step arrived
                out.append(RuleGroup(g.name, tuple(rules), g.interval_seconds,
                                     (self.delay or None) if tier == "global" else None))
        name = f.path.rsplit("/", 1)[-1]
        what = (f"{TIER_MARK} shard (every shard loads this file): the local and partial rules of " if tier == "shard" else
                f"{TIER_MARK} global (the global evaluator loads this file): the global rules of ")
        return RuleFile(f"{folder}/{name}", tuple(out), f"{what}{f.path}. {f.description}")


NAME_DROPPING_CALLS = frozenset((
    "abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min",
    "count_over_time", "delta", "deriv", "exp", "floor", "histogram_quantile", "idelta", "increase", "irate", "ln",
    "log10", "log2", "max_over_time", "min_over_time", "predict_linear", "quantile_over_time", "rate", "resets",
    "round", "scalar", "sgn", "sqrt", "stddev_over_time", "stdvar_over_time", "sum_over_time", "time", "timestamp",
    "vector"))
ARITHMETIC = frozenset(("+", "-", "*", "/", "%", "^", "atan2"))


def _nodes(e: Expr):
    return nodes(e)


def may_have_name(e: Expr) -> bool:
    """Whether the series of an expression can keep a metric name (a selector's, through label_replace,
    a comparison's left side, and/or/unless, topk ...). Conservative: unknown functions keep it."""
    if isinstance(e, (pp.VectorSelector, pp.MatrixSelector)):
        return True
    if isinstance(e, (pp.NumberLiteral, pp.StringLiteral)):
        return False
    if isinstance(e, pp.ParenExpr):
        return may_have_name(e.expr)
    if isinstance(e, pp.UnaryExpr):
        return False
    if isinstance(e, pp.SubqueryExpr):
        return may_have_name(e.expr)
    if isinstance(e, pp.AggregateExpr):
        return str(e.op) in ("topk", "bottomk", "limitk", "limit_ratio") and may_have_name(e.expr)
    if isinstance(e, pp.Call):
        if e.func.name in NAME_DROPPING_CALLS:
            return False
        return any(may_have_name(a) for a in e.args if not isinstance(a, (pp.NumberLiteral, pp.StringLiteral)))
    if isinstance(e, pp.BinaryExpr):
        op = str(e.op)
        if op in ARITHMETIC or (e.modifier is not None and e.modifier.return_bool):
            return False
        if op == "or":
            return may_have_name(e.lhs) or may_have_name(e.rhs)
        return may_have_name(e.lhs) if not label_flow.is_scalar(e.lhs) else may_have_name(e.rhs)
    return True


def deployment(settings) -> ShardDeployment:
    """rulesgen.yaml `sharding:` as the shards' configuration reads it."""
    sh = settings.sharding
    return ShardDeployment(source=sh.source, write_url=sh.url, placeholder=sh.write_url is None,
                           values=sh.shard_values, evaluation_delay=sh.evaluation_delay)


def build_sharded(rules: RuleSet, settings, shard_label: str | None = None) -> ShardedRules:
    """The split of `rules` (shard_label: default sharding.label), with the shards' deployment."""
    sh = settings.sharding
    out = _Builder(rules, settings, shard_label or sh.label, sh.evaluation_delay).build()
    return replace(out, deployment=deployment(settings))
