"""The walks over the PromQL tree (rulesgen/promql/tree.py), on small expressions: no binary, milliseconds."""
import pytest

from rulesgen.promql import printer as printing, tree as t, graph as rule_graph
from rulesgen.model.output import Rule


def test_selectors_ranges_functions_and_offsets():
    sels = t.selectors('rate(a{job="x"}[5m]) / b offset 1h + max_over_time(c:d:e[2h] offset 5m)')
    assert [(s.name, s.matchers, s.range, s.function, s.offset) for s in sels] == [
        ("a", (("job", "=", "x"),), 300, "rate", None),
        ("b", (), None, None, 3600),
        ("c:d:e", (), 7200, "max_over_time", 300),
    ]


def test_strings_with_brackets_colons_and_names_are_not_read():
    expr = 'label_replace(a:b:c{x="[5m] d:e:f"}, "y", "g:h:i[1h]", "z", "(.+)") and on () x{v=~"a|b:c"}'
    assert t.names_read(expr) == ("a:b:c", "x")
    assert t.recorded_names(expr) == ("a:b:c",)
    assert t.windows(expr) == ()
    assert t.selectors(expr)[0].matchers == (("x", "=", "[5m] d:e:f"),)


def test_name_matchers_list_the_names_they_select():
    expr = '{__name__=~"DCGM_A|DCGM_B", job="x"} or {__name__!~"DCGM_C", job="x"} or {__name__=~"DCGM_.+"} or {__name__="D"}'
    assert t.names_read(expr) == ("DCGM_A", "DCGM_B", "D")
    assert t.metric_names(expr + " or gpu:x:y or ALERTS") == ("DCGM_A", "DCGM_B", "D")


def test_subqueries_and_range_calls():
    expr = "avg_over_time((a:b:c > bool 1)[1h:5m]) + rate(d[30s]) + quantile_over_time(0.5, e:f:g[15m])"
    assert t.windows(expr) == (3600, 30, 900)
    calls = t.range_calls(expr)
    assert [(c.function, c.range, c.selector and c.selector.name) for c in calls] == [
        ("avg_over_time", 3600, None), ("rate", 30, "d"), ("quantile_over_time", 900, "e:f:g")]
    assert t.recorded_names(expr) == ("a:b:c", "e:f:g")


def test_grouping_labels():
    expr = "sum by (a, b) (x) / on (a) group_left (c) count without (pod) (y) + max(z)"
    assert t.grouping(expr) == (("by", ("a", "b")), ("without", ("pod",)))


def test_comparisons_in_operator_order_with_bool_and_matching():
    expr = "(a > bool 0.5) * on (g) group_left () b >= 3 and c:d:e < -2 unless d == e"
    found = [(printing.to_text(c.lhs), c.op, printing.to_text(c.rhs), c.bool, t.number(c.rhs)) for c in t.comparisons(expr)]
    assert found == [
        ("a", ">", "0.5", True, 0.5),
        ("(a > bool 0.5) * on (g) group_left () b", ">=", "3", False, 3.0),
        ("c:d:e", "<", "-2", False, -2.0),
        ("d", "==", "e", False, None),
    ]


def test_wrapped_series():
    assert t.wrapped_series("quantile_over_time(0.5, a:b:c[15m])") == t.Wrapped(
        t.Selector("a:b:c", (), 900, "quantile_over_time"), "quantile_over_time")
    assert t.wrapped_series('(a:b:c{x="y"})').selector.matchers == (("x", "=", "y"),)
    assert t.wrapped_series("a:b:c + 1") is None
    assert t.wrapped_series("rate(a:b:c[5m] offset 1h)") is None


@pytest.mark.parametrize("text", [
    'sum by (cluster, Hostname) (rate(x{a="b", c=~"d|e"}[5m]))',
    "a * on (x, y) group_left (z) b unless on () c",
    "a > bool 0.05",
    'label_replace(x, "h", "$1", "src", "(.+)")',
    "(a)[1h:5m] offset 1h",
    "avg_over_time((a > 1)[23h59m:])",
    "-x + topk(3, y) - count_values(\"v\", z)",
    'x{a="q\\"uote\\\\"} offset -5m',
    "max without (pod) (x) / ignoring (a) group_right () y",
    "x @ start() + rate(y[5m] @ 100)",
])
def test_printing_is_the_builders_style_and_round_trips(text):
    assert printing.to_text(text) == text
    assert printing.to_text(printing.to_text(text)) == text


def test_matcher_injection_keeps_strings_and_functions():
    expr = 'max_over_time(a:b:c{signal="x"}[1h]) - on (g) b:c:d and label_replace(DCGM_X, "a:b:c", "", "", "")'
    out = printing.with_matchers(expr, lambda s: ['cluster=~"$cluster"'] if s.name != "DCGM_X" else [])
    assert out == ('max_over_time(a:b:c{signal="x", cluster=~"$cluster"}[1h]) - on (g) b:c:d{cluster=~"$cluster"}'
                   ' and label_replace(DCGM_X, "a:b:c", "", "", "")')


