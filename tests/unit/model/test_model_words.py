"""rulesgen/model/words.py and grafana_units.py: what a panel title may not look like, and the units a panel may carry."""
import pytest

from rulesgen.model import grafana_units
from rulesgen.model.words import CATALOG_TITLE_MAX, TITLE_MAX, promql_shape, title_problem


@pytest.mark.parametrize("text, shape", [
    ('up{job="x"}', "a selector's braces: '{'"),
    ("x =~ y", "a label matcher or comparison: '=~'"),
    ("GPU temp[4m]", "a range or subquery: '[4m]'"),
    ("Max over time(gpu fields count)", "a function call: 'time('"),
    ("max by (cluster) x", "a grouping clause: 'by ('"),
    ("gpu:dcgm_gpu_temp:max", "a series name: 'gpu:dcgm_gpu_temp:max'"),
    ("DCGM_FI_DEV_GPU_TEMP now", "a series name: 'DCGM_FI_DEV_GPU_TEMP'"),
])
def test_promql_shapes_are_named(text, shape):
    assert promql_shape(text) == shape


@pytest.mark.parametrize("text", ["GPU temperature (median over 4m)", "Uncorrectable ECC errors (ghost loss)",
                                  "Spread across ranks: max - min SM active", "GPU_UTIL per GPU", "dcgm-exporter target up"])
def test_human_words_pass(text):
    assert promql_shape(text) is None and title_problem(text) is None


def test_title_problems():
    assert title_problem(" ") == "empty"
    assert title_problem("x" * (TITLE_MAX + 1)) == f"{TITLE_MAX + 1} characters, more than {TITLE_MAX}"
    assert title_problem("x" * 61, CATALOG_TITLE_MAX) == "61 characters, more than 60"
    assert title_problem("rate(x)") == "reads like PromQL (a function call: 'rate(')"


def test_units_are_grafana_ids_or_drawn_through_one():
    assert grafana_units.is_known("celsius") and grafana_units.is_known("MHz") and not grafana_units.is_known("rotmhz")
    assert grafana_units.display("MHz") == ("hertz", 1_000_000) and grafana_units.display("watt") == ("watt", 1)
    assert all(grafana_units.display(u)[0] in grafana_units.UNIT_IDS for u in grafana_units.CONVERTED)
