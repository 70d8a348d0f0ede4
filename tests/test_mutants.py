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


def test_the_by_labels_sweep_drops_each_label_of_each_aggregation_once(tmp_path):
    """--sweep by-labels: one plant per label of each aggregation's by (...) in the catalog's expressions (not
    prose); a line that occurs twice is planted with the lines after it, so each plant applies exactly once."""
    (tmp_path / "catalog").mkdir()
    for name in mutants.SWEPT:
        (tmp_path / name).write_text("")
    (tmp_path / mutants.FM).write_text("expr: |\n  max by ([[ gpu ]], xid) (a)\n  > 0\n"
                                       "expr: |\n  max by ([[ gpu ]], xid) (a)\n  > 1\n"
                                       "description: counted by (gpu) in prose\n")
    plants = mutants.by_label_plants(tmp_path)
    text = (tmp_path / mutants.FM).read_text()
    assert [p.new.splitlines()[0] for p in plants] == ["  max by (xid) (a)", "  max by ([[ gpu ]]) (a)"] * 2
    assert [p.old for p in plants] == ["  max by ([[ gpu ]], xid) (a)\n  > 0\n"] * 2 + ["  max by ([[ gpu ]], xid) (a)\n  > 1\n"] * 2
    assert all(text.count(p.old) == 1 for p in plants)
    # the catalog's own: every plant applies to the file as it is
    assert all((ROOT / p.path).read_text().count(p.old) == 1 for p in mutants.by_label_plants())


def test_the_matching_labels_sweep_drops_each_label_of_each_match_but_not_in_comments(tmp_path):
    (tmp_path / "catalog").mkdir()
    for name in mutants.SWEPT:
        (tmp_path / name).write_text("")
    (tmp_path / mutants.FM).write_text("# a * on (gpu) b, in a comment\nexpr: a * on (gpu, UUID) group_left (pod) b\n")
    assert [p.new for p in mutants.matching_label_plants(tmp_path)] == [
        "expr: a * on (UUID) group_left (pod) b\n", "expr: a * on (gpu) group_left (pod) b\n",
        "expr: a * on (gpu, UUID) group_left () b\n"]
    assert all((ROOT / p.path).read_text().count(p.old) == 1 for p in mutants.matching_label_plants())


def test_every_hand_plant_still_applies_exactly_once():
    """A change that moves a plant's text strands it (reported stale by make mutants, never run): named here."""
    stale = [f"{n} {p.bug}" for n, p in enumerate(mutants.PLANTS, 1) if (ROOT / p.path).read_text().count(p.old) != 1]
    assert not stale, stale
