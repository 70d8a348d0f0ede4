"""Servers and tools for benchmarks/fleet.py: start on 127.0.0.1 with a free port and a log file, wait
until ready, read /metrics and the query API, and always stop (terminate, then kill). Peak RSS is the
kernel's high-water mark VmHWM (/proc/PID/status): of a server just before it stops; of a tool and
its children (the promtool or vmalert `rulesgen backfill` runs) polled while it runs. (ru_maxrss from
wait4 would not do: after a fork it includes the parent's, this Python process', RSS.)"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import requests

from rulesgen import processes
from rulesgen.promql.text import label_set

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')


PEAK_RSS: dict[str, int] = {}  # bytes, per server or tool name: the largest seen in this run


def vm_hwm(pid: int) -> int:
    """Peak RSS of a running process in bytes (0 if it is gone)."""
    try:
        return int(re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())[1]) * 1024
    except (OSError, TypeError):
        return 0


def _tree(pid: int) -> list[int]:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return [pid]
    return [pid] + [p for c in children for p in _tree(int(c))]


def _peak(name: str, rss: int) -> None:
    PEAK_RSS[name] = max(PEAK_RSS.get(name, 0), rss)


def run_tool(name: str, cmd: list[str], **kwargs) -> int:
    """Run `cmd` to completion (kwargs go to Popen), recording the peak RSS of it and of each child
    program it runs (as "name: program"); return its exit code."""
    proc = subprocess.Popen(cmd, **kwargs)
    while proc.poll() is None:
        for pid in _tree(proc.pid):
            try:
                program = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            _peak(name if pid == proc.pid else f"{name}: {program}", vm_hwm(pid))
        time.sleep(0.5)
    return proc.returncode


def log(msg: str) -> None:
    print(f"[fleet {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def write_report(text: str, out: Path) -> None:
    """The report into `out` (benchmarks/results/... by default) and onto stdout."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    log(f"wrote {out}")


class Server:
    """One child process; `url` is its HTTP address. Every Server ever started is stopped by stop_all()."""
    running: list["Server"] = []

    def __init__(self, name: str, cmd: list[str], port: int, workdir: Path, ready_path: str):
        self.name, self.port = name, port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = workdir / f"{name}.log"
        self._log = open(self.log_path, "wb")
        log(f"start {name}: {' '.join(cmd)}")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, cwd=workdir)
        Server.running.append(self)
        self.ready_path = ready_path

    def wait_ready(self, timeout: float = 1800) -> float:
        """Seconds until `ready_path` answers 200 (Prometheus replays its TSDB before it is ready)."""
        try:
            return processes.wait_ready(self.proc, self.url + self.ready_path, timeout, poll=0.2)
        except processes.NotReady as exc:
            raise RuntimeError(f"{self.name}: {exc}; log:\n{self.tail()}") from None

    def tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def metrics(self) -> list[tuple[str, dict[str, str], float]]:
        """Parsed /metrics samples: (name, labels, value)."""
        out = []
        for line in requests.get(self.url + "/metrics", timeout=30).text.splitlines():
            m = SAMPLE.match(line)
            if m and not line.startswith("#"):
                out.append((m[1], label_set(m[2] or ""), float(m[3])))
        return out

    def query(self, expr: str, timeout: float = 300) -> list[dict]:
        r = requests.get(self.url + "/api/v1/query", params={"query": expr}, timeout=timeout)
        r.raise_for_status()
        return r.json()["data"]["result"]

    def scalar(self, expr: str) -> float:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else 0.0

    def stop(self) -> None:
        _peak(self.name, vm_hwm(self.proc.pid))
        processes.stop(self.proc, timeout=30)
        self._log.close()
        if self in Server.running:
            Server.running.remove(self)

    @classmethod
    def stop_all(cls) -> None:
        for server in list(cls.running):
            server.stop()


def metric_value(samples, name: str, **labels: str) -> float | None:
    for n, lbls, v in samples:
        if n == name and all(lbls.get(k) == val for k, val in labels.items()):
            return v
    return None
