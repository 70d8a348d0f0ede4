"""vmalert's replay mode (`vmalert -replay.*`): evaluate a rule file over a past time range against
a VictoriaMetrics server and write the results back with remote write (`rulesgen backfill`)."""
from __future__ import annotations

from pathlib import Path

from .. import processes
from ..durations import rfc3339
from .tools import find_tool


class VictoriaMetricsError(RuntimeError):
    pass


def run_vmalert(url: str, rule_file: Path, start: int, end: int, interval: int,
                vmalert: str | None = None, timeout: int | None = 600, write_url: str | None = None) -> str:
    """vmalert -replay.* of rule_file over [start, end] at `interval`, reading from url and writing
    the results to write_url (default url)."""
    cmd = [vmalert or find_tool("vmalert"),
           f"-rule={rule_file}",
           f"-datasource.url={url}",
           f"-remoteWrite.url={write_url or url}",
           f"-replay.timeFrom={rfc3339(start)}",
           f"-replay.timeTo={rfc3339(end)}",
           f"-evaluationInterval={interval}s",
           f"-datasource.queryStep={interval}s",  # default 5m: `for` would never be satisfied
           "-replay.rulesDelay=0s",                 # backfill rules read raw series only, never each other
           "-replay.maxDatapointsPerQuery=100000",  # one range query per rule: `for` state spans the run
           "-replay.disableProgressBar",
           "-remoteWrite.flushInterval=100ms",
           "-remoteWrite.maxBatchSize=200",
           "-remoteWrite.maxQueueSize=10000000",
           "-remoteWrite.concurrency=2",
           "-httpListenAddr=127.0.0.1:0",
           "-loggerLevel=WARN"]
    proc = processes.run(cmd, timeout=timeout)
    output = proc.stdout + proc.stderr
    # vmalert drops a remote-write batch after 5 failed attempts with only an error line and exit code 0
    # (single failed attempts that are retried are warnings): any error means results may be missing.
    problems = [line for line in output.splitlines()
                if "\terror\t" in line or "\tfatal\t" in line or "\tpanic\t" in line]
    if proc.returncode != 0 or problems:
        raise VictoriaMetricsError(f"vmalert replay of {rule_file.name} failed (exit {proc.returncode}):\n"
                                   + "\n".join(problems[:20] or output.splitlines()[-40:]))
    return output