def test_inline_replaces_records_by_their_expressions():
    defs = {"a:b:c": "avg_over_time(x[5m])", "d:e:f": "a:b:c * 2"}
    assert printing.inline('max_over_time(d:e:f[1h]) > d:e:f and on () y{z="a:b:c"}', defs, "1m") == (
        'max_over_time(((avg_over_time(x[5m])) * 2)[1h:1m]) > ((avg_over_time(x[5m])) * 2) and on () y{z="a:b:c"}')
    # an equality matcher keeps (drops) the series with that value; an offset reads the step that long ago
    assert printing.inline('a:b:c{x="y"} + a:b:c{x!="z"} offset 5m - max_over_time(d:e:f[1h] offset 1m)', {"a:b:c": "q", "d:e:f": "r"}, "1m") == (
        '((q) and on (x) label_replace(vector(1), "x", "y", "", ""))'
        ' + last_over_time(((q) unless on (x) label_replace(vector(1), "x", "z", "", ""))[1m:1m] offset 5m)'
        ' - max_over_time((r)[1h:1m] offset 1m)')
    with pytest.raises(ValueError, match="regex matchers"):
        printing.inline('a:b:c{x=~"y"}', defs, "1m")
    with pytest.raises(ValueError, match="cycle"):
        printing.inline("a:b:c", {"a:b:c": "d:e:f", "d:e:f": "a:b:c"}, "1m")


def test_syntax_errors_carry_the_parsers_message():
    assert t.problems("sum(x") and t.problems("x{a=}") and not t.problems("x")
    with pytest.raises(t.PromQLSyntaxError):
        t.parse("rate(x[5m]")


def test_graph_reads_and_readers():
    rules = [
        Rule(record="gpu:a:x", expr="DCGM_A"),
        Rule(record="gpu:b:x", expr="gpu:a:x * 2 + DCGM_B"),
        Rule(alert="A", expr="gpu:b:x > 1"),
        Rule(alert="B", expr='ALERTS{alertstate="firing"} and on () up'),
        Rule(record="gpu:unused:x", expr="DCGM_C"),
    ]
    g = rule_graph.Graph(rules)
    assert g.read_rules(1) == {0} and g.read_rules(3) == {2, 3}
    assert g.readers("gpu:a:x") == (1,)
    assert g.records_read(["gpu:b:x > 1"]) == ("gpu:b:x", "gpu:a:x")
    assert g.records_read(["gpu:b:x > 1"], transitive=False) == ("gpu:b:x",)
    assert g.metrics_read(["gpu:b:x > 1"]) == {"DCGM_A", "DCGM_B"}
    assert rules[1].tree is t.parse("gpu:a:x * 2 + DCGM_B")


def test_graph_reads_only_the_alerts_an_alerts_selector_can_match():
    """An ALERTS selector reads the alerts its matchers can match on their name and fixed labels (a templated
    label, or one the rule does not fix, can be anything): vmalert-tool's levels and the holds rest on it."""
    job = (("failure_mode", "job"),)
    rules = [
        Rule(alert="Down", expr="up == 0", labels=(("failure_mode", "exporter_down"), ("severity", "warning"))),
        Rule(alert="Hot", expr="t > 90", labels=(("failure_mode", "thermal"), ("severity", "{{ $labels.s }}"))),
        Rule(alert="Loose", expr="x > 1"),
        Rule(alert="A", expr='y unless on (gpu) ALERTS{failure_mode="exporter_down"}', labels=job),
        Rule(alert="B", expr='y unless on (gpu) ALERTS{alertname="B", alertstate="firing"}', labels=job),
        Rule(alert="C", expr='y unless on (gpu) ALERTS{severity="critical"}', labels=job),
        Rule(alert="D", expr='y unless on (gpu) ALERTS_FOR_STATE{failure_mode!~"thermal|exporter_down"}', labels=job),
        Rule(alert="E", expr='y unless on (gpu) {__name__="ALERTS", alertname=~"Down|Hot"}', labels=job),
    ]
    g = rule_graph.Graph(rules)
    # A: Down by its label, and Loose, whose failure_mode is whatever its expression gives
    assert [sorted(g.read_rules(i)) for i in range(3, 8)] == [[0, 2], [4], [1, 2, 3, 4, 5, 6, 7], [2, 3, 4, 5, 6, 7],
                                                              [0, 1]]


def test_a_selector_may_select_series_by_their_labels():
    s = t.selectors('ALERTS{alertstate=~"pending|firing", failure_mode=~"a|b", action!="drain"}')[0]
    assert s.may_select({"failure_mode": "a", "action": "investigate"})
    assert not s.may_select({"failure_mode": "c"})
    assert not s.may_select({"failure_mode": "b", "action": "drain"})
    assert s.may_select({})  # labels it does not know cannot rule a series out
