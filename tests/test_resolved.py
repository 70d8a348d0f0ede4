"""rulesgen/load/resolved.py: rulesgen.yaml applied to the catalog once (thresholds, severities, `for`, active or
why not, place in the group); every builder and renderer reads that view instead of applying it again."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT

from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.load.resolved import resolve
from rulesgen.load.settings import load_settings

CATALOG = load_catalog(bundled_catalog_dir())


@pytest.fixture
def settings(tmp_path):
    config = tmp_path / "rulesgen.yaml"
    config.write_text("""\
profiling: false
failure_modes:
  ecc_correctable_rate:
    for: 15m
    thresholds: {per_minute: 20}
  straggler:
    severity: {warning: info}
  gpu_idle_allocated:
    enabled: false
""")
    return load_settings(config)


def test_overrides_are_applied_and_marked(settings):
    resolved = resolve(CATALOG, settings)
    ecc = resolved.mode("ecc_correctable_rate")
    assert ecc.values()["per_minute"] == 20
    assert [t.name for t in ecc.thresholds if t.from_config] == ["per_minute"]
    default = next(t.value for t in CATALOG.failure_mode("ecc_correctable_rate").thresholds if t.name == "per_minute")
    assert default != 20
    spec = CATALOG.failure_mode("ecc_correctable_rate").alerts[0]
    assert ecc.for_seconds(spec) == 900 != spec.for_seconds
    straggler = resolved.mode("straggler")
    assert straggler.severity("warning") == "info" and "warning" not in straggler.severities()
    thermal = resolved.mode("thermal_throttling")
    assert thermal.for_seconds(thermal.fm.alerts[0]) == thermal.fm.alerts[0].for_seconds


def test_inactive_modes_say_why(settings):
    resolved = resolve(CATALOG, settings)
    inactive = dict(resolved.inactive)
    assert inactive["gpu_idle_allocated"] == "disabled in rulesgen.yaml"
    profiling = [fm.id for fm in CATALOG.failure_modes if fm.needs_profiling and fm.id != "gpu_idle_allocated"]
    assert profiling and all("profiling" in inactive[m] for m in profiling)
    assert resolved.mode("ecc_uncorrectable").active
    with pytest.raises(KeyError):
        resolved.mode("no_such_mode")


def test_index_in_group_is_the_catalog_order_within_the_group():
    resolved = resolve(CATALOG, load_settings(None))
    for group in {fm.group for fm in CATALOG.failure_modes}:
        ids = [fm.id for fm in CATALOG.failure_modes if fm.group == group]
        assert [resolved.mode(i).index_in_group for i in ids] == list(range(len(ids)))


def test_only_the_resolver_and_the_settings_validation_read_per_mode_settings():
    """settings.for_mode() is read in resolved.py only (which also checks the config against the catalog):
    anywhere else it would apply rulesgen.yaml a second time."""
    readers = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "rulesgen").rglob("*.py")
                     if re.search(r"\.for_mode\(", p.read_text()))
    assert [Path(p).name for p in readers] == ["resolved.py"], readers
