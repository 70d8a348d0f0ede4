"""tests/second_process.py: the tests of the offloaded files run in a child pytest, and this session reports
each of them as the child ran it (passed, failed with its text, skipped with its reason), with the same ids."""
import os
import subprocess
import sys
from pathlib import Path

CONFTEST = """\
import os, sys
sys.path.insert(0, {tests!r})
import second_process

def pytest_configure(config):
    second_process.register(config, files=("test_far.py",))
"""

NEAR = """\
import os

def test_here():
    assert "RULESGEN_CHILD_REPORTS" not in os.environ
"""

FAR = """\
import os
import pytest

def test_passes_in_the_child():
    assert "RULESGEN_CHILD_REPORTS" in os.environ

@pytest.mark.parametrize("n", [1, 2])
def test_fails_in_the_child(n):
    print("said by the child")
    assert n == 1, "two is not one"

def test_skipped_in_the_child():
    pytest.skip("for a reason")
"""


def run(folder: Path, *args: str, **env) -> subprocess.CompletedProcess:
    own = {k: v for k, v in os.environ.items() if not k.startswith("RULESGEN_")}  # this session's choices: not theirs
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", *args], cwd=folder,
                          capture_output=True, text=True, timeout=120, env={**own, **env})


def planted(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text(CONFTEST.format(tests=str(Path(__file__).parent)))
    (tmp_path / "test_near.py").write_text(NEAR)
    (tmp_path / "test_far.py").write_text(FAR)
    return tmp_path


def test_the_child_runs_the_offloaded_file_and_this_session_reports_each_test(tmp_path):
    result = run(planted(tmp_path), "-v")
    out = result.stdout
    assert result.returncode == 1, out
    assert "1 failed, 3 passed, 1 skipped" in out, out
    for line in ("test_near.py::test_here PASSED", "test_far.py::test_passes_in_the_child PASSED",
                 "test_far.py::test_fails_in_the_child[1] PASSED", "test_far.py::test_fails_in_the_child[2] FAILED",
                 "test_far.py::test_skipped_in_the_child SKIPPED"):
        assert line in out, out
    assert "(run by the second pytest process)" in out and "AssertionError: two is not one" in out, out
    assert "said by the child" in out and "SKIPPED [1] test_far.py:12: for a reason" in out and "for a reason" in out, out


def test_one_process_runs_everything_here(tmp_path):
    result = run(planted(tmp_path), RULESGEN_ONE_PROCESS="1")
    # test_passes_in_the_child fails here: it is not in the child
    assert result.returncode == 1 and "2 failed, 2 passed, 1 skipped" in result.stdout, result.stdout


def test_a_child_that_dies_fails_the_tests_it_did_not_finish(tmp_path):
    folder = planted(tmp_path)
    (folder / "test_far.py").write_text("import os\n\ndef test_dies():\n    os._exit(3)\n")
    result = run(folder)
    assert result.returncode == 1 and "1 failed, 1 passed" in result.stdout, result.stdout
    assert "the second pytest process (exit 3) did not finish test_far.py::test_dies" in result.stdout, result.stdout
