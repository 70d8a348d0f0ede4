"""rulesgen/load/mapping.py: typed reads of one YAML mapping, each problem at its key's position, and the keys
nobody read reported as unknown with a did-you-mean."""
import pytest

from rulesgen.errors import Collector, Where
from rulesgen.load.mapping import Fields, did_you_mean
from rulesgen.load.yamlsource import load_text

DOC = """\
name: hot
count: 3
ratio: 0.5
enabled: true
hold: 5m
items: [a, b]
labels: {b: "2", a: "1"}
nested: {x: 1}
"""


def fields(text=DOC):
    errors = Collector()
    return Fields(load_text(text, "f.yaml"), errors, "thing"), errors


def printed(errors):
    return [str(d) for d in sorted(errors.items)]


def test_typed_reads_of_a_valid_mapping():
    f, errors = fields()
    assert f.str("name", choices=("hot", "cold"), pattern=r"[a-z]+") == "hot"
    assert f.num("count", integer=True, minimum=1, maximum=3) == 3
    assert f.num("ratio", minimum=0, maximum=1) == 0.5
    assert f.bool("enabled") is True
    assert f.duration("hold") == 300
    assert f.list("items") == (["a", "b"], [Where("f.yaml", 6, 9), Where("f.yaml", 6, 12)])
    assert f.str_map("labels") == (("a", "1"), ("b", "2"))  # sorted by key
    assert f.mapping("nested") == {"x": 1}
    assert f.str("absent", default="d") == "d" and not f.has("absent")
    f.done()
    assert errors.items == []


def test_every_bad_value_is_reported_at_its_key():
    text = "name: Hot\ncount: 2.5\nratio: 7\nenabled: 'yes'\nhold: soon\nitems: {a: 1}\nnested: [1]\n"
    f, errors = fields(text)
    assert f.str("name", pattern=r"[a-z]+") is None
    assert f.num("count", integer=True) is None
    assert f.num("ratio", minimum=0, maximum=1) is None
    assert f.bool("enabled") is None
    assert f.duration("hold") is None
    assert f.list("items") == ([], [])
    assert f.mapping("nested") == {}
    assert printed(errors) == [
        "f.yaml:1:1: error[bad-value]: thing.name: 'Hot' does not match [a-z]+",
        "f.yaml:2:1: error[bad-type]: thing.count must be an integer, got 2.5",
        "f.yaml:3:1: error[bad-value]: thing.ratio must be within [0, 1], got 7",
        "f.yaml:4:1: error[bad-type]: thing.enabled must be true or false, got 'yes'",
        "f.yaml:5:1: error[bad-duration]: thing.hold: 'soon' is not a duration like 30s, 5m, 1h30m",
        "f.yaml:6:1: error[bad-type]: thing.items must be a list, got Node",
        "f.yaml:7:1: error[bad-type]: thing.nested must be a mapping, got NodeList",
    ]


def test_a_choice_outside_the_set_suggests_the_closest():
    f, errors = fields()
    assert f.str("name", choices=("hat", "cold")) is None
    assert printed(errors) == ["f.yaml:1:1: error[bad-value]: thing.name must be one of cold, hat, got 'hot' "
                               "(did you mean 'hat'?)"]


def test_missing_required_keys_are_reported_at_the_mapping():
    f, errors = fields("other: 1\n")
    assert f.num("count", required=True, default=0) == 0
    assert f.list("items", required=True) == ([], [])
    assert [(d.line, d.code, d.message) for d in errors.items] == [
        (1, "missing-key", "thing: missing required key 'count'"), (1, "missing-key", "thing: missing required key 'items'")]


def test_done_reports_the_keys_nobody_read():
    f, errors = fields()
    f.str("name")
    f.done()
    assert [d.line for d in errors.items] == [2, 3, 4, 5, 6, 7, 8]
    assert str(sorted(errors.items)[0]) == "f.yaml:2:1: error[unknown-key]: thing: unknown key 'count'"


def test_a_non_mapping_node_is_one_error_and_reads_as_empty():
    errors = Collector()
    f = Fields(load_text("[1, 2]\n", "f.yaml"), errors, "thing")
    assert not f.has("x") and f.str("x", default="d") == "d"
    assert printed(errors) == ["f.yaml:1:1: error[bad-type]: thing must be a mapping, got NodeList"]


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_a_number_must_be_finite(value):
    f, errors = fields(f"ratio: {value}\n")
    assert f.num("ratio") is None
    assert [d.code for d in errors.items] == ["bad-value"]


def test_did_you_mean():
    assert did_you_mean("severty", ["severity", "summary"]) == " (did you mean 'severity'?)"
    assert did_you_mean("zzz", ["severity"]) == ""
