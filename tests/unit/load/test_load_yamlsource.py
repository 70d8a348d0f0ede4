"""rulesgen/load/yamlsource.py: YAML with positions; a mapping key is a name as written."""
import pytest

from rulesgen.errors import RulesgenError
from rulesgen.load.yamlsource import load_text


def test_keys_yaml_would_read_as_booleans_or_numbers_stay_as_written():
    doc = load_text("on: 1\nno: 2\n1e3: 3\n0x10: 4\n79: 5\nname: 6\n", "f.yaml")
    assert list(doc) == ["on", "no", "1e3", "0x10", "79", "name"]
    assert doc.key_where["no"].line == 2 and doc["0x10"] == 4


def test_a_null_key_and_a_repeated_key_are_errors_at_their_line():
    with pytest.raises(RulesgenError) as raised:
        load_text("a: 1\n~: 2\na: 3\n", "f.yaml")
    assert [(d.line, d.code) for d in raised.value.diagnostics] == [(2, "bad-key"), (3, "duplicate-key")]
