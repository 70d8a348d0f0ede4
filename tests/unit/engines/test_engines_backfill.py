"""`rulesgen backfill`'s rule files from a render (engines/backfill.py), without a server: what the SLO history reads
and what it refuses. tests/test_backfill.py runs them against real servers."""
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from rulesgen.artifacts import plan
from rulesgen.builders.slos import RULE_FILE
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.checks.query_length import VM_MAX_QUERY_LEN
from rulesgen.engines import backfill as bf
from rulesgen.model.output import Rule, RuleGroup, RuleSet
from rulesgen.promql.tree import recorded_names


def _rules(tmp_path: Path, config: str) -> RuleSet:
    path = tmp_path / "rulesgen.yaml"
    path.write_text(config)
    return plan(bundled_catalog_dir(), path, None, False).rules


def test_the_slo_history_is_every_hourly_sum_over_stored_series_only(tmp_path):
    rules = _rules(tmp_path, "evaluation_interval: 30s\nslos:\n  gpu_capacity: {}\n  training_time: {}\n  job_success: {}\n")
    (slo,) = bf.backfill_files(rules, 30, only="slos")
    live = next(f for f in rules.files if f.path == RULE_FILE)
    hourly = [r.record for g in live.groups if g.interval_seconds == bf.HOUR for r in g.rules]
    slo_records = {r.record for g in live.groups for r in g.rules if r.record}
    (group,) = slo.groups
    assert group.interval_seconds == bf.HOUR and [r.record for r in group.rules] == hourly
    for r in group.rules:
        assert not set(recorded_names(r.expr)) & (slo_records - {r.record}), r.record  # every SLO record inlined
        assert "[1h:30s]" in r.expr, r.record  # the hour's evaluations at the rules' own interval
        assert r.expr.endswith(f"unless on () count_over_time({r.record}[2h] offset -1h)"), r.record
    capacity = next(r.expr for r in group.rules if r.record == "slo:gpu_capacity_total:sum_1h")
    assert "last_over_time(gpu:dcgm_reporting:timestamp[1d])" in capacity  # the inventory's backfill form
    assert "gpu:slo_gpu_capacity:inventory" not in capacity


def test_only_picks_a_history_and_says_what_is_missing(tmp_path):
    rules = _rules(tmp_path, "slos:\n  gpu_capacity: {}\n")
    assert [f.path for f in bf.backfill_files(rules, 60, only="baselines")] == ["backfill-hourly.yaml", bf.DAILY_FILE]
    assert [f.path for f in bf.backfill_files(rules, 60)] == ["backfill-hourly.yaml", bf.DAILY_FILE, bf.SLO_FILE]
    without = _rules(tmp_path, "evaluation_interval: 1m\n")
    with pytest.raises(bf.BackfillError, match="no SLO rendered .rulesgen.yaml names none under slos:"):
        bf.backfill_files(without, 60, only="slos")


def test_a_memory_without_a_backfill_form_is_refused(tmp_path):
    rules = _rules(tmp_path, "slos:\n  gpu_capacity: {}\n")
    files = tuple(replace(f, groups=(RuleGroup("m", (Rule(record="a:b:c", expr="a:b:c offset 1m or vector(1)"),)),
                                     *f.groups)) if f.path == RULE_FILE else f for f in rules.files)
    with pytest.raises(bf.BackfillError, match="cannot backfill a:b:c: it reads its own past"):
        bf.backfill_files(replace(rules, files=files), 60, only="slos")


@pytest.mark.parametrize("offset", ["0s", "30m", "59m30s", "59m59s"])
def test_the_daily_subquery_holds_the_days_24_hours_at_any_group_offset(tmp_path, promtool, offset):
    """promtool evaluates the backfill's daily group at midnight plus a hash offset in [0, 1h), a new one each run
    (its files sit in a temp folder): the day's 24 whole-hour steps D-23h .. D, never D-24h, at every offset
    (23h59m lost the first hour from 59m on: the daily count read 23, 1 run in 60)."""
    test = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": "x", "values": "1+1x2940"}],  # x = minutes since 0 + 1, for two days
        "promql_expr_test": [
            {"expr": f"count_over_time((x)[{bf.DAY_OF_HOURS}:1h])", "eval_time": f"1d{offset}",
             "exp_samples": [{"labels": "{}", "value": 24}]},
            # the newest step is midnight (x = 1441) and the oldest 1h after the previous one (x = 61)
            {"expr": f"max_over_time((x)[{bf.DAY_OF_HOURS}:1h]) - min_over_time((x)[{bf.DAY_OF_HOURS}:1h])",
             "eval_time": f"1d{offset}", "exp_samples": [{"labels": "{}", "value": 1380}]},
        ]}]}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(test))
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr



def test_every_query_fits_victoriametrics_default_query_length(tmp_path):
    """vmalert sends each rule's query to VictoriaMetrics as it is; the backfill's queries inline every record
    they read, so they are the longest. Each must fit the default -search.maxQueryLen, or the backfill (and
    that rule on vmalert) fails with "too long query" (the daily sum of squares once held three copies of the
    hourly query: 16,598 bytes)."""
    rules = _rules(tmp_path, "slos:\n  gpu_capacity: {}\n  training_time: {}\n  job_success: {}\n")
    queries = [(f.path, r.record or r.alert, r.expr) for f in (*rules.files, *bf.backfill_files(rules, 60))
               for g in f.groups for r in g.rules]
    too_long = [(path, name, len(expr.encode())) for path, name, expr in queries
                if len(expr.encode()) > VM_MAX_QUERY_LEN]
    assert not too_long, too_long
    assert max(len(expr.encode()) for *_, expr in queries) > VM_MAX_QUERY_LEN / 2  # the check reads the long ones
