"""A render is all or none, even when interrupted (issue 21 item 4): SIGINT or SIGTERM after any rename
of the commit phase, while the new files are written, before the render writes or while the modules
load; a failed rename, a kill -9, an unwritable folder, another filesystem. The real command in a
process of its own; the folder's files before and after."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import MINIMAL_CATALOG, ROOT
from gitops import TMP_PREFIX, run_cli, temporaries, tree, user_config, without_promtool_note

pytest_plugins = ["gitops"]  # its fixtures: scenarios, repo

# --- 3. all or none, even interrupted ------------------------------------------------------------------

INTERRUPT = """\
import os, pathlib, signal, sys
phase, k, sig = os.environ["AT"], int(os.environ["K"]), getattr(signal, os.environ["SIG"])
count = 0
def step():
    global count
    count += 1
    if count == k:
        os.kill(os.getpid(), sig)  # delivered now, or held back until the commit is done
if phase == "rename":  # the k-th rename of the commit phase (patched before rulesgen binds os.replace)
    real = os.replace
    def counted(src, dst):
        real(src, dst)
        step()
    os.replace = counted
else:  # the k-th file written as a temporary
    def counting(write):
        def counted_write(self, data, *args, **kwargs):
            n = write(self, data, *args, **kwargs)
            if self.parent.name.startswith(".rulesgen-render-") or self.name.endswith(".rulesgen-tmp"):
                step()
            return n
        return counted_write
    pathlib.Path.write_bytes = counting(pathlib.Path.write_bytes)
    pathlib.Path.write_text = counting(pathlib.Path.write_text)
from rulesgen.cli import main
sys.argv = ["rulesgen", *sys.argv[1:]]
main()
"""


def _start(folder: Path, args: list[str], at: str, k: int, sig: str, script: str) -> subprocess.Popen:
    env = {**os.environ, "AT": at, "K": str(k), "SIG": sig}
    return subprocess.Popen([sys.executable, "-c", script, "render", *args], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _ended(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, without_promtool_note(err))


def _interrupted(folder: Path, args: list[str], at: str, k: int, sig: str = "SIGINT", script: str = INTERRUPT):
    return _ended(_start(folder, args, at, k, sig, script))


NEW_CONFIG = """\
urls: {runbook_base: "https://git.example.org/gpu/runbooks/", grafana_base: "https://grafana.corp.example"}
extra_labels: {team: gpu-platform}
outputs:
  vmrule: {enabled: true}
