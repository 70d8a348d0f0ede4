"""rulesgen/engines/validate.py without promtool: its only job is to run `promtool check rules`, so
processes.run is replaced by a fake that records the command (and the rule files it names, read while they
exist) and returns an output written here, in promtool's format; what is tested is the command and the
mapping of each reported problem back to the catalog line of its rule."""
import subprocess
from pathlib import Path

import pytest
import yaml

from rulesgen import processes
from rulesgen.engines.validate import promtool_problems
from rulesgen.errors import Diagnostic, Where
from rulesgen.model.output import Rule, RuleFile, RuleGroup, RuleSet

FIRST = Rule("vector(1)", record="a:b:c", source=Where("catalog/signals.yaml", 12, 7))
SECOND = Rule("sum(rate(x[5m])", alert="Broken", for_seconds=60, source=Where("catalog/failure_modes.yaml", 40, 9))
UNPLACED = Rule("vector(2)", record="a:b:d")
RULES = RuleSet((RuleFile("alerts/prometheus/health.yaml", (RuleGroup("rulesgen-health", (FIRST, SECOND)),)),
                 RuleFile("alerts/prometheus/fleet.yaml", (RuleGroup("rulesgen-fleet", (UNPLACED,)),))))


@pytest.fixture
def promtool(monkeypatch):
    """Replaces processes.run: (calls, set the output). Each call records (cmd, {file name: parsed YAML})."""
    calls, said = [], {"rc": 0, "out": "", "err": ""}

    def fake(cmd, timeout=None, **_):
        files = {Path(c).name: yaml.safe_load(Path(c).read_text()) for c in cmd[3:]}
        calls.append((cmd, files, timeout))
        return subprocess.CompletedProcess(cmd, said["rc"], said["out"], said["err"])
    monkeypatch.setattr(processes, "run", fake)
    return calls, said


def test_every_rule_file_is_written_and_checked_in_one_call(promtool):
    calls, _ = promtool
    assert promtool_problems(RULES, "/opt/bin/promtool") == []
    [(cmd, files, timeout)] = calls
    assert cmd[:3] == ["/opt/bin/promtool", "check", "rules"] and timeout == 120
    assert sorted(files) == ["fleet.yaml", "health.yaml"]
    [group] = files["health.yaml"]["groups"]
    assert group["name"] == "rulesgen-health" and [r["expr"] for r in group["rules"]] == [FIRST.expr, SECOND.expr]
    assert not any(Path(c).exists() for c in cmd[3:])  # the temporary folder is gone


def test_a_problem_points_at_its_rules_catalog_line(promtool):
    _, said = promtool
    said.update(rc=1, err='Checking health.yaml\n  FAILED:\nhealth.yaml: group "rulesgen-health", rule 2, "Broken": '
                          'could not parse expression: 1:16: parse error: unclosed left parenthesis\n'
                          'fleet.yaml: group "rulesgen-fleet", rule 1, "a:b:d": bad\n')
    assert promtool_problems(RULES, "promtool") == [
        Diagnostic("catalog/failure_modes.yaml", 40, 9, "promql-parse",
                   "Broken: promtool: could not parse expression: 1:16: parse error: unclosed left parenthesis"),
        Diagnostic("<rendered rules>", 1, 1, "promql-parse", "a:b:d: promtool: bad")]


def test_a_failure_without_a_rule_line_is_reported_whole(promtool):
    _, said = promtool
    said.update(rc=1, out="Checking health.yaml\n", err="health.yaml: yaml: line 3: mapping values are not allowed")
    [problem] = promtool_problems(RULES, "promtool")
    assert (problem.path, problem.code) == ("<rendered rules>", "promtool")
    assert problem.message == "Checking health.yaml\nhealth.yaml: yaml: line 3: mapping values are not allowed"
