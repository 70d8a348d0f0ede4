"""A GitOps folder for the tests of what `rulesgen render` does to a folder (tests/test_safety.py: bad input;
tests/test_interrupts.py: all or none, even interrupted): the real command in a subprocess, the folder's
files before and after."""
import shutil
from pathlib import Path

import pytest

import conftest
from conftest import ROOT

COMMITTED = ROOT / "rulesgen.yaml"
PROMTOOL_NOTE = "note: promtool not found"


def without_promtool_note(stderr: str) -> str:
    """stderr without the line a machine without promtool adds to every render (PromQL then checked by
    promql-parser only): these tests are about the other messages, and run with or without engines."""
    return "".join(x for x in stderr.splitlines(keepends=True) if not x.startswith(PROMTOOL_NOTE))


def run_cli(*args, **kwargs):
    result = conftest.run_cli(*args, **kwargs)
    result.stderr = without_promtool_note(result.stderr)
    return result


def set_scenario_tests(path: Path, on: bool, source: Path | None = None) -> Path:
    """Write (source or) path's config with outputs.scenario_tests on or off (it must say the other)."""
    line = "\n  scenario_tests: {}\n"
    text = (source or path).read_text()
    assert line.format(str(not on).lower()) in text
    path.write_text(text.replace(line.format(str(not on).lower()), line.format(str(on).lower())))
    return path


def user_config(path: Path) -> Path:
    """The repository's config as a GitOps repository keeps it, its scenario tests among the outputs (this
    repository renders them where they run: outputs.scenario_tests is false)."""
    return set_scenario_tests(path, True, source=COMMITTED)


TMP_PREFIX = ".rulesgen-render-"  # rulesgen.artifacts.TMP_PREFIX (spelled out: the tests must also run on older code)
USAGE = "Usage: rulesgen render [OPTIONS]\nTry 'rulesgen render --help' for help.\n\nError: "


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def temporaries(folder: Path) -> list[str]:
    return [p.relative_to(folder).as_posix() for p in folder.rglob("*") if TMP_PREFIX in p.as_posix() or "rulesgen-tmp" in p.name]


@pytest.fixture
def scenarios(tmp_path):
    """One real scenario, so that tests/promtool/ and tests/vmalert/ are part of what is written."""
    d = tmp_path / "scenarios"
    d.mkdir()
    shutil.copy(ROOT / "fixtures/scenarios/thermal-throttling-cooling-failure.yaml", d)
    return d


@pytest.fixture
def repo(tmp_path, scenarios):
    """A GitOps folder rendered with the repository's config (topology: sharded: 13 PrometheusRule files of the
    shard and global tiers among its outputs, and, sharding.single_server_objects, one server's 8)."""
    d = tmp_path / "repo"
    d.mkdir()
    user_config(d / "rulesgen.yaml")
    result = run_cli("render", "--scenarios", str(scenarios), cwd=d)
    assert result.returncode == 0, result.stderr
    assert len(list((d / "deploy/prometheus-operator-sharded").glob("*.yaml"))) >= 8
    return d


