"""rulesgen/builders/metric_selectors.py: a catalog metric as a PromQL selector over every name it is exported
under, and its valid readings (sentinels and impossible values dropped, aliases scaled), checked on the parsed tree."""
import promql_parser as pp

from rulesgen.builders.metric_selectors import selector, valid
from rulesgen.model.catalog import Alias, Metric
from rulesgen.promql import tree

UTIL = Metric(name="DCGM_FI_DEV_GPU_UTIL", type="gauge", unit="%", help="", profiling=False, default_enabled=True,
              description="", aliases=(Alias(name="DCGM_FI_DEV_GPU_UTIL_RATIO", unit="ratio", scale=100.0),),
              valid_max=9e18, max_plausible=100)
TEMP = Metric(name="DCGM_FI_DEV_GPU_TEMP", type="gauge", unit="C", help="", profiling=False, default_enabled=True,
              description="", aliases=(Alias(name="DCGM_FI_DEV_GPU_TEMP_CELSIUS", unit="C"),), valid_max=1e6)
ALONE = Metric(name="DCGM_FI_DEV_XID_ERRORS", type="gauge", unit="code", help="", profiling=False, default_enabled=True,
               description="")


def test_one_name_is_a_plain_selector():
    (s,) = tree.selectors(selector(ALONE, 'job="dcgm"'))
    assert (s.name, s.matchers) == ("DCGM_FI_DEV_XID_ERRORS", (("job", "=", "dcgm"),))


def test_every_exported_name_is_selected():
    (s,) = tree.selectors(selector(TEMP, 'job="dcgm", Hostname!=""'))
    assert s.name is None
    assert s.names == ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS")
    assert s.matchers[1:] == (("job", "=", "dcgm"), ("Hostname", "!=", ""))


def test_names_given_override_the_metric_s():
    assert tree.selectors(selector(TEMP, 'job="dcgm"', ("DCGM_FI_DEV_GPU_TEMP_CELSIUS",)))[0].names == (
        "DCGM_FI_DEV_GPU_TEMP_CELSIUS",)


def test_valid_drops_the_sentinels_of_a_metric_with_one_scale():
    expr = valid(TEMP, 'job="dcgm"')
    (c,) = tree.comparisons(expr)
    assert (c.op, tree.number(c.rhs)) == ("<", 1e6)
    assert tree.selectors(c.lhs)[0].names == TEMP.names


def test_valid_scales_each_alias_and_drops_impossible_readings():
    expr = valid(UTIL, 'job="dcgm"')
    top = tree.unwrap(tree.parse(expr))
    assert isinstance(top, pp.BinaryExpr) and str(top.op) == "or"
    plain, scaled = (tree.unwrap(top.lhs), tree.unwrap(top.rhs))
    # per term: (name < 9e18) [* scale] <= 100
    assert [(c.op, tree.number(c.rhs)) for c in tree.comparisons(plain)] == [("<", 9e18), ("<=", 100)]
    assert [(c.op, tree.number(c.rhs)) for c in tree.comparisons(scaled)] == [("<", 9e18), ("<=", 100)]
    product = tree.unwrap(tree.comparisons(scaled)[1].lhs)
    assert str(product.op) == "*" and tree.number(product.rhs) == 100
    assert [s.names for s in tree.selectors(expr)] == [("DCGM_FI_DEV_GPU_UTIL",), ("DCGM_FI_DEV_GPU_UTIL_RATIO",)]
