"""rulesgen/memo.py: the catalog and a scenario are loaded once per process for the same bytes,
again as soon as a byte changes, and a bad input is reported every time."""
import dataclasses
import shutil
from pathlib import Path

import pytest

from conftest import HOT_GPU_SCENARIO
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.errors import RulesgenError
from rulesgen.memo import Memo, digest
from rulesgen.load import scenarios
from rulesgen.load.scenarios import load_scenario


def test_memo_keeps_the_last_results_and_never_an_error():
    memo, calls = Memo(size=2), []

    def load(value):
        calls.append(value)
        return value

    assert [memo.get(k, lambda k=k: load(k)) for k in ("a", "b", "a", "c", "b")] == ["a", "b", "a", "c", "b"]
    assert calls == ["a", "b", "c", "b"]  # "b" was the least recently used when "c" came
    with pytest.raises(ValueError):
        memo.get("bad", lambda: int("x"))
    assert memo.get("bad", lambda: "loaded") == "loaded"  # the failure was not kept


def test_digest_follows_the_bytes_not_the_clock(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text("a: 1\n")
    first = digest([path, tmp_path / "missing.yaml"])
    assert first[1] == (str(tmp_path / "missing.yaml"), None)
    path.write_text("a: 2\n")  # same size, likely the same mtime tick
    assert digest([path])[0] != first[0]


def test_a_catalog_is_loaded_again_when_a_byte_changes_and_its_errors_every_time(tmp_path):
    catalog = tmp_path / "catalog"
    shutil.copytree(bundled_catalog_dir(), catalog)
    first = load_catalog(catalog)
    assert load_catalog(catalog) is first
    xid = catalog / "xid.yaml"
    xid.write_text(xid.read_text() + "\n# a comment\n")
    assert load_catalog(catalog) is not first and load_catalog(catalog) == first
    broken = xid.read_text().replace("xids:", "xidz:", 1)
    xid.write_text(broken)
    for _ in range(2):
        with pytest.raises(RulesgenError) as raised:
            load_catalog(catalog)
        assert any(d.path.endswith("xid.yaml") for d in raised.value.diagnostics)


def test_a_scenario_is_loaded_again_for_other_failure_modes(tmp_path):
    path = tmp_path / "hot.yaml"
    path.write_text(HOT_GPU_SCENARIO)
    first = load_scenario(path, ["hot_gpu"])
    assert load_scenario(path, ["hot_gpu"]) is first
    with pytest.raises(RulesgenError):  # its expectation names a mode these do not have
        load_scenario(path, ["other_mode"])


def test_a_scenario_copied_elsewhere_is_parsed_once_and_names_its_own_path(tmp_path, monkeypatch):
    first_path, copy_path = tmp_path / "hot.yaml", tmp_path / "copy" / "hot.yaml"
    first_path.write_text(HOT_GPU_SCENARIO)
    copy_path.parent.mkdir()
    copy_path.write_text(HOT_GPU_SCENARIO)
    first = load_scenario(first_path, ["hot_gpu"])
    parsed = []
    monkeypatch.setattr(scenarios, "load_file", lambda path: parsed.append(path))  # any parse would fail
    copied = load_scenario(copy_path, ["hot_gpu"])
    assert parsed == [] and copied.path == str(copy_path) and first.path == str(first_path)
    assert copied == dataclasses.replace(first, path=str(copy_path))
    monkeypatch.chdir(tmp_path)
    assert load_scenario(Path("hot.yaml"), ["hot_gpu"]).path == "hot.yaml" and parsed == []