"""


def _two_renders(repo: Path, args: list[str], tmp_path: Path):
    """(old tree, new tree) of `render ARGS` in repo with its config, then with NEW_CONFIG: the new config
    changes every rule file and drops the PrometheusRule, dashboard ConfigMap and GrafanaDashboard outputs
    (their stale files are removed). repo is left with the old tree and the new config."""
    old = tree(repo)
    new_dir = tmp_path / "new"
    shutil.copytree(repo, new_dir)
    (new_dir / "rulesgen.yaml").write_text(NEW_CONFIG)
    result = run_cli("render", *args, cwd=new_dir)
    assert result.returncode == 0, result.stderr
    new = tree(new_dir)
    assert any(p.startswith("deploy/prometheus-operator") for p in old)
    assert not any(p.startswith("deploy/prometheus-operator") for p in new)
    (repo / "rulesgen.yaml").write_text(NEW_CONFIG)
    return {**old, "rulesgen.yaml": NEW_CONFIG.encode()}, new


def _bundled_old_and_new(base: Path):
    """The bundled catalog with a scenario: (folder, old tree, new tree, render arguments)."""
    scenarios, repo = base / "scenarios", base / "repo"
    scenarios.mkdir(parents=True)
    repo.mkdir()
    shutil.copy(ROOT / "fixtures/scenarios/thermal-throttling-cooling-failure.yaml", scenarios)
    user_config(repo / "rulesgen.yaml")
    args = ["--scenarios", str(scenarios)]
    result = run_cli("render", *args, cwd=repo)
    assert result.returncode == 0, result.stderr
    return (repo, *_two_renders(repo, args, base), args)


def _small_old_and_new(base: Path):
    """The same on the one-mode test catalog (a render in a second: every commit step can be interrupted)."""
    catalog, repo = base / "catalog", base / "small"
    catalog.mkdir(parents=True)
    for name, text in MINIMAL_CATALOG.items():
        (catalog / name).write_text(text)
    repo.mkdir()
    user_config(repo / "rulesgen.yaml")
    (base / "no-scenarios").mkdir()
    args = ["--catalog", str(catalog), "--scenarios", str(base / "no-scenarios")]
    assert run_cli("render", *args, cwd=repo).returncode == 0
    return (repo, *_two_renders(repo, args, base), args)


# The tests of the bundled catalog's renders share one setup (two renders): one pytest-xdist worker runs them.
BUNDLED = pytest.mark.xdist_group("interrupts-bundled")


@pytest.fixture(scope="session")
def old_and_new(tmp_path_factory):
    """Rendered once: every interrupted render starts from a fresh copy of the old tree."""
    return _bundled_old_and_new(tmp_path_factory.mktemp("old-and-new"))


@pytest.fixture(scope="session")
def small_old_and_new(tmp_path_factory):
    return _small_old_and_new(tmp_path_factory.mktemp("small-old-and-new"))


def _commit_steps(repo: Path, old: dict, new: dict) -> int:
    changed = {p for p in new if old.get(p) != new[p]}
    removed = {p for p in old if p not in new}
    return len(changed) + len(removed)


def _reset(repo: Path, old: dict) -> None:
    shutil.rmtree(repo, ignore_errors=True)  # a folder of an earlier test, or none yet
    for rel, data in old.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)


# One process per rename: `make test` interrupts a spread (the first two, the last two, every fifth) and CI
# the rest (the parameter "rest", marked slow: make test-interrupts-all).
def _spread(steps: int) -> list[int]:
    return sorted({1, 2, steps - 1, steps, *range(1, steps + 1)[4::5]})


def _failing_rename_script() -> str:
    """INTERRUPT with the k-th rename of the commit phase failing (EACCES) instead of a signal."""
    script = INTERRUPT.replace("        os.kill(os.getpid(), sig)  # delivered now, or held back until the commit is done",
                               "        raise PermissionError(13, 'Permission denied', str(dst_of[0]))")
    script = script.replace("        real(src, dst)\n        step()", "        dst_of[:] = [dst]\n        step()\n        real(src, dst)")
    assert "dst_of[:] = [dst]" in script
    return script.replace("count = 0\n", "count = 0\ndst_of = [None]\n")


def _interrupt_all(setup, cases, request, script: str = INTERRUPT) -> list[tuple[tuple, Path, subprocess.CompletedProcess]]:
    """(case, folder, result) of `render` in a fresh copy of the setup's old tree for each case (at, k, signal),
    each a process of its own (a real signal, its exit code), all started at once."""
    repo, old, _, args = setup
    folders = [repo.parent / f"{request.node.name}-{'-'.join(map(str, case))}" for case in cases]
    for folder in folders:
        _reset(folder, old)
    procs = [_start(folder, args, *case, script) for folder, case in zip(folders, cases)]
    return [(case, folder, _ended(proc)) for case, folder, proc in zip(cases, folders, procs)]


def _written(setup) -> int:
    _, old, new, _ = setup
    return len({p for p in new if old.get(p) != new[p]})


def _check_interrupted_commits(results, repo, old, new, sig, code):
    steps = _commit_steps(repo, old, new)
    for (_, k, _), folder, result in results:
        assert result.returncode == code, (k, result.stderr)
        assert result.stderr.splitlines()[-1] == (
            f"rulesgen: interrupted by {sig}; the render had finished: {steps} file(s) changed in ."), k
        assert tree(folder) == new, f"interrupted after rename {k} of {steps}: not the new tree"
        assert temporaries(folder) == [], k


@pytest.mark.parametrize("renames", ["spread", pytest.param("rest", marks=pytest.mark.slow)])
def test_ctrl_c_after_every_rename_of_the_commit_phase_leaves_the_new_tree_and_no_temporary(small_old_and_new, renames,
                                                                                            request):
    repo, old, new, _ = small_old_and_new
    steps = _commit_steps(repo, old, new)
    assert steps > 20
    spread = _spread(steps)
    ks = spread if renames == "spread" else [k for k in range(1, steps + 1) if k not in spread]
    results = _interrupt_all(small_old_and_new, [("rename", k, "SIGINT") for k in ks], request)
    _check_interrupted_commits(results, repo, old, new, "SIGINT", 130)


@pytest.mark.parametrize("sig,code", [("SIGINT", 130), ("SIGTERM", 143)])
@BUNDLED
def test_an_interrupted_render_of_the_bundled_catalog_is_all_new(old_and_new, request, sig, code):
    repo, old, new, _ = old_and_new
    steps = _commit_steps(repo, old, new)
    assert any(p.startswith("tests/promtool/") for p in new) and steps > 40
    results = _interrupt_all(old_and_new, [("rename", k, sig) for k in (1, steps // 2, steps)], request)
    _check_interrupted_commits(results, repo, old, new, sig, code)


@BUNDLED
def test_an_interrupt_while_the_new_files_are_written_leaves_the_old_tree_and_no_temporary(old_and_new, request):
    _, old, _, _ = old_and_new
    for _, folder, result in _interrupt_all(old_and_new, [("stage", k, "SIGINT") for k in (1, 2, _written(old_and_new))],
                                            request):
        assert result.returncode == 130, result.stderr
        assert result.stderr.splitlines() == ["rulesgen: interrupted by SIGINT; nothing written into ."]
        assert tree(folder) == old
        assert temporaries(folder) == []


def test_ctrl_c_before_the_render_writes_exits_130_with_one_line(tmp_path):
    script = ("import os, signal, sys\nimport rulesgen.artifacts as arts\nfrom rulesgen.cli import main\n"
              "def plan(*a, **k):\n    os.kill(os.getpid(), signal.SIGINT)\n"
              "arts.plan = plan\nsys.argv = ['rulesgen', 'render', '--defaults']\nmain()\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr) == (130, "rulesgen: interrupted by SIGINT\n")
    assert tree(tmp_path) == {}


def test_ctrl_c_while_the_modules_load_exits_130_with_one_line(tmp_path):
    script = ("import os, signal, sys\n"
              "class Hook:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name == 'rulesgen.cli.replay':\n"
              "            os.kill(os.getpid(), signal.SIGINT)\n"
              "        return None\n"
              "sys.meta_path.insert(0, Hook())\n"
              "from rulesgen.cli import main\n"
              "print('not interrupted')\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "rulesgen: interrupted by SIGINT\n")


def test_a_failed_rename_mid_commit_undoes_every_step(small_old_and_new, request):
    repo, old, new, _ = small_old_and_new
    steps = _commit_steps(repo, old, new)
    cases = [("rename", k, "SIGINT") for k in (1, steps // 2, steps)]
    for (_, k, _), folder, result in _interrupt_all(small_old_and_new, cases, request, _failing_rename_script()):
        assert result.returncode == 1, result.stderr
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(f"error: cannot write into {folder}"), result.stderr
        assert result.stderr.endswith(": Permission denied; nothing written\n")
        assert tree(folder) == old, k
        assert temporaries(folder) == []


def test_a_temporary_folder_a_kill_9_leaves_behind_is_ignored_by_git(small_old_and_new):
    """SIGKILL cannot be caught: the temporary folder survives, but it ignores itself (its own .gitignore)."""
    shared, old, _, args = small_old_and_new
    repo = shared.parent / "kill-9"
    _reset(repo, old)
    git = shutil.which("git")
    assert git, "git is not on PATH (apt-get install git)"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "old"]):
        subprocess.run([git, *cmd], cwd=repo, env=env, check=True, capture_output=True)
    result = _interrupted(repo, args, "rename", 3, "SIGKILL")
    assert result.returncode == -signal.SIGKILL
    assert [p.name for p in repo.iterdir() if p.name.startswith(TMP_PREFIX)], "expected a leftover temporary folder"
    subprocess.run([git, "add", "-A"], cwd=repo, env=env, check=True)
    staged = subprocess.run([git, "diff", "--cached", "--name-only"], cwd=repo, capture_output=True, text=True).stdout.split()
    assert staged and not [p for p in staged if TMP_PREFIX in p or "rulesgen-tmp" in p]


def test_an_unwritable_output_folder_is_one_line_naming_it(tmp_path, scenarios):
    """Read-only for the user running rulesgen (root ignores permissions: then the render runs as nobody)."""
    top = Path(tempfile.mkdtemp(prefix="rulesgen-ro-"))
    try:
        os.chmod(top, 0o755)
        folder = top / "repo"
        folder.mkdir()
        user_config(folder / "rulesgen.yaml")
        scen = top / "scenarios"
        shutil.copytree(scenarios, scen)
        for p in (top, folder, scen, *scen.iterdir(), folder / "rulesgen.yaml"):
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        os.chmod(folder, 0o555)
        exe = Path(sys.executable).with_name("rulesgen")
        cmd = [str(exe), "render", "--scenarios", str(scen)]
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv: cannot make a folder unwritable")
            cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        result = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=300)
        assert (result.returncode, result.stdout) == (1, "")
        assert without_promtool_note(result.stderr) == f"error: cannot write into {folder}: Permission denied; nothing written\n"
        assert sorted(p.name for p in folder.iterdir()) == ["rulesgen.yaml"]
    finally:
        os.chmod(top / "repo", 0o755)
        shutil.rmtree(top)


def test_a_target_folder_on_another_filesystem_gets_its_own_temporary_folder(tmp_path):
    """A rename is atomic only within one filesystem: dashboards/ symlinked to tmpfs is written through a
    temporary folder there, and none is left on either side."""
    from rulesgen.artifacts import write_all
    from rulesgen.model.output import Artifact
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem at /dev/shm")
    other = Path(tempfile.mkdtemp(dir=shm))
    try:
        (tmp_path / "dashboards").symlink_to(other)
        arts = [Artifact("alerts/prometheus/a.yaml", "# Generated by rulesgen\na: 1\n"),
                Artifact("dashboards/b.json", '{"b": 1}\n')]
        assert write_all(tmp_path, arts) == ["alerts/prometheus/a.yaml", "dashboards/b.json"]
        assert (other / "b.json").read_text() == '{"b": 1}\n'
        assert temporaries(tmp_path) == [] and [p.name for p in other.iterdir()] == ["b.json"]
    finally:
        shutil.rmtree(other)
