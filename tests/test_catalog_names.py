"""Every catalog name the Python code reads is checked when the catalog loads (issue 15, item 3): the
baseline alerts' failure mode and its thresholds are checked against baselines.yaml."""
from pathlib import Path

import pytest

from rulesgen.catalog import load_catalog
from rulesgen.errors import RulesgenError


def errors_of(directory: Path) -> list[str]:
    with pytest.raises(RulesgenError) as info:
        load_catalog(directory)
    return [str(d) for d in info.value.diagnostics]


def edit(path: Path, old: str, new: str, count: int = 1):
    text = path.read_text()
    assert text.count(old) >= count, old
    path.write_text(text.replace(old, new, count))


BASELINES = """\
baselines:
  - signal: gpu_temp
    metric: DCGM_FI_DEV_GPU_TEMP
    unit: celsius
    description: GPU temperature.
    value: quantile_over_time(0.5, gpu:dcgm_gpu_temp:max[[ short_range ]])
    busy_only: true
    direction: up
    alert: true
    floor: {value: 0.5, source: test}
    min_delta: {value: 3, source: test}
"""


def test_baselines_need_the_baseline_failure_mode_and_its_thresholds(minimal_catalog):
    (minimal_catalog / "baselines.yaml").write_text(BASELINES)
    fm = minimal_catalog / "failure_modes.yaml"
    assert errors_of(minimal_catalog) == [
        f"{fm}:1:1: error[unknown-failure-mode]: failure_modes.yaml: baselines.yaml has 1 signal(s), whose alerts "
        "belong to the failure mode 'baseline_deviation': not in failure_modes.yaml",
    ]
    edit(fm, "  - id: hot_gpu\n", "  - id: baseline_deviation\n")
    assert errors_of(minimal_catalog) == [
        f"{fm}:2:5: error[unknown-threshold]: failure mode baseline_deviation: the baseline alerts read its thresholds "
        "z, peer_z, busy_util, same_load_ratio, node_peers_min, fleet_peers_min (missing: z, peer_z, busy_util, "
        "same_load_ratio, node_peers_min, fleet_peers_min)",
    ]
