import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
pytest.register_assert_rewrite("gitops")  # a fixture plugin the test modules also import from

import batches  # noqa: E402  (tests/ is on sys.path: pytest puts the conftest folder there)
from rulesgen.engines.tools import find_tool  # noqa: E402


# Every binary a test runs comes from one of these session fixtures (fixture -> tool name, marker); the
# replay fixtures run one engine each. A test using any of them gets the `engines` mark and the mark of
# what it calls, so that `pytest -m "not engines"` runs the rest on a machine without any engine, and
# e.g. `-m "not vmalert"` leaves out VictoriaMetrics. tests/test_layout_of_tests.py keeps tests from
# finding a binary any other way.
BINARIES = {"promtool": ("promtool", "promtool"), "promtool_2_42": ("promtool-2.42", "promtool"),
            "prometheus_bin": ("prometheus", "prometheus"), "prometheus_2_42": ("prometheus-2.42", "prometheus"),
            "vmalert": ("vmalert", "vmalert"),
            "vmalert_tool": ("vmalert-tool", "vmalert"), "victoria_metrics": ("victoria-metrics", "victoriametrics"),
            "alertmanager_bin": ("alertmanager", "alertmanager"), "amtool": ("amtool", "alertmanager")}
# Every replay_fixture ({key: result}, a key's job run when a test first reads it) and the engine mark its
# tests get; None: its jobs run no engine (rulesgen's own process: tests/test_render.py). BATCHED: those whose
# keys are scenario files run several to an engine run (tests/batches.py): the tests reading one batch carry
# one xdist_group mark, so that one pytest-xdist worker runs them and the batch once.
REPLAY_FIXTURES = {"promtool_results": "promtool", "matrix_results": "promtool", "results_on_2_42": "promtool",
                   "vmalert_results": "vmalert", "sharding_verdicts": "promtool", "one_shard_runs": "promtool",
                   "regrouped_alerts": "promtool", "hold_runs": "promtool", "rendered_elsewhere": None}
BATCHED = ("promtool_results", "matrix_results", "results_on_2_42", "vmalert_results", "sharding_verdicts", "hold_runs")
ENGINE_MARKS = {**{f: mark for f, (_, mark) in BINARIES.items()},
                **{f: mark for f, mark in REPLAY_FIXTURES.items() if mark is not None}}
BATCH_OF = pytest.StashKey[dict]()  # {(fixture, key): the selected keys of its batch}
UNGROUPED = pytest.StashKey[str]()
SELECTING = {"slow", "sharded", "exhaustive"}  # the marks by which the make targets select replays (Makefile)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        marks = {ENGINE_MARKS[f] for f in item.fixturenames if f in ENGINE_MARKS}
        for mark in sorted(marks | ({"engines"} if marks else set())):
            item.add_marker(getattr(pytest.mark, mark))
    weight = _group_batches(items)
    # The replays first, the heaviest batches first (stable, otherwise in file order): pytest-xdist hands the
    # tests out in this order, so the long runs start early and the short tests fill the cores at the end.
    items.sort(key=lambda item: (not any(f in REPLAY_FIXTURES for f in item.fixturenames), -weight.get(item.nodeid, 0)))
    if config.getoption("--marks-to"):  # before -m deselects: every collected test (tests/test_selections.py)
        Path(config.getoption("--marks-to")).write_text(json.dumps(  # a batch's group as "xdist_group=NAME"
            {item.nodeid: sorted({m.name for m in item.iter_markers()} | {f"xdist_group={m.args[0]}" for m in
                                 item.iter_markers("xdist_group")}) for item in items}))


def _group_batches(items) -> dict[str, int]:
    """Mark the tests of each batch with one xdist_group, and return {test id: its batch's weight}. A batch:
    the scenario keys (the parameter ids) of one BATCHED fixture whose tests carry the same SELECTING marks (so
    that the make targets' -m take whole batches: xdist reads the groups before -m deselects), cut as
    tests/batches.py cuts the rendered files, from the scenario files' headers (an estimate: the replay plans
    again on the files it reads, within the batch)."""
    classes: dict[tuple, dict[str, list]] = {}
    for item in items:
        fixture = next((f for f in BATCHED if f in item.fixturenames), None)
        spec = getattr(item, "callspec", None)
        if fixture is not None and spec is not None:
            marks = tuple(sorted({m.name for m in item.iter_markers()} & SELECTING))
            classes.setdefault((fixture, marks), {}).setdefault(spec.id, []).append(item)
    weight = {}
    for n, ((fixture, _), by_key) in enumerate(classes.items()):
        for k, keys in enumerate(batches.groups(by_key)):
            files = [batches.scenario_file(key) for key in keys]
            size = sum(f.stat().st_size for f in files if f.is_file())
            for item in (item for key in keys for item in by_key[key]):
                item.add_marker(pytest.mark.xdist_group(f"{fixture}-{n}-{k}"))
                weight[item.nodeid] = size
    return weight


