"""The slowest engine-free test files run in a second pytest process (conftest registers this plugin).

The in-process tests are one Python thread (one core, the GIL) while the other core mostly waits, so a
child `pytest` runs the selected tests of FILES while this process runs the others. The child's tests
stay items of this session, with the same ids, marks and counts: each is replaced by an Offloaded item
that runs last and reports what the child reported for its id (its failure text, its skip reason).
RULESGEN_ONE_PROCESS=1 (and --pdb, --collect-only) runs everything here.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPORTS = "RULESGEN_CHILD_REPORTS"  # set in the child: where it writes its reports (one JSON line each)
# The engine-free files that take about half of `pytest -m "not engines"`'s in-process time (measured with
# --durations=0, 2026-11-27: about 35 of 75 s).
FILES = ("tests/test_adoption.py", "tests/test_cli.py", "tests/test_interrupts.py", "tests/test_names.py",
         "tests/test_safety.py", "tests/test_scenariogen_notation.py")


class ChildFailure(Exception):
    """A test that failed in the child: its text is the child's report."""


class Child:
    """The child pytest running `nodeids`, and its reports once it has ended."""

    def __init__(self, root: Path, nodeids: list[str]):
        self._folder = tempfile.TemporaryDirectory(prefix="rulesgen-child-")
        folder = Path(self._folder.name)
        self._reports, self._output = folder / "reports.jsonl", folder / "output"
        (folder / "args").write_text("\n".join(nodeids) + "\n")
        with open(self._output, "w") as output:  # a file, not a pipe: nothing blocks the child before it is read
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "", f"@{folder / 'args'}"],
                cwd=root, env={**os.environ, REPORTS: str(self._reports)}, stdout=output, stderr=subprocess.STDOUT)
        self._outcomes: dict[str, tuple[str, str]] | None = None

    def outcome(self, nodeid: str) -> tuple[str, str]:
        """("passed" | "skipped" | "failed", text) of the test `nodeid`, waiting for the child to end."""
        if self._outcomes is None:
            self._proc.wait(timeout=1800)
            self._outcomes = _outcomes(self._reports)
        if nodeid not in self._outcomes:
            output = self._output.read_text(errors="replace")
            return "failed", (f"the second pytest process (exit {self._proc.returncode}) did not finish {nodeid}; "
                              f"its output:\n{output[-6000:]}")
        return self._outcomes[nodeid]

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._folder.cleanup()


def _outcomes(path: Path) -> dict[str, tuple[str, str]]:
    """{nodeid: (outcome, text)} of each test the child finished (its teardown reported): failed if any phase
    failed, skipped if its setup or call was skipped, else passed."""
    out: dict[str, tuple[str, str]] = {}
    finished = set()
    lines = path.read_text().splitlines() if path.exists() else []
    for report in map(json.loads, lines):
        if report["when"] == "teardown":
            finished.add(report["nodeid"])
        before = out.get(report["nodeid"], ("passed", ""))
        if before[0] == "failed" or report["outcome"] == "passed":
            out.setdefault(report["nodeid"], before)
            continue
        text = f"[{report['when']}] {report['text']}" if report["outcome"] == "failed" else report["text"]
        out[report["nodeid"]] = (report["outcome"], text)
    return {nodeid: outcome for nodeid, outcome in out.items() if nodeid in finished}


class Offloaded(pytest.Item):
    """A test the child runs: this process only reports its outcome."""

    fixturenames = ()

    def __init__(self, *, child: Child, original: pytest.Item, **kwargs):
        super().__init__(**kwargs)
        self.child, self._info = child, original.reportinfo()
        self.own_markers = list(original.own_markers)
        self.keywords.update(original.keywords)

    def runtest(self):
        outcome, text = self.child.outcome(self.nodeid)
        if outcome == "skipped":  # reported at the test's own line, as the child reported it
            raise pytest.skip.Exception(text.removeprefix("Skipped: "), _use_item_location=True)
        if outcome == "failed":
            raise ChildFailure(text)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ChildFailure):
            return f"(run by the second pytest process)\n{excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self._info


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


class ChildReports:
    """In the child: every phase's outcome, one JSON line each, to the parent's file."""

    def __init__(self, path: str):
        self.path = path

    def pytest_runtest_logreport(self, report):
        text = _skip_reason(report) if report.skipped else report.longreprtext
        if report.failed:
            text += "".join(f"\n----- {name} -----\n{content}" for name, content in report.sections)
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
                                  "text": text}) + "\n")


class SecondProcess:
    """In the parent: after selection, the selected tests of FILES that call no engine go to a child."""

    def __init__(self, files: tuple[str, ...]):
        self.files, self.child = files, None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        if config.option.collectonly or config.option.usepdb or os.environ.get("RULESGEN_ONE_PROCESS") == "1":
            return
        moved = [i for i in items if i.nodeid.split("::")[0] in self.files and i.get_closest_marker("engines") is None]
        if not moved or len(moved) == len(items):
            return
        self.child = Child(config.rootpath, [i.nodeid for i in moved])
        offloaded = {i.nodeid: Offloaded.from_parent(i.parent, name=i.name, child=self.child, original=i) for i in moved}
        items[:] = [i for i in items if i.nodeid not in offloaded] + list(offloaded.values())

    def pytest_sessionfinish(self):
        if self.child is not None:
            self.child.stop()


def register(config, files: tuple[str, ...] = FILES) -> None:
    """This process's part: the child's reporter when it is the child, else the parent's offloading of `files`
    (paths as in the node ids)."""
    path = os.environ.get(REPORTS)
    if path:
        config.pluginmanager.register(ChildReports(path), "rulesgen-child-reports")
    else:
        config.pluginmanager.register(SecondProcess(files), "rulesgen-second-process")
