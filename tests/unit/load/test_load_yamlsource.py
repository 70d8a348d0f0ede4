"""rulesgen/load/yamlsource.py: YAML with positions; a mapping key is a name as written."""
import pytest

from rulesgen.errors import RulesgenError
from rulesgen.load.yamlsource import load_file, load_file_kept, load_text


def test_keys_yaml_would_read_as_booleans_or_numbers_stay_as_written():
    doc = load_text("on: 1\nno: 2\n1e3: 3\n0x10: 4\n79: 5\nname: 6\n", "f.yaml")
    assert list(doc) == ["on", "no", "1e3", "0x10", "79", "name"]
    assert doc.key_where["no"].line == 2 and doc["0x10"] == 4


def test_a_null_key_and_a_repeated_key_are_errors_at_their_line():
    with pytest.raises(RulesgenError) as raised:
        load_text("a: 1\n~: 2\na: 3\n", "f.yaml")
    assert [(d.line, d.code) for d in raised.value.diagnostics] == [(2, "bad-key"), (3, "duplicate-key")]


def test_a_kept_file_is_its_own_copy_at_its_own_path(tmp_path):
    """load_file_kept parses a text once: a copy elsewhere gets positions naming its own path, the same
    key-level problems at its own path, and a tree of its own (changing it changes no other load)."""
    text = "a:\n  - b: 1\n    c: |\n      x\na: 2\n"
    first, second = tmp_path / "one.yaml", tmp_path / "two.yaml"
    for path in (first, second):
        path.write_text(text)
    for path in (first, second, first):
        problems = []
        doc = load_file_kept(path, collect=problems)
        expected_problems = []
        assert doc == load_file(path, collect=expected_problems)
        assert [str(d) for d in problems] == [str(d) for d in expected_problems] == [
            f"{path}:5:1: error[duplicate-key]: duplicate key 'a' (first defined on line 1)"]
        item = doc["a"][0]
        assert (doc.where.path, doc["a"].item_where[0].path, item.key_where["c"].path, item.body_where["c"].path) == (
            str(path),) * 4
        assert (item.key_where["c"].line, item.body_where["c"].line) == (3, 4)
        item["b"] = 99
    assert load_file_kept(first, collect=[])["a"][0]["b"] == 1
    with pytest.raises(RulesgenError):  # without `collect`, the duplicate key raises, as load_file does
        load_file_kept(second)
