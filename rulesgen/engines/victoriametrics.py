"""vmalert's replay mode (`vmalert -replay.*`): evaluate a rule file over a past time range against
a VictoriaMetrics server and write the results back with remote write (`rulesgen backfill`)."""
from __future__ import annotations

import re
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
        unreachable = any(m in output for m in ("connection refused", "no such host", "i/o timeout", "dial tcp"))
        hint = f"vmalert could not reach {url}: is --url right, and the server up?\n" if unreachable else ""
        raise VictoriaMetricsError(f"vmalert replay of {rule_file.name} failed (exit {proc.returncode}): {hint}"
                                   + "\n".join(summarise(problems or output.splitlines()[-40:])))
    return output


_QUERY = re.compile(r"(https?://[^\s\"?]+)\?([^\s\"]*)")  # a query URL and its URL-encoded PromQL (kilobytes)


def _short_url(m: re.Match) -> str:
    """The URL with its range and step, without the query itself."""
    kept = [p for p in m.group(2).split("&") if not p.startswith(("query=", "nocache="))]
    return f"{m.group(1)}?{'&'.join(kept)}&query=..." if kept else f"{m.group(1)}?query=..."
_LOG_PREFIX = re.compile(r"^\S+\t(error|fatal|panic|warn|info)\t\S+\t")  # time, level, source file of vmalert's log


def summarise(lines: list[str], limit: int = 6, width: int = 400) -> list[str]:
    """vmalert's error lines, short: each query URL without its query string, the time and source file dropped,
    retries of one error said once, each line cut at `width` characters and at most `limit` lines."""
    out: dict[str, int] = {}
    for line in lines:
        line = _LOG_PREFIX.sub(r"\1: ", _QUERY.sub(_short_url, line))
        key = re.sub(r"attempt \d+", "attempt N", line)
        if key in out:
            out[key] += 1
            continue
        out[key] = 1
    shown = []
    for line, times in out.items():
        line = line if len(line) <= width else line[:width] + f"... ({len(line) - width} more characters)"
        shown.append(line.replace("attempt N", f"{times} attempts" if times > 1 else "attempt 1"))
    return shown[:limit] + ([f"... and {len(shown) - limit} more lines"] if len(shown) > limit else [])
