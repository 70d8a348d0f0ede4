"""rulesgen/load/template_syntax.py: the catalog's [[ ]] templates rendered (errors at the catalog line), named
windows, and what a template reads (checked by the loaders before any rendering)."""
import pytest

from rulesgen.errors import Collector, Where
from rulesgen.load.template_syntax import (
    WindowRange, attributes_used, bits_used, names_used, placeholders, render, syntax_error)
from rulesgen.promql import tree

AT = Where("signals.yaml", 10, 5)


def rendered(template, **context):
    errors = Collector()
    out = render(template, context, AT, errors, "signal s")
    return out, [str(d) for d in errors.items]


def test_placeholders_render_into_parseable_promql_with_a_named_window():
    out, problems = rendered("max by ([[ gpu ]]) (\n  max_over_time([[ m ]][[ w.long ]])\n)\n", gpu="Hostname, gpu",
                             m="DCGM_FI_DEV_GPU_TEMP", w={"long": WindowRange(600)})
    assert problems == []
    assert tree.grouping(out) == (("by", ("Hostname", "gpu")),)
    assert [(c.function, c.range, c.selector.name) for c in tree.range_calls(out)] == [
        ("max_over_time", 600, "DCGM_FI_DEV_GPU_TEMP")]


def test_a_named_window_reads_as_a_range_as_its_length_and_as_a_number():
    day = WindowRange(86400)
    assert (str(day), float(day), day.seconds) == ("[1d]", 86400.0, 86400)
    out, problems = rendered("x offset [[ w.day | duration ]]", w={"day": day})
    assert problems == [] and tree.selectors(out)[0].offset == 86400


def test_blocks_render_and_output_is_stripped():
    out, _ = rendered("\n[% if busy %]a > 1[% else %]a[% endif %]\n", busy=True)
    assert out == "a > 1"


def test_a_syntax_error_is_reported_at_its_own_line_of_the_block():
    out, problems = rendered("a\n[% if x %]\nb [[ y ]", x=1)
    assert out == ""
    assert problems == ["signals.yaml:12:5: error[template-syntax]: signal s: unexpected ']'"]


@pytest.mark.parametrize("template, context, message", [
    ("a [[ nope ]]", {}, "'nope' is undefined"),
    ("a [[ t.missing ]]", {"t": {}}, "'dict object' has no attribute 'missing'")])
def test_an_unknown_name_is_an_error_at_the_key_never_an_empty_string(template, context, message):
    out, problems = rendered(template, **context)
    assert out == ""
    assert problems == [f"signals.yaml:10:5: error[unknown-reference]: signal s: {message}"]


def test_attributes_used_by_attribute_and_by_string_subscript():
    template = "[[ limit.x ]] [[ limit['y'] ]] [[ other.z ]] [[ limit[k] ]] [[ w.long ]]"
    assert attributes_used(template, "limit") == {"x", "y"}
    assert attributes_used(template, "w") == {"long"}
    assert attributes_used("[[ limit.x ", "limit") == set()  # does not parse: render() reports it


def test_bits_used_in_order_with_whether_a_matcher_reads_them():
    template = '[[ bit.DCGM_X.power ]] and [[ bit_matcher("DCGM_Y", "idle", "hw") ]]'
    assert bits_used(template) == [("DCGM_X", "power", False), ("DCGM_Y", "idle", True), ("DCGM_Y", "hw", True)]


def test_placeholders_and_syntax_error():
    assert placeholders("[[ a ]] [% if b %][[ c.d ]][% endif %]") == {"a", "b", "c"}
    assert placeholders("[[ a") is None
    assert syntax_error("[[ a ]]") is None
    assert syntax_error("[[ a") == "unexpected end of template, expected 'end of print statement'."


def test_names_used_are_attributes_and_name_like_string_arguments():
    assert names_used('[[ m.DCGM_FI_X ]] [[ rate("DCGM_FI_Y", "5m") ]] [[ f("a b") ]]') == {"DCGM_FI_X", "DCGM_FI_Y", "5m"}
