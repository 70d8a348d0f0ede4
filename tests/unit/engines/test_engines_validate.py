"""rulesgen/engines/validate.py with the real promtool (`promtool check rules`): every rule file is checked in
one call, and each problem promtool reports points back at the catalog line its rule was built from."""
from rulesgen.engines.validate import promtool_problems
from rulesgen.errors import Diagnostic, Where
from rulesgen.model.output import Rule, RuleFile, RuleGroup, RuleSet

FIRST = Rule("vector(1)", record="a:b:c", source=Where("catalog/signals.yaml", 12, 7))
SECOND = Rule("sum(rate(x[5m])", alert="Broken", for_seconds=60, source=Where("catalog/failure_modes.yaml", 40, 9))
UNPLACED = Rule("vector(2) +", record="a:b:d")  # built from no catalog line


def rule_set(*groups: tuple[str, tuple[Rule, ...]]) -> RuleSet:
    return RuleSet(tuple(RuleFile(f"alerts/prometheus/{name}.yaml", (RuleGroup(f"rulesgen-{name}", rules),))
                         for name, rules in groups))


def test_valid_rules_give_no_problem(promtool):
    assert promtool_problems(rule_set(("health", (FIRST,)), ("fleet", (Rule("vector(2)", record="a:b:d"),))),
                             promtool) == []


def test_each_problem_points_at_its_rules_catalog_line(promtool):
    found = promtool_problems(rule_set(("health", (FIRST, SECOND)), ("fleet", (UNPLACED,))), promtool)
    assert [(d.path, d.line, d.col, d.code) for d in found] == [("catalog/failure_modes.yaml", 40, 9, "promql-parse"),
                                                                ("<rendered rules>", 1, 1, "promql-parse")]
    assert found[0].message.startswith("Broken: promtool: could not parse expression:")
    assert "unclosed left parenthesis" in found[0].message
    assert found[1].message.startswith("a:b:d: promtool: could not parse expression:")
    assert all(isinstance(d, Diagnostic) and d.severity == "error" for d in found)