class _SelectionRecorder:
    """After -k and -m have deselected: the selected keys of each batch (a replay runs only those)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        members: dict = {}  # {xdist_group: {(fixture, key)}}: a batch's tests are those of its group
        for item in items:
            fixture = next((f for f in BATCHED if f in item.fixturenames), None)
            if fixture is not None and (mark := item.get_closest_marker("xdist_group")):
                members.setdefault(mark.args[0], set()).add((fixture, item.callspec.id))
        # Under --dist loadgroup, pytest-xdist (whose hook ran before this one) put each test's xdist_group in its
        # id, where its scheduler reads it; where it could not, each worker would run the batches: the replays fail.
        lost = [i.nodeid for i in items if (mark := i.get_closest_marker("xdist_group"))
                and not i.nodeid.endswith(f"@{mark.args[0]}")]
        if getattr(config.option, "loadgroup", False) and lost:
            config.stash[UNGROUPED] = (f"pytest-xdist did not group {len(lost)} tests (e.g. {lost[0]}): pytest "
                                       f"{pytest.__version__} with this pytest-xdist ignores xdist_group (pyproject.toml)")
        config.stash[BATCH_OF] = {member: tuple(sorted(key for _, key in batch)) for batch in members.values()
                                  for member in batch}


def pytest_addoption(parser):
    parser.addoption("--update-first-firing", action="store_true",
                     help="rewrite tests/first_firing.yaml from this run (tests/test_holds.py)")
    parser.addoption("--marks-to", metavar="FILE", help="write {test id: its marks} of every collected test to FILE")


def pytest_configure(config):
    config.pluginmanager.register(_SelectionRecorder(), "rulesgen-selection")
    # A shell without job control starts a background command with SIGINT ignored, and every process it starts
    # inherits that: the interrupt tests' renders (tests/test_interrupts.py) would ignore their Ctrl-C. The
    # tests run as from a terminal (each xdist worker configures itself too).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if config.getoption("--update-first-firing") and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError("--update-first-firing rewrites tests/first_firing.yaml from one process: run it "
                                "without -n (pytest-xdist's workers would overwrite each other's scenarios)")


def replay_cases(every, quick, marks: Callable[[object], tuple] = lambda case: (), ids=None) -> list:
    """Every case of a replay test as a parameter (a tuple case: one value per argument); those outside
    `quick` carry the `slow` mark. `make test` deselects them (it replays quick), and CI's *-all targets
    select them (-m slow: the rest): what is not selected is not collected, never a skip.
    `marks(case)`: further marks of a case; `ids(case)`: its id."""
    every, quick = list(every), list(quick)
    assert all(case in every for case in quick), [case for case in quick if case not in every]
    out = []
    for case in every:
        values = case if isinstance(case, tuple) else (case,)
        slow = () if case in quick else (pytest.mark.slow,)
        out.append(pytest.param(*values, marks=(*slow, *marks(case)), id=None if ids is None else ids(case)))
    return out


def errors_of(fn, *args) -> list[str]:
    """The diagnostics fn(*args) raises, as printed (path:line:col: error[code]: message)."""
    from rulesgen.errors import RulesgenError
    with pytest.raises(RulesgenError) as info:
        fn(*args)
    return [str(d) for d in info.value.diagnostics]


def edit(path: Path, old: str, new: str, count: int = 1):
    """Replace the first `count` occurrences of old in the file; there must be that many."""
    text = path.read_text()
    assert text.count(old) >= count, old
    path.write_text(text.replace(old, new, count))


def tool(name: str) -> str:
    """Real binaries only: a missing tool fails the test with the way to get it."""
    try:
        return find_tool(name)
    except Exception as exc:  # ToolMissing
        pytest.fail(str(exc))


def _binary_fixture(fixture: str, name: str):
    @pytest.fixture(scope="session", name=fixture)
    def binary() -> str:
        return tool(name)
    binary.__doc__ = f"The path of {name} (a missing one fails the test, saying how to get it)."
    return binary


for _fixture, (_name, _) in BINARIES.items():
    globals()[_fixture] = _binary_fixture(_fixture, _name)


def engine_param(fixture: str):
    """A parameter naming one of BINARIES, with its marks (the test gets the path by
    request.getfixturevalue(fixture)); its id is the tool's name."""
    name, mark = BINARIES[fixture]
    return pytest.param(fixture, marks=(pytest.mark.engines, getattr(pytest.mark, mark)), id=name)


