"""Local programs: run one to completion with its output captured, or start a server on 127.0.0.1
(a free port to give it, a wait until it answers, and a stop that never leaves one behind)."""
from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from pathlib import Path


class NotReady(RuntimeError):
    """A server exited, or did not answer in time."""


def run(cmd: list, timeout: float | None = None, cwd=None, env=None) -> subprocess.CompletedProcess:
    """Run cmd to completion; stdout and stderr captured as text (never raises on a non-zero exit)."""
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def failure(proc: subprocess.CompletedProcess) -> str:
    """`promtool failed (1):` and what it said (stderr, else stdout)."""
    said = proc.stderr.strip() or proc.stdout.strip()
    return f"{Path(proc.args[0]).name} failed ({proc.returncode}):\n{said}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(proc: subprocess.Popen, url: str, timeout: float, poll: float = 0.1) -> float:
    """Seconds until `url` answers 200 (a health or readiness endpoint); NotReady if the process
    exits first or `timeout` seconds pass."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if proc.poll() is not None:
            raise NotReady(f"exited ({proc.returncode}) before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(poll)
    raise NotReady(f"{url} did not answer within {timeout:g} s")


def stop(proc: subprocess.Popen, timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds; always reaped."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
