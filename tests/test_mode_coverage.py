"""Every failure mode of the catalog is held to a scenario that fires it, a normal scenario in which its
rules read their inputs and stay quiet (a look-alike), a runbook and a dashboard row: read from the catalog
itself, so a mode added without them fails here, naming what it lacks. No engine runs: the replays that
judge these scenarios are tests/test_scenarios.py and tests/test_victoriametrics.py."""
import dataclasses
import json
import sys

import pytest

from conftest import ROOT
from rulesgen.artifacts import plan
from rulesgen.builders.dashboards.chapters import SEPARATOR
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.load.scenarios import load_scenarios
from rulesgen.model.catalog import Catalog

sys.path.insert(0, str(ROOT / "fixtures"))
from scenariogen import reads  # noqa: E402


def _rows(artifacts) -> set[str]:
    """Titles of the dashboard rows that hold at least one panel (collapsed or not)."""
    titles = set()
    for a in artifacts:
        if not (a.path.startswith("dashboards/") and a.path.endswith(".json")):
            continue
        panels = json.loads(a.text).get("panels", [])
        for i, p in enumerate(panels):
            following = panels[i + 1] if i + 1 < len(panels) else {}
            if p.get("type") == "row" and (p.get("panels") or following.get("type") not in (None, "row")):
                titles.add(p.get("title", "").split(SEPARATOR)[0])  # "<mode's title> · for <whom it serves>"
    return titles


def _look_alike_inputs(catalog: Catalog, mode) -> set[str]:
    """What a normal scenario must carry for the mode's rules to be judged on healthy load: the catalog
    metrics of the mode that dcgm-exporter exports by default (else all of them); for a mode that reads
    the training jobs' own metrics, one of those series."""
    metrics = [catalog.metric(n) for n in mode.metrics]
    return {m.name for m in metrics if m.default_enabled} or {m.name for m in metrics}


def gaps(catalog: Catalog, scenarios, artifacts, rules) -> dict[str, list[str]]:
    """{mode id: what it lacks} for every catalog mode lacking a firing scenario, a quiet look-alike, a
    runbook its alerts link to, or a dashboard row."""
    known = {n for m in catalog.metrics for n in m.names}
    canonical = (lambda n: catalog.metric(n).name if n in known else n)
    fired = {e.failure_mode for s in scenarios for e in s.expect}
    normal = {s.name: {canonical(series.partition("{")[0]) for series, _ in s.series} for s in scenarios if s.is_normal}
    paths = {a.path for a in artifacts}
    rows = _rows(artifacts)
    out: dict[str, list[str]] = {}
    for mode in catalog.failure_modes:
        missing = []
        if mode.id not in fired:
            missing.append("no scenario expects it to fire")
        need = _look_alike_inputs(catalog, mode)
        if mode.job_metrics:
            job_series = {n for n in reads.fields_read((mode.id,)) if n not in known and n != "up"}
            carried = [name for name, series in normal.items() if series & job_series]
        else:
            carried = [name for name, series in normal.items() if need <= series]
        if not carried:
            missing.append(f"no normal scenario carries {sorted(need) or 'its job metrics'} (a quiet look-alike)")
        alerts = [r for r in rules if r.alert and r.failure_mode == mode.id]
        if not alerts:
            missing.append("no rendered alert")
        for r in alerts:
            url = dict(r.annotations).get("runbook_url", "")
            if not any(url.endswith(p) for p in paths if p.startswith("runbooks/")):
                missing.append(f"{r.alert}'s runbook_url {url!r} names no rendered runbook")
        if mode.title not in rows:
            missing.append(f"no dashboard row titled {mode.title!r}")
        if missing:
            out[mode.id] = missing
    return out


@pytest.fixture(scope="module")
def repository():
    p = plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None, scenario_tests=False)
    scenarios = load_scenarios(sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml")),
                               [fm.id for fm in p.catalog.failure_modes])
    return p, scenarios, [r for f in p.rules.files for g in f.groups for r in g.rules]


def test_every_catalog_mode_has_a_scenario_a_look_alike_a_runbook_and_a_row(repository):
    p, scenarios, rules = repository
    assert gaps(p.catalog, scenarios, p.artifacts, rules) == {}


def test_a_mode_added_without_them_is_named_with_what_it_lacks(repository):
    p, scenarios, rules = repository
    model = p.catalog.failure_modes[0]
    added = dataclasses.replace(model, id="gpu_added_mode", title="A mode nobody wrote scenarios for")
    catalog = dataclasses.replace(p.catalog, failure_modes=p.catalog.failure_modes + (added,))
    found = gaps(catalog, scenarios, p.artifacts, rules)
    assert list(found) == ["gpu_added_mode"]
    assert "no scenario expects it to fire" in found["gpu_added_mode"]
    assert "no rendered alert" in found["gpu_added_mode"]
    assert f"no dashboard row titled {added.title!r}" in found["gpu_added_mode"]


def test_a_missing_runbook_row_and_look_alike_are_named(repository):
    p, scenarios, rules = repository
    mode = next(fm for fm in p.catalog.failure_modes if fm.id == "memory_overheat")
    runbook = next(a for a in p.artifacts if a.path.startswith("runbooks/") and "memory-overheat" in a.path)
    artifacts = [a for a in p.artifacts if a is not runbook]
    artifacts = [dataclasses.replace(a, text=a.text.replace(f'"{mode.title}{SEPARATOR}', f'"Renamed row{SEPARATOR}'))
                 if a.path.endswith(".json") else a for a in artifacts]
    quiet = [s for s in scenarios if not s.is_normal or not any(
        n.startswith("DCGM_FI_DEV_MEMORY_TEMP") for n, _ in s.series)]
    found = gaps(p.catalog, quiet, artifacts, rules)["memory_overheat"]
    assert any("runbook_url" in f for f in found) and f"no dashboard row titled {mode.title!r}" in found
    assert any("quiet look-alike" in f for f in found)
