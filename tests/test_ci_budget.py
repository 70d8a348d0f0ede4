"""CI reports its own budget: scripts/ci_budget.py's table and verdict, and .ci/run's wiring of it, run with a
stub `make` first on PATH (each step returns at once; no suite runs)."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT

STEPS = "60\t0\tmake tools\n600\t0\tmake test\n5\t0\tmake check\n1900\t0\tmake test-vm-all REPLAY=rest\n1200\t0\tmake test-sharding\n"


def budget(tmp_path, steps: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "steps").write_text(steps)
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "ci_budget.py"), str(tmp_path / "steps"), *args],
                          capture_output=True, text=True, timeout=60)


def test_the_table_has_each_step_its_share_of_5400_s_and_the_cumulative_time(tmp_path):
    result = budget(tmp_path, STEPS, "--total", "3800")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "ci: budget (3800 s of 5400 s; fails over 4500 s):"
    assert lines[1].split() == ["seconds", "share", "cumulative", "step"]
    assert lines[2].split() == ["60", "1.1%", "60", "make", "tools"]
    assert lines[5].split() == ["1900", "35.2%", "2565", "make", "test-vm-all", "REPLAY=rest"]
    assert lines[7].split() == ["35", "0.6%", "3800", "(outside", "the", "steps)"]
    assert lines[8].split() == ["3800", "70.4%", "total", "(limit", "5400", "s)"]


@pytest.mark.parametrize("total, status", [(4500, 0), (4501, 1)])
def test_a_run_over_the_threshold_fails_naming_its_three_slowest_steps(tmp_path, total, status):
    result = budget(tmp_path, STEPS.replace("5\t0\tmake check", "5\t2\tmake check"), "--total", str(total))
    assert result.returncode == status
    assert "make check  (failed: exit 2)" in result.stdout
    if status:
        assert result.stderr.strip() == (
            f"ci: FAILED: the run took {total} s, more than 4500 s (CI_BUDGET_FAIL_S); slowest steps: "
            "make test-vm-all REPLAY=rest (1900 s), make test-sharding (1200 s), make test (600 s)")
    else:
        assert result.stderr == ""


@pytest.mark.parametrize("failing, threshold, status", [
    ("", "4500", 0), ("", "-1", 1), ("check", "4500", 7), ("test-live", "4500", 7)])
def test_ci_run_prints_the_table_and_fails_on_a_step_the_live_test_or_the_budget(tmp_path, failing, threshold, status):
    (tmp_path / "make").write_text('#!/bin/sh\necho "$*" >>"$STUB_CALLS"\n[ "$1" != "$STUB_FAILING" ] || exit 7\n')
    (tmp_path / "make").chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "STUB_CALLS": str(tmp_path / "calls"),
           "STUB_FAILING": failing, "CI_BUDGET_FAIL_S": threshold}
    result = subprocess.run([str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == status, result.stdout + result.stderr
    rows = [line.split(maxsplit=3)[3] for line in result.stdout.split("cumulative  step\n")[1].splitlines()[:-1]]
    steps = [row.removesuffix("  (failed: exit 7)") for row in rows if row != "(outside the steps)"]
    calls = (tmp_path / "calls").read_text().splitlines()
    assert steps == [f"make {c}" for c in calls if c != "test-live"]
    assert rows[len(steps) - 1].endswith("(failed: exit 7)") == (failing == "check")
    assert ("; slowest steps: make " in result.stderr) == (threshold == "-1")
