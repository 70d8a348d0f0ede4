"""Scenarios -> vmalert-tool unit-test documents (VictoriaMetrics `vmalert-tool unittest`).

The same scenarios and expectations as tests/promtool/ (promtool_tests.py), in vmalert-tool's format:
`metricsql_expr_test` instead of `promql_expr_test`, judged by the same queries. Two things differ from
promtool, and both are handled here, not in the rules:

- vmalert-tool evaluates every group at the test's `evaluation_interval` (group `interval:` is
  ignored), and a rule does not see the result of another rule of its own group from the same
  evaluation (results reach the storage asynchronously; vmalert-tool flushes after each group): it
  sees the previous evaluation's, or nothing once the evaluation interval reaches the 5m query step
  (the 30m baseline scenarios would lose their alerts). So the tests read a vmalert-specific copy of
  the rule files (tests/vmalert/rules/levels.yaml), without `interval:`, with one group per dependency
  level: a rule that reads a rule evaluated before it (in promtool order) goes to a later level. Every
  rule then sees what it sees in promtool: this evaluation's value of the rules before it, the previous
  evaluation's value of itself and of the rules after it.
- vmalert-tool's clock starts at the Unix epoch in 1.145 and at 2000-01-01 in later versions, so first
  firing times are measured from the start of the replay (`time()` at eval_time is start + duration),
  not from 0.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..durations import format_duration
from ..load.scenarios import Expectation, Scenario
from ..model.output import Rule, RuleFile, RuleGroup
from ..promql.graph import Graph
from .promtool_tests import continuous_expr, document, expectation_expr, first_firing_expr, unexpected_expr

TESTS_DIR = "tests/vmalert"
RULES_DIR = "tests/vmalert/rules"
RULES_FILE = f"{RULES_DIR}/levels.yaml"


def rule_levels(rules: Sequence[Rule]) -> list[int]:
    """Level (1, 2, ...) of each rule, given in promtool evaluation order (group_eval_order, then the
    order inside each group).

    In promtool a rule sees this evaluation's result of every rule before it and the previous
    evaluation's result of every rule after it. In vmalert-tool a rule sees this evaluation's result
    only of rules in groups evaluated (and flushed) before its own. So: a rule that reads an earlier
    rule gets a higher level than that rule; a rule that is read by an earlier rule gets at least that
    rule's level (same level: same group, evaluated after it; higher level: a later group). Both kinds
    of edge point from an earlier rule to a later one, so one pass in order settles every level."""
    graph = Graph(rules)
    reads = [graph.read_rules(i) - {i} for i in range(len(rules))]
    level = [1] * len(rules)
    for k in range(len(rules)):
        floor = [level[j] + 1 for j in reads[k] if j < k]  # reads an earlier rule: after its flush
        floor += [level[i] for i in range(k) if k in reads[i]]  # read by an earlier rule: not before it
        level[k] = max([1, *floor])
    return level


def vmalert_rule_file(files: Sequence[RuleFile], path: str = RULES_FILE) -> RuleFile:
    """The vmalert-tool copy of the replayed rule files (given in promtool group order): the same
    rules, labels and annotations, one group per dependency level (`rulesgen-level1`, ...), in
    promtool order inside each, no `interval:`. One group per level rather than per level and source
    group: vmalert-tool flushes its storage after every group, and each flush costs about 1.5 ms of CPU
    per evaluation (docs/victoriametrics.md, section 2)."""
    rules = [r for f in files for g in f.groups for r in g.rules]
    levels = rule_levels(rules)
    groups = tuple(RuleGroup(f"rulesgen-level{lv}", tuple(r for r, rl in zip(rules, levels) if rl == lv))
                   for lv in sorted(set(levels)))
    return RuleFile(path, groups, description=(
        "vmalert-tool copy of the replayed rule files for tests/vmalert/: one group per dependency level, "
        "no `interval:` (rulesgen/builders/vmalert_tests.py says why)."))


def relative_first_firing(s: Scenario, matchers: dict[str, str], since: int | None = None) -> str:
    """First firing (or onset since `since`) time, in seconds since the start of the replay, whatever
    vmalert-tool's epoch."""
    return f"({first_firing_expr(s, matchers, since)} - time() + {s.duration})"


def vm_expectation_expr(s: Scenario, e: Expectation) -> str:
    return expectation_expr(s, e, first_firing=relative_first_firing)


def scenario_test(s: Scenario, rule_files: list[str], group_order: list[str]) -> dict:
    """One test group: 1 for each expectation met, no sample for alerts nobody expected. The queries
    are promtool's (promtool_tests.py); MetricsQL evaluates them alike (subqueries aligned to the step,
    timestamp() of raw samples, `unless`/`or` on identical label sets), except for the epoch."""
    eval_time = format_duration(s.duration)
    tests = [{"expr": vm_expectation_expr(s, e), "eval_time": eval_time, "exp_samples": [{"labels": "{}", "value": 1}]}
             for e in s.expect]
    # The continuity check reads only ranges ending at eval_time: no epoch to correct.
    tests += [{"expr": continuous_expr(s, e), "eval_time": eval_time, "exp_samples": [{"labels": "{}", "value": 1}]}
              for e in s.expect if e.continuous]
    tests.append({"expr": unexpected_expr(s), "eval_time": eval_time, "exp_samples": []})
    return document(s, rule_files, group_order, tests, key="metricsql_expr_test")