def _render_into(tmp_path_factory, name: str, *args: str) -> Path:
    out = tmp_path_factory.mktemp(name)
    result = run_cli("render", *args, "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="session")
def rendered(tmp_path_factory):
    """A fresh render of the bundled catalog with the repository's config into a temp dir, with the scenario
    tests the repository does not commit (tests/promtool/, tests/vmalert/: outputs.scenario_tests is false)."""
    return _render_into(tmp_path_factory, "render", "--scenario-tests")


@pytest.fixture(scope="session")
def rendered_outputs(tmp_path_factory):
    """What `make render` writes and `make check` compares: the repository's config as it is."""
    return _render_into(tmp_path_factory, "outputs")


# --- scenario replays ------------------------------------------------------------------------------
# Every replay of scenario files (promtool 3.5, the dialect cells, promtool 2.42, vmalert-tool, the holds and
# the sharding proof) runs in the first test that reads it, in whichever pytest-xdist worker runs that test
# (one worker per core): a batch of several scenarios (tests/batches.py) runs once, for the tests its
# xdist_group keeps in that worker.

class Replays:
    """{key: result}: reading a key runs the jobs of its batch (the selected keys its xdist_group holds, or
    the key alone) in this process and keeps their results for the session. jobs_of(keys) returns {key: job}
    or {batches.Batch of keys: job returning {key: result}}; a dict jobs_of is {key: job} for every key."""

    def __init__(self, name: str, config, jobs_of: Callable[[list], dict] | dict):
        self._name, self._config, self._jobs_of, self._results = name, config, jobs_of, {}

    def __getitem__(self, key):
        if key not in self._results:
            batch = self._config.stash.get(BATCH_OF, {}).get((self._name, key), (key,))
            jobs = self._jobs_of(list(batch)) if callable(self._jobs_of) else {key: self._jobs_of[key]}
            for k, job in jobs.items():
                self._results.update(job() if isinstance(k, batches.Batch) else {k: job()})
        return self._results[key]


def replay_fixture(setup: Callable) -> Callable:
    """A session fixture named like `setup`: Replays of the jobs_of that setup(request) returns (its work done
    once per process; the jobs only when a test reads a key)."""
    name = setup.__name__

    @pytest.fixture(scope="session", name=name)
    def replays(request):
        if UNGROUPED in request.config.stash:
            pytest.fail(request.config.stash[UNGROUPED])
        return Replays(name, request.config, setup(request))
    return replays


def cheapest_per_mode(scenarios: dict, modes, covered=()) -> list[str]:
    """For every failure mode of `modes` (in their order) that neither a scenario named in `covered` nor one
    already picked expects, the scenario of `scenarios` ({name: Scenario}) expecting it with the fewest
    evaluation steps x series (a proxy of its replay cost). A mode that no scenario expects is skipped:
    callers that need one per mode check it."""
    def fired(names) -> set[str]:
        return {e.failure_mode for name in names for e in scenarios[name].expect}

    picked: list[str] = []
    for mode in modes:
        firing = [name for name, s in scenarios.items() if any(e.failure_mode == mode for e in s.expect)]
        if firing and mode not in fired([*covered, *picked]):
            picked.append(min(firing, key=lambda name: (replay_cost(scenarios[name]), name)))
    return sorted(set(picked))


def modes_at_intervals(scenarios) -> set[tuple[str, int]]:
    """(failure mode, scrape interval) of every expectation of the scenarios: what a sampled replay must keep."""
    return {(e.failure_mode, s.interval) for s in scenarios for e in s.expect}


def marked(params, mark: str) -> set:
    """The first value of each pytest.param of params that carries the mark."""
    return {p.values[0] for p in params if any(m.name == mark for m in p.marks)}


def replay_cost(scenario) -> int:
    """Evaluation steps x series: a proxy of a scenario's replay cost on either engine."""
    return (scenario.duration // scenario.evaluation_interval) * len(scenario.series)


def cheapest_per_mode_and_interval(scenarios: dict, modes, covered=()) -> list[str]:
    """cheapest_per_mode at each scrape interval the scenarios use: what a replay that samples the scenarios
    keeps, since the engines' windows, lookback and staleness meet the data at its scrape interval."""
    picked: set[str] = set()
    for interval in sorted({s.interval for s in scenarios.values()}):
        at = {name: s for name, s in scenarios.items() if s.interval == interval}
        picked |= set(cheapest_per_mode(at, modes, covered=[n for n in covered if n in at]))
    return sorted(picked)


def replay_env() -> dict:
    """promtool's environment in a test: every core already runs one pytest-xdist worker, so one Go thread each and a
    lazier GC (measured: 8-13% less CPU per scenario than GOGC=400 alone, at up to 1.4 GB per process on
    the 9-day baseline scenarios). `rulesgen replay` keeps its lighter default for users' machines."""
    from rulesgen.engines.replay import promtool_env
    return {**promtool_env(), "GOMAXPROCS": "1", "GOGC": "800"}


def promtool_jobs(promtool: str, paths) -> dict:
    """{stems: job}: `promtool test rules` on the files in batches (tests/batches.py), (rc, output) each."""
    def job(path: Path):
        proc = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=900,
                              env=replay_env())
        return proc.returncode, proc.stdout + proc.stderr

    return batches.jobs(paths, job)


def run_cli(*args, cwd=ROOT, env=None):
    """`rulesgen *args` run from `cwd`: (returncode, stdout, stderr) as the command gives them. In this
    process (click's runner: no interpreter start-up, modules and parsed templates already loaded), with
    `env` as the environment for the while."""
    return _run_cli_here(list(args), Path(cwd), env)


def run_cli_process(*args, cwd=ROOT, env=None):
    """`rulesgen *args` as its own process (the installed command): for what only a process shows,
    such as a signal's exit code or an environment of its own."""
    exe = Path(sys.executable).with_name("rulesgen")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "rulesgen.cli"]
    return subprocess.run([*cmd, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


def _run_cli_here(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command in this process, from `cwd`, with `env` as os.environ meanwhile
    (click's runner puts it back). The signal handlers the command installs are put back; an exception
    the command did not handle is printed to stderr with exit 1, as the interpreter would."""
    import traceback

    from click.testing import CliRunner

    from rulesgen.cli import main
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    before = Path.cwd()
    os.chdir(cwd)
    try:
        changes = None if env is None else {**{k: None for k in os.environ if k not in env}, **env}
        result = CliRunner(env=changes).invoke(main, args, prog_name="rulesgen")
    finally:
        os.chdir(before)
        for s, handler in handlers.items():
            signal.signal(s, handler)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["rulesgen", *args], result.exit_code, result.stdout, stderr)


MINIMAL_CATALOG = {
    "metrics.yaml": """\
metrics:
  - name: DCGM_FI_DEV_GPU_TEMP
    field_id: 150
    type: gauge
    unit: C
    description: GPU die temperature.
    help: GPU temperature (in C).
    profiling: false
    default_enabled: true
  - name: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL
    field_id: 312
    type: counter
    unit: count
    description: Double-bit ECC errors since the last driver load.
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
        range: "[0, 150]"
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

# A scenario for MINIMAL_CATALOG: one GPU runs hot for 30 minutes, and hot_gpu is expected on it.
HOT_GPU_SCENARIO = """\
name: hot-gpu-one
description: one GPU runs hot
interval: 1m
duration: 30m
series:
  - series: 'DCGM_FI_DEV_GPU_TEMP{job="dcgm-exporter", instance="n1:9400", Hostname="n1", gpu="0", UUID="GPU-0", modelName="NVIDIA H100"}'
    values: '90x30'
expect:
  - failure_mode: hot_gpu
    labels: {Hostname: n1, gpu: "0"}
    after: 0s
    within: 10m
"""


@pytest.fixture
def minimal_catalog(tmp_path):
    d = tmp_path / "catalog"
    d.mkdir()
    for name, text in MINIMAL_CATALOG.items():
        (d / name).write_text(text)
    return d
