"""Many runs of a script that ends in the `rulesgen` command, each a process of its own forked from this warm one.

tests/test_interrupts.py interrupts about twenty renders. Started as fresh interpreters, each one spent most
of its time importing rulesgen and planning from cold, the same work every time. Here one process does that
work once. Then, for each run, a child is forked: it takes the run's folder, environment, arguments and output
files, runs the script (which patches what it counts, then calls the command), and exits with the command's
code. A signal the script sends itself is a real signal to a real process, and its exit code is what a shell
would see.

Usage: `python tests/forked_cli.py < request.json`. The request is {"warm": [[folder, args], ...], "runs":
[{"cwd", "env", "args", "script"}, ...]}. Each warm entry is planned once, by a dry run (`render --diff` in that
folder: nothing written). The answer on stdout is [{"returncode", "stdout", "stderr"}, ...], in the order of
the runs.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import tempfile
import traceback


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=sys.stderr)  # sys.exit("message"): printed, status 1, as the interpreter does
    return 1


def _child(run: dict, out: int, err: int) -> None:
    """In the forked child: never returns."""
    code = 1
    try:
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.chdir(run["cwd"])
        os.environ.clear()
        os.environ.update(run["env"])
        sys.argv = ["-c", *run["args"]]
        exec(compile(run["script"], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the test's own script
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # noqa: BLE001 - what an uncaught exception does to a process: printed, status 1
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run(item: dict) -> dict:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(item, out.fileno(), err.fileno())
        _, status = os.waitpid(pid, 0)
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode("utf-8", "replace"))
    return {"returncode": os.waitstatus_to_exitcode(status), "stdout": texts[0], "stderr": texts[1]}


def warm(folder: str, args: list[str]) -> None:
    """Plan as `render ARGS` in `folder` would, writing nothing: the modules and the memos the runs reuse."""
    from rulesgen.cli import main

    here = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["render", "--diff", *args])
    except SystemExit:
        pass
    finally:
        os.chdir(here)


def main() -> None:
    request = json.load(sys.stdin)
    for folder, args in request["warm"]:
        warm(folder, args)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as a fresh process has it: the command sets its own
    json.dump([run(item) for item in request["runs"]], sys.stdout)


if __name__ == "__main__":
    main()
