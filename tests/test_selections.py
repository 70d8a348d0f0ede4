"""What each make target runs is what its markers select (pytest -m, registered in pyproject.toml), and CI
runs every test: the union of .ci/run's targets is the whole suite. An unselected case is not collected,
never a skip, so a broken selection cannot pass as a row of skips."""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from _pytest.mark.expression import Expression

import test_dialects
import test_engines
import test_scenarios
import test_sharding
import test_victoriametrics
from conftest import ROOT

VM = "tests/test_victoriametrics.py::test_scenario_passes_vmalert_tool"
PROMTOOL = "tests/test_scenarios.py::test_scenario_passes_in_promtool"
DIALECTS = "tests/test_dialects.py::test_scenario_passes_in_dialect"
ON_2_42 = "tests/test_engines.py::test_scenario_passes_on_promtool_2_42"
SHARDING = "tests/test_sharding.py::test_two_shards_and_the_global_tier_alert_as_one_server"


def every_test() -> dict[str, set[str]]:
    """{test id: its marks} of every test of the suite, whatever its marks (each call its own file: the tests
    calling it may run at once in two pytest-xdist workers)."""
    with tempfile.TemporaryDirectory(prefix="rulesgen-marks-") as tmp:
        out = Path(tmp) / "marks.json"
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
                               "--collect-only", "-m", "", "--marks-to", str(out)], cwd=ROOT, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return {test: set(marks) for test, marks in json.loads(out.read_text()).items()}


