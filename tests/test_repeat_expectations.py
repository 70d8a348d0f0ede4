"""A second fault on the same GPU is a second page: an expectation repeating an earlier one's failure mode
and labels asks for a new onset in its window (the alert fired again after it had resolved), on promtool
3.5, on vmalert-tool and in `rulesgen replay`'s verdict. Held with a one-rule file, so that what is tested
is the judge, not the catalog."""
from __future__ import annotations

import pytest

from rulesgen.builders import promtool_tests, vmalert_tests
from rulesgen.engines.replay import replay, run_promtool_test
from rulesgen.load.scenarios import Expectation, Scenario, expand
from rulesgen.render.yamltext import dump
from test_victoriametrics import run_unittest

RULES = {"groups": [{"name": "probe", "rules": [
    {"alert": "Fault", "expr": "fault > 0", "for": "1m", "labels": {"failure_mode": "ecc_uncorrectable"}}]}]}
GPU = (("Hostname", "n1"), ("gpu", "0"))
# a minute per sample over an hour: a fault from 10m to 20m, repaired, and another from 42m
TWO_FAULTS = "0x9 1x10 0x20 1x18"
# the alert of the first fault never resolves: no new page for the second
ONE_LONG_PAGE = "0x9 1x50"


def _scenario(values: str) -> Scenario:
    assert len(expand(values)) == 61
    return Scenario(name="repeat", path="repeat.yaml", description="two faults", interval=60, evaluation_interval=60,
                    duration=3600, series=(('fault{Hostname="n1", gpu="0"}', values),),
                    expect=(Expectation("ecc_uncorrectable", GPU, 600, 180),
                            Expectation("ecc_uncorrectable", GPU, 2520, 180)), also_allowed=())


@pytest.fixture
def rules(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(dump(RULES))
    return path


def test_only_the_repeat_asks_for_an_onset():
    s = _scenario(TWO_FAULTS)
    assert [promtool_tests.repeats(s, e) for e in s.expect] == [False, True]
    first, again = (promtool_tests.expectation_expr(s, e) for e in s.expect)
    assert "unless" not in first and "offset 1m" in again and "[18m1s:1m]" in again


@pytest.mark.engines
@pytest.mark.parametrize("values,passes", [(TWO_FAULTS, True), (ONE_LONG_PAGE, False)], ids=["repaired", "never-resolved"])
def test_promtool_passes_a_second_page_and_fails_a_page_that_never_ended(rules, tmp_path, values, passes):
    doc = promtool_tests.scenario_test(_scenario(values), [str(rules)], ["probe"])
    (tmp_path / "test.yaml").write_text(dump(doc))
    rc, output = run_promtool_test([tmp_path / "test.yaml"], cwd=tmp_path)
    assert (rc == 0) == passes, output
    if not passes:   # the first page stays met; only the repeat fails
        assert output.count("exp: {} 1E+00") == 1 and "2520" in output, output


@pytest.mark.engines
@pytest.mark.parametrize("values,passes", [(TWO_FAULTS, True), (ONE_LONG_PAGE, False)], ids=["repaired", "never-resolved"])
def test_vmalert_tool_passes_a_second_page_and_fails_a_page_that_never_ended(vmalert_tool, rules, tmp_path, values, passes):
    doc = vmalert_tests.scenario_test(_scenario(values), [rules.name], ["probe"])
    (tmp_path / "test.yaml").write_text(dump(doc))
    rc, output, _ = run_unittest(vmalert_tool, tmp_path / "test.yaml", timeout=120)
    assert (rc == 0) == passes, output


@pytest.mark.engines
def test_replay_names_the_fault_that_got_no_new_page(rules):
    assert replay(_scenario(TWO_FAULTS), [rules], ["ecc_uncorrectable"]).ok
    outcome = replay(_scenario(ONE_LONG_PAGE), [rules], ["ecc_uncorrectable"])
    assert not outcome.ok
    assert outcome.missing == ("ecc_uncorrectable {'Hostname': 'n1', 'gpu': '0'} did not fire anew after the fault at "
                               "0h42m00s (expected by 0h45m00s; an earlier page is no new page)",)
