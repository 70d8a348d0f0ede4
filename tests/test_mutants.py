"""scripts/mutants.py's plumbing on a small git repository of its own: a plant that applies is caught or
missed by the command, one whose text is gone is reported stale, and the copy is removed."""
import importlib.util
import subprocess
import sys

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("mutants", ROOT / "scripts" / "mutants.py")
mutants = sys.modules["mutants"] = importlib.util.module_from_spec(_spec)  # dataclasses look it up
_spec.loader.exec_module(mutants)


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout


def test_each_plant_is_caught_missed_or_stale_in_a_copy_removed_afterwards(tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f.txt").write_text("a = 1\nc = 1\n")
    git(repo, "add", "f.txt")
    git(repo, "commit", "-qm", "f")
    plants = {1: mutants.Plant("a planted", "f.txt", "a = 1", "a = 2"),
              2: mutants.Plant("c planted", "f.txt", "c = 1", "c = 2"),
              3: mutants.Plant("b is gone", "f.txt", "b = 1", "b = 2")}
    command = 'if grep -q "a = 2" f.txt; then echo "FAILED tests/test_f.py::test_a - a is 2"; exit 1; fi'
    rows = mutants.run(repo, plants, command, render=False)
    assert rows == {0: ("passes", ""), 1: ("caught", "tests/test_f.py::test_a"), 2: ("missed", ""),
                    3: ("stale", "f.txt: the text to replace is not there exactly once")}
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in printed] == ["0", "1", "2", "3"]
    assert printed[1].startswith(" 1  a planted ") and printed[1].endswith("  caught  tests/test_f.py::test_a")
    # a command that fails with no bug planted makes every row meaningless: the run stops at the control
    assert mutants.run(repo, plants, "echo 'FAILED tests/test_f.py::test_x - broken'; exit 1", render=False) == {
        0: ("fails", "tests/test_f.py::test_x")}
    assert (repo / "f.txt").read_text() == "a = 1\nc = 1\n"
    assert len(git(repo, "worktree", "list").splitlines()) == 1
