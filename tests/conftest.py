import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rulesgen.tools import find_tool  # noqa: E402


# Tests that use these fixtures run real binaries: they get the `engines` mark, so that
# `pytest -m "not engines"` runs the model and builder tests alone, in seconds.
ENGINE_FIXTURES = {"promtool", "vmalert", "vmalert_tool", "amtool", "promtool_results", "matrix_results",
                   "vmalert_results", "prometheus_bin", "victoria_metrics"}
SELECTED = pytest.StashKey[dict]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if ENGINE_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.engines)


class _SelectionRecorder:
    """After -k and -m have deselected: which parameter values each module's tests still use, so a
    session fixture replays only the scenarios that were selected."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        chosen: dict = {}
        for item in items:
            spec = getattr(item, "callspec", None)
            if spec is not None:
                chosen.setdefault((item.module.__name__, item.originalname), set()).add(spec.id)
        config.stash[SELECTED] = chosen


def pytest_configure(config):
    config.pluginmanager.register(_SelectionRecorder(), "rulesgen-selection")


def selected(config, module: str, test: str) -> set:
    """Parameter ids of the selected cases of the parametrized `test` in `module` (empty: none)."""
    return config.stash.get(SELECTED, {}).get((module, test), set())


def tool(name: str) -> str:
    """Real binaries only: a missing tool fails the test with the way to get it."""
    try:
        return find_tool(name)
    except Exception as exc:  # ToolMissing
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def promtool():
    return tool("promtool")


@pytest.fixture(scope="session")
def vmalert():
    return tool("vmalert")


@pytest.fixture(scope="session")
def rendered(tmp_path_factory):
    """A fresh render of the bundled catalog with the repository's config into a temp dir."""
    out = tmp_path_factory.mktemp("render")
    result = run_cli("render", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def run_promtool_tests(promtool: str, paths) -> dict:
    """`promtool test rules` on each file, in parallel (one process per file): {stem: (rc, output)}."""
    from concurrent.futures import ThreadPoolExecutor

    from rulesgen.replay import promtool_env

    def run(path: Path):
        proc = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=900,
                              env=promtool_env())
        return path.stem, (proc.returncode, proc.stdout + proc.stderr)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(pool.map(run, paths))


def run_cli(*args, cwd=ROOT, env=None):
    exe = Path(sys.executable).with_name("rulesgen")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "rulesgen.cli"]
    return subprocess.run([*cmd, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


MINIMAL_CATALOG = {
    "metrics.yaml": """\
metrics:
  - name: DCGM_FI_DEV_GPU_TEMP
    field_id: 150
    type: gauge
    unit: C
    grafana_unit: celsius
    help: GPU temperature (in C).
    profiling: false
    default_enabled: true
  - name: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL
    field_id: 312
    type: counter
    unit: count
    grafana_unit: short
    help: Total number of double-bit volatile ECC errors.
    profiling: false
    default_enabled: false
""",
    "signals.yaml": """\
signals:
  - record: gpu:dcgm_reporting:timestamp
    unit: dateTimeAsIso
    description: newest sample
    expr: max by ([[ gpu ]]) (timestamp([[ m.DCGM_FI_DEV_GPU_TEMP ]]))
  - record: gpu:dcgm_workload:info
    unit: none
    description: pod on the GPU
    expr: group by ([[ gpu_id ]], [[ ns ]], [[ pod ]]) ([[ m.DCGM_FI_DEV_GPU_TEMP ]])
  - record: gpu:dcgm_gpu_temp:max
    unit: celsius
    description: temperature
    expr: max by ([[ gpu ]]) ([[ v.DCGM_FI_DEV_GPU_TEMP ]])
""",
    "failure_modes.yaml": """\
failure_modes:
  - id: hot_gpu
    title: Hot GPU
    group: health
    scope: gpu
    summary: too hot
    meaning: it is hot
    why: it throttles
    metrics: [DCGM_FI_DEV_GPU_TEMP]
    thresholds:
      - name: celsius
        value: 85
        unit: C
        source: test
    alerts:
      - severity: warning
        action: investigate
        for: 5m
        expr: gpu:dcgm_gpu_temp:max > [[ t.celsius ]]
        summary: hot
        description: hot GPU {{ $labels.gpu }}
    runbook:
      check: [look]
      do: [fix]
""",
    "xid.yaml": """\
xids:
  - code: 79
    name: GPU has fallen off the bus
    class: reboot
    dcgm_health: fail
    source: test
""",
    "gpu_models.yaml": """\
default:
  name: Unknown
  gpu_max_operating_temp_c: 83
  source: test
models:
  - id: h100
    name: H100
    match: ".*H100.*"
    gpu_max_operating_temp_c: 87
    source: test
""",
}


@pytest.fixture
def minimal_catalog(tmp_path):
    d = tmp_path / "catalog"
    d.mkdir()
    for name, text in MINIMAL_CATALOG.items():
        (d / name).write_text(text)
    return d
