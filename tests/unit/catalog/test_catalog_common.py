"""rulesgen/catalog/common.py: record-name rules, a duplicate id at its second place, a top-level list."""
import pytest

from rulesgen.catalog.common import LEVELS, RECORD_NAME, read_title, read_unit, top_list, unique
from rulesgen.errors import Collector
from rulesgen.load.mapping import Fields
from unit_yaml import printed, written


@pytest.mark.parametrize("name", [f"{level}:dcgm_x:ratio" for level in LEVELS])
def test_every_level_is_a_record_name(name):
    assert RECORD_NAME.match(name)


@pytest.mark.parametrize("name", ["cluster:dcgm_x:ratio", "gpu:dcgm_x", "gpu:Dcgm:max", "DCGM_FI_DEV_GPU_TEMP",
                                  "gpu:dcgm-x:max"])
def test_other_names_are_not(name):
    assert not RECORD_NAME.match(name)


def test_top_list_gives_items_with_their_lines_and_reports_unknown_keys(tmp_path):
    path, doc = written(tmp_path, "x.yaml", "items:\n  - id: a\n  - id: b\nroles: {}\nitem: 1\n")
    errors = Collector()
    items, wheres = top_list(doc, "items", errors, "x.yaml", also=("roles",))
    assert [i["id"] for i in items] == ["a", "b"]
    assert [(w.line, w.col) for w in wheres] == [(2, 5), (3, 5)]
    # roles is read elsewhere (also=); item is a typo
    assert printed(errors) == [f"{path}:5:1: error[unknown-key]: x.yaml: unknown key 'item' (did you mean 'items'?)"]


def test_a_missing_list_is_an_error_at_the_top(tmp_path):
    path, doc = written(tmp_path, "x.yaml", "roles: {}\n")
    errors = Collector()
    assert top_list(doc, "items", errors, "x.yaml", also=("roles",)) == ([], [])
    assert printed(errors) == [f"{path}:1:1: error[missing-key]: x.yaml: missing required key 'items'"]


def test_unique_reports_the_second_place_and_names_the_first_line(tmp_path):
    path, doc = written(tmp_path, "x.yaml", "items:\n  - id: a\n  - id: b\n  - id: a\n")
    errors, seen = Collector(), {}
    items, wheres = top_list(doc, "items", errors, "x.yaml")
    for item, where in zip(items, wheres):
        f = Fields(item, errors, "item", fallback=where)
        unique(f, "id", f.str("id"), seen, f"item {item['id']!r}")
    assert sorted(seen) == ["a", "b"] and seen["a"].line == 2
    assert printed(errors) == [f"{path}:4:5: error[duplicate-id]: item 'a' already defined on line 2"]


def test_title_and_unit_hold_a_panels_words_to_grafanas_units(tmp_path):
    """read_title: optional, at most 60 characters, no PromQL; read_unit: a Grafana unit id or MHz (drawn in hertz).
    Each planted mistake is an error at its line and falls back to no title, or to `short`."""
    text = ("items:\n"
            "  - {title: GPU temperature, unit: celsius}\n"
            "  - {unit: MHz}\n"
            "  - {title: 'max by (cluster) (DCGM_FI_DEV_GPU_TEMP)', unit: rotmhz}\n"
            f"  - {{title: '{'x' * 61}', unit: Celsius}}\n")
    path, doc = written(tmp_path, "x.yaml", text)
    errors = Collector()
    items, wheres = top_list(doc, "items", errors, "x.yaml")
    got = []
    for item, where in zip(items, wheres):
        f = Fields(item, errors, "item", fallback=where)
        got.append((read_title(f, "item"), read_unit(f, "item")))
    assert got == [("GPU temperature", "celsius"), ("", "MHz"), ("", "short"), ("", "short")]
    assert printed(errors) == [
        f"{path}:4:6: error[bad-title]: item: title 'max by (cluster) (DCGM_FI_DEV_GPU_TEMP)': reads like PromQL "
        "(a grouping clause: 'by (')",
        f"{path}:4:56: error[unknown-unit]: item: unit 'rotmhz' is not a Grafana unit id (did you mean 'rothz'?) "
        "(Grafana's categories.ts; or one of MHz)",
        f"{path}:5:6: error[bad-title]: item: title '{'x' * 61}': 61 characters, more than 60",
        f"{path}:5:78: error[unknown-unit]: item: unit 'Celsius' is not a Grafana unit id (did you mean 'celsius'?) "
        "(Grafana's categories.ts; or one of MHz)",
    ]