def pytest_args(target: str, *variables: str) -> list[str]:
    """The arguments the make target gives pytest (make -n: printed, not run)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # not a calling make's
    proc = subprocess.run(["make", "-n", "--no-print-directory", target, *variables], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    (line,) = [line for line in proc.stdout.splitlines() if " -m pytest" in line]
    return shlex.split(line.split(" -m pytest", 1)[1])


def selects(args: list[str], tests: dict[str, set[str]]) -> set[str]:
    """The ids of `tests` that pytest with `args` runs: the last -m (else pyproject's addopts'), the paths or
    test ids given (else all)."""
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    marks, paths, args = shlex.split(addopts)[-1], [], list(args)
    while args:
        arg = args.pop(0)
        if arg == "-m":
            marks = args.pop(0)
        elif arg in ("-n", "--dist", "-p", "-k", "-o", "--durations"):  # an option and its value
            args.pop(0)
        elif not arg.startswith("-"):
            paths.append(arg)
    expression = Expression.compile(marks)
    return {test for test, names in tests.items()
            if expression.evaluate(lambda name, **_: name in names)
            and (not paths or any(test == p or test.startswith(p.rstrip("/") + ("[" if "::" in p else "")) for p in paths))}


def ci_targets() -> list[list[str]]:
    """[target, VAR=value ...] of each `make` that .ci/run runs."""
    text = (ROOT / ".ci" / "run").read_text()
    return [shlex.split(m) for m in re.findall(r"^(?:step )?make ([\w.-]+(?: [A-Z]+=\S+)*)", text, re.M)]


def test_ci_runs_every_test_once_and_make_test_its_sample():
    tests = every_test()
    targets = [t for t in ci_targets() if t[0] != "setup"]
    assert [t[0] for t in targets] == ["test", "check", "test-package", "test-live", "test-vm-all", "test-dialects-all",
                                       "test-2.42-all", "test-scenarios-all", "test-interrupts-all", "test-sharding"]
    runs = {" ".join(t): selects(pytest_args(*t), tests) for t in targets if t[0] != "check"}
    assert all(runs.values()), [t for t, ids in runs.items() if not ids]
    # a multi-node scenario's promtool test is the one-server replay of its equality proof (marker sharded)
    proof = {t.partition("[")[2][:-1] for t in runs["test-sharding"] if t.startswith(SHARDING + "[")}
    exhaustive = {t for t, marks in tests.items() if "exhaustive" in marks}  # make test-exhaustive, on demand
    assert exhaustive == selects(pytest_args("test-exhaustive"), tests)
    assert {t.partition("[")[0] for t in exhaustive} == {VM, SHARDING}
    assert not exhaustive & set().union(*runs.values()), "CI runs a test it leaves to make test-exhaustive"
    missing = set(tests) - set().union(*runs.values()) - {f"{PROMTOOL}[{name}]" for name in proof} - exhaustive
    assert not missing, f"tests no target of .ci/run runs: {sorted(missing)[:20]}"
    seen: dict[str, str] = {}
    for target, ids in runs.items():  # a test run twice is CI time spent for nothing
        twice = {test: seen[test] for test in ids if test in seen}
        assert not twice, (target, sorted(twice.items())[:5])
        seen.update(dict.fromkeys(ids, target))
    make_test = runs["test"]

    def cases(test):
        return sorted(t.partition("[")[2].removesuffix("]") for t in make_test if t.startswith(test + "["))
    assert cases(VM) == sorted(test_victoriametrics.SUBSET)
    assert cases(PROMTOOL) == sorted(test_scenarios.QUICK)
    assert cases(DIALECTS) == sorted(f"{s}@{d}" for s, d in test_dialects.QUICK)
    assert cases(ON_2_42) == sorted(test_engines.QUICK_ON_2_42)
    assert cases(SHARDING) == [] and not any("equality" in tests[t] or "slow" in tests[t] for t in make_test)
    # the equality proof replays its multi-node scenarios, and the scenarios target leaves exactly those to it
    rest = {t.partition("[")[2][:-1] for t in runs["test-scenarios-all REPLAY=rest-not-sharded"]}
    assert proof == set(test_sharding.PROVEN)
    assert {t.partition("[")[2][:-1] for t in runs["test-vm-all REPLAY=rest"] if t.startswith(VM + "[")} == \
        set(test_victoriametrics.ON_VMALERT_TOOL) - set(test_victoriametrics.SUBSET)
    assert set(test_scenarios.QUICK) | rest | proof == {p.stem for p in test_scenarios.SCENARIOS}


def test_each_target_takes_whole_batches():
    """A replay's batch (one xdist_group, conftest._group_batches) is cut before -m deselects: a target that
    selected part of one would replay its scenarios in more, smaller engine runs (conftest.SELECTING must name
    every mark the targets select replays by)."""
    tests = every_test()
    group = {t: g for t, marks in tests.items() for g in marks if g.startswith("xdist_group=")}
    targets = [t for t in ci_targets() if t[0] not in ("setup", "check")] + [["test-exhaustive"]]
    for target in targets:
        chosen = selects(pytest_args(*target), tests)
        split = {group[t] for t in chosen if t in group} & {group[t] for t in set(tests) - chosen if t in group}
        assert not split, (" ".join(target), sorted(split)[:5])


def test_the_selection_reading_would_see_a_target_that_drops_a_case():
    """The check above can fail: a -m that leaves the slow cases out of the vmalert-tool target, or a path
    that names another test, selects less."""
    tests = {f"{VM}[a]": {"slow", "vmalert", "engines"}, f"{VM}[b]": {"vmalert", "engines"},
             "tests/test_x.py::test_y": set()}
    assert selects(["-m", "slow", VM], tests) == {f"{VM}[a]"}
    assert selects(["-m", "not slow", VM], tests) == {f"{VM}[b]"}
    assert selects(["-m", "slow", "tests/test_victoriametrics.py::test_other"], tests) == set()
    assert selects(["-p", "no:cacheprovider", "-m", "slow", VM], tests) == {f"{VM}[a]"}  # an option's value is no path
    assert selects([], tests) == {f"{VM}[b]", "tests/test_x.py::test_y"}  # pyproject's addopts: not slow


def test_update_first_firing_refuses_the_workers():
    """tests/first_firing.yaml is rewritten whole by each hold test: under pytest-xdist two workers would each
    write back the file as they read it, losing the other's scenarios. The option asks for one process."""
    def pytest_run(*args):
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--update-first-firing",
                               "--co", "-q", *args, "tests/test_layout.py"], cwd=ROOT, capture_output=True, text=True)
    refused = pytest_run("-n", "2")
    assert refused.returncode == 4 and "without -n" in refused.stderr, refused.stdout + refused.stderr
    assert pytest_run("-n", "0").returncode == 0
