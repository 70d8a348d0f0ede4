"""rulesgen/engines/replay.py with the real promtool: a test file promtool refuses is an error, never a replay
in which nothing fired (a dialect once wrote `Infx1`, which promtool cannot read, and the replay said "nothing
fired")."""
import pytest

from rulesgen.engines.replay import got_series, run_test
from rulesgen.load.dialects import encode


def _doc(values: str) -> dict:
    return {"rule_files": [], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": [{"series": 'loss{rank="5"}', "values": values}],
                       "promql_expr_test": [{"expr": "loss", "eval_time": "2m", "exp_samples": []}]}]}


def test_a_file_promtool_cannot_parse_is_an_error_not_an_empty_answer(promtool, tmp_path):
    with pytest.raises(RuntimeError, match=r"(?s)could not run bad:.*parse error.*Infx1"):
        run_test(_doc("2.5 Infx1"), tmp_path, "bad")


def test_a_failed_query_test_is_the_answer(promtool, tmp_path):
    inf = float("inf")
    output = run_test(_doc(encode([2.5, inf, inf])), tmp_path, "runs")  # the dialects' notation of a run of Inf
    assert got_series(output) == [{"__name__": "loss", "rank": "5"}]
    assert "+Inf" in output
